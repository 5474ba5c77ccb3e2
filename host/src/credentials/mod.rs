//! Where a client's credentials come from, and how a live client gets new
//! ones before the old ones expire.
//!
//! - [`CredentialsSource`]: anything that hands out credentials (the AWS
//!   chain, a vault, a test's fake).
//! - [`AwsChain`]: the AWS SDKs' own chain (`aws-config`): environment,
//!   shared config and credentials files (static keys, `credential_process`,
//!   `role_arn`, SSO), web identity, ECS and EKS container credentials,
//!   EC2 instance metadata.
//! - A client connected with a source keeps its credentials fresh on a
//!   thread of its own (`refresh`), and on a store's `ExpiredToken` or
//!   `InvalidAccessKeyId` fetches new ones once and retries once.

mod aws_chain;
pub mod azure;
pub(crate) mod refresh;

pub use aws_chain::AwsChain;

use crate::bindings::{Credentials, Error as LeaseError};
use crate::Error;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Credentials as a source handed them out. `Debug` shows neither the
/// secret key nor the session token.
#[derive(Clone)]
pub struct FetchedCredentials {
    pub credentials: Credentials,
    /// When they stop working; `None` for long-term keys.
    pub expires: Option<SystemTime>,
    /// Which source gave them (`Environment`, `Profile`, `IMDSv2`, ...).
    pub source: String,
}

impl fmt::Debug for FetchedCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchedCredentials")
            .field("access_key_id", &self.credentials.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self
                    .credentials
                    .session_token
                    .as_ref()
                    .map(|_| "<redacted>"),
            )
            .field("expires", &self.expires)
            .field("source", &self.source)
            .finish()
    }
}

/// Hands out credentials, fresh ones on every call (a client calls it
/// ahead of expiry, and once after the store refused the old ones).
/// Errors must not carry secrets.
pub trait CredentialsSource: Send + Sync + 'static {
    fn fetch(&self) -> Result<FetchedCredentials, Error>;
}

/// A [`CredentialsSource`] a client refreshes from, in an [`S3Config`]
/// (compared by identity: two configs are equal when they share it). It
/// keeps the last credentials fetched, so that clients connected from one
/// config do not each fetch them again.
///
/// [`S3Config`]: crate::S3Config
#[derive(Clone)]
pub struct SharedSource {
    source: Arc<dyn CredentialsSource>,
    /// The last fetch, and when it was made.
    last: Arc<Mutex<Option<(SystemTime, FetchedCredentials)>>>,
}

impl SharedSource {
    pub fn new(source: impl CredentialsSource) -> Self {
        Self::from_arc(Arc::new(source))
    }

    /// A source the caller keeps a handle on too.
    pub fn from_arc(source: Arc<dyn CredentialsSource>) -> Self {
        SharedSource {
            source,
            last: Arc::default(),
        }
    }

    /// Fetches from the source now, and keeps what it gave.
    pub fn fetch(&self) -> Result<FetchedCredentials, Error> {
        let fetched = self.source.fetch()?;
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((SystemTime::now(), fetched.clone()));
        Ok(fetched)
    }

    /// Which source gave the last credentials fetched, and when they
    /// expire (nothing secret).
    pub fn last_source(&self) -> Option<(String, Option<SystemTime>)> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.as_ref().map(|(_, f)| (f.source.clone(), f.expires))
    }

    /// The last credentials fetched, unless they are due for a refresh
    /// (or there are none yet): then a fetch.
    pub fn latest(&self) -> Result<FetchedCredentials, Error> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match last {
            Some((at, f))
                if refresh::due_at(at, f.expires).is_none_or(|due| due > SystemTime::now()) =>
            {
                Ok(f)
            }
            _ => self.fetch(),
        }
    }
}

impl PartialEq for SharedSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.source, &other.source)
    }
}

impl Eq for SharedSource {}

impl fmt::Debug for SharedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedSource(..)")
    }
}

/// True when the store refused the request's credentials as expired or
/// unknown (S3 answers 400 `ExpiredToken` / `InvalidToken`, 403
/// `InvalidAccessKeyId`; DynamoDB `ExpiredTokenException` and
/// `UnrecognizedClientException`): new credentials may fix it. The store did not
/// apply the request, so sending it again is safe.
pub fn refused_credentials(error: &LeaseError) -> bool {
    let e = match error {
        LeaseError::AccessDenied(e) | LeaseError::S3(e) => e,
        _ => return false,
    };
    matches!(
        e.code.as_str(),
        "ExpiredToken"
            | "InvalidToken"
            | "InvalidAccessKeyId"
            | "TokenRefreshRequired"
            | "ExpiredTokenException"
            | "UnrecognizedClientException"
            // Azure: an expired or unknown bearer token.
            | "InvalidAuthenticationInfo"
    )
}

/// One set of credentials, the same every time: [`S3Config::from_vars`]'s
/// keys as a source.
///
/// [`S3Config::from_vars`]: crate::S3Config::from_vars
pub struct StaticCredentials(pub Credentials);

impl CredentialsSource for StaticCredentials {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        Ok(FetchedCredentials {
            credentials: self.0.clone(),
            expires: None,
            source: "Static".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret() {
        let fetched = FetchedCredentials {
            credentials: Credentials {
                access_key_id: "ASIAVISIBLE".into(),
                secret_access_key: "s3cr3t-value".into(),
                session_token: Some("t0ken-value".into()),
            },
            expires: None,
            source: "Ec2InstanceMetadata".into(),
        };
        let source = SharedSource::new(StaticCredentials(fetched.credentials.clone()));
        let mut config = crate::S3Config::from_vars("b", |n| match n {
            "AWS_ACCESS_KEY_ID" => Some("ASIAVISIBLE".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("s3cr3t-value".into()),
            "AWS_SESSION_TOKEN" => Some("t0ken-value".into()),
            _ => None,
        })
        .unwrap();
        source.fetch().unwrap();
        config.credentials_source = Some(source.clone());
        let text = format!(
            "{fetched:?} {config:?} {source:?} {:?}",
            source.last_source()
        );
        assert!(text.contains("ASIAVISIBLE"), "{text}");
        assert!(
            !text.contains("s3cr3t") && !text.contains("t0ken"),
            "{text}"
        );
    }

    #[test]
    fn only_refusals_of_the_credentials_call_for_new_ones() {
        use crate::bindings::exports::s3_lease::lease::types::S3Error;
        let e = |status, code: &str| S3Error {
            status,
            code: code.into(),
            message: String::new(),
            request_id: String::new(),
        };
        assert!(refused_credentials(&LeaseError::S3(e(400, "ExpiredToken"))));
        assert!(refused_credentials(&LeaseError::AccessDenied(e(
            403,
            "ExpiredTokenException"
        ))));
        assert!(refused_credentials(&LeaseError::AccessDenied(e(
            403,
            "InvalidAccessKeyId"
        ))));
        assert!(!refused_credentials(&LeaseError::AccessDenied(e(
            403,
            "AccessDenied"
        ))));
        assert!(!refused_credentials(&LeaseError::AccessDenied(e(
            403,
            "SignatureDoesNotMatch"
        ))));
        assert!(!refused_credentials(&LeaseError::S3(e(
            500,
            "InternalError"
        ))));
    }
}
