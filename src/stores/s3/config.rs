//! An S3 store's configuration: the bucket, how it is addressed, the
//! signing region and keys. Checked here, at construction, so every request
//! can be built and signed without failing.

use crate::prelude::*;

use crate::error::Error;
use crate::sigv4::Credentials;
use crate::stores::aws::{check_signing, replace_credentials};
use crate::stores::profile::{LifecycleRules, Profile};
use s3_lease_keep::vocabulary::Addressing;

/// What S3 is and does (see `Profile`).
pub const PROFILE: Profile = Profile {
    name: "s3",
    lists_keys: true,
    records_write_times: true,
    holds_objects: true,
    condition_checks_token: false,
    min_write_interval_ms: 0,
    keeps_token_floor: true,
    replies_as_s3: true,
    wrong_endpoint_hint:
        "not an S3 endpoint (the S3 API's port, and not, say, a SeaweedFS filer's or master's?)",
    lists_fenced_objects: true,
    lists_versions: true,
    payload_hash: Some("x-amz-content-sha256"),
    lifecycle: LifecycleRules::Xml,
};

/// Where the locks are kept on S3 (the WIT `s3-store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Bucket {
    /// `http://host[:port]` or `https://host[:port]`, with no path.
    pub endpoint: String,
    /// The signing region, e.g. `us-east-1`.
    pub region: String,
    pub bucket: String,
    pub addressing: Addressing,
    pub credentials: Credentials,
}

impl S3Bucket {
    pub(crate) fn check(&self) -> Result<(), Error> {
        check_bucket(&self.bucket, self.addressing)?;
        check_signing(&self.region, &self.credentials)
    }

    pub(crate) fn set_credentials(&mut self, credentials: Credentials) -> Result<(), Error> {
        replace_credentials(&mut self.credentials, credentials)
    }
}

fn check_bucket(bucket: &str, addressing: Addressing) -> Result<(), Error> {
    if bucket.is_empty() || bucket.len() > 255 {
        return Err(Error::invalid_config(
            "bucket",
            "must be 1 to 255 characters",
        ));
    }
    let dns_safe = bucket.len() >= 3
        && bucket.len() <= 63
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && !bucket.starts_with(['.', '-'])
        && !bucket.ends_with(['.', '-']);
    match addressing {
        Addressing::VirtualHosted if !dns_safe => Err(Error::invalid_config(
            "bucket",
            format!("{bucket:?} is not a DNS-compatible name (3-63 of a-z 0-9 . -), which virtual-hosted addressing needs"),
        )),
        Addressing::Path
            if !bucket
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) =>
        {
            Err(Error::invalid_config(
                "bucket",
                format!("{bucket:?}: only letters, digits, '.', '-' and '_'"),
            ))
        }
        _ => Ok(()),
    }
}
