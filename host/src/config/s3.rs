//! An S3 bucket (AWS's own, or any S3-compatible store) as the store.

use super::aws::AwsAccess;
use super::{Store, StoreConfig};
use crate::credentials::SharedSource;
use crate::error::Error;
use crate::types::{Addressing, Credentials};

/// Builds the [`StoreConfig`] of an S3 bucket. `Debug` shows no secret.
#[derive(Clone, PartialEq, Eq, Debug)]
#[must_use]
pub struct S3Builder {
    pub(crate) aws: AwsAccess,
    pub(crate) bucket: String,
    pub(crate) addressing: Addressing,
}

impl S3Builder {
    /// `bucket` on AWS's own S3 in `region`, virtual-hosted addressing,
    /// with fixed keys.
    pub fn new(
        bucket: impl Into<String>,
        region: impl Into<String>,
        credentials: Credentials,
    ) -> Self {
        S3Builder {
            aws: AwsAccess::on_aws("s3", region.into(), credentials),
            bucket: bucket.into(),
            addressing: Addressing::VirtualHosted,
        }
    }

    /// An S3-compatible endpoint instead of AWS's; addressing becomes
    /// path-style, as most such stores want (change it after with
    /// [`S3Builder::addressing`]).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.aws.endpoint = url.into();
        self.addressing = Addressing::Path;
        self
    }

    pub fn addressing(mut self, addressing: Addressing) -> Self {
        self.addressing = addressing;
        self
    }

    /// Credentials from `source`, fetched now and refreshed by a live
    /// client before they expire.
    pub fn credentials_source(mut self, source: SharedSource) -> Result<Self, Error> {
        self.aws = self.aws.with_source(source)?;
        Ok(self)
    }

    pub fn build(self) -> StoreConfig {
        StoreConfig::of(Store::S3(self))
    }
}
