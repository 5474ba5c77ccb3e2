//! The AWS SDKs' credential chain, from `aws-config`, tried in its order.

use super::{CredentialsSource, FetchedCredentials};
use crate::engine::own_runtime::OwnRuntime;
use crate::error::Error;
use crate::types::Credentials;
use aws_config::provider_config::ProviderConfig;
use aws_config::Region;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_smithy_http_client::tls;
use std::future::Future;
use std::sync::OnceLock;

/// The chain `aws-config`'s `DefaultCredentialsChain` tries, in its order:
/// environment variables; the shared `config` and `credentials` files
/// (`AWS_PROFILE`; static keys, `credential_process`, `role_arn` with
/// `source_profile`, SSO); web identity (`AWS_WEB_IDENTITY_TOKEN_FILE` +
/// `AWS_ROLE_ARN`, through STS `AssumeRoleWithWebIdentity`); ECS and EKS
/// Pod Identity container credentials; EC2 instance metadata (IMDSv2).
/// Each fetch tries the chain again from the start, as the SDKs do.
///
/// Kept apart from the SDK's own chain type so that a fetch can say which
/// source answered, and a failure where it looked and what each said.
pub struct AwsChain {
    environment: SharedCredentialsProvider,
    rest: OnceLock<Vec<(&'static str, SharedCredentialsProvider)>>,
    region: Option<Region>,
    /// Its own (the SDK's providers are async), shut down without waiting
    /// when the chain is dropped: that may happen in async code.
    runtime: OwnRuntime,
}

/// The SDK's provider configuration with an HTTPS client on ring.
fn with_https() -> ProviderConfig {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    ProviderConfig::default().with_http_client(http)
}

/// Where each source looks, for the error when none answers.
const WHERE: &[(&str, &str)] = &[
    (
        "Environment",
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    ),
    (
        "Profile",
        "the profile of AWS_PROFILE (default `default`) in AWS_CONFIG_FILE (~/.aws/config) and AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)",
    ),
    (
        "WebIdentityToken",
        "AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN",
    ),
    (
        "EcsContainer",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ),
    (
        "Ec2InstanceMetadata",
        "EC2 instance metadata (AWS_EC2_METADATA_SERVICE_ENDPOINT, default http://169.254.169.254; off with AWS_EC2_METADATA_DISABLED=true)",
    ),
];

impl AwsChain {
    /// The chain over this process's environment and files. `region`
    /// overrides where the region comes from; else it is found as the SDKs
    /// find it ([`AwsChain::region`]). No request is sent yet, except to
    /// instance metadata for the region when `imds_region` is true and
    /// nothing else names one.
    pub fn load(region: Option<String>, imds_region: bool) -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::host)?;
        let region = match region {
            Some(r) => Some(Region::new(r)),
            None => on_own_thread(&runtime, find_region(imds_region)),
        };
        Ok(AwsChain {
            environment: SharedCredentialsProvider::new(
                aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
            ),
            rest: OnceLock::new(),
            region,
            runtime: OwnRuntime::new(runtime),
        })
    }

    /// The sources after the environment, built when first needed: they
    /// need an HTTPS client, and loading its trust roots costs a process
    /// that has its keys in the environment about 10 ms (measured).
    fn rest(&self) -> &[(&'static str, SharedCredentialsProvider)] {
        self.rest.get_or_init(|| {
            use aws_config::{
                ecs::EcsCredentialsProvider, imds::credentials::ImdsCredentialsProvider,
                profile::ProfileFileCredentialsProvider,
                web_identity_token::WebIdentityTokenCredentialsProvider,
            };
            let conf = with_https().with_region(self.region.clone());
            vec![
                (
                    "Profile",
                    SharedCredentialsProvider::new(
                        ProfileFileCredentialsProvider::builder()
                            .configure(&conf)
                            .build(),
                    ),
                ),
                (
                    "WebIdentityToken",
                    SharedCredentialsProvider::new(
                        WebIdentityTokenCredentialsProvider::builder()
                            .configure(&conf)
                            .build(),
                    ),
                ),
                (
                    "EcsContainer",
                    SharedCredentialsProvider::new(
                        EcsCredentialsProvider::builder().configure(&conf).build(),
                    ),
                ),
                (
                    "Ec2InstanceMetadata",
                    SharedCredentialsProvider::new(
                        ImdsCredentialsProvider::builder().configure(&conf).build(),
                    ),
                ),
            ]
        })
    }

    /// The region: the one given to [`AwsChain::load`], else `AWS_REGION`,
    /// `AWS_DEFAULT_REGION`, the profile's `region`, then (if asked)
    /// instance metadata. `None` when nothing names one.
    pub fn region(&self) -> Option<String> {
        self.region.as_ref().map(|r| r.to_string())
    }
}

async fn find_region(imds_region: bool) -> Option<Region> {
    use aws_config::environment::region::EnvironmentVariableRegionProvider;
    use aws_config::imds::region::ImdsRegionProvider;
    use aws_config::meta::region::ProvideRegion;
    use aws_config::profile::region::ProfileFileRegionProvider;
    if let Some(r) = EnvironmentVariableRegionProvider::new().region().await {
        return Some(r);
    }
    // Reading the profile needs no HTTP client.
    if let Some(r) = ProfileFileRegionProvider::builder()
        .configure(&ProviderConfig::default())
        .build()
        .region()
        .await
    {
        return Some(r);
    }
    if imds_region {
        return ImdsRegionProvider::builder()
            .configure(&with_https())
            .build()
            .region()
            .await;
    }
    None
}

impl CredentialsSource for AwsChain {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        let mut looked = Vec::new();
        // The environment first; the rest are built only if it has no keys.
        if let Some(answer) = self.try_source("Environment", &self.environment, &mut looked) {
            return answer;
        }
        for (name, provider) in self.rest() {
            if let Some(answer) = self.try_source(name, provider, &mut looked) {
                return answer;
            }
        }
        Err(Error::invalid_config(
            "credentials",
            format!(
                "no AWS credentials found; looked in, in order:\n{}",
                looked.join("\n")
            ),
        ))
    }
}

impl AwsChain {
    /// One source's answer: `None` when it is not configured (the next
    /// one is tried, as in the SDK's chain), else its credentials or its
    /// failure (the SDK's chain stops there too).
    fn try_source(
        &self,
        name: &str,
        provider: &SharedCredentialsProvider,
        looked: &mut Vec<String>,
    ) -> Option<Result<FetchedCredentials, Error>> {
        let where_ = WHERE.iter().find(|(n, _)| *n == name).map_or("", |w| w.1);
        match on_own_thread(&self.runtime, provider.provide_credentials()) {
            Ok(c) => Some(Ok(fetched(&c, name))),
            Err(e @ CredentialsError::CredentialsNotLoaded(_)) => {
                looked.push(format!("- {name}, {where_}: {}", causes(&e)));
                None
            }
            Err(e) => {
                looked.push(format!("- {name}, {where_}: FAILED: {}", causes(&e)));
                Some(Err(Error::invalid_config(
                    "credentials",
                    format!(
                        "the {name} credential source failed; looked in, in order:\n{}",
                        looked.join("\n")
                    ),
                )))
            }
        }
    }
}

/// The SDK's credentials as ours, named by the source that gave them.
pub(super) fn fetched(c: &aws_credential_types::Credentials, source: &str) -> FetchedCredentials {
    let mut credentials = Credentials::new(c.access_key_id(), c.secret_access_key());
    // An empty token is no token, as with the variables.
    credentials.session_token = c
        .session_token()
        .filter(|t| !t.is_empty())
        .map(str::to_string);
    FetchedCredentials::new(credentials, c.expiry(), source)
}

/// An error and its causes on one line. The SDK's errors name files,
/// variables and endpoints, never keys or tokens.
pub(super) fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

/// Runs a future to its end on a thread of its own, so that a caller inside
/// some other tokio runtime (an async program calling this sync API) does
/// not make `block_on` panic.
pub(super) fn on_own_thread<F: Future + Send>(
    runtime: &tokio::runtime::Runtime,
    future: F,
) -> F::Output
where
    F::Output: Send,
{
    std::thread::scope(|s| {
        s.spawn(|| runtime.block_on(future))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
