//! A DynamoDB table as the store.

use super::aws::AwsAccess;
use super::{Store, StoreConfig};
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
        StoreConfig::of(Store::DynamoDb(self))
    }
}
