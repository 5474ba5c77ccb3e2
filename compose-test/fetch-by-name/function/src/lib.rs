//! The smallest function that takes an s3-lease lock: it imports
//! `s3-lease:lease/lease` by name, and `wac plug` fills that import with
//! the s3-lease component fetched from the registry.

wit_bindgen::generate!({
    world: "example:lock-probe/lock-probe",
    // `wit/deps/` comes from `wkg fetch`: no path into the repository.
    path: "wit",
    generate_all,
});

use s3_lease::lease::lease::{Client, Error};
use s3_lease::lease::types::{AddressingStyle, AwsCredentials, Config, Options, S3Store, Store};
use wasi::cli::environment::get_environment;

struct Probe;

impl Guest for Probe {
    fn try_lock(key: String) -> Result<Option<u64>, String> {
        let environment = get_environment();
        let variable = |name: &str| {
            environment
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
                .ok_or_else(|| format!("{name} is not set"))
        };
        let config = Config {
            store: Store::S3(S3Store {
                endpoint: variable("AWS_ENDPOINT_URL")?,
                region: variable("AWS_REGION").unwrap_or_else(|_| "us-east-1".to_string()),
                bucket: variable("S3LEASE_BUCKET")?,
                addressing: AddressingStyle::Path,
                credentials: AwsCredentials {
                    access_key_id: variable("AWS_ACCESS_KEY_ID")?,
                    secret_access_key: variable("AWS_SECRET_ACCESS_KEY")?,
                    session_token: None,
                },
            }),
            key_prefix: None,
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: None,
        };
        let options = Options {
            ttl_ms: 10_000,
            holder_id: None,
            metadata: None,
        };
        let client = Client::new(&config).map_err(describe)?;
        let lease = client.try_acquire(&key, &options).map_err(describe)?;
        Ok(lease.map(|lease| lease.token))
    }
}

/// The error's case and detail, as the generated `Debug` prints them (the
/// contract's errors carry no secrets).
fn describe(error: Error) -> String {
    format!("{error:?}")
}

export!(Probe);
