//! What the function reads from its environment: the S3 endpoint, bucket
//! and credentials (`AWS_*`, `S3LEASE_*`) and the counter's lock timeout
//! and lease ttl. Both builds pass their `wasi:cli/environment` here.

use crate::bindings::s3_lease::lease::types::{AddressingStyle, Config, Credentials};
use crate::reply::Reply;

pub struct Settings {
    pub config: Config,
    pub lock_timeout_ms: u64,
    pub lease_ttl_ms: u64,
}

pub fn settings(env: &[(String, String)]) -> Result<Settings, Reply> {
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let required = |name: &str| {
        var(name).ok_or_else(|| Reply::error(500, "not-configured", &format!("set {name}")))
    };
    let number = |name: &str, default: u64| match var(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| Reply::error(500, "not-configured", &format!("{name} is not a number"))),
    };
    // The host crate's and the command line's rule: an endpoint of your
    // own (`AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`) is addressed by
    // path, AWS's own by virtual host; `S3LEASE_ADDRESSING` overrides.
    let custom_endpoint = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL"));
    let region = var("AWS_REGION").unwrap_or_else(|| "us-east-1".into());
    let addressing = match var("S3LEASE_ADDRESSING").as_deref() {
        Some("path") => AddressingStyle::Path,
        Some("virtual-hosted") => AddressingStyle::VirtualHosted,
        Some(_) => {
            return Err(Reply::error(
                500,
                "not-configured",
                "S3LEASE_ADDRESSING is path or virtual-hosted",
            ))
        }
        None if custom_endpoint.is_some() => AddressingStyle::Path,
        None => AddressingStyle::VirtualHosted,
    };
    let endpoint = custom_endpoint.unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
    Ok(Settings {
        config: Config {
            endpoint,
            region,
            bucket: required("S3LEASE_BUCKET")?,
            addressing,
            credentials: Credentials {
                access_key_id: required("AWS_ACCESS_KEY_ID")?,
                secret_access_key: required("AWS_SECRET_ACCESS_KEY")?,
                session_token: var("AWS_SESSION_TOKEN"),
            },
            key_prefix: var("S3LEASE_KEY_PREFIX"),
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: var("S3LEASE_SEAL_KEY"),
            store: None,
        },
        lock_timeout_ms: number("COUNTER_LOCK_TIMEOUT_MS", 5_000)?,
        lease_ttl_ms: number("COUNTER_LEASE_TTL_MS", 10_000)?,
    })
}
