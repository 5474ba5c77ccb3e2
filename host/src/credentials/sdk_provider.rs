//! The credentials provider of an `aws_config::SdkConfig` a service has
//! already loaded, as a source (feature `aws-sdk-config`).

use super::aws_chain::{causes, fetched, on_own_thread};
use super::{CredentialsSource, FetchedCredentials};
use crate::engine::own_runtime::OwnRuntime;
use crate::error::Error;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};

/// The credentials provider of an [`aws_config::SdkConfig`] a service has
/// already loaded (its own chain, an assumed role, a custom provider), as
/// a [`CredentialsSource`]: each fetch asks the provider, which keeps and
/// refreshes its own cache as the SDK's clients would.
pub struct SdkProvider {
    provider: SharedCredentialsProvider,
    /// Its own, shut down without waiting when dropped (as the chain's).
    runtime: OwnRuntime,
}

impl SdkProvider {
    pub fn new(provider: SharedCredentialsProvider) -> Result<Self, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::host)?;
        Ok(SdkProvider {
            provider,
            runtime: OwnRuntime::new(runtime),
        })
    }
}

impl CredentialsSource for SdkProvider {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        on_own_thread(&self.runtime, self.provider.provide_credentials())
            .map(|c| fetched(&c, "SdkConfig"))
            .map_err(|e| {
                Error::invalid_config(
                    "credentials",
                    format!(
                        "the SdkConfig's credentials provider failed: {}",
                        causes(&e)
                    ),
                )
            })
    }
}
