//! The gate's own settings, from its environment (`wasi:cli/environment`):
//!
//! - `S3LEASE_GATE_KEY` (required): `path:/counters/{name}` or
//!   `header:x-tenant` (see [`KeySource`]);
//! - `S3LEASE_GATE_WAIT_MS` (default 5000): how long a request waits for
//!   its key before the gate answers 503;
//! - `S3LEASE_GATE_TTL_MS` (default 10000): the lease's ttl; the WASI 0.3
//!   gate renews it every ttl/3 while the response body streams;
//! - `S3LEASE_GATE_HOLDER` (optional): the start of the holder ids the
//!   gate's leases carry; each request adds one of its own (two requests
//!   under one holder id would take the key over from each other);
//! - `S3LEASE_GATE_FAIR` (`1` or `0`, default `0`): a key's waiting
//!   requests are served in arrival order, across every instance and
//!   server, through the key's fair queue (a semaphore of one slot).
//!
//! The store's variables (`AWS_*`, `S3LEASE_*`) are read by `store`.

use crate::key::KeySource;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub key: KeySource,
    pub wait_ms: u64,
    pub ttl_ms: u64,
    pub holder: Option<String>,
    pub fair: bool,
}

impl Settings {
    /// The holder id of one request's lease: `S3LEASE_GATE_HOLDER` (or
    /// `gate`) and a random suffix, so no two requests share one.
    pub fn holder_id(&self, random: u64) -> String {
        format!("{}-{random:016x}", self.holder.as_deref().unwrap_or("gate"))
    }
}

/// The value of `name` in `env`, if set and not empty.
pub fn var(env: &[(String, String)], name: &str) -> Option<String> {
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
}

/// `Err` says which variable is wrong (the gate's 500).
pub fn settings(env: &[(String, String)]) -> Result<Settings, String> {
    let key = var(env, "S3LEASE_GATE_KEY").ok_or("set S3LEASE_GATE_KEY")?;
    let key = KeySource::parse(&key).map_err(|why| format!("S3LEASE_GATE_KEY: {why}"))?;
    let number = |name: &str, default: u64| match var(env, name) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| format!("{name} is not a number")),
    };
    let ttl_ms = number("S3LEASE_GATE_TTL_MS", 10_000)?;
    if ttl_ms < 1_000 {
        return Err("S3LEASE_GATE_TTL_MS is at least 1000".into());
    }
    let fair = match var(env, "S3LEASE_GATE_FAIR").as_deref() {
        None | Some("0") => false,
        Some("1") => true,
        Some(_) => return Err("S3LEASE_GATE_FAIR is 1 or 0".into()),
    };
    Ok(Settings {
        key,
        fair,
        wait_ms: number("S3LEASE_GATE_WAIT_MS", 5_000)?,
        ttl_ms,
        holder: var(env, "S3LEASE_GATE_HOLDER"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_overrides() {
        let s = settings(&env(&[("S3LEASE_GATE_KEY", "header:x-t")])).unwrap();
        assert_eq!((s.wait_ms, s.ttl_ms, s.holder), (5_000, 10_000, None));
        assert!(!s.fair);
        let s = settings(&env(&[
            ("S3LEASE_GATE_KEY", "header:x-t"),
            ("S3LEASE_GATE_WAIT_MS", "0"),
            ("S3LEASE_GATE_TTL_MS", "3000"),
            ("S3LEASE_GATE_HOLDER", "gate-1"),
            ("S3LEASE_GATE_FAIR", "1"),
        ]))
        .unwrap();
        assert!(s.fair);
        assert_eq!(s.holder_id(255), "gate-1-00000000000000ff");
        assert_eq!((s.wait_ms, s.ttl_ms), (0, 3_000));
        assert_eq!(s.holder.as_deref(), Some("gate-1"));
    }

    #[test]
    fn wrong_settings_name_their_variable() {
        assert!(settings(&[]).unwrap_err().contains("S3LEASE_GATE_KEY"));
        let e = settings(&env(&[
            ("S3LEASE_GATE_KEY", "header:x"),
            ("S3LEASE_GATE_WAIT_MS", "soon"),
        ]))
        .unwrap_err();
        assert!(e.contains("S3LEASE_GATE_WAIT_MS"), "{e}");
        let e = settings(&env(&[
            ("S3LEASE_GATE_KEY", "header:x"),
            ("S3LEASE_GATE_TTL_MS", "10"),
        ]))
        .unwrap_err();
        assert!(e.contains("S3LEASE_GATE_TTL_MS"), "{e}");
        let e = settings(&env(&[
            ("S3LEASE_GATE_KEY", "header:x"),
            ("S3LEASE_GATE_FAIR", "yes"),
        ]))
        .unwrap_err();
        assert!(e.contains("S3LEASE_GATE_FAIR"), "{e}");
    }
}
