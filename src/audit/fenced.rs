//! `verify --fenced PREFIX`: each fenced object under a prefix whose lock
//! is the key's must carry a token some grant of the key recorded. The
//! objects are listed (S3 and GCS; Azure's and DynamoDB's translations
//! list nothing) and each is read with a HEAD for its token and lock.

use crate::prelude::*;

use super::names::Kind;
use super::read::Log;
use super::verify::{Finding, FindingKind};
use crate::error::Error;
use crate::fenced::{META_LOCK, META_TOKEN};
use crate::protocol::{Operation, Step};
use crate::s3::{self, Method, S3Request, S3Response};

/// Error replies to a HEAD are small.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Objects examined at most in one verify: a bound on its requests.
pub const MAX_FENCED_OBJECTS: usize = 10_000;

/// A fenced object as its HEAD shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    pub object_key: String,
    /// `lock_identity` of the lock that fenced it (empty: none).
    pub lock: String,
    /// 0: written without fencing.
    pub token: u64,
}

enum Phase {
    Listing,
    Heading(usize),
}

/// Lists `prefix` and reads each object's token and lock.
pub struct FencedScan {
    prefix: String,
    keys: Vec<String>,
    found: Vec<Fenced>,
    phase: Phase,
}

impl FencedScan {
    pub fn new(prefix: String) -> Self {
        FencedScan {
            prefix,
            keys: Vec::new(),
            found: Vec::new(),
            phase: Phase::Listing,
        }
    }

    fn head(&mut self, i: usize) -> Step<Vec<Fenced>> {
        match self.keys.get(i) {
            Some(key) => {
                self.phase = Phase::Heading(i);
                Step::Send(S3Request::new(Method::Head, key, MAX_HEAD_BYTES))
            }
            None => Step::Done(Ok(core::mem::take(&mut self.found))),
        }
    }
}

impl Operation for FencedScan {
    type Output = Vec<Fenced>;

    fn start(&mut self, _now_ms: u64) -> Step<Vec<Fenced>> {
        Step::Send(s3::list_request(&self.prefix, None))
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Vec<Fenced>> {
        match self.phase {
            Phase::Listing => {
                if r.status != 200 {
                    return Step::Done(Err(r.into_error()));
                }
                let page = match s3::parse_list(&r.body) {
                    Ok(page) => page,
                    Err(reason) => return Step::Done(Err(Error::corrupt(&self.prefix, reason))),
                };
                self.keys.extend(page.keys);
                match page.next_token {
                    Some(token) if page.truncated && self.keys.len() < MAX_FENCED_OBJECTS => {
                        Step::Send(s3::list_continue(&self.prefix, &token))
                    }
                    _ => {
                        self.keys.truncate(MAX_FENCED_OBJECTS);
                        self.head(0)
                    }
                }
            }
            Phase::Heading(i) => {
                if r.status == 200 {
                    let token = r.header(META_TOKEN).and_then(|t| t.parse().ok());
                    self.found.push(Fenced {
                        object_key: self.keys[i].clone(),
                        lock: r.header(META_LOCK).unwrap_or_default().to_string(),
                        token: token.unwrap_or(0),
                    });
                } else if !r.is_missing_object() {
                    return Step::Done(Err(r.into_error()));
                }
                self.head(i + 1)
            }
        }
    }
}

/// The findings on `objects` of the key whose lock is `lock`: a token no
/// grant in the log recorded (below the log's first token, pruned, it is
/// not judged).
pub fn check(log: &Log, objects: &[Fenced], lock: &str) -> Vec<Finding> {
    objects
        .iter()
        .filter(|o| o.lock == lock && o.token >= log.from.max(1))
        .filter(|o| log.record(o.token, Kind::Grant).is_none())
        .map(|o| Finding {
            kind: FindingKind::FencedUnknownToken,
            token: o.token,
            detail: format!(
                "{:?} was written with token {}, which no grant of the key recorded",
                o.object_key, o.token
            ),
            evidence: vec![o.object_key.clone()],
        })
        .collect()
}
