//! Exit codes: each failure class has its own, so scripts can branch on them.
//! `run` and `elect` otherwise exit with the command's own status (128 + N
//! when a signal N ended it). The codes follow sysexits(3) where one fits.

use s3_lease_host::{Error, ErrorKind};

/// Bad flags or arguments (clap's errors included).
pub const USAGE: i32 = 64;
/// A lease read from stdin or a file is not valid JSON or was altered.
pub const BAD_LEASE: i32 = 65;
/// `fenced get`: the object does not exist (or was fenced-deleted).
pub const NOT_FOUND: i32 = 66;
/// The store failed: the store's error, the network, repeated 409s,
/// a corrupt lock object, a request the store refused as invalid.
pub const STORE: i32 = 69;
/// A bug in s3-lease: the component trapped or could not be loaded.
pub const INTERNAL: i32 = 70;
/// `precompile`: the output file could not be written.
pub const CANT_CREATE: i32 = 73;
/// Held by someone else: `--wait` ran out (or `--wait 0` found it held).
pub const HELD: i32 = 75;
/// The store refused our credentials (403 AccessDenied and kin).
pub const ACCESS_DENIED: i32 = 77;
/// Configuration: a missing credential, a bad endpoint, no such bucket or table.
pub const CONFIG: i32 = 78;
/// The lease is no longer ours: lost while `run` or `elect` held it (the
/// command was stopped), or, for `renew` and `release`, taken over by a
/// later token or released.
pub const LOST: i32 = 79;
/// A fenced write or delete was refused: a newer token already wrote.
pub const FENCED: i32 = 80;
/// The store lacks what the lock needs: `preflight` found the configured
/// strategy or expiry clock unsafe on it, or (with `--check-store`) a grant
/// was refused for that reason.
pub const STORE_UNSAFE: i32 = 81;
/// `audit verify`: the grant log shows two holders at once, or one token
/// granted twice.
pub const AUDIT_OVERLAP: i32 = 82;
/// `audit verify`: the grant log cannot prove that no two holders
/// overlapped (a gap no record explains, an unreadable record, a takeover
/// the store's clock does not show over, a fenced object's unknown token).
pub const AUDIT_UNPROVEN: i32 = 83;

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
    /// The host's message names the store, its endpoint and its bucket
    /// (table, container) where that helps.
    fn from(e: Error) -> Self {
        Failure::new(code_of(&e), e.to_string())
    }
}

pub fn code_of(e: &Error) -> i32 {
    match e.kind() {
        ErrorKind::Lost => LOST,
        ErrorKind::Timeout => HELD,
        ErrorKind::Fenced => FENCED,
        ErrorKind::AccessDenied => ACCESS_DENIED,
        ErrorKind::InvalidConfig | ErrorKind::NoSuchStore => CONFIG,
        // The commands that read a lease say so (`about_lease`); the
        // others pass only flags and arguments.
        ErrorKind::InvalidArgument => USAGE,
        // A `--limit` the key's other contenders do not use: a bad flag.
        ErrorKind::LimitMismatch => USAGE,
        ErrorKind::StoreUnsafe => STORE_UNSAFE,
        ErrorKind::Conflict
        | ErrorKind::ClockSkewed
        | ErrorKind::CorruptLockObject
        | ErrorKind::Store
        | ErrorKind::Transport => STORE,
        _ => INTERNAL,
    }
}

/// For `renew`, `release` and the fenced writes, whose arguments were
/// checked before the call: an invalid argument is the lease they read.
pub fn about_lease(e: Error) -> Failure {
    let mut failure = Failure::from(e);
    if failure.code == USAGE {
        failure.code = BAD_LEASE;
    }
    failure
}

/// Retrying cannot fix it: no such bucket or table, credentials or a
/// policy refused, a corrupt lock object, a request the store rejects as
/// invalid, a bad configuration, a bug. (Transport errors, 409s, 5xx and
/// 429 replies are worth another attempt; so are a request the store timed
/// out, 408 or S3's 400 `RequestTimeout`, and a refused clock, which time
/// synchronization fixes.)
pub fn is_permanent(e: &Error) -> bool {
    let retried = match e.kind() {
        ErrorKind::ClockSkewed => true,
        ErrorKind::Store => e.status() == Some(408) || e.code() == Some("RequestTimeout"),
        _ => false,
    };
    !e.is_transient() && !retried
}
