//! Every failure, as a case to branch on: the contract's `error` variant
//! (`wit/lease.wit`), plus this crate's own (the environment, the lease
//! header). No case carries a secret.

use crate::types::LockState;
use std::fmt;
use std::time::Duration;

/// A store's error reply, in S3's terms (every store's replies are read
/// into this shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Error {
    /// The HTTP status, e.g. 403.
    pub status: u16,
    /// The S3 error code, e.g. `AccessDenied`; empty when the body had none.
    pub code: String,
    pub message: String,
    /// `x-amz-request-id`: quote it to AWS support.
    pub request_id: String,
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// `acquire` gave up: the key stayed held for `waited`.
    Timeout {
        key: String,
        waited: Duration,
        /// The holder seen last.
        holder: Option<Box<LockState>>,
    },
    /// The lease is no longer ours: another grant replaced it, or the lock
    /// object was deleted.
    Lost {
        key: String,
        /// Our token, now superseded.
        token: u64,
        /// Who holds the key now, when that could be read.
        current: Option<Box<LockState>>,
    },
    /// A fenced write or delete met a newer token on the object.
    Fenced {
        object_key: String,
        our_token: u64,
        stored_token: u64,
    },
    /// `409 ConditionalRequestConflict` went on after retries.
    Conflict(S3Error),
    /// The server refused this machine's clock (`RequestTimeTooSkewed`).
    ClockSkewed(S3Error),
    /// 403: wrong keys, a refused signature, a policy that denies.
    AccessDenied(S3Error),
    /// The bucket (or the store's table or container) does not exist.
    NoSuchBucket(S3Error),
    /// Any other error reply from the store.
    S3(S3Error),
    /// A lock or token record this library could not read; left untouched.
    CorruptLockObject { object_key: String, reason: String },
    /// The request did not complete: connection refused, DNS, TLS, timeout.
    Transport(String),
    /// The component refused a config field (named), or a call needs a
    /// store the config does not have.
    InvalidConfig { field: String, reason: String },
    /// A call argument was refused: an empty key, a ttl out of range, a
    /// lease altered or sealed under another key.
    InvalidArgument(String),
    /// With preflight configured: the store lacks a capability the
    /// strategy or expiry clock needs (`capability` as the WIT names it).
    StoreUnsafe { capability: String, detail: String },
    /// The key admits another number of holders than asked.
    LimitMismatch {
        key: String,
        stored: u32,
        requested: u32,
    },
    /// `Config::from_env`: a variable it needs is not set (or is empty).
    MissingEnv { name: &'static str },
    /// `Config::from_env`: a variable's value is not one it accepts.
    InvalidEnv {
        name: &'static str,
        /// What it accepts, e.g. "path or virtual-hosted".
        expected: &'static str,
    },
    /// A forwarded lease's header could not be read (see `headers`).
    InvalidHeader { name: &'static str, reason: String },
}

impl Error {
    /// The case's name as the WIT spells it (`fenced`, `lost`,
    /// `access-denied`, ...; `missing-env`, `invalid-env` and
    /// `invalid-header` for this crate's own): for logs and error replies.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Timeout { .. } => "timeout",
            Error::Lost { .. } => "lost",
            Error::Fenced { .. } => "fenced",
            Error::Conflict(_) => "conflict",
            Error::ClockSkewed(_) => "clock-skewed",
            Error::AccessDenied(_) => "access-denied",
            Error::NoSuchBucket(_) => "no-such-bucket",
            Error::S3(_) => "s3",
            Error::CorruptLockObject { .. } => "corrupt-lock-object",
            Error::Transport(_) => "transport",
            Error::InvalidConfig { .. } => "invalid-config",
            Error::InvalidArgument(_) => "invalid-argument",
            Error::StoreUnsafe { .. } => "store-unsafe",
            Error::LimitMismatch { .. } => "limit-mismatch",
            Error::MissingEnv { .. } => "missing-env",
            Error::InvalidEnv { .. } => "invalid-env",
            Error::InvalidHeader { .. } => "invalid-header",
        }
    }
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        s3_lease_keep::records::show_store_error(
            f,
            format_args!("{}", self.status),
            &self.code,
            &self.message,
            &self.request_id,
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Timeout {
                key,
                waited,
                holder,
            } => {
                write!(
                    f,
                    "timeout: {key} stayed held for {} ms",
                    waited.as_millis()
                )?;
                match holder {
                    Some(h) if !h.holder_id.is_empty() => {
                        write!(f, " (by {}, token {})", h.holder_id, h.token)
                    }
                    _ => Ok(()),
                }
            }
            Error::Lost { key, token, .. } => {
                write!(
                    f,
                    "lost: the lease on {key} with token {token} is no longer ours"
                )
            }
            Error::Fenced {
                object_key,
                our_token,
                stored_token,
            } => write!(
                f,
                "fenced: {object_key} was written by token {stored_token}, ours is {our_token}"
            ),
            Error::Conflict(e) => write!(f, "conflict: {e}"),
            Error::ClockSkewed(e) => write!(f, "clock-skewed: {e}"),
            Error::AccessDenied(e) => write!(f, "access-denied: {e}"),
            Error::NoSuchBucket(e) => write!(f, "no-such-bucket: {e}"),
            Error::S3(e) => write!(f, "s3: {e}"),
            Error::CorruptLockObject { object_key, reason } => {
                write!(f, "corrupt-lock-object: {object_key}: {reason}")
            }
            Error::Transport(why) => write!(f, "transport: {why}"),
            Error::InvalidConfig { field, reason } => {
                write!(f, "invalid-config: {field}: {reason}")
            }
            Error::InvalidArgument(why) => write!(f, "invalid-argument: {why}"),
            Error::StoreUnsafe { capability, detail } => {
                write!(f, "store-unsafe: {capability}: {detail}")
            }
            Error::LimitMismatch {
                key,
                stored,
                requested,
            } => write!(
                f,
                "limit-mismatch: {key} admits {stored} holders, {requested} asked"
            ),
            Error::MissingEnv { name } => write!(f, "{name} is not set"),
            Error::InvalidEnv { name, expected } => write!(f, "{name} is not {expected}"),
            Error::InvalidHeader { name, reason } => write!(f, "header {name}: {reason}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every contract case's `code()` is the name `wit/lease.wit` gives it,
    /// and every case of the WIT's `error` has its own here.
    #[test]
    fn codes_are_the_contracts_case_names() {
        let wit = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../wit/lease.wit"));
        let variant = &wit[wit.find("variant error {").expect("the error variant")..];
        let variant = &variant[..variant.find("\n    }").expect("its end")];
        let s3 = || S3Error {
            status: 500,
            code: String::new(),
            message: String::new(),
            request_id: String::new(),
        };
        let text = || String::from("x");
        let contract = [
            Error::Timeout {
                key: text(),
                waited: Duration::ZERO,
                holder: None,
            },
            Error::Lost {
                key: text(),
                token: 1,
                current: None,
            },
            Error::Fenced {
                object_key: text(),
                our_token: 1,
                stored_token: 2,
            },
            Error::Conflict(s3()),
            Error::ClockSkewed(s3()),
            Error::AccessDenied(s3()),
            Error::NoSuchBucket(s3()),
            Error::S3(s3()),
            Error::CorruptLockObject {
                object_key: text(),
                reason: text(),
            },
            Error::Transport(text()),
            Error::InvalidConfig {
                field: text(),
                reason: text(),
            },
            Error::InvalidArgument(text()),
            Error::StoreUnsafe {
                capability: text(),
                detail: text(),
            },
            Error::LimitMismatch {
                key: text(),
                stored: 1,
                requested: 2,
            },
        ];
        for e in &contract {
            let case = format!("\n        {}(", e.code());
            assert!(
                variant.contains(&case),
                "{} is not a case of the WIT",
                e.code()
            );
            assert!(e.to_string().starts_with(e.code()), "{e}");
        }
        // A case the contract gains fails here until it is mirrored.
        let cases = variant
            .lines()
            .filter(|l| l.starts_with("        ") && !l.trim_start().starts_with("//"))
            .filter(|l| l.trim_end().ends_with("),"))
            .count();
        assert_eq!(cases, contract.len(), "{variant}");
    }
}
