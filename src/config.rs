//! Client configuration, validated once at construction so every later request
//! can be built without failing.

use crate::prelude::*;

use crate::error::Error;
use crate::sigv4::Credentials;
use core::fmt;

mod azure;
mod gcs;

pub use azure::{AzureBlob, AzureCredential};
pub use gcs::{GcsCredential, GCS_MIN_RETRY_PERIOD_MS, GCS_MIN_TTL_MS};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addressing {
    Path,
    VirtualHosted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    SingleObject,
    EpochObjects,
}

impl Strategy {
    /// The WIT name, recorded on fenced objects as part of the lock's identity.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::SingleObject => "single-object",
            Strategy::EpochObjects => "epoch-objects",
        }
    }
}

/// Which rule judges whether an unreleased lease has expired: see `expiry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpiryClock {
    Holder,
    #[default]
    Server,
    Observed,
}

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

/// Where the locks are kept (the WIT `store`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Store {
    /// Objects in the config's bucket.
    #[default]
    S3,
    /// Items in a DynamoDB table (see `dynamodb`).
    DynamoDb { table: String },
    /// Blobs in an Azure Blob Storage container (see `azure`).
    AzureBlob(AzureBlob),
    /// Objects in the config's bucket on Google Cloud Storage, through its
    /// JSON API (see `gcs`).
    Gcs(GcsCredential),
}

impl Store {
    /// The table, for a DynamoDB store.
    pub fn table(&self) -> Option<&str> {
        match self {
            Store::DynamoDb { table } => Some(table),
            Store::S3 | Store::AzureBlob(_) | Store::Gcs(_) => None,
        }
    }

    /// The account and container, for an Azure Blob store.
    pub fn azure(&self) -> Option<&AzureBlob> {
        match self {
            Store::AzureBlob(blob) => Some(blob),
            Store::S3 | Store::DynamoDb { .. } | Store::Gcs(_) => None,
        }
    }

    /// The credential, for a GCS store.
    pub fn gcs(&self) -> Option<&GcsCredential> {
        match self {
            Store::Gcs(credential) => Some(credential),
            Store::S3 | Store::DynamoDb { .. } | Store::AzureBlob(_) => None,
        }
    }

    /// What `config.store` names, for errors: `s3`, `dynamodb`,
    /// `azure-blob`, `gcs`.
    pub fn name(&self) -> &'static str {
        match self {
            Store::S3 => "s3",
            Store::DynamoDb { .. } => "dynamodb",
            Store::AzureBlob(_) => "azure-blob",
            Store::Gcs(_) => "gcs",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

/// The configuration as the caller gave it (the WIT `config` record).
#[derive(Debug, Clone)]
pub struct RawConfig {
    pub endpoint: String,
    pub region: String,
    pub bucket: String,
    pub addressing: Addressing,
    pub credentials: Credentials,
    pub key_prefix: Option<String>,
    pub request_timeout_ms: Option<u32>,
    pub strategy: Option<Strategy>,
    pub expiry_clock: Option<ExpiryClock>,
    /// Run the store preflight before the first grant and refuse to grant
    /// on a store that fails it. Default: false.
    pub preflight: Option<bool>,
    /// A secret the lease seal's key also derives from: only clients with
    /// the same seal key accept each other's leases. Default: none (the
    /// key derives from the bucket alone). See `seal`.
    pub seal_key: Option<SealKey>,
    /// Default: S3 (the bucket).
    pub store: Option<Store>,
    /// Keep the grant log (see `audit`). Default: false.
    pub audit: Option<bool>,
}

/// A configuration known to be usable.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub scheme: Scheme,
    /// `host` or `host:port` of the endpoint, without the bucket.
    pub endpoint_authority: String,
    pub region: String,
    pub bucket: String,
    pub addressing: Addressing,
    pub credentials: Credentials,
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
    /// What the lease seal's key derives from: the bucket, or for a
    /// DynamoDB store its table, for an Azure one its account and
    /// container, for a GCS one `gcs:<bucket>` (`dynamodb:`, `azure:` and
    /// `gcs:` cannot begin a bucket name, so a lease of one store is never
    /// accepted by another).
    pub fn seal_scope(&self) -> String {
        match &self.store {
            Store::S3 => self.bucket.clone(),
            Store::DynamoDb { table } => format!("dynamodb:{table}"),
            Store::AzureBlob(blob) => format!("azure:{}/{}", blob.account, blob.container),
            Store::Gcs(_) => format!("gcs:{}", self.bucket),
        }
    }

    /// A lease's ttl on this store: GCS takes about one write per second
    /// per object, and a lease is renewed every third of its ttl, so a ttl
    /// under `GCS_MIN_TTL_MS` would be throttled (`invalid-config`: the
    /// store makes it so). Any ttl elsewhere.
    pub fn check_ttl(&self, ttl_ms: u64) -> Result<(), Error> {
        if self.store.gcs().is_some() && ttl_ms < GCS_MIN_TTL_MS {
            return Err(Error::invalid_config(
                "store",
                format!(
                    "ttl-ms {ttl_ms} on a gcs store: GCS takes about one write per second per \
                     object and a lease is renewed about every third of its ttl; use at least {GCS_MIN_TTL_MS}"
                ),
            ));
        }
        Ok(())
    }

    /// An elector's retry period on this store: a leader renews every
    /// retry period, so on GCS not more often than once a second.
    pub fn check_retry_period(&self, retry_period_ms: u64) -> Result<(), Error> {
        if self.store.gcs().is_some() && retry_period_ms < GCS_MIN_RETRY_PERIOD_MS {
            return Err(Error::invalid_config(
                "store",
                format!(
                    "retry-period-ms {retry_period_ms} on a gcs store: a leader renews every retry \
                     period and GCS takes about one write per second per object; use at least \
                     {GCS_MIN_RETRY_PERIOD_MS}"
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
        let (scheme, endpoint_authority) = parse_endpoint(&raw.endpoint)?;
        let store = raw.store.unwrap_or_default();
        // Azure and GCS take neither a region nor AWS credentials: their
        // own credential is the store's.
        match &store {
            Store::S3 => check_bucket(&raw.bucket, raw.addressing)?,
            Store::DynamoDb { table } => check_table(table)?,
            Store::AzureBlob(blob) => azure::check(blob)?,
            Store::Gcs(credential) => {
                gcs::check_bucket(&raw.bucket)?;
                gcs::check(credential)?;
            }
        }
        if store.azure().is_none() && store.gcs().is_none() {
            check_region(&raw.region)?;
            check_credentials(&raw.credentials)?;
        }
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
        let on_dynamodb = store.table().is_some();
        if store.azure().is_some() && strategy == Strategy::EpochObjects {
            return Err(Error::invalid_config(
                "strategy",
                "epoch-objects is for S3 stores without If-Match, and lists a bucket by start-after; \
                 Azure has If-Match, and an azure-blob store uses single-object",
            ));
        }
        if store.gcs().is_some() && strategy == Strategy::EpochObjects {
            return Err(Error::invalid_config(
                "strategy",
                "epoch-objects is for S3 stores without If-Match, and lists a bucket by start-after; \
                 GCS has generation preconditions, and a gcs store uses single-object",
            ));
        }
        // DynamoDB stamps no write time on an item: `observed` is the
        // default rule there, and `server` cannot be had.
        let expiry_clock = raw.expiry_clock.unwrap_or(if on_dynamodb {
            ExpiryClock::Observed
        } else {
            ExpiryClock::Server
        });
        if on_dynamodb && strategy == Strategy::EpochObjects {
            return Err(Error::invalid_config(
                "strategy",
                "epoch-objects lists objects in a bucket; a dynamodb store uses single-object",
            ));
        }
        if on_dynamodb && expiry_clock == ExpiryClock::Server {
            return Err(Error::invalid_config(
                "expiry-clock",
                "DynamoDB records no server time of a write; use observed (the default) or holder",
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
            region: raw.region,
            bucket: raw.bucket,
            addressing: raw.addressing,
            credentials: raw.credentials,
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

fn check_region(region: &str) -> Result<(), Error> {
    if region.is_empty() || region.len() > 64 {
        return Err(Error::invalid_config(
            "region",
            "must be 1 to 64 characters, e.g. us-east-1",
        ));
    }
    if !region
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Error::invalid_config(
            "region",
            format!("{region:?}: only letters, digits, '-' and '_'"),
        ));
    }
    Ok(())
}

fn check_bucket(bucket: &str, addressing: Addressing) -> Result<(), Error> {
    if bucket.is_empty() || bucket.len() > 255 {
        return Err(Error::invalid_config(
            "bucket",
            "must be 1 to 255 characters",
        ));
    }
    let dns_safe = bucket.len() >= 3
        && bucket.len() <= 63
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && !bucket.starts_with(['.', '-'])
        && !bucket.ends_with(['.', '-']);
    match addressing {
        Addressing::VirtualHosted if !dns_safe => Err(Error::invalid_config(
            "bucket",
            format!("{bucket:?} is not a DNS-compatible name (3-63 of a-z 0-9 . -), which virtual-hosted addressing needs"),
        )),
        Addressing::Path
            if !bucket
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) =>
        {
            Err(Error::invalid_config(
                "bucket",
                format!("{bucket:?}: only letters, digits, '.', '-' and '_'"),
            ))
        }
        _ => Ok(()),
    }
}

/// DynamoDB's rule for table names: 3 to 255 of letters, digits, `_ - .`.
fn check_table(table: &str) -> Result<(), Error> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if !(3..=255).contains(&table.len()) || !table.chars().all(allowed) {
        return Err(Error::invalid_config(
            "store.dynamodb",
            format!("table {table:?}: must be 3 to 255 of letters, digits, '_', '-' and '.'"),
        ));
    }
    Ok(())
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

/// Also checks the credentials of `set-credentials`.
pub fn check_credentials(c: &Credentials) -> Result<(), Error> {
    // Reasons never repeat a secret value.
    let printable = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic());
    if !printable(&c.access_key_id) {
        return Err(Error::invalid_config(
            "credentials.access-key-id",
            "must be non-empty printable ASCII without spaces",
        ));
    }
    if !printable(&c.secret_access_key) {
        return Err(Error::invalid_config(
            "credentials.secret-access-key",
            "must be non-empty printable ASCII without spaces",
        ));
    }
    if let Some(token) = &c.session_token {
        if !printable(token) {
            return Err(Error::invalid_config(
                "credentials.session-token",
                "must be non-empty printable ASCII without spaces when set",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn raw(endpoint: &str) -> RawConfig {
        RawConfig {
            endpoint: endpoint.into(),
            region: "us-east-1".into(),
            bucket: "locks".into(),
            addressing: Addressing::Path,
            credentials: Credentials {
                access_key_id: "AKID".into(),
                secret_access_key: "very-secret-value".into(),
                session_token: None,
            },
            key_prefix: None,
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: None,
            store: None,
            audit: None,
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
        r.region = "".into();
        assert_eq!(field_of(ClientConfig::validate(r)), "region");
        let mut r = raw("http://h");
        r.bucket = "a/b".into();
        assert_eq!(field_of(ClientConfig::validate(r)), "bucket");
        let mut r = raw("http://h");
        r.bucket = "Upper_Case".into();
        r.addressing = Addressing::VirtualHosted;
        assert_eq!(field_of(ClientConfig::validate(r)), "bucket");
        let mut r = raw("http://h");
        r.credentials.access_key_id = "".into();
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
        r.credentials.secret_access_key = "has space secret".into();
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
