//! The store the gate's client talks to, from the same variables as the
//! other s3-lease guests read: `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`,
//! `AWS_REGION` (default us-east-1), `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `S3LEASE_BUCKET`,
//! `S3LEASE_KEY_PREFIX`, `S3LEASE_ADDRESSING` (path or virtual-hosted) and
//! `S3LEASE_SEAL_KEY`.
//!
//! Kept small and apart so it can give way to the guest crate's
//! `Config::from_env` once that is in the tree.

use crate::bindings::s3_lease::lease::types::{AddressingStyle, Config, Credentials};
use crate::settings::var;

/// `Err` names the variable that is missing or wrong.
pub fn config(env: &[(String, String)]) -> Result<Config, String> {
    let required = |name: &str| var(env, name).ok_or_else(|| format!("set {name}"));
    // An endpoint of your own is addressed by path, AWS's own by virtual
    // host (the host crate's rule); `S3LEASE_ADDRESSING` overrides.
    let custom_endpoint = var(env, "AWS_ENDPOINT_URL_S3").or_else(|| var(env, "AWS_ENDPOINT_URL"));
    let region = var(env, "AWS_REGION").unwrap_or_else(|| "us-east-1".into());
    let addressing = match var(env, "S3LEASE_ADDRESSING").as_deref() {
        Some("path") => AddressingStyle::Path,
        Some("virtual-hosted") => AddressingStyle::VirtualHosted,
        Some(_) => return Err("S3LEASE_ADDRESSING is path or virtual-hosted".into()),
        None if custom_endpoint.is_some() => AddressingStyle::Path,
        None => AddressingStyle::VirtualHosted,
    };
    let endpoint = custom_endpoint.unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
    Ok(Config {
        endpoint,
        region,
        bucket: required("S3LEASE_BUCKET")?,
        addressing,
        credentials: Credentials {
            access_key_id: required("AWS_ACCESS_KEY_ID")?,
            secret_access_key: required("AWS_SECRET_ACCESS_KEY")?,
            session_token: var(env, "AWS_SESSION_TOKEN"),
        },
        key_prefix: var(env, "S3LEASE_KEY_PREFIX"),
        request_timeout_ms: None,
        strategy: None,
        expiry_clock: None,
        preflight: None,
        seal_key: var(env, "S3LEASE_SEAL_KEY"),
        store: None,
    })
}
