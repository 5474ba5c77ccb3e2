//! The same four operations on a DynamoDB table, in the same run as on S3:
//! the table named by `S3LEASE_BENCH_TABLE` at `AWS_ENDPOINT_URL_DYNAMODB`
//! (AWS itself, say, with the usual credentials), else a fresh table on a
//! dynalite started here.

use anyhow::{Context, Result};
use host_test::dynalite::Dynalite;
use s3_lease_host::StoreConfig;

/// Where the DynamoDB figures come from, and the server to keep alive.
pub struct Table {
    pub config: StoreConfig,
    pub what: String,
    _server: Option<Dynalite>,
}

pub fn table(prefix: &str) -> Result<Table> {
    if let Ok(name) = std::env::var("S3LEASE_BENCH_TABLE") {
        let mut config = StoreConfig::from_aws("", |var| match var {
            "S3LEASE_STORE" => Some("dynamodb".into()),
            "S3LEASE_TABLE" => Some(name.clone()),
            _ => std::env::var(var).ok().filter(|v| !v.is_empty()),
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        config.key_prefix = Some(prefix.to_string());
        let what = format!("table {name} at {}", config.endpoint());
        return Ok(Table {
            config,
            what,
            _server: None,
        });
    }
    let server = Dynalite::start().context("starting dynalite for the DynamoDB figures")?;
    let table = server.endpoint.fresh_table("bench")?;
    let config = server.endpoint.host_config(&table, prefix)?;
    Ok(Table {
        what: format!("dynalite 4.0.0 at {}", server.endpoint.url),
        config,
        _server: Some(server),
    })
}
