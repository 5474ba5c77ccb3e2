//! The same four operations on an Azure Blob container, in the same run as
//! on S3 and DynamoDB: the container `S3LEASE_BENCH_CONTAINER` of the
//! account `AZURE_STORAGE_CONNECTION_STRING` (or the other Azure variables)
//! names, else a container on an Azurite started here.

use anyhow::{Context, Result};
use host_test::azurite::Azurite;
use s3_lease_host::StoreConfig;

/// Where the Azure figures come from, and the server to keep alive.
pub struct Container {
    pub config: StoreConfig,
    pub what: String,
    _server: Option<Azurite>,
}

pub fn container(prefix: &str) -> Result<Container> {
    if let Ok(name) = std::env::var("S3LEASE_BENCH_CONTAINER") {
        let mut config = StoreConfig::from_azure_vars(&name, |var| {
            std::env::var(var).ok().filter(|v| !v.is_empty())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        config.key_prefix = Some(prefix.to_string());
        let what = format!("container {name} at {}", config.endpoint());
        return Ok(Container {
            config,
            what,
            _server: None,
        });
    }
    let server = Azurite::start().context("starting Azurite for the Azure figures")?;
    let config = server.endpoint.host_config(prefix)?;
    Ok(Container {
        what: format!("Azurite 3.37.0 at {}", server.endpoint.url),
        config,
        _server: Some(server),
    })
}
