//! One error type for everything the host API does.

use crate::bindings::{Error as LeaseError, LockState};
use std::fmt;

/// What went wrong, as a case to branch on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The component's answer (the WIT `error` variant): lost, conflict,
    /// access denied, timeout, fenced, a store error with its code and
    /// request id, ... Host-side configuration problems (a missing
    /// credential) are `LeaseError::InvalidConfig` too.
    Lease(Box<LeaseError>),
    /// The component trapped: a bug in s3-lease. The instance is discarded;
    /// every later call on the same client returns this again.
    Trap(String),
    /// The host could not load, compile or instantiate the component.
    Host(anyhow::Error),
}

impl Error {
    pub(crate) fn invalid_config(field: &str, reason: impl Into<String>) -> Self {
        Error::from(LeaseError::InvalidConfig(
            crate::bindings::exports::s3_lease::lease::types::InvalidConfig {
                field: field.to_string(),
                reason: reason.into(),
            },
        ))
    }

    /// Worth another attempt: the store or the network may recover
    /// (transport errors, repeated 409s, 5xx and 429 replies).
    pub fn is_transient(&self) -> bool {
        match self.lease_error() {
            Some(LeaseError::Transport(_) | LeaseError::Conflict(_)) => true,
            Some(LeaseError::S3(e)) => e.status >= 500 || e.status == 429,
            _ => false,
        }
    }

    /// The component's error, when this is one.
    pub fn lease_error(&self) -> Option<&LeaseError> {
        match self {
            Error::Lease(e) => Some(e),
            _ => None,
        }
    }

    /// As `Display`, with a store's error named after the store in use
    /// (`"S3"`, `"DynamoDB"`): the component reports both stores' errors
    /// in S3's shape, and `Display` cannot know which one answered.
    pub fn on_store<'a>(&'a self, store: &'a str) -> impl fmt::Display + 'a {
        OnStore { error: self, store }
    }
}

struct OnStore<'a> {
    error: &'a Error,
    store: &'a str,
}

impl fmt::Display for OnStore<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.error {
            Error::Lease(e) => fmt::Display::fmt(
                &Describe {
                    error: e,
                    store: self.store,
                },
                f,
            ),
            other => fmt::Display::fmt(other, f),
        }
    }
}

impl From<LeaseError> for Error {
    fn from(e: LeaseError) -> Self {
        Error::Lease(Box::new(e))
    }
}

impl std::error::Error for Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Lease(e) => fmt::Display::fmt(
                &Describe {
                    error: e,
                    store: "S3",
                },
                f,
            ),
            Error::Trap(message) => write!(f, "the s3-lease component trapped (a bug): {message}"),
            Error::Host(e) => write!(f, "{e:#}"),
        }
    }
}

struct Describe<'a> {
    error: &'a LeaseError,
    /// The store's name, for its errors.
    store: &'a str,
}

impl fmt::Display for Describe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s3 = |f: &mut fmt::Formatter<'_>,
                  what: &str,
                  e: &crate::bindings::exports::s3_lease::lease::types::S3Error| {
            write!(f, "{what}: {} {}", e.status, e.code)?;
            if !e.message.is_empty() {
                write!(f, ": {}", e.message)?;
            }
            if !e.request_id.is_empty() {
                write!(f, " (request id {})", e.request_id)?;
            }
            Ok(())
        };
        match self.error {
            LeaseError::Lost(l) => {
                write!(f, "lost the lease on {} (token {})", l.key, l.token)?;
                holder(f, l.current.as_ref())
            }
            LeaseError::Conflict(e) => s3(f, "the store kept answering 409 after re-reads", e),
            LeaseError::ClockSkewed(e) => s3(f, "the store refused this machine's clock", e),
            LeaseError::AccessDenied(e) => {
                s3(f, "access denied (check the credentials and policy)", e)
            }
            LeaseError::NoSuchBucket(e) if e.code == "ResourceNotFoundException" => {
                s3(f, "no such DynamoDB table", e)
            }
            LeaseError::NoSuchBucket(e) => s3(f, "no such bucket", e),
            LeaseError::CorruptLockObject(c) => {
                write!(
                    f,
                    "the lock object {} is not one of ours: {}",
                    c.object_key, c.reason
                )
            }
            LeaseError::S3(e) => s3(f, &format!("{} error", self.store), e),
            LeaseError::Transport(m) => write!(f, "the request did not complete: {m}"),
            LeaseError::InvalidConfig(c) => {
                write!(f, "invalid configuration, {}: {}", c.field, c.reason)
            }
            LeaseError::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            LeaseError::Timeout(t) => {
                write!(f, "gave up on {} after {} ms", t.key, t.waited_ms)?;
                holder(f, t.holder.as_ref())
            }
            LeaseError::Fenced(x) => write!(
                f,
                "fenced: {} was written under token {}, ours is {}",
                x.object_key, x.stored_token, x.our_token
            ),
            LeaseError::StoreUnsafe(r) => {
                use crate::bindings::Verdict;
                let name = r.capability.wit_name();
                let verdict = if r.verdict == Verdict::Unknown {
                    "could not show"
                } else {
                    "failed"
                };
                write!(f, "the store's preflight {verdict} {name}")?;
                if let Some(status) = r.status {
                    write!(f, " (HTTP {status} {})", r.code)?;
                }
                write!(f, ": {}; no lease is granted on it", r.detail)
            }
            LeaseError::LimitMismatch(m) => write!(
                f,
                "{} admits {} holder(s) at once and this call asked for {}: every contender \
                 must use the same limit (it can change once nobody holds or waits for the key)",
                m.key, m.stored, m.requested
            ),
        }
    }
}

fn holder(f: &mut fmt::Formatter<'_>, state: Option<&LockState>) -> fmt::Result {
    match state {
        // A client of another design (seed 003's) records neither.
        Some(s) if s.holder_id.is_empty() && s.token == 0 => {
            write!(f, "; held by a client that records no holder and no token")
        }
        Some(s) if s.holder_id.is_empty() => write!(f, "; token {}", s.token),
        Some(s) => write!(f, "; held by {} with token {}", s.holder_id, s.token),
        None => Ok(()),
    }
}
