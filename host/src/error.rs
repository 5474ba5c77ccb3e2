//! One error type for everything the crate does: a kind to branch on, and
//! what the store or the component said. No secret is ever in it.

use crate::types::{CapabilityResult, LockState};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What went wrong, as a case to branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The lease was taken over or is gone (`Error::holder` says by whom).
    Lost,
    /// The store kept answering 409 (a busy key) after re-reads.
    Conflict,
    /// The store refused this machine's clock, even after adopting its own.
    ClockSkewed,
    /// The store refused the credentials or the policy denies the call.
    AccessDenied,
    /// No such bucket (or DynamoDB table).
    NoSuchStore,
    /// A lock object that is not one of ours (or not readable).
    CorruptLockObject,
    /// Any other error reply of the store (`Error::status`, `Error::code`).
    Store,
    /// The request did not complete (refused, reset, timed out).
    Transport,
    /// The configuration cannot work (`Error::field` names what).
    InvalidConfig,
    /// An argument cannot work: a bad key, ttl or limit, a lease altered
    /// or not ours. Nothing was written.
    InvalidArgument,
    /// The wait ran out (`Error::holder` names who held the key).
    Timeout,
    /// A fenced write was refused: a newer token already wrote.
    Fenced,
    /// The store preflight found the store unsafe for this configuration.
    StoreUnsafe,
    /// The key is a semaphore of another limit.
    LimitMismatch,
    /// A bug in s3-lease: the component trapped. The instance is discarded.
    Trap,
    /// The host could not load, compile or run the component.
    Host,
}

impl ErrorKind {
    /// Its name in the contract (`lost`, `access-denied`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Lost => "lost",
            ErrorKind::Conflict => "conflict",
            ErrorKind::ClockSkewed => "clock-skewed",
            ErrorKind::AccessDenied => "access-denied",
            ErrorKind::NoSuchStore => "no-such-bucket",
            ErrorKind::CorruptLockObject => "corrupt-lock-object",
            ErrorKind::Store => "s3",
            ErrorKind::Transport => "transport",
            ErrorKind::InvalidConfig => "invalid-config",
            ErrorKind::InvalidArgument => "invalid-argument",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Fenced => "fenced",
            ErrorKind::StoreUnsafe => "store-unsafe",
            ErrorKind::LimitMismatch => "limit-mismatch",
            ErrorKind::Trap => "trap",
            ErrorKind::Host => "host",
        }
    }
}

/// Where an error happened: the store's kind, its endpoint and its bucket
/// (DynamoDB: table; Azure Blob Storage: container), so a person can tell
/// which of several stores to fix. One per client, shared by its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorStore {
    name: &'static str,
    endpoint: String,
    bucket: String,
}

impl ErrorStore {
    /// A store named `name` at `endpoint`, holding the locks in `bucket`
    /// (`StoreConfig::error_store` makes a client's). The endpoint is kept
    /// without user info, query and fragment: an Azure SAS token or a
    /// password may be in them, and errors are printed.
    pub(crate) fn new(name: &'static str, endpoint: &str, bucket: &str) -> Self {
        ErrorStore {
            name,
            endpoint: without_secrets(endpoint),
            bucket: bucket.to_string(),
        }
    }

    /// The store's kind as errors name it: `S3`, `DynamoDB` or `Azure Blob Storage`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The endpoint URL, without user info, query or fragment.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The bucket, DynamoDB table or Azure container.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// What the store calls its bucket.
    fn noun(&self) -> &'static str {
        match self.name {
            "DynamoDB" => "table",
            "Azure Blob Storage" => "container",
            _ => "bucket",
        }
    }
}

/// A URL as it may be printed: no query or fragment (an Azure SAS token is
/// a query) and no `user:password@`.
fn without_secrets(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    let authority_at = url.find("://").map_or(0, |i| i + 3);
    let authority_end = url[authority_at..]
        .find('/')
        .map_or(url.len(), |i| authority_at + i);
    match url[authority_at..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..authority_at], &url[authority_at + at + 1..]),
        None => url.to_string(),
    }
}

/// An error, with what the store or the component said.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    /// Where the store's own errors happened; `None` for the others.
    store: Option<Arc<ErrorStore>>,
    /// Boxed: an error stays two words and a tag wide in a `Result`.
    detail: Box<Detail>,
}

/// What each kind carries.
#[derive(Debug, Clone)]
pub(crate) enum Detail {
    /// A store's error reply.
    Reply(Reply),
    Lost {
        key: String,
        token: u64,
        current: Option<LockState>,
    },
    Corrupt {
        object_key: String,
        reason: String,
    },
    Message(String),
    Config {
        field: String,
        reason: String,
    },
    Timeout {
        key: String,
        waited: Duration,
        holder: Option<LockState>,
    },
    Fenced {
        object_key: String,
        stored_token: u64,
        our_token: u64,
    },
    Unsafe(Box<CapabilityResult>),
    Limit {
        key: String,
        stored: u32,
        requested: u32,
    },
}

/// An error reply of the store.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: u16,
    pub code: String,
    pub message: String,
    pub request_id: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, store: Option<Arc<ErrorStore>>, detail: Detail) -> Self {
        Error {
            kind,
            store,
            detail: Box::new(detail),
        }
    }

    pub(crate) fn invalid_config(field: &str, reason: impl Into<String>) -> Self {
        Error::new(
            ErrorKind::InvalidConfig,
            None,
            Detail::Config {
                field: field.to_string(),
                reason: reason.into(),
            },
        )
    }

    /// What a [`CredentialsSource`](crate::CredentialsSource) of the
    /// caller's own returns when it cannot hand out credentials: an
    /// `InvalidConfig` error on the field `credentials`, as the AWS chain's
    /// failures are. `message` must carry no secret.
    pub fn credentials_failed(message: impl Into<String>) -> Self {
        Error::invalid_config("credentials", message)
    }

    pub(crate) fn host(e: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Host, None, Detail::Message(format!("{e:#}")))
    }

    /// A call that did not complete in time to be of use.
    pub(crate) fn transport(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Transport, None, Detail::Message(message.into()))
    }

    pub(crate) fn trap(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Trap, None, Detail::Message(message.into()))
    }

    pub(crate) fn with_store(mut self, store: &Arc<ErrorStore>) -> Self {
        self.store = Some(store.clone());
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Where the error happened (the store's kind, endpoint and bucket),
    /// for the errors of a client's calls.
    pub fn store(&self) -> Option<&ErrorStore> {
        self.store.as_deref()
    }

    /// The endpoint of the store the error happened at.
    pub fn endpoint(&self) -> Option<&str> {
        self.store().map(ErrorStore::endpoint)
    }

    /// The bucket (DynamoDB table, Azure container) the error happened in.
    pub fn bucket(&self) -> Option<&str> {
        self.store().map(ErrorStore::bucket)
    }

    /// Worth another attempt: the store or the network may recover
    /// (transport errors, repeated 409s, 5xx and 429 replies, and a request
    /// the store or a proxy timed out: a 408, or S3's 400 `RequestTimeout`).
    pub fn is_transient(&self) -> bool {
        match self.kind {
            ErrorKind::Transport | ErrorKind::Conflict => true,
            ErrorKind::Store => self.status().is_some_and(|s| {
                s >= 500
                    || s == 429
                    || s == 408
                    || (s == 400 && self.code() == Some("RequestTimeout"))
            }),
            _ => false,
        }
    }

    /// Who holds the key, when the error says: the current holder of a
    /// lost lease, the last holder seen by a wait that ran out.
    pub fn holder(&self) -> Option<&LockState> {
        match &*self.detail {
            Detail::Lost { current, .. } => current.as_ref(),
            Detail::Timeout { holder, .. } => holder.as_ref(),
            _ => None,
        }
    }

    /// The store's request id, when it answered with an error.
    pub fn request_id(&self) -> Option<&str> {
        match &*self.detail {
            Detail::Reply(r) if !r.request_id.is_empty() => Some(&r.request_id),
            _ => None,
        }
    }

    /// The store's HTTP status, when it answered with an error.
    pub fn status(&self) -> Option<u16> {
        match &*self.detail {
            Detail::Reply(r) => Some(r.status),
            Detail::Unsafe(r) => r.status,
            _ => None,
        }
    }

    /// The store's error code (`AccessDenied`, `NoSuchBucket`, ...).
    pub fn code(&self) -> Option<&str> {
        match &*self.detail {
            Detail::Reply(r) if !r.code.is_empty() => Some(&r.code),
            _ => None,
        }
    }

    /// The configuration field an `InvalidConfig` error is about.
    pub fn field(&self) -> Option<&str> {
        match &*self.detail {
            Detail::Config { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The lease's key, for a lost lease or a wait that ran out.
    pub fn key(&self) -> Option<&str> {
        match &*self.detail {
            Detail::Lost { key, .. } | Detail::Timeout { key, .. } | Detail::Limit { key, .. } => {
                Some(key)
            }
            _ => None,
        }
    }

    /// Our token: of a lost lease, or of a refused fenced write.
    pub fn our_token(&self) -> Option<u64> {
        match &*self.detail {
            Detail::Lost { token, .. } => Some(*token),
            Detail::Fenced { our_token, .. } => Some(*our_token),
            _ => None,
        }
    }

    /// The object a fenced write was refused on, or a corrupt lock object.
    pub fn object_key(&self) -> Option<&str> {
        match &*self.detail {
            Detail::Fenced { object_key, .. } | Detail::Corrupt { object_key, .. } => {
                Some(object_key)
            }
            _ => None,
        }
    }

    /// The token a fenced write found stored (above ours).
    pub fn stored_token(&self) -> Option<u64> {
        match &*self.detail {
            Detail::Fenced { stored_token, .. } => Some(*stored_token),
            _ => None,
        }
    }

    /// The capability a `StoreUnsafe` error names.
    pub fn capability(&self) -> Option<&CapabilityResult> {
        match &*self.detail {
            Detail::Unsafe(r) => Some(r),
            _ => None,
        }
    }

    /// How long a `Timeout` waited.
    pub fn waited(&self) -> Option<Duration> {
        match &*self.detail {
            Detail::Timeout { waited, .. } => Some(*waited),
            _ => None,
        }
    }

    /// The store's error code refused the credentials as expired or
    /// unknown: new credentials may fix it, and the store applied nothing.
    pub(crate) fn refused_credentials(&self) -> bool {
        matches!(self.kind, ErrorKind::AccessDenied | ErrorKind::Store)
            && self.code().is_some_and(|code| {
                matches!(
                    code,
                    "ExpiredToken"
                        | "InvalidToken"
                        | "InvalidAccessKeyId"
                        | "TokenRefreshRequired"
                        | "ExpiredTokenException"
                        | "UnrecognizedClientException"
                        // Azure: an expired or unknown bearer token.
                        | "InvalidAuthenticationInfo"
                )
            })
    }
}

/// The error a held lease's holder gets once past its safe margin.
pub(crate) fn lost(record: &crate::types::LeaseRecord) -> Error {
    Error::new(
        ErrorKind::Lost,
        None,
        Detail::Lost {
            key: record.key.clone(),
            token: record.token,
            current: None,
        },
    )
}

impl std::error::Error for Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let store = self.store.as_deref();
        let name = store.map_or("the store", ErrorStore::name);
        // Where it happened, at the end of a store's error: which endpoint
        // and which bucket to look at.
        let place = |f: &mut fmt::Formatter<'_>| -> fmt::Result {
            match store {
                Some(s) => write!(
                    f,
                    " ({} endpoint {}, {} `{}`)",
                    s.name,
                    s.endpoint,
                    s.noun(),
                    s.bucket
                ),
                None => Ok(()),
            }
        };
        let reply = |f: &mut fmt::Formatter<'_>, what: &str| -> fmt::Result {
            let Detail::Reply(r) = &*self.detail else {
                return f.write_str(what);
            };
            write!(f, "{what}: {} {}", r.status, r.code)?;
            if !r.message.is_empty() {
                write!(f, ": {}", r.message)?;
            }
            if !r.request_id.is_empty() {
                write!(f, " (request id {})", r.request_id)?;
            }
            Ok(())
        };
        match (&self.kind, &*self.detail) {
            (_, Detail::Lost { key, token, current }) => {
                write!(f, "lost the lease on {key} (token {token})")?;
                holder(f, current.as_ref())
            }
            (ErrorKind::Conflict, _) => {
                reply(f, &format!("{name} kept answering 409 after re-reads"))?;
                place(f)
            }
            (ErrorKind::ClockSkewed, _) => {
                reply(f, &format!("{name} refused this machine's clock"))?;
                place(f)
            }
            (ErrorKind::AccessDenied, _) => {
                reply(
                    f,
                    &format!("access denied by {name} (check the credentials and policy)"),
                )?;
                place(f)
            }
            (ErrorKind::NoSuchStore, _) => {
                let what = match store {
                    Some(s) if s.name == "DynamoDB" => {
                        format!("no such DynamoDB table `{}` at {}", s.bucket, s.endpoint)
                    }
                    Some(s) => format!(
                        "no such {} `{}` at {} ({})",
                        s.noun(),
                        s.bucket,
                        s.endpoint,
                        s.name
                    ),
                    None => "no such bucket".to_string(),
                };
                reply(f, &what)
            }
            (_, Detail::Corrupt { object_key, reason }) => {
                write!(f, "the lock object {object_key} is not one of ours: {reason}")?;
                place(f)
            }
            (ErrorKind::Store, _) => {
                reply(f, &format!("{name} error"))?;
                place(f)
            }
            (ErrorKind::Transport, Detail::Message(m)) => {
                write!(f, "the request did not complete: {m}")?;
                place(f)
            }
            (_, Detail::Config { field, reason }) => {
                write!(f, "invalid configuration, {field}: {reason}")
            }
            (ErrorKind::InvalidArgument, Detail::Message(m)) => write!(f, "invalid argument: {m}"),
            (_, Detail::Timeout { key, waited, holder: seen }) => {
                write!(f, "gave up on {key}")?;
                if let Some(s) = store {
                    write!(f, " in {} `{}`", s.noun(), s.bucket)?;
                }
                write!(f, " after {} ms", waited.as_millis())?;
                holder(f, seen.as_ref())
            }
            (
                _,
                Detail::Fenced {
                    object_key,
                    stored_token,
                    our_token,
                },
            ) => write!(
                f,
                "fenced: {object_key} was written under token {stored_token}, ours is {our_token}"
            ),
            (_, Detail::Unsafe(r)) => {
                let verdict = if r.verdict == crate::types::Verdict::Unknown {
                    "could not show"
                } else {
                    "failed"
                };
                write!(f, "the store's preflight {verdict} {}", r.capability.name())?;
                if let Some(status) = r.status {
                    write!(f, " (HTTP {status} {})", r.code)?;
                }
                write!(f, ": {}; no lease is granted on it", r.detail)
            }
            (
                _,
                Detail::Limit {
                    key,
                    stored,
                    requested,
                },
            ) => write!(
                f,
                "{key} admits {stored} holder(s) at once and this call asked for {requested}: every \
                 contender must use the same limit (it can change once nobody holds or waits for the key)"
            ),
            (ErrorKind::Trap, Detail::Message(m)) => {
                write!(f, "the s3-lease component trapped (a bug): {m}")
            }
            (_, Detail::Message(m)) => f.write_str(m),
            (_, Detail::Reply(_)) => {
                reply(f, &format!("{name} error"))?;
                place(f)
            }
        }
    }
}

fn holder(f: &mut fmt::Formatter<'_>, state: Option<&LockState>) -> fmt::Result {
    let Some(s) = state else {
        return Ok(());
    };
    match (&s.holder_id, s.token) {
        (Some(holder), Some(token)) => write!(f, "; held by {holder} with token {token}"),
        (None, Some(token)) => write!(f, "; token {token}"),
        (Some(holder), None) => write!(f, "; held by {holder}"),
        // A client of another design (the dynamodb-lease design's) records neither.
        (None, None) => write!(f, "; held by a client that records no holder and no token"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3() -> Arc<ErrorStore> {
        Arc::new(ErrorStore::new("S3", "http://127.0.0.1:9000", "b"))
    }

    fn reply(kind: ErrorKind, store: &Arc<ErrorStore>, status: u16, code: &str) -> Error {
        Error::new(
            kind,
            Some(store.clone()),
            Detail::Reply(Reply {
                status,
                code: code.into(),
                message: "the message".into(),
                request_id: "req-1".into(),
            }),
        )
    }

    #[test]
    fn each_store_error_names_its_bucket_and_endpoint() {
        let store = s3();
        let errors = [
            reply(ErrorKind::AccessDenied, &store, 403, "AccessDenied"),
            reply(ErrorKind::NoSuchStore, &store, 404, "NoSuchBucket"),
            reply(ErrorKind::Store, &store, 500, "InternalError"),
            reply(ErrorKind::Conflict, &store, 409, "OperationAborted"),
            reply(ErrorKind::ClockSkewed, &store, 403, "RequestTimeTooSkewed"),
            Error::transport("connection refused").with_store(&store),
        ];
        for e in errors {
            let text = e.to_string();
            assert!(text.contains("`b`"), "{text}");
            assert!(text.contains("http://127.0.0.1:9000"), "{text}");
            assert!(text.contains("S3"), "{text}");
            assert_eq!(e.bucket(), Some("b"));
            assert_eq!(e.endpoint(), Some("http://127.0.0.1:9000"));
            assert_eq!(e.store().map(ErrorStore::name), Some("S3"));
        }
        assert_eq!(
            reply(ErrorKind::NoSuchStore, &store, 404, "NoSuchBucket").to_string(),
            "no such bucket `b` at http://127.0.0.1:9000 (S3): 404 NoSuchBucket: the message \
             (request id req-1)"
        );
        assert_eq!(
            Error::transport("connection refused")
                .with_store(&store)
                .to_string(),
            "the request did not complete: connection refused (S3 endpoint \
             http://127.0.0.1:9000, bucket `b`)"
        );
    }

    #[test]
    fn a_timeout_names_the_bucket_and_the_key() {
        let e = crate::component::timeout("jobs/nightly", Duration::from_millis(1500), None)
            .with_store(&s3());
        assert_eq!(
            e.to_string(),
            "gave up on jobs/nightly in bucket `b` after 1500 ms"
        );
    }

    #[test]
    fn dynamodb_names_its_table_and_azure_its_container() {
        let table = Arc::new(ErrorStore::new(
            "DynamoDB",
            "http://127.0.0.1:8000",
            "locks",
        ));
        let text = reply(
            ErrorKind::NoSuchStore,
            &table,
            400,
            "ResourceNotFoundException",
        )
        .to_string();
        assert!(
            text.starts_with("no such DynamoDB table `locks` at http://127.0.0.1:8000"),
            "{text}"
        );
        let text = reply(
            ErrorKind::AccessDenied,
            &table,
            400,
            "AccessDeniedException",
        )
        .to_string();
        assert!(
            text.contains("table `locks`") && text.contains("http://127.0.0.1:8000"),
            "{text}"
        );

        let container = Arc::new(ErrorStore::new(
            "Azure Blob Storage",
            "https://acct.blob.core.windows.net",
            "jobs",
        ));
        let text = reply(ErrorKind::NoSuchStore, &container, 404, "ContainerNotFound").to_string();
        assert!(
            text.starts_with(
                "no such container `jobs` at https://acct.blob.core.windows.net (Azure Blob Storage)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_sas_token_or_password_in_the_endpoint_never_shows() {
        let store = Arc::new(ErrorStore::new(
            "Azure Blob Storage",
            "http://user:hunter2@127.0.0.1:10000/?sv=2022-11-02&sig=S3CR3TSIG#frag",
            "jobs",
        ));
        assert_eq!(store.endpoint(), "http://127.0.0.1:10000/");
        let errors = [
            reply(ErrorKind::AccessDenied, &store, 403, "AuthenticationFailed"),
            reply(ErrorKind::NoSuchStore, &store, 404, "ContainerNotFound"),
            reply(ErrorKind::Store, &store, 500, "InternalError"),
            Error::transport("connection refused").with_store(&store),
        ];
        for e in errors {
            for text in [e.to_string(), format!("{e:?}"), format!("{e:#?}")] {
                assert!(text.contains("127.0.0.1:10000"), "{text}");
                for secret in ["S3CR3TSIG", "sig=", "sv=2022", "hunter2", "frag"] {
                    assert!(!text.contains(secret), "{secret} in {text}");
                }
            }
        }
    }

    #[test]
    fn without_secrets_keeps_the_rest_of_a_url() {
        assert_eq!(
            without_secrets("https://h.example/p/q"),
            "https://h.example/p/q"
        );
        assert_eq!(
            without_secrets("https://h.example?sig=x"),
            "https://h.example"
        );
        assert_eq!(
            without_secrets("https://u@h.example/a@b"),
            "https://h.example/a@b"
        );
        assert_eq!(without_secrets("h.example:9000"), "h.example:9000");
    }

    #[test]
    fn a_request_the_store_timed_out_is_transient_and_no_other_400_is() {
        let store = s3();
        for (status, code) in [(400, "RequestTimeout"), (408, ""), (408, "Http408")] {
            let e = reply(ErrorKind::Store, &store, status, code);
            assert!(e.is_transient(), "{status} {code}");
        }
        for (status, code) in [(400, "InvalidArgument"), (400, ""), (404, "NoSuchKey")] {
            let e = reply(ErrorKind::Store, &store, status, code);
            assert!(!e.is_transient(), "{status} {code}");
        }
    }

    #[test]
    fn an_error_stays_small() {
        // Boxed detail plus a shared store: errors are cheap to return.
        assert!(std::mem::size_of::<Error>() <= 3 * std::mem::size_of::<usize>());
    }
}
