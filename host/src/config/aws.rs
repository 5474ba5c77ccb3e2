//! What the two AWS stores share: an endpoint, a region and the keys
//! that sign requests (fixed, or refreshed from a source).

use crate::credentials::SharedSource;
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
    /// `service` (`s3`, `dynamodb`) on AWS itself in `region`.
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
}
