//! One error enum for the whole crate, mirroring the WIT `error` variant so the
//! component boundary is a plain field-by-field conversion.

use crate::prelude::*;

use crate::capability::{CapabilityResult, Verdict};
use crate::lock_object::LockState;
use core::fmt;

/// An error reply from S3 (or from whatever answered in its place).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct S3Error {
    pub status: u16,
    pub code: String,
    pub message: String,
    pub request_id: String,
}

impl S3Error {
    /// The store (or a proxy before it) timed the request out before it
    /// had all of it: S3's 400 `RequestTimeout` (the body came too slowly;
    /// the AWS SDKs retry it), a 408 (which stores with JSON APIs list as
    /// retryable, and load balancers send). Worth another attempt; a write so
    /// answered is still read back, as after a 5xx (`is_ambiguous`).
    pub fn is_request_timeout(&self) -> bool {
        self.status == 408 || (self.status == 400 && self.code == "RequestTimeout")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Lost {
        key: String,
        token: u64,
        current: Option<Box<LockState>>,
    },
    Conflict(S3Error),
    /// The server refused our signing time even after we adopted its clock.
    ClockSkewed(S3Error),
    AccessDenied(S3Error),
    NoSuchBucket(S3Error),
    CorruptLockObject {
        object_key: String,
        reason: String,
    },
    S3(S3Error),
    Transport(String),
    InvalidConfig {
        field: String,
        reason: String,
    },
    InvalidArgument(String),
    Timeout {
        key: String,
        waited_ms: u64,
        holder: Option<Box<LockState>>,
    },
    Fenced {
        object_key: String,
        our_token: u64,
        stored_token: u64,
    },
    /// The client was configured to preflight its store, and the store
    /// lacks a capability its strategy or expiry clock needs (or it could
    /// not be shown to have it): no lease is granted.
    StoreUnsafe(Box<CapabilityResult>),
    /// The key is a semaphore (or lock) of another limit than the caller
    /// asked for, and someone holds or waits for it; a plain lock counts
    /// as limit 1. Nothing was written.
    LimitMismatch {
        key: String,
        stored: u32,
        requested: u32,
    },
}

impl Error {
    pub fn invalid_config(field: &str, reason: impl Into<String>) -> Self {
        Error::InvalidConfig {
            field: field.to_string(),
            reason: reason.into(),
        }
    }

    pub fn corrupt(object_key: &str, reason: impl Into<String>) -> Self {
        Error::CorruptLockObject {
            object_key: object_key.to_string(),
            reason: reason.into(),
        }
    }

    /// Worth another attempt within `acquire`'s deadline: the store or the
    /// network may recover (a 5xx, a 429, a request the store timed out).
    /// Access, config and corruption problems will not.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Transport(_) | Error::Conflict(_) => true,
            Error::S3(e) => e.status >= 500 || e.status == 429 || e.is_request_timeout(),
            _ => false,
        }
    }
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        s3_lease_keep::records::show_store_error(
            f,
            format_args!("HTTP {}", self.status),
            &self.code,
            &self.message,
            &self.request_id,
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Lost { key, token, current } => {
                write!(f, "lease on {key:?} with token {token} was lost")?;
                if let Some(c) = current {
                    write!(f, "; now held by {:?} with token {}", c.record.holder_id, c.record.token)?;
                }
                Ok(())
            }
            Error::Conflict(e) => write!(f, "conflicting concurrent writes: {e}"),
            Error::ClockSkewed(e) => write!(
                f,
                "the server refused this machine's clock (more than 15 minutes off): {e}"
            ),
            Error::AccessDenied(e) => write!(f, "access denied: {e}"),
            // The place a store keeps its locks, by the code its
            // translation keeps for a missing one (`S3Response::into_error`):
            // the error itself names the store.
            Error::NoSuchBucket(e) => {
                let place = match e.code.as_str() {
                    "ResourceNotFoundException" => "table",
                    "ContainerNotFound" => "container",
                    _ => "bucket",
                };
                write!(f, "no such {place}: {e}")
            }
            Error::CorruptLockObject { object_key, reason } => {
                write!(f, "lock object {object_key:?} is not readable: {reason}")
            }
            Error::S3(e) => write!(f, "S3 error: {e}"),
            Error::Transport(reason) => write!(f, "transport error: {reason}"),
            Error::InvalidConfig { field, reason } => write!(f, "invalid config {field}: {reason}"),
            Error::InvalidArgument(reason) => write!(f, "invalid argument: {reason}"),
            Error::Timeout { key, waited_ms, holder } => {
                write!(f, "gave up on {key:?} after {waited_ms} ms")?;
                if let Some(h) = holder {
                    write!(f, "; held by {:?} with token {}", h.record.holder_id, h.record.token)?;
                }
                Ok(())
            }
            Error::Fenced {
                object_key,
                our_token,
                stored_token,
            } => write!(
                f,
                "write to {object_key:?} with token {our_token} refused: token {stored_token} already wrote"
            ),
            Error::LimitMismatch {
                key,
                stored,
                requested,
            } => write!(
                f,
                "{key:?} admits {stored} holder(s) at once, and this call asked for a limit of \
                 {requested}: every contender must use the same limit (it can change once \
                 nobody holds or waits for the key)"
            ),
            Error::StoreUnsafe(r) => {
                let verdict = match r.verdict {
                    Verdict::Fail => "failed",
                    Verdict::Unknown => "could not be shown",
                    Verdict::Pass => "passed",
                };
                write!(f, "the store's preflight {verdict} {}", r.capability.name())?;
                if let Some(status) = r.status {
                    write!(f, " (HTTP {status}")?;
                    if !r.code.is_empty() {
                        write!(f, " {}", r.code)?;
                    }
                    write!(f, ")")?;
                }
                write!(f, ": {}; no lease is granted on it", r.detail)
            }
        }
    }
}

impl core::error::Error for Error {}
