//! What the two AWS stores share: an endpoint, a region and the keys
//! that sign requests (fixed, or refreshed from a source).

use super::KeysFrom;
use crate::credentials::{AwsChain, SharedSource};
use crate::error::Error;
use crate::types::Credentials;

/// `Debug` shows the key id only (see [`Credentials`]).
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct AwsAccess {
    pub(crate) endpoint: String,
    pub(crate) region: String,
    /// The keys in hand; with a source, the first ones it gave.
    pub(crate) credentials: Credentials,
    /// Where a live client takes fresh credentials from; `None`: the keys
    /// above, fixed.
    pub(crate) source: Option<SharedSource>,
}

impl AwsAccess {
    /// `service` (its endpoint's first label) on AWS itself in `region`.
    pub(crate) fn on_aws(service: &str, region: String, credentials: Credentials) -> Self {
        AwsAccess {
            endpoint: format!("https://{service}.{region}.amazonaws.com"),
            region,
            credentials,
            source: None,
        }
    }

    /// Credentials from `source`, the first fetched now.
    pub(crate) fn with_source(mut self, source: SharedSource) -> Result<Self, Error> {
        self.credentials = source.latest()?.credentials;
        self.source = Some(source);
        Ok(self)
    }

    /// `service` as the AWS SDKs find it in the variables: at
    /// `endpoint_var` (the service's own endpoint variable) or
    /// `AWS_ENDPOINT_URL`, else AWS itself; in `AWS_REGION` or
    /// `AWS_DEFAULT_REGION`; signed with the keys `keys` says (see
    /// [`KeysFrom`]). And whether the endpoint is a custom one.
    pub(crate) fn from_vars(
        service: &str,
        endpoint_var: &str,
        var: &dyn Fn(&str) -> Option<String>,
        keys: KeysFrom,
    ) -> Result<(Self, bool), Error> {
        let custom_endpoint = var(endpoint_var).or_else(|| var("AWS_ENDPOINT_URL"));
        let given_region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION"));
        let (region, credentials, source) = match keys {
            KeysFrom::Chain => {
                let chain = AwsChain::load(given_region, custom_endpoint.is_none())?;
                let region = chain.region().unwrap_or_else(|| "us-east-1".to_string());
                let source = SharedSource::new(chain);
                let first = source.fetch()?;
                (region, first.credentials, Some(source))
            }
            KeysFrom::Variables => {
                let required = |name: &str| {
                    var(name).ok_or_else(|| {
                        Error::invalid_config(
                            name,
                            "is not set (the credentials come from the usual AWS variables)",
                        )
                    })
                };
                let mut credentials = Credentials::new(
                    required("AWS_ACCESS_KEY_ID")?,
                    required("AWS_SECRET_ACCESS_KEY")?,
                );
                credentials.session_token = var("AWS_SESSION_TOKEN");
                let region = given_region.unwrap_or_else(|| "us-east-1".to_string());
                (region, credentials, None)
            }
        };
        let mut access = AwsAccess::on_aws(service, region, credentials);
        access.source = source;
        let custom = custom_endpoint.is_some();
        if let Some(url) = custom_endpoint {
            access.endpoint = url;
        }
        Ok((access, custom))
    }

    /// `service` on AWS in the SdkConfig's region, with the first credentials
    /// of its provider; and the endpoint URL it names, if any.
    #[cfg(feature = "aws-sdk-config")]
    pub(crate) fn from_sdk(
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
        let source = SharedSource::new(crate::credentials::SdkProvider::new(provider)?);
        let first = source.fetch()?;
        let mut aws = AwsAccess::on_aws(service, region, first.credentials);
        aws.source = Some(source);
        Ok((aws, sdk.endpoint_url().map(str::to_string)))
    }
}
