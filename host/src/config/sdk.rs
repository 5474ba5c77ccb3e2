//! The AWS stores from an `aws_config::SdkConfig` a service has already
//! loaded (feature `aws-sdk-config`: the AWS SDK's types in this crate's
//! API, and their semver with them, only for those who ask).

use super::aws::AwsAccess;
use super::{DynamoDbBuilder, S3Builder};
use crate::credentials::{SdkProvider, SharedSource};
use crate::error::Error;
use crate::types::Addressing;

impl S3Builder {
    /// `bucket`, reached as `sdk` says (see [`DynamoDbBuilder::from_sdk_config`]):
    /// its region, its endpoint URL if it names one (then path-style
    /// addressing), and its credentials provider, which a live client
    /// refreshes from as the SDK's own clients would. Fetches credentials
    /// once, here.
    pub fn from_sdk_config(sdk: &aws_config::SdkConfig, bucket: &str) -> Result<Self, Error> {
        let (aws, endpoint) = from_sdk(sdk, "s3")?;
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

impl DynamoDbBuilder {
    /// `table`, reached as `sdk` says: its region, its endpoint URL if it
    /// names one, and its credentials provider, which a live client
    /// refreshes from as the SDK's own clients would. Fetches credentials
    /// once, here.
    pub fn from_sdk_config(sdk: &aws_config::SdkConfig, table: &str) -> Result<Self, Error> {
        let (aws, endpoint) = from_sdk(sdk, "dynamodb")?;
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

/// `service` on AWS in the SdkConfig's region, with the first credentials
/// of its provider; and the endpoint URL it names, if any.
fn from_sdk(
    sdk: &aws_config::SdkConfig,
    service: &str,
) -> Result<(AwsAccess, Option<String>), Error> {
    let region = sdk
        .region()
        .map(|r| r.to_string())
        .ok_or_else(|| Error::invalid_config("region", "the SdkConfig names no region"))?;
    let provider = sdk.credentials_provider().ok_or_else(|| {
        Error::invalid_config("credentials", "the SdkConfig has no credentials provider")
    })?;
    let source = SharedSource::new(SdkProvider::new(provider)?);
    let first = source.fetch()?;
    let mut aws = AwsAccess::on_aws(service, region, first.credentials);
    aws.source = Some(source);
    Ok((aws, sdk.endpoint_url().map(str::to_string)))
}
