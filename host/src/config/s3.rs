//! An S3 bucket (AWS's own, or any S3-compatible store) as the store.

use super::aws::AwsAccess;
use super::{KeysFrom, OwnSettings, Store, StoreConfig};
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
        StoreConfig::of(self.build_store())
    }
}

impl OwnSettings for S3Builder {
    const KIND: &'static str = "s3";
    const NAME: &'static str = "S3";
    const PLACE: &'static str = "bucket";
    const AWS_KEYS: bool = true;

    /// `bucket`; `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (default AWS
    /// itself); `S3LEASE_ADDRESSING` (`path` or `virtual-hosted`; default
    /// path for a custom endpoint, virtual-hosted on AWS); region and keys
    /// as [`AwsAccess::from_vars`] reads them.
    fn from_vars(
        bucket: &str,
        var: &dyn Fn(&str) -> Option<String>,
        keys: KeysFrom,
    ) -> Result<Self, Error> {
        let (aws, custom_endpoint) = AwsAccess::from_vars("s3", "AWS_ENDPOINT_URL_S3", var, keys)?;
        let addressing = match var("S3LEASE_ADDRESSING").as_deref() {
            Some("path") => Addressing::Path,
            Some("virtual-hosted") => Addressing::VirtualHosted,
            Some(other) => {
                return Err(Error::invalid_config(
                    "S3LEASE_ADDRESSING",
                    format!("{other:?} is neither `path` nor `virtual-hosted`"),
                ))
            }
            None if custom_endpoint => Addressing::Path,
            None => Addressing::VirtualHosted,
        };
        Ok(S3Builder {
            aws,
            bucket: bucket.to_string(),
            addressing,
        })
    }

    fn endpoint(&self) -> &str {
        &self.aws.endpoint
    }

    fn place(&self) -> &str {
        &self.bucket
    }

    fn with_endpoint(self, url: String) -> Self {
        self.endpoint(url)
    }

    fn build_store(self) -> Store {
        Store::S3(self)
    }

    fn aws(&self) -> Option<&AwsAccess> {
        Some(&self.aws)
    }

    fn with_credentials_source(self, source: SharedSource) -> Result<Self, Error> {
        self.credentials_source(source)
    }
}

#[cfg(feature = "aws-sdk-config")]
impl S3Builder {
    /// `bucket`, reached as `sdk` says (feature `aws-sdk-config`): its region, its endpoint URL if it names one (then path-style
    /// addressing), and its credentials provider, which a live client
    /// refreshes from as the SDK's own clients would. Fetches credentials
    /// once, here.
    pub fn from_sdk_config(sdk: &aws_config::SdkConfig, bucket: &str) -> Result<Self, Error> {
        let (aws, endpoint) = AwsAccess::from_sdk(sdk, "s3")?;
        let s3 = S3Builder {
            aws,
            bucket: bucket.to_string(),
            addressing: Addressing::VirtualHosted,
        };
        Ok(match endpoint {
            Some(url) => s3.endpoint(url),
            None => s3,
        })
    }
}
