//! A DynamoDB table as the store.

use super::aws::AwsAccess;
use super::{KeysFrom, OwnSettings, Store, StoreConfig};
use crate::credentials::SharedSource;
use crate::error::Error;
use crate::types::Credentials;

/// Builds the [`StoreConfig`] of a DynamoDB table. `Debug` shows no
/// secret.
#[derive(Clone, PartialEq, Eq, Debug)]
#[must_use]
pub struct DynamoDbBuilder {
    pub(crate) aws: AwsAccess,
    pub(crate) table: String,
}

impl DynamoDbBuilder {
    /// `table` on AWS in `region`, with fixed keys.
    pub fn new(
        table: impl Into<String>,
        region: impl Into<String>,
        credentials: Credentials,
    ) -> Self {
        DynamoDbBuilder {
            aws: AwsAccess::on_aws("dynamodb", region.into(), credentials),
            table: table.into(),
        }
    }

    /// A local DynamoDB (or another compatible endpoint) instead of AWS's.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.aws.endpoint = url.into();
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

impl OwnSettings for DynamoDbBuilder {
    const KIND: &'static str = "dynamodb";
    const NAME: &'static str = "DynamoDB";
    const PLACE: &'static str = "table";
    const AWS_KEYS: bool = true;

    /// The table `S3LEASE_TABLE` names; `AWS_ENDPOINT_URL_DYNAMODB` or
    /// `AWS_ENDPOINT_URL` (default AWS's in the region); region and keys as
    /// [`AwsAccess::from_vars`] reads them.
    fn from_vars(
        _bucket: &str,
        var: &dyn Fn(&str) -> Option<String>,
        keys: KeysFrom,
    ) -> Result<Self, Error> {
        let table = var("S3LEASE_TABLE").ok_or_else(|| {
            Error::invalid_config(
                "S3LEASE_TABLE",
                "is not set: a dynamodb store needs its table (--table)",
            )
        })?;
        let (aws, _) = AwsAccess::from_vars("dynamodb", "AWS_ENDPOINT_URL_DYNAMODB", var, keys)?;
        Ok(DynamoDbBuilder { aws, table })
    }

    fn endpoint(&self) -> &str {
        &self.aws.endpoint
    }

    fn place(&self) -> &str {
        &self.table
    }

    fn with_endpoint(self, url: String) -> Self {
        self.endpoint(url)
    }

    fn build_store(self) -> Store {
        Store::DynamoDb(self)
    }

    fn aws(&self) -> Option<&AwsAccess> {
        Some(&self.aws)
    }

    fn with_credentials_source(self, source: SharedSource) -> Result<Self, Error> {
        self.credentials_source(source)
    }
}

#[cfg(feature = "aws-sdk-config")]
impl DynamoDbBuilder {
    /// `table`, reached as `sdk` says (feature `aws-sdk-config`): its region, its endpoint URL if it
    /// names one, and its credentials provider, which a live client
    /// refreshes from as the SDK's own clients would. Fetches credentials
    /// once, here.
    pub fn from_sdk_config(sdk: &aws_config::SdkConfig, table: &str) -> Result<Self, Error> {
        let (aws, endpoint) = AwsAccess::from_sdk(sdk, "dynamodb")?;
        let dynamodb = DynamoDbBuilder {
            aws,
            table: table.to_string(),
        };
        Ok(match endpoint {
            Some(url) => dynamodb.endpoint(url),
            None => dynamodb,
        })
    }
}
