//! What the simulation records, and the invariants it checks on it.

use crate::fenced::{META_TOKEN, META_TOMBSTONE};
use crate::testing::linearizability::{self, FencedCall, FencedResult, FinalState, State};
use crate::testing::s3_model::S3Model;
use std::collections::BTreeMap;
use std::fmt;

/// An invariant broken, with what the simulation saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub invariant: &'static str,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.invariant, self.detail)
    }
}

pub fn violation(invariant: &'static str, detail: String) -> Violation {
    Violation { invariant, detail }
}

/// A stretch of sim time in which a client believed it held a key (or,
/// for `semaphore_checks`, one of its slots).
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // `client` is read through `Debug`, in violations.
pub(super) struct Belief {
    pub client: usize,
    pub token: u64,
    pub start: u64,
    pub end: u64,
}

/// An error the injected faults explain: a lost reply or refused
/// connection, or a 409 or 412 that persisted. Anything else failing an
/// operation is a bug.
pub(super) fn is_injected_fault(e: &crate::error::Error) -> bool {
    use crate::error::Error;
    match e {
        Error::Transport(_) | Error::Conflict(_) => true,
        // 429: a throttled DynamoDB call, refused and not applied.
        Error::S3(s) => matches!(s.status, 409 | 412 | 429),
        _ => false,
    }
}

/// Per key: grants in the order they were acknowledged, and beliefs.
#[derive(Debug, Default)]
struct KeyLog {
    /// (reply time, token, client)
    grants: Vec<(u64, u64, usize)>,
    beliefs: Vec<Belief>,
}

#[derive(Debug, Default)]
pub struct History {
    keys: BTreeMap<String, KeyLog>,
    /// Fenced objects' histories, by object key.
    fenced: BTreeMap<String, Vec<linearizability::Operation>>,
}

impl History {
    /// A grant acknowledged at `at`, believed until `end`.
    pub fn granted(
        &mut self,
        key: &str,
        client: usize,
        token: u64,
        at: u64,
        end: u64,
    ) -> Result<(), Violation> {
        let log = self.keys.entry(key.to_string()).or_default();
        if let Some(&(when, last, by)) = log.grants.last() {
            if token <= last {
                return Err(violation(
                    "tokens unique and rising per key",
                    format!(
                        "{key}: client {client} was granted token {token} at {at} ms, after \
                         client {by} was granted token {last} at {when} ms"
                    ),
                ));
            }
        }
        log.grants.push((at, token, client));
        self.believe(key, client, token, at, end)
    }

    /// A renew or release of `token` sent at `sent` succeeded: no higher
    /// token may have been granted (and acknowledged) before it was sent.
    pub fn rewrote(
        &mut self,
        key: &str,
        client: usize,
        token: u64,
        sent: u64,
        what: &str,
    ) -> Result<(), Violation> {
        let log = self.keys.entry(key.to_string()).or_default();
        if let Some(&(when, higher, by)) = log
            .grants
            .iter()
            .find(|(at, t, _)| *t > token && *at < sent)
        {
            return Err(violation(
                "a superseded lease never renews or releases",
                format!(
                    "{key}: client {client}'s {what} of token {token} sent at {sent} ms \
                     succeeded, but client {by} had been granted token {higher} at {when} ms"
                ),
            ));
        }
        Ok(())
    }

    /// `client` believes it holds `token` from `start` to `end`.
    pub fn believe(
        &mut self,
        key: &str,
        client: usize,
        token: u64,
        start: u64,
        end: u64,
    ) -> Result<(), Violation> {
        let log = self.keys.entry(key.to_string()).or_default();
        let new = Belief {
            client,
            token,
            start,
            end,
        };
        if let Some(other) = log
            .beliefs
            .iter()
            .find(|b| b.token != token && b.start < end && start < b.end)
        {
            return Err(violation(
                "no two grants of a key held at once",
                format!("{key}: {new:?} overlaps {other:?} (times in ms of sim time)"),
            ));
        }
        log.beliefs.push(new);
        Ok(())
    }

    /// `client` stops believing it holds `token` at `at` (it released it,
    /// or took the key again and gave the old lease up).
    pub fn stop_believing(&mut self, key: &str, token: u64, at: u64) {
        if let Some(log) = self.keys.get_mut(key) {
            for b in log.beliefs.iter_mut().filter(|b| b.token == token) {
                b.end = b.end.min(at.max(b.start));
            }
        }
    }

    /// Records a fenced call as it starts, outcome unknown; returns its index.
    pub fn fenced_started(
        &mut self,
        object: &str,
        client: usize,
        call: FencedCall,
        at: u64,
    ) -> usize {
        let ops = self.fenced.entry(object.to_string()).or_default();
        ops.push(linearizability::Operation {
            client,
            call,
            result: FencedResult::Unknown,
            start: at,
            end: u64::MAX,
        });
        ops.len() - 1
    }

    pub fn fenced_finished(&mut self, object: &str, index: usize, result: FencedResult, at: u64) {
        if let Some(op) = self
            .fenced
            .get_mut(object)
            .and_then(|ops| ops.get_mut(index))
        {
            op.result = result;
            if result != FencedResult::Unknown {
                op.end = at;
            }
        }
    }

    pub fn fenced_ops(&self, object: &str) -> usize {
        self.fenced.get(object).map_or(0, Vec::len)
    }

    /// Each fenced object's history is linearizable and ends as stored.
    pub fn check_fenced_objects(&self, store: &S3Model) -> Result<(), Violation> {
        for (object, ops) in &self.fenced {
            let final_state = store.object(object).map(|o| {
                let meta = |name: &str| {
                    o.metadata
                        .iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.as_str())
                };
                let tombstone = meta(META_TOMBSTONE) == Some("true");
                FinalState {
                    token: meta(META_TOKEN).and_then(|t| t.parse().ok()),
                    value: if tombstone {
                        None
                    } else {
                        std::str::from_utf8(&o.body)
                            .ok()
                            .and_then(|b| b.strip_prefix('v'))
                            .and_then(|v| v.parse().ok())
                    },
                }
            });
            let final_state = final_state.unwrap_or(FinalState {
                token: None,
                value: None,
            });
            if let Err(v) = linearizability::check(ops, false, State::Absent, Some(final_state)) {
                return Err(violation(
                    "fenced objects accept writes in token order only, and keep every acknowledged write",
                    format!("{object}: {}\nhistory: {ops:#?}", v.explanation),
                ));
            }
        }
        Ok(())
    }
}
