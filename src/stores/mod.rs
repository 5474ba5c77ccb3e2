//! The stores, each in its own folder, and the one registry that turns the
//! configured store into the protocol's requests and replies: a request the
//! protocol emits becomes a signed HTTP request for the store, and the
//! store's reply becomes the S3 reply the protocol reads. For S3 the reply is
//! already that; the other stores translate it in their folders. The rest of
//! the core asks this module what a store is and does (`Profile`), never
//! which store it is.

use crate::prelude::*;

use crate::error::Error;
use crate::sigv4::Credentials;
use s3::{HttpRequest, S3Request, S3Response, NOT_THE_STORE_HEADER, UNREADABLE_HEADER};

pub mod aws;
pub mod azure;
pub mod dynamodb;
pub mod gcs;
pub mod s3;

pub use azure::{AzureBlob, AzureCredential};
pub use dynamodb::DynamoDbTable;
pub use gcs::{GcsBucket, GcsCredential};
pub use s3::S3Bucket;

pub mod profile;
pub use self::profile::{LifecycleRule, LifecycleRules, Profile};

/// The checks of a store kept in a table, which the preflight runs first.
pub(crate) use dynamodb::table as table_checks;

/// Where the locks are kept (the WIT `store`): each case holds that
/// store's endpoint, place and credential, and nothing of another's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// Objects in an S3 bucket.
    S3(S3Bucket),
    /// Items in a DynamoDB table (see `dynamodb`).
    DynamoDb(DynamoDbTable),
    /// Blobs in an Azure Blob Storage container (see `azure`).
    AzureBlob(AzureBlob),
    /// Objects in a Google Cloud Storage bucket, through its JSON API
    /// (see `gcs`).
    Gcs(GcsBucket),
}

/// A store's credential, as `set-credential` replaces it (the WIT
/// `credential`). `Debug` shows no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// AWS keys: S3's and DynamoDB's.
    Aws(Credentials),
    Azure(AzureCredential),
    Gcs(GcsCredential),
}

impl LifecycleRules {
    /// The rules in `body`, a reply to the lifecycle read, that delete or
    /// archive current objects; `None` where there is nothing to read.
    pub fn read(self, body: &[u8]) -> Option<Result<Vec<LifecycleRule>, String>> {
        match self {
            LifecycleRules::Xml => Some(s3::lifecycle::rules(&String::from_utf8_lossy(body))),
            LifecycleRules::BucketJson => Some(gcs::lifecycle::rules(body)),
            LifecycleRules::Unreadable(_) | LifecycleRules::Nothing => None,
        }
    }
}

impl Store {
    /// What this store is and does.
    pub fn profile(&self) -> &'static Profile {
        match self {
            Store::S3(_) => &s3::PROFILE,
            Store::DynamoDb(_) => &dynamodb::PROFILE,
            Store::AzureBlob(_) => &azure::PROFILE,
            Store::Gcs(_) => &gcs::PROFILE,
        }
    }

    /// What `config.store` names, for errors: `s3`, `dynamodb`,
    /// `azure-blob`, `gcs`.
    pub fn name(&self) -> &'static str {
        self.profile().name
    }

    /// What the store is, as messages name it: `the DynamoDB table
    /// "locks"`, say.
    pub fn described(&self) -> String {
        match self {
            Store::S3(s) => format!("the S3 bucket {:?}", s.bucket),
            Store::DynamoDb(s) => format!("the DynamoDB table {:?}", s.table),
            Store::AzureBlob(s) => format!(
                "the Azure Blob container {:?} of account {:?}",
                s.container, s.account
            ),
            Store::Gcs(s) => format!("the GCS bucket {:?}", s.bucket),
        }
    }

    /// The table the store keeps its items in, whose own checks the
    /// preflight runs first; `None` for a store of objects.
    pub fn table(&self) -> Option<&str> {
        match self {
            Store::S3(_) | Store::AzureBlob(_) | Store::Gcs(_) => None,
            Store::DynamoDb(s) => Some(&s.table),
        }
    }

    /// The endpoint as configured (`scheme://host[:port]`).
    pub fn endpoint(&self) -> &str {
        match self {
            Store::S3(s) => &s.endpoint,
            Store::DynamoDb(s) => &s.endpoint,
            Store::AzureBlob(s) => &s.endpoint,
            Store::Gcs(s) => &s.endpoint,
        }
    }

    /// Checks the store's own settings.
    pub(crate) fn check(&self) -> Result<(), Error> {
        match self {
            Store::S3(s) => s.check(),
            Store::DynamoDb(s) => s.check(),
            Store::AzureBlob(s) => s.check(),
            Store::Gcs(s) => s.check(),
        }
    }

    /// What the lease seal's key derives from: the bucket, or for a
    /// DynamoDB store `dynamodb:<table>`, for an Azure one
    /// `azure:<account>/<container>`, for a GCS one `gcs:<bucket>` (no
    /// bucket name has a `:`, so a lease of one store is never accepted by
    /// another).
    pub fn seal_scope(&self) -> String {
        match self {
            Store::S3(s) => s.bucket.clone(),
            Store::DynamoDb(s) => format!("dynamodb:{}", s.table),
            Store::AzureBlob(s) => format!("azure:{}/{}", s.account, s.container),
            Store::Gcs(s) => format!("gcs:{}", s.bucket),
        }
    }

    /// Replaces the store's credential with `credential`, checked as the
    /// config's is; one of another kind than the store's is refused. On a
    /// refusal the old one stays.
    pub fn set_credential(&mut self, credential: Credential) -> Result<(), Error> {
        match (self, credential) {
            (Store::S3(s), Credential::Aws(c)) => s.set_credentials(c),
            (Store::DynamoDb(s), Credential::Aws(c)) => s.set_credentials(c),
            (Store::AzureBlob(s), Credential::Azure(c)) => s.set_credential(c),
            (Store::Gcs(s), Credential::Gcs(c)) => s.set_credential(c),
            (store, credential) => Err(Error::invalid_config(
                "credential",
                format!(
                    "{} credential for a client of the {} store",
                    credential.kind(),
                    store.name()
                ),
            )),
        }
    }

    /// The store's credential now.
    pub fn credential(&self) -> Credential {
        match self {
            Store::S3(s) => Credential::Aws(s.credentials.clone()),
            Store::DynamoDb(s) => Credential::Aws(s.credentials.clone()),
            Store::AzureBlob(s) => Credential::Azure(s.credential.clone()),
            Store::Gcs(s) => Credential::Gcs(s.credential.clone()),
        }
    }
}

impl Credential {
    /// Which kind it is, as a refusal names it.
    fn kind(&self) -> &'static str {
        match self {
            Credential::Aws(_) => "an AWS",
            Credential::Azure(_) => "an Azure",
            Credential::Gcs(_) => "a GCS",
        }
    }
}

/// Where the store is and how long a request may take: what a store's
/// requests take from the configuration (`ClientConfig::reach`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach<'a> {
    pub scheme: Scheme,
    /// `host` or `host:port` of the endpoint, without the bucket.
    pub endpoint_authority: &'a str,
    pub request_timeout_ms: u32,
}

/// An endpoint's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Store {
    /// Signs `req` for this store, as `reach` reaches it, at `unix_seconds`.
    pub fn prepare(&self, reach: Reach<'_>, req: &S3Request, unix_seconds: u64) -> HttpRequest {
        match self {
            Store::S3(bucket) => s3::prepare(reach, bucket, req, unix_seconds),
            Store::DynamoDb(table) => dynamodb::prepare(reach, table, req, unix_seconds),
            Store::AzureBlob(blob) => azure::prepare(reach, blob, req, unix_seconds),
            Store::Gcs(bucket) => gcs::prepare(reach, bucket, req, unix_seconds),
        }
    }

    /// The store's reply to `prepare(req)`, as the protocol reads replies.
    pub fn read_reply(&self, req: &S3Request, reply: S3Response) -> S3Response {
        match self {
            // The translations' own headers mean nothing from a server.
            Store::S3(_) => S3Response {
                headers: reply
                    .headers
                    .into_iter()
                    .filter(|(k, _)| {
                        !k.eq_ignore_ascii_case(UNREADABLE_HEADER)
                            && !k.eq_ignore_ascii_case(NOT_THE_STORE_HEADER)
                    })
                    .collect(),
                ..reply
            },
            Store::DynamoDb(_) => dynamodb::read_reply(req, reply),
            Store::AzureBlob(_) => azure::read_reply(req, reply),
            Store::Gcs(_) => gcs::read_reply(req, reply),
        }
    }
}
