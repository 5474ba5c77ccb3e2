//! A Google Cloud Storage store for `Config`: its credential.

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
