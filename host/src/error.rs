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
    /// No such bucket (or table, or container).
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
/// (or table, or container: as the store calls it), so a person can tell
/// which of several stores to fix. One per client, shared by its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorStore {
    name: &'static str,
    /// What the store calls its bucket (`table`, say).
    noun: &'static str,
    endpoint: String,
    bucket: String,
}

impl ErrorStore {
    /// A store named `name` at `endpoint`, holding the locks in the
    /// `noun` (`bucket`, `table`) called `bucket` (`StoreConfig::error_store`
    /// makes a client's). The endpoint is kept without user info, query and
    /// fragment: a signed URL's token or a password may be in them, and
    /// errors are printed.
    pub(crate) fn new(
        name: &'static str,
        noun: &'static str,
        endpoint: &str,
        bucket: &str,
    ) -> Self {
        ErrorStore {
            name,
            noun,
            endpoint: without_secrets(endpoint),
            bucket: bucket.to_string(),
        }
    }

    /// The store's kind as errors name it (`S3`, say).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The endpoint URL, without user info, query or fragment.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The bucket (or table, or container) the locks are kept in.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// What the store calls its bucket (`table`, say).
    pub fn noun(&self) -> &'static str {
        self.noun
    }
}

/// A URL as it may be printed: no query or fragment (a shared access
/// signature is a query) and no `user:password@`.
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

    /// The bucket (or table, or container) the error happened in.
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
                        // An expired or unknown bearer token.
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
                    Some(s) => format!(
                        "no such {} `{}` at {} ({})",
                        s.noun,
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
        // A client of another design (a lease table's) records neither.
        (None, None) => write!(f, "; held by a client that records no holder and no token"),
    }
}

#[cfg(test)]
mod tests;
