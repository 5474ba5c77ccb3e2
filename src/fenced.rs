//! Fenced writes: S3 objects that refuse a stale lock holder.
//!
//! S3 has no fencing check of its own, so every object written here records
//! the fencing token that wrote it in user metadata, and every write is
//! read → check → conditional write:
//! - HEAD the object: its etag and recorded token (absent: no token);
//! - refuse with `fenced` if the recorded token is higher than ours (or
//!   equal, when asked to);
//! - PUT with `If-Match: <etag read>` (or `If-None-Match: *` when absent),
//!   so any write that landed between our read and our write fails the
//!   condition; then read again and decide again.
//!
//! A delete writes a tombstone that keeps the token, so an older holder can
//! never create the object again. Tombstone bodies carry a random nonce: an
//! S3 etag is the MD5 of the bytes, and tombstones with equal bytes would
//! share an etag, letting a stale `If-Match` pass (see the limits in docs/protocol.md).

use crate::prelude::*;

use crate::error::{Error, S3Error};
use crate::lease::{object_key, Lease};
use crate::protocol::{Operation, Step};
use crate::seal::LockSeal;
use crate::stores::s3::{Method, S3Request, S3Response};

/// The token of the write that stored the object.
pub const META_TOKEN: &str = "x-amz-meta-s3lease-token";
/// The lock whose tokens fence the object: tokens of two locks are not
/// comparable, so a lease of another lock is refused.
pub const META_LOCK: &str = "x-amz-meta-s3lease-lock";
/// The random id of the write that stored the object: after a lost reply,
/// its writer reads it back to learn whether its write landed.
pub const META_WRITE: &str = "x-amz-meta-s3lease-write";
/// `true` on a tombstone left by a fenced delete.
pub const META_TOMBSTONE: &str = "x-amz-meta-s3lease-tombstone";
/// Fenced objects are read and written whole, in the component's memory.
pub const MAX_FENCED_OBJECT_BYTES: usize = 16 * 1024 * 1024;
/// Failed conditions (other writers in between) before giving up with `conflict`.
pub const MAX_FENCE_ATTEMPTS: u32 = 10;
const MAX_CONTENT_TYPE_BYTES: usize = 256;
/// Error replies to HEAD and PUT are small.
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// Who writes: the lease's lock and token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// `lock_identity` of the lease's lock.
    pub lock: String,
    pub token: u64,
    /// Refuse when the recorded token equals ours.
    pub reject_equal: bool,
}

impl Fence {
    /// The fence of a lease, refused (`invalid-argument`) unless a grant of
    /// this lock returned the lease as it is: a caller who raised its token
    /// could otherwise fence out the real holder.
    pub fn for_lease(
        lease: &Lease,
        seal: &LockSeal,
        lock: String,
        reject_equal: bool,
    ) -> Result<Fence, Error> {
        seal.check(lease)?;
        Ok(Fence {
            lock,
            token: lease.token,
            reject_equal,
        })
    }
}

/// Names a lock for `x-amz-meta-s3lease-lock`: strategy and full lock key,
/// percent-encoded so any key fits in an HTTP header.
pub fn lock_identity(strategy: &str, lock_object_key: &str) -> String {
    crate::sigv4::uri_encode(&format!("{strategy}:{lock_object_key}"), true)
}

/// The write id of a fenced write: a digest of the write itself (its
/// lock, token, object, and what it stores; a delete's nonce aside), so
/// the same write sent again as a new call (a caller's retry after a
/// transient error, the host's re-run after refused credentials) carries
/// the same id. When an earlier call's PUT landed unanswered and its
/// read-back failed, the retry then finds its own write by id rather than
/// refusing it as an equal token's (`reject_equal`).
pub fn write_id(fence: &Fence, object_key: &str, change: &Change) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(b"s3-lease fenced write v1");
    field(fence.lock.as_bytes());
    field(&fence.token.to_le_bytes());
    field(object_key.as_bytes());
    match change {
        Change::Put { body, content_type } => {
            field(b"put");
            field(content_type.as_bytes());
            field(body);
        }
        Change::Delete { .. } => field(b"delete"),
    }
    crate::sigv4::hex(&h.finalize()[..8])
}

/// What a fenced write or delete is about to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Put {
        body: Vec<u8>,
        content_type: String,
    },
    /// A tombstone; the nonce makes its bytes (and so its etag) unique.
    Delete {
        nonce: u64,
    },
}

/// The WIT `fenced-write` and `fenced-object` records: defined once for
/// the core, the host crate and the guest crate.
pub use s3_lease_keep::records::{FencedObject, FencedWrite as Written};

/// What an object's metadata says about the write that stored it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Recorded {
    /// 0 for an object written without fencing (a plain PUT).
    token: u64,
    lock: Option<String>,
    tombstone: bool,
    etag: String,
    write_id: Option<String>,
}

fn recorded(object_key: &str, r: &S3Response) -> Result<Recorded, Error> {
    let token = match r.header(META_TOKEN) {
        None => 0,
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            Error::corrupt(
                object_key,
                format!("{META_TOKEN} is {:?}, not a token", snippet(v)),
            )
        })?,
    };
    let etag = r.read_etag(object_key)?;
    Ok(Recorded {
        token,
        lock: r.header(META_LOCK).map(|v| v.trim().to_string()),
        tombstone: r
            .header(META_TOMBSTONE)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        etag,
        write_id: r.header(META_WRITE).map(|v| v.trim().to_string()),
    })
}

fn snippet(v: &str) -> String {
    v.chars().take(40).collect()
}

/// Checks a fenced call's object key: a full key in the bucket.
pub fn fenced_object_key(key: &str) -> Result<String, Error> {
    object_key("", key)
}

// ------------------------------------------------------------ put, delete

/// `fenced-put` and `fenced-delete`.
pub struct FencedWrite {
    object_key: String,
    fence: Fence,
    change: Change,
    write_id: String,
    attempts: u32,
    /// While a PUT is in flight: the token it replaces (`None`: absent).
    writing: Option<Option<u64>>,
    /// A PUT of ours went out without a clear answer, replacing this
    /// token: the next HEAD may show it landed.
    unsure: Option<Option<u64>>,
    /// Why that PUT's fate is unknown: the answer when a newer token has
    /// written since, which hides whether ours landed before it.
    unsure_error: Option<Error>,
}

impl FencedWrite {
    /// `write_id` is recorded on the object (`x-amz-meta-s3lease-write`) so
    /// a write whose reply was lost is recognised when read back.
    pub fn new(
        object_key: String,
        fence: Fence,
        change: Change,
        write_id: String,
    ) -> Result<Self, Error> {
        if fence.token == 0 {
            return Err(Error::InvalidArgument(
                "lease token 0 is not a grant; pass the lease as returned".into(),
            ));
        }
        if let Change::Put { body, content_type } = &change {
            if body.len() > MAX_FENCED_OBJECT_BYTES {
                return Err(Error::InvalidArgument(format!(
                    "body is {} bytes; fenced writes take at most {MAX_FENCED_OBJECT_BYTES}",
                    body.len()
                )));
            }
            check_content_type(content_type)?;
        }
        Ok(FencedWrite {
            object_key,
            fence,
            change,
            write_id,
            attempts: 0,
            writing: None,
            unsure: None,
            unsure_error: None,
        })
    }

    fn head(&self) -> Step<Written> {
        Step::Send(S3Request::new(
            Method::Head,
            &self.object_key,
            MAX_REPLY_BYTES,
        ))
    }

    /// The object holds a write with our write id, under our token.
    fn is_ours(&self, f: &Recorded) -> bool {
        !self.write_id.is_empty()
            && f.token == self.fence.token
            && f.write_id.as_deref() == Some(self.write_id.as_str())
    }

    fn written(&self, f: &Recorded, previous_token: Option<u64>) -> Step<Written> {
        Step::Done(Ok(Written {
            object_key: self.object_key.clone(),
            etag: f.etag.clone(),
            token: self.fence.token,
            previous_token,
        }))
    }

    /// Decides on what the HEAD found, and writes if we may.
    fn decide(&mut self, found: Option<Recorded>) -> Step<Written> {
        // Our earlier write, whose reply was lost, did land.
        if let (Some(previous_token), Some(f)) = (self.unsure, &found) {
            if self.is_ours(f) {
                return self.written(f, previous_token);
            }
        }
        if let Some(found) = &found {
            if let Some(lock) = found.lock.as_deref().filter(|l| *l != self.fence.lock) {
                return Step::Done(Err(Error::InvalidArgument(format!(
                    "{:?} is fenced by lock {lock:?}; this lease is of lock {:?}, whose tokens do not compare",
                    self.object_key, self.fence.lock
                ))));
            }
            let stale = found.token > self.fence.token
                || (found.token == self.fence.token && self.fence.reject_equal);
            // This very write (the same id: `write_id`), landed by an
            // earlier call whose reply and read-back were lost: the equal
            // token is ours, not another write's. What it replaced that
            // call alone saw: the token reported before it is ours.
            if stale && self.is_ours(found) {
                return self.written(found, Some(found.token));
            }
            if stale {
                // Our unanswered PUT may have landed before the newer
                // write: "refused" would be a definite answer we do not
                // have. The fate stays unknown, as the error that hid it.
                if let Some(e) = self.unsure_error.take() {
                    return Step::Done(Err(e));
                }
                return Step::Done(Err(Error::Fenced {
                    object_key: self.object_key.clone(),
                    our_token: self.fence.token,
                    stored_token: found.token,
                }));
            }
        }
        let condition = match &found {
            None => ("if-none-match", "*".to_string()),
            Some(f) => ("if-match", f.etag.clone()),
        };
        let (content_type, body, tombstone) = match &self.change {
            Change::Put { body, content_type } => {
                let content_type = if content_type.is_empty() {
                    "application/octet-stream"
                } else {
                    content_type
                };
                (content_type.to_string(), body.clone(), "false")
            }
            Change::Delete { nonce } => (
                "application/json".to_string(),
                tombstone_body(self.fence.token, *nonce),
                "true",
            ),
        };
        self.writing = Some(found.map(|f| f.token));
        Step::Send(
            S3Request::new(Method::Put, &self.object_key, MAX_REPLY_BYTES)
                .header(condition.0, &condition.1)
                .header(META_TOKEN, &self.fence.token.to_string())
                .header(META_LOCK, &self.fence.lock)
                .header(META_TOMBSTONE, tombstone)
                .header(META_WRITE, &self.write_id)
                .body(&content_type, body),
        )
    }
}

/// What a plain reader finds where a fenced delete happened: a small JSON
/// note, unique per delete.
fn tombstone_body(token: u64, nonce: u64) -> Vec<u8> {
    format!("{{\"s3lease_tombstone\":true,\"token\":{token},\"nonce\":\"{nonce:016x}\"}}")
        .into_bytes()
}

fn check_content_type(content_type: &str) -> Result<(), Error> {
    if content_type.len() > MAX_CONTENT_TYPE_BYTES
        || !content_type.bytes().all(|b| (b' '..=b'~').contains(&b))
    {
        return Err(Error::InvalidArgument(format!(
            "content-type must be at most {MAX_CONTENT_TYPE_BYTES} printable ASCII characters"
        )));
    }
    Ok(())
}

impl Operation for FencedWrite {
    type Output = Written;

    fn start(&mut self, _now_ms: u64) -> Step<Written> {
        self.head()
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Written> {
        let Some(previous_token) = self.writing.take() else {
            return match r.status {
                200 => match recorded(&self.object_key, &r) {
                    Ok(found) => self.decide(Some(found)),
                    Err(e) => Step::Done(Err(e)),
                },
                // A HEAD 404 has no body, so a missing bucket looks the
                // same; the PUT that follows names it.
                404 => self.decide(None),
                _ => Step::Done(Err(r.into_error())),
            };
        };
        match r.status {
            200 => Step::Done(r.written_etag(&self.object_key).map(|etag| Written {
                object_key: self.object_key.clone(),
                etag,
                token: self.fence.token,
                previous_token,
            })),
            // Someone wrote between our read and our write (412; 409 on a
            // busy key; 404 when it was deleted, on AWS): read again.
            _ if matches!(r.status, 409 | 412) || r.is_missing_object() => {
                self.attempts += 1;
                if self.attempts >= MAX_FENCE_ATTEMPTS {
                    let e = r.s3_error();
                    return Step::Done(Err(Error::Conflict(S3Error {
                        message: format!(
                            "the object kept changing: {MAX_FENCE_ATTEMPTS} conditional writes failed; last: {}",
                            e.message
                        ),
                        ..e
                    })));
                }
                self.head()
            }
            _ if crate::protocol::is_ambiguous(&r) => {
                self.unsure_of(previous_token, r.into_error())
            }
            _ => Step::Done(Err(r.into_error())),
        }
    }

    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<Written> {
        match self.writing.take() {
            Some(previous_token) => self.unsure_of(previous_token, error),
            None => Step::Done(Err(error)),
        }
    }
}

impl FencedWrite {
    /// A PUT got no clear answer: read the object back to learn its fate.
    fn unsure_of(&mut self, previous_token: Option<u64>, error: Error) -> Step<Written> {
        self.attempts += 1;
        if self.attempts >= MAX_FENCE_ATTEMPTS {
            return Step::Done(Err(error));
        }
        // Attempts share one write id; a HEAD that finds our id ends the
        // loop, so only the latest attempt can be the one that landed.
        self.unsure = Some(previous_token);
        self.unsure_error = Some(error);
        self.head()
    }
}

// -------------------------------------------------------------------- get

/// `fenced-get`: the object and the token that wrote it.
pub struct FencedGet {
    object_key: String,
}

impl FencedGet {
    pub fn new(object_key: String) -> Self {
        FencedGet { object_key }
    }
}

impl Operation for FencedGet {
    type Output = Option<FencedObject>;

    fn start(&mut self, _now_ms: u64) -> Step<Self::Output> {
        Step::Send(S3Request::new(
            Method::Get,
            &self.object_key,
            MAX_FENCED_OBJECT_BYTES,
        ))
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Self::Output> {
        Step::Done(match r.status {
            404 if r.is_missing_object() => Ok(None),
            200 => self.read(r),
            _ => Err(r.into_error()),
        })
    }
}

impl FencedGet {
    fn read(&self, r: S3Response) -> Result<Option<FencedObject>, Error> {
        if let Some(len) = r.body_too_large {
            return Err(Error::InvalidArgument(format!(
                "{:?} is {len} bytes; fenced-get reads at most {MAX_FENCED_OBJECT_BYTES}",
                self.object_key
            )));
        }
        let found = recorded(&self.object_key, &r)?;
        if found.tombstone {
            return Ok(None);
        }
        Ok(Some(FencedObject {
            object_key: self.object_key.clone(),
            content_type: r.header("content-type").unwrap_or_default().to_string(),
            body: r.body,
            etag: found.etag,
            token: found.token,
        }))
    }
}

#[cfg(test)]
mod tests;
