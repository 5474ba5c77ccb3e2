//! Exit codes: each failure class has its own, so scripts can branch on them.
//! `run` and `elect` otherwise exit with the command's own status (128 + N
//! when a signal N ended it). The codes follow sysexits(3) where one fits.

use s3_lease_host::bindings::Error as LeaseError;
use s3_lease_host::Error;

/// Bad flags or arguments (clap's errors included).
pub const USAGE: i32 = 64;
/// A lease read from stdin or a file is not valid JSON or was altered.
pub const BAD_LEASE: i32 = 65;
/// `fenced get`: the object does not exist (or was fenced-deleted).
pub const NOT_FOUND: i32 = 66;
/// The store failed: an S3 error, a network error, repeated 409s, a corrupt lock object.
pub const STORE: i32 = 69;
/// A bug in s3-lease: the component trapped or could not be loaded.
pub const INTERNAL: i32 = 70;
/// Held too long by someone else: `--wait` ran out (or `--wait 0` found it held).
pub const HELD: i32 = 75;
/// The store refused our credentials (403 AccessDenied and kin).
pub const ACCESS_DENIED: i32 = 77;
/// Configuration: a missing credential, a bad endpoint, an unknown bucket.
pub const CONFIG: i32 = 78;
/// The lock was lost while held: a renew found it taken, or the renew
/// deadline passed; `run` terminated the command.
pub const LOST: i32 = 79;
/// A fenced write or delete was refused: a newer token already wrote.
pub const FENCED: i32 = 80;
/// The store lacks what the lock needs: `preflight` found the configured
/// strategy or expiry clock unsafe on it, or (with `--check-store`) a grant
/// was refused for that reason.
pub const STORE_UNSAFE: i32 = 81;

/// A failure with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::new(code_of(&e), e.to_string())
    }
}

pub fn code_of(e: &Error) -> i32 {
    match e {
        Error::Lease(lease) => match &**lease {
            LeaseError::Lost(_) => LOST,
            LeaseError::Timeout(_) => HELD,
            LeaseError::Fenced(_) => FENCED,
            LeaseError::AccessDenied(_) => ACCESS_DENIED,
            LeaseError::InvalidConfig(_) | LeaseError::NoSuchBucket(_) => CONFIG,
            LeaseError::InvalidArgument(_) => BAD_LEASE,
            // A `--limit` the key's other contenders do not use: a bad flag.
            LeaseError::LimitMismatch(_) => USAGE,
            LeaseError::StoreUnsafe(_) => STORE_UNSAFE,
            LeaseError::Conflict(_)
            | LeaseError::ClockSkewed(_)
            | LeaseError::CorruptLockObject(_)
            | LeaseError::S3(_)
            | LeaseError::Transport(_) => STORE,
        },
        Error::Trap(_) | Error::Host(_) => INTERNAL,
        _ => INTERNAL,
    }
}
