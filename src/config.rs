//! Client configuration, validated once at construction so every later request
//! can be built without failing: the store (`Store`, one case per store,
//! each checked in its own file) and the settings every store shares.

use crate::prelude::*;

use crate::error::Error;
use crate::stores::s3::{HttpRequest, S3Request, S3Response};
use core::fmt;

pub use crate::stores::aws::check_credentials;
pub use crate::stores::{Credential, Profile, Reach, Scheme, Store};

/// The contract's names for addressing, strategies and expiry clocks,
/// defined once for the core, the host crate and the guest crate.
pub use s3_lease_keep::vocabulary::{Addressing, ExpiryClock, Strategy};

/// The longest `seal-key` accepted, in bytes.
pub const MAX_SEAL_KEY_BYTES: usize = 1024;

/// The configured `seal-key`: a secret shared by the clients that may
/// accept each other's leases (see `seal`). `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey(String);

impl SealKey {
    pub fn new(key: impl Into<String>) -> Self {
        SealKey(key.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(<redacted>)")
    }
}

/// The configuration as the caller gave it (the WIT `config` record).
#[derive(Debug, Clone)]
pub struct RawConfig {
    pub store: Store,
    pub key_prefix: Option<String>,
    pub request_timeout_ms: Option<u32>,
    pub strategy: Option<Strategy>,
    pub expiry_clock: Option<ExpiryClock>,
    /// Run the store preflight before the first grant and refuse to grant
    /// on a store that fails it. Default: false.
    pub preflight: Option<bool>,
    /// A secret the lease seal's key also derives from: only clients with
    /// the same seal key accept each other's leases. Default: none (the
    /// key is kept in the store). See `seal`.
    pub seal_key: Option<SealKey>,
    /// Keep the grant log (see `audit`). Default: false.
    pub audit: Option<bool>,
}

impl RawConfig {
    /// `store` with every shared setting at its default.
    pub fn of(store: Store) -> Self {
        RawConfig {
            store,
            key_prefix: None,
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: None,
            audit: None,
        }
    }
}

/// A configuration known to be usable.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The store's endpoint, parsed.
    pub scheme: Scheme,
    /// `host` or `host:port` of the endpoint, without the bucket.
    pub endpoint_authority: String,
    pub key_prefix: String,
    pub request_timeout_ms: u32,
    pub strategy: Strategy,
    pub expiry_clock: ExpiryClock,
    pub preflight: bool,
    pub seal_key: Option<SealKey>,
    pub store: Store,
    /// The grant log (see `audit`): every grant is followed by a
    /// create-only record of it, every release by one more. Default: off.
    pub audit: bool,
}

impl ClientConfig {
    /// What the store's requests take from this configuration.
    pub fn reach(&self) -> Reach<'_> {
        Reach {
            scheme: self.scheme,
            endpoint_authority: &self.endpoint_authority,
            request_timeout_ms: self.request_timeout_ms,
        }
    }

    /// Signs `req` for the configured store at `unix_seconds`.
    pub fn prepare(&self, req: &S3Request, unix_seconds: u64) -> HttpRequest {
        self.store.prepare(self.reach(), req, unix_seconds)
    }

    /// The store's reply to `prepare(req)`, as the protocol reads replies.
    pub fn read_reply(&self, req: &S3Request, reply: S3Response) -> S3Response {
        self.store.read_reply(req, reply)
    }

    /// What the lease seal's key derives from (see `Store::seal_scope`).
    pub fn seal_scope(&self) -> String {
        self.store.seal_scope()
    }

    /// A lease's ttl on this store: a lease is renewed every third of its
    /// ttl, so on a store that takes one write of an object per
    /// `min_write_interval_ms` (about a second on some), a ttl under four of
    /// those would be throttled (`invalid-config`: the store makes it so).
    /// Any ttl elsewhere.
    pub fn check_ttl(&self, ttl_ms: u64) -> Result<(), Error> {
        let profile = self.store.profile();
        let least = profile.min_write_interval_ms.saturating_mul(4);
        if ttl_ms < least {
            return Err(Error::invalid_config(
                "store",
                format!(
                    "ttl-ms {ttl_ms} on a {} store: it takes about one write per {} ms per \
                     object and a lease is renewed about every third of its ttl; use at least {least}",
                    profile.name, profile.min_write_interval_ms
                ),
            ));
        }
        Ok(())
    }

    /// An elector's retry period on this store: a leader renews every
    /// retry period, so not more often than the store takes writes.
    pub fn check_retry_period(&self, retry_period_ms: u64) -> Result<(), Error> {
        let profile = self.store.profile();
        let least = profile.min_write_interval_ms;
        if retry_period_ms < least {
            return Err(Error::invalid_config(
                "store",
                format!(
                    "retry-period-ms {retry_period_ms} on a {} store: a leader renews every retry \
                     period and it takes about one write per {least} ms per object; use at least \
                     {least}",
                    profile.name
                ),
            ));
        }
        Ok(())
    }
}

pub const DEFAULT_REQUEST_TIMEOUT_MS: u32 = 10_000;
const MAX_REQUEST_TIMEOUT_MS: u32 = 600_000;
const MAX_KEY_PREFIX_BYTES: usize = 512;

impl ClientConfig {
    pub fn validate(raw: RawConfig) -> Result<Self, Error> {
        let (scheme, endpoint_authority) = parse_endpoint(raw.store.endpoint())?;
        let store = raw.store;
        store.check()?;
        let profile = store.profile();
        let key_prefix = raw.key_prefix.unwrap_or_default();
        if key_prefix.len() > MAX_KEY_PREFIX_BYTES {
            return Err(Error::invalid_config(
                "key-prefix",
                format!("{} bytes; at most {MAX_KEY_PREFIX_BYTES}", key_prefix.len()),
            ));
        }
        if key_prefix.chars().any(char::is_control) {
            return Err(Error::invalid_config(
                "key-prefix",
                "contains control characters",
            ));
        }
        if let Some(key) = &raw.seal_key {
            check_seal_key(key)?;
        }
        let request_timeout_ms = raw.request_timeout_ms.unwrap_or(DEFAULT_REQUEST_TIMEOUT_MS);
        if !(1..=MAX_REQUEST_TIMEOUT_MS).contains(&request_timeout_ms) {
            return Err(Error::invalid_config(
                "request-timeout-ms",
                format!("{request_timeout_ms}; must be 1 ..= {MAX_REQUEST_TIMEOUT_MS}"),
            ));
        }
        let strategy = raw.strategy.unwrap_or(Strategy::SingleObject);
        if strategy == Strategy::EpochObjects && !profile.lists_keys {
            return Err(Error::invalid_config(
                "strategy",
                format!(
                    "epoch-objects is for S3 stores without If-Match, and lists a bucket by \
                     start-after; a {} store uses single-object",
                    profile.name
                ),
            ));
        }
        // A store that stamps no write time on what it stores:
        // `observed` is the default rule there, and `server` cannot be had.
        let expiry_clock = raw.expiry_clock.unwrap_or(if profile.records_write_times {
            ExpiryClock::Server
        } else {
            ExpiryClock::Observed
        });
        if expiry_clock == ExpiryClock::Server && !profile.records_write_times {
            return Err(Error::invalid_config(
                "expiry-clock",
                format!(
                    "a {} store records no server time of a write; use observed (the default) \
                     or holder",
                    profile.name
                ),
            ));
        }
        if strategy == Strategy::EpochObjects && expiry_clock == ExpiryClock::Holder {
            return Err(Error::invalid_config(
                "expiry-clock",
                "epoch-objects records no holder expiry; use server or observed",
            ));
        }
        Ok(ClientConfig {
            scheme,
            endpoint_authority,
            key_prefix,
            request_timeout_ms,
            strategy,
            expiry_clock,
            preflight: raw.preflight.unwrap_or(false),
            seal_key: raw.seal_key,
            store,
            audit: raw.audit.unwrap_or(false),
        })
    }
}

fn parse_endpoint(endpoint: &str) -> Result<(Scheme, String), Error> {
    // User information may hold a password: never in an error message.
    let shown = if endpoint.contains('@') {
        "(not shown: it has user information)".to_string()
    } else {
        format!("{endpoint:?}")
    };
    let bad = |reason: &str| Error::invalid_config("endpoint", format!("{shown}: {reason}"));
    let (scheme, rest) = if let Some(rest) = endpoint.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else if let Some(rest) = endpoint.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else {
        return Err(bad("must start with http:// or https://"));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty() {
        return Err(bad("has no host"));
    }
    if authority.contains(['/', '?', '#']) {
        return Err(bad(
            "must not have a path, query or fragment; put the bucket in `bucket`",
        ));
    }
    if authority.contains('@') {
        return Err(bad("must not carry user information; use `credentials`"));
    }
    if !authority
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']' | '_'))
    {
        return Err(bad(
            "host has characters that are not allowed in a host name",
        ));
    }
    // `host:port`, `[v6]` or `[v6]:port`; a port must be a number in range.
    let port = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => Some(&authority[i + 1..]),
        _ => None,
    };
    if let Some(port) = port {
        match port.parse::<u16>() {
            Ok(p) if p > 0 => {}
            _ => return Err(bad("port must be a number from 1 to 65535")),
        }
    }
    // A port alone (`http://:9000`) names no host, and `http://:80` would
    // even leave an empty authority once the default port is dropped below.
    let host = port.map_or(authority, |p| &authority[..authority.len() - p.len() - 1]);
    if host.is_empty() {
        return Err(bad("has no host"));
    }
    // Default ports are left out: the Host header (and so the signature) must
    // match what the host's HTTP stack sends.
    let authority = match (scheme, port) {
        (Scheme::Http, Some("80")) => &authority[..authority.len() - 3],
        (Scheme::Https, Some("443")) => &authority[..authority.len() - 4],
        _ => authority,
    };
    Ok((scheme, authority.to_ascii_lowercase()))
}

fn check_seal_key(key: &SealKey) -> Result<(), Error> {
    // Reasons never repeat the key.
    let len = key.as_str().len();
    if len == 0 || len > MAX_SEAL_KEY_BYTES {
        return Err(Error::invalid_config(
            "seal-key",
            format!("{len} bytes; must be 1 to {MAX_SEAL_KEY_BYTES} when set"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sigv4::Credentials;
    use crate::stores::S3Bucket;

    pub fn raw(endpoint: &str) -> RawConfig {
        RawConfig::of(Store::S3(S3Bucket {
            endpoint: endpoint.into(),
            region: "us-east-1".into(),
            bucket: "locks".into(),
            addressing: Addressing::Path,
            credentials: Credentials {
                access_key_id: "AKID".into(),
                secret_access_key: "very-secret-value".into(),
                session_token: None,
            },
        }))
    }

    /// The S3 bucket of a config `raw` made.
    fn s3(r: &mut RawConfig) -> &mut S3Bucket {
        match &mut r.store {
            Store::S3(bucket) => bucket,
            other => panic!("not an S3 store: {other:?}"),
        }
    }

    fn field_of(r: Result<ClientConfig, Error>) -> String {
        match r {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("expected invalid-config, got {other:?}"),
        }
    }

    #[test]
    fn accepts_endpoints_and_drops_default_ports() {
        let c = ClientConfig::validate(raw("http://127.0.0.1:8333")).unwrap();
        assert_eq!(
            (c.scheme, c.endpoint_authority.as_str()),
            (Scheme::Http, "127.0.0.1:8333")
        );
        let c = ClientConfig::validate(raw("https://S3.eu-west-1.amazonaws.com:443/")).unwrap();
        assert_eq!(c.endpoint_authority, "s3.eu-west-1.amazonaws.com");
        let c = ClientConfig::validate(raw("http://[::1]:9000")).unwrap();
        assert_eq!(c.endpoint_authority, "[::1]:9000");
        assert_eq!(c.request_timeout_ms, DEFAULT_REQUEST_TIMEOUT_MS);
    }

    #[test]
    fn a_password_in_the_endpoint_is_never_shown() {
        for endpoint in [
            "http://user:s3cr3t@h",
            "ftp://user:s3cr3t@h",
            "http://h/p@s3cr3t",
        ] {
            let err = ClientConfig::validate(raw(endpoint)).unwrap_err();
            assert!(!err.to_string().contains("s3cr3t"), "{err}");
        }
    }

    #[test]
    fn names_the_bad_field() {
        for endpoint in [
            "",
            "ftp://x",
            "http://",
            "http://h/bucket",
            "http://u:p@h",
            "http://h:99999",
            "http://h:x",
            "http://h h",
            // Found by tests/parsers_never_panic.rs: a port without a host was
            // accepted, and with a default port left an empty authority.
            "http://:9000",
            "http://:80",
            "https://:443/",
        ] {
            assert_eq!(
                field_of(ClientConfig::validate(raw(endpoint))),
                "endpoint",
                "{endpoint}"
            );
        }
        let mut r = raw("http://h");
        s3(&mut r).region = "".into();
        assert_eq!(field_of(ClientConfig::validate(r)), "region");
        let mut r = raw("http://h");
        s3(&mut r).bucket = "a/b".into();
        assert_eq!(field_of(ClientConfig::validate(r)), "bucket");
        let mut r = raw("http://h");
        s3(&mut r).bucket = "Upper_Case".into();
        s3(&mut r).addressing = Addressing::VirtualHosted;
        assert_eq!(field_of(ClientConfig::validate(r)), "bucket");
        let mut r = raw("http://h");
        s3(&mut r).credentials.access_key_id = "".into();
        assert_eq!(
            field_of(ClientConfig::validate(r)),
            "credentials.access-key-id"
        );
        let mut r = raw("http://h");
        r.request_timeout_ms = Some(0);
        assert_eq!(field_of(ClientConfig::validate(r)), "request-timeout-ms");
        let mut r = raw("http://h");
        r.key_prefix = Some("a\nb".into());
        assert_eq!(field_of(ClientConfig::validate(r)), "key-prefix");
    }

    #[test]
    fn reasons_never_contain_the_secret() {
        let mut r = raw("http://h");
        s3(&mut r).credentials.secret_access_key = "has space secret".into();
        let err = ClientConfig::validate(r).unwrap_err();
        assert!(!format!("{err} {err:?}").contains("has space secret"));
        let ok = ClientConfig::validate(raw("http://h")).unwrap();
        assert!(!format!("{ok:?}").contains("very-secret-value"));
    }

    #[test]
    fn a_seal_key_is_checked_and_never_shown() {
        let mut r = raw("http://h");
        r.seal_key = Some(SealKey::new("seal-key-secret-value"));
        assert!(!format!("{r:?}").contains("seal-key-secret-value"));
        let ok = ClientConfig::validate(r).unwrap();
        let shown = format!("{ok:?}");
        assert!(
            !shown.contains("seal-key-secret-value") && shown.contains("<redacted>"),
            "{shown}"
        );
        for bad in [String::new(), "x".repeat(MAX_SEAL_KEY_BYTES + 1)] {
            let mut r = raw("http://h");
            r.seal_key = Some(SealKey::new(bad.clone()));
            let err = ClientConfig::validate(r);
            let shown = format!("{err:?}");
            assert_eq!(field_of(err), "seal-key");
            assert!(bad.is_empty() || !shown.contains(&bad));
        }
        let mut r = raw("http://h");
        r.seal_key = Some(SealKey::new("k".repeat(MAX_SEAL_KEY_BYTES)));
        ClientConfig::validate(r).unwrap();
    }
}
