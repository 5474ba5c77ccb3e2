//! A Google Cloud Storage store for `Config`: its credential.

use super::{Config, Store};
use std::fmt;

/// How requests to Google Cloud Storage are authorized (the contract's
/// `gcs-credential`, named as the host crate names it). Never in `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub enum GcsCredential {
    /// An OAuth 2.0 access token with a storage scope, sent as
    /// `Authorization: Bearer`; it expires (usually within the hour), so
    /// replace it with `Client::set_credential`.
    BearerToken(String),
    /// No `Authorization` header: an emulator that checks none
    /// (fake-gcs-server), or a bucket anyone may write to.
    Anonymous,
}

impl fmt::Debug for GcsCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GcsCredential::BearerToken(_) => "BearerToken(<redacted>)",
            GcsCredential::Anonymous => "Anonymous",
        })
    }
}

impl Config {
    /// A bucket on Google Cloud Storage (`https://storage.googleapis.com`),
    /// through its JSON API. For an emulator (fake-gcs-server), set its
    /// root as the endpoint.
    pub fn gcs(bucket: impl Into<String>, credential: GcsCredential) -> Config {
        Config::of(Store::Gcs {
            endpoint: "https://storage.googleapis.com".into(),
            bucket: bucket.into(),
            credential,
        })
    }
}

/// The credential as the contract's.
#[cfg(target_family = "wasm")]
impl GcsCredential {
    pub(crate) fn to_contract(&self) -> crate::bindings::types::GcsCredential {
        use crate::bindings::types as raw;
        match self {
            GcsCredential::BearerToken(token) => raw::GcsCredential::Bearer(token.clone()),
            GcsCredential::Anonymous => raw::GcsCredential::Anonymous,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcs_by_hand_hides_its_token() {
        let c = Config::gcs(
            "locks",
            GcsCredential::BearerToken("ya29.very-secret".into()),
        );
        assert_eq!(c.endpoint(), "https://storage.googleapis.com");
        assert!(matches!(&c.store, Store::Gcs { bucket, .. } if bucket == "locks"));
        let shown = format!("{c:?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("BearerToken(<redacted>)"), "{shown}");
    }
}
