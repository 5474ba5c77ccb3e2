//! The host crate's bindings, under the name the suite has always used,
//! and what the suite needs to build and change their configs.

pub use s3_lease_host::bindings::*;

/// A config of `store`, keys under `key_prefix`, every shared setting at
/// its default.
pub fn config_of(store: Store, key_prefix: &str) -> Config {
    Config {
        store,
        key_prefix: Some(key_prefix.to_string()),
        request_timeout_ms: None,
        strategy: None,
        expiry_clock: None,
        preflight: None,
        seal_key: None,
        audit: None,
    }
}

/// The parts of a config's store that tests change.
pub trait StoreParts {
    /// The endpoint, whatever the store.
    fn endpoint(&self) -> &str;
    fn endpoint_mut(&mut self) -> &mut String;
    /// The S3 store's settings; a config of another store is a test's bug.
    fn s3_mut(&mut self) -> &mut S3Store;
    fn azure_mut(&mut self) -> &mut AzureStore;
    fn gcs_mut(&mut self) -> &mut GcsStore;
}

impl StoreParts for Config {
    fn endpoint(&self) -> &str {
        match &self.store {
            Store::S3(s) => &s.endpoint,
            Store::Dynamodb(s) => &s.endpoint,
            Store::AzureBlob(s) => &s.endpoint,
            Store::Gcs(s) => &s.endpoint,
        }
    }

    fn endpoint_mut(&mut self) -> &mut String {
        match &mut self.store {
            Store::S3(s) => &mut s.endpoint,
            Store::Dynamodb(s) => &mut s.endpoint,
            Store::AzureBlob(s) => &mut s.endpoint,
            Store::Gcs(s) => &mut s.endpoint,
        }
    }

    fn s3_mut(&mut self) -> &mut S3Store {
        match &mut self.store {
            Store::S3(s) => s,
            other => panic!("not an S3 config: {other:?}"),
        }
    }

    fn azure_mut(&mut self) -> &mut AzureStore {
        match &mut self.store {
            Store::AzureBlob(s) => s,
            other => panic!("not an Azure config: {other:?}"),
        }
    }

    fn gcs_mut(&mut self) -> &mut GcsStore {
        match &mut self.store {
            Store::Gcs(s) => s,
            other => panic!("not a GCS config: {other:?}"),
        }
    }
}
