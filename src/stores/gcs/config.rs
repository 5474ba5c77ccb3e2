//! A Google Cloud Storage store's configuration: how requests are
//! authorized, and the bucket name GCS accepts. Checked here, at
//! construction, so every request can be built without failing.

use crate::prelude::*;

use crate::error::Error;
use crate::stores::profile::{LifecycleRules, Profile};
use core::fmt;

/// The shortest lease on GCS: it takes about one write per second per
/// object, and a holder renews every third of its ttl less a tenth (the
/// host's guard: a 4 s lease is renewed every 1.2 s; a 3 s one would be
/// every 0.9 s, faster than GCS takes).
pub const GCS_MIN_TTL_MS: u64 = 4_000;
/// The shortest elector retry period on GCS (a leader renews every one).
pub const GCS_MIN_RETRY_PERIOD_MS: u64 = 1_000;

/// What Google Cloud Storage is and does (see `Profile`): no listing (its
/// clients use single-object), and about one write per second per object.
pub const PROFILE: Profile = Profile {
    name: "gcs",
    lists_keys: false,
    records_write_times: true,
    holds_objects: true,
    condition_checks_token: false,
    min_write_interval_ms: GCS_MIN_RETRY_PERIOD_MS,
    keeps_token_floor: true,
    replies_as_s3: false,
    wrong_endpoint_hint:
        "not a GCS JSON API endpoint (https://storage.googleapis.com, or an emulator's root?)",
    lists_fenced_objects: true,
    lists_versions: false,
    payload_hash: Some("md5Hash"),
    lifecycle: LifecycleRules::BucketJson,
};

/// Where the locks are kept on GCS (the WIT `gcs-store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcsBucket {
    /// `https://storage.googleapis.com`, or an emulator's root.
    pub endpoint: String,
    pub bucket: String,
    pub credential: GcsCredential,
}

impl GcsBucket {
    pub(crate) fn check(&self) -> Result<(), Error> {
        check_bucket(&self.bucket)?;
        check(&self.credential)
    }

    pub(crate) fn set_credential(&mut self, credential: GcsCredential) -> Result<(), Error> {
        check(&credential)?;
        self.credential = credential;
        Ok(())
    }
}

/// How requests to GCS are authorized (the WIT `gcs-credential`). `Debug`
/// shows only which.
#[derive(Clone, PartialEq, Eq)]
pub enum GcsCredential {
    /// An OAuth 2.0 access token, sent as `Authorization: Bearer`.
    Bearer(String),
    /// No `Authorization` header (an emulator, or a bucket open to all).
    Anonymous,
}

impl fmt::Debug for GcsCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GcsCredential::Bearer(_) => "Bearer(<redacted>)",
            GcsCredential::Anonymous => "Anonymous",
        })
    }
}

const CREDENTIAL_FIELD: &str = "store.gcs";

impl GcsCredential {
    pub fn bearer(token: &str) -> Result<Self, Error> {
        // The reason never repeats the token.
        if token.is_empty() || !token.chars().all(|c| c.is_ascii_graphic()) {
            return Err(Error::invalid_config(
                CREDENTIAL_FIELD,
                "the bearer token must be non-empty printable ASCII without spaces",
            ));
        }
        Ok(GcsCredential::Bearer(token.to_string()))
    }
}

/// The constructors' check, for a credential built by hand.
fn check(credential: &GcsCredential) -> Result<(), Error> {
    match credential {
        GcsCredential::Bearer(token) => GcsCredential::bearer(token).map(|_| ()),
        GcsCredential::Anonymous => Ok(()),
    }
}

/// GCS's rule for bucket names: 3 to 63 characters (222 with dots) of
/// lowercase letters, digits, `-`, `_` and `.`, starting and ending with a
/// letter or digit.
fn check_bucket(bucket: &str) -> Result<(), Error> {
    let allowed =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.');
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let longest = if bucket.contains('.') { 222 } else { 63 };
    if !(3..=longest).contains(&bucket.len())
        || !bucket.chars().all(allowed)
        || !bucket.starts_with(alnum)
        || !bucket.ends_with(alnum)
    {
        return Err(Error::invalid_config(
            "bucket",
            format!(
                "{bucket:?}: a GCS bucket is 3 to 63 characters (222 with dots) of lowercase \
                 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
            ),
        ));
    }
    Ok(())
}
