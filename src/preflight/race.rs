//! The race: what one request at a time cannot show. A store can honour
//! every condition when writers come one by one and still let two racing
//! writers both win, by checking a condition and writing in two steps
//! (SeaweedFS did, before its fix; MinIO skipped conditions when a read
//! quorum failed; versitygw's posix backend raced). So the preflight races
//! the store, `ROUNDS` rounds of `WRITERS` writers sent at once:
//!
//! - **creates**: each round, every writer PUTs the same new key with
//!   `If-None-Match: *` and a body of its own; exactly one may win;
//! - **updates**: each round, every writer PUTs the key the first create
//!   round made with `If-Match: <its current ETag>`; exactly one may win.
//!
//! After each round one GET reads the key back: it must hold the winner's
//! body (a refused write that landed anyway, or an accepted one lost, is
//! as bad as two winners), and its ETag names the next update round's
//! condition. A round in which two writers were told they won fails the
//! capability, naming the round; a round without a clear winner (409s,
//! 5xx, no replies) decides nothing, and a capability no round decided is
//! `unknown`. On the other stores the same requests race as the store's
//! own conditional writes (see `stores`).
//!
//! Cost on a store that passes: `ROUNDS` x (`WRITERS` + 1) requests per
//! capability (54), and one DELETE per key raced (3).

use crate::prelude::*;

use super::{Capability, CapabilityResult, Verdict};
use crate::error::Error;
use crate::stores::s3::{Method, S3Request, S3Response};

/// Writers per round.
pub const WRITERS: usize = 8;
/// Rounds per capability.
pub const ROUNDS: u32 = 3;
/// The race's requests on a store that passes, cleanup included.
pub const REQUESTS: u32 = 2 * ROUNDS * (WRITERS as u32 + 1) + ROUNDS;

const MAX_REPLY_BYTES: usize = 64 * 1024;

/// Which race a round belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Create,
    Update,
}

impl Kind {
    fn capability(self) -> Capability {
        match self {
            Kind::Create => Capability::ConcurrentCreate,
            Kind::Update => Capability::ConcurrentUpdate,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Create => "If-None-Match: * creates of one new key",
            Kind::Update => "If-Match updates carrying one ETag",
        }
    }
}

/// What the race is doing now.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// The writers of this round are out.
    Racing(Kind, u32),
    /// The key is being read back after this round.
    Verifying(Kind, u32),
    Done,
}

/// How one round ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Round {
    /// Exactly one winner, and the key holds its body.
    OneWinner,
    /// Nothing clear: no winner was told it won (conflicts, 5xx, no reply).
    Undecided(String),
    /// Two or more winners, or the key holds what no winner wrote.
    Broken { status: u16, detail: String },
}

/// One capability's rounds so far.
#[derive(Debug, Clone, Default)]
struct Tally {
    rounds: Vec<Round>,
}

/// The race, driven by `Preflight`: batches of writers, then a read.
#[derive(Debug, Clone)]
pub struct Race {
    scratch: String,
    nonce: String,
    phase: Phase,
    create: Tally,
    update: Tally,
    /// The round's writers' bodies, in order, while it is judged.
    bodies: Vec<Vec<u8>>,
    /// What each of the round's writers was told.
    told: Vec<Told>,
    /// The winner of the round being verified (its index and ETag).
    winner: Option<(usize, Option<String>)>,
    /// The key the update rounds race on, and its ETag now.
    target: Option<(String, String)>,
    /// Keys that may exist, for the cleanup.
    raced: Vec<String>,
    /// Undecided verdicts and outcomes of this round, while it is judged.
    round_note: Option<Round>,
    pub requests: u32,
}

/// What one writer was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    Won,
    /// A 4xx (412, 409, 429, ...): not applied.
    Refused,
    /// A 5xx or no reply: it may have been applied.
    Unclear,
}

/// What the race wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum RaceStep {
    Send(S3Request),
    SendAll(Vec<S3Request>),
    Done,
}

impl Race {
    pub fn new(scratch: String, nonce: String) -> Self {
        Race {
            scratch,
            nonce,
            phase: Phase::Done,
            create: Tally::default(),
            update: Tally::default(),
            bodies: Vec::new(),
            told: Vec::new(),
            winner: None,
            target: None,
            raced: Vec::new(),
            round_note: None,
            requests: 0,
        }
    }

    fn create_key(&self, round: u32) -> String {
        format!("{}race-{round}", self.scratch)
    }

    fn body(&self, kind: Kind, round: u32, writer: usize) -> Vec<u8> {
        let what = match kind {
            Kind::Create => "create",
            Kind::Update => "update",
        };
        format!(
            "s3-lease preflight {} race {what} round {round} writer {writer}\n",
            self.nonce
        )
        .into_bytes()
    }

    pub fn start(&mut self) -> RaceStep {
        self.race(Kind::Create, 1)
    }

    /// Sends round `round` of `kind`, or moves on when it cannot run.
    fn race(&mut self, kind: Kind, round: u32) -> RaceStep {
        if round > ROUNDS {
            return match kind {
                Kind::Create => self.race(Kind::Update, 1),
                Kind::Update => {
                    self.phase = Phase::Done;
                    RaceStep::Done
                }
            };
        }
        let (key, condition) = match kind {
            Kind::Create => (self.create_key(round), ("if-none-match", "*".to_string())),
            Kind::Update => match &self.target {
                Some((key, etag)) => (key.clone(), ("if-match", etag.clone())),
                // Nothing to race on: no create round left a key we know.
                None => {
                    self.phase = Phase::Done;
                    return RaceStep::Done;
                }
            },
        };
        if !self.raced.contains(&key) {
            self.raced.push(key.clone());
        }
        self.bodies = (0..WRITERS).map(|w| self.body(kind, round, w)).collect();
        let requests: Vec<S3Request> = self
            .bodies
            .iter()
            .map(|body| {
                S3Request::new(Method::Put, &key, MAX_REPLY_BYTES)
                    .body("text/plain", body.clone())
                    .header(condition.0, &condition.1)
            })
            .collect();
        self.requests += requests.len() as u32;
        self.phase = Phase::Racing(kind, round);
        RaceStep::SendAll(requests)
    }

    /// The writers' replies: count the winners, then read the key back.
    pub fn on_replies(&mut self, replies: Vec<Result<S3Response, Error>>) -> RaceStep {
        let Phase::Racing(kind, round) = self.phase.clone() else {
            return RaceStep::Done;
        };
        let mut winners = Vec::new();
        let mut unclear = 0;
        let mut statuses = Vec::new();
        self.told = vec![Told::Unclear; WRITERS];
        for (i, reply) in replies.iter().enumerate().take(WRITERS) {
            let told = match reply {
                Ok(r) if (200..=299).contains(&r.status) => {
                    winners.push((i, r.etag().map(str::to_string), r.status));
                    Told::Won
                }
                Ok(r) if crate::protocol::is_ambiguous(r) => {
                    unclear += 1;
                    Told::Unclear
                }
                Ok(r) => {
                    statuses.push(r.status);
                    Told::Refused
                }
                Err(_) => {
                    unclear += 1;
                    Told::Unclear
                }
            };
            if let Some(slot) = self.told.get_mut(i) {
                *slot = told;
            }
        }
        self.winner = None;
        self.round_note = None;
        match winners.as_slice() {
            [] => {
                let why = if unclear > 0 {
                    format!("{unclear} of {WRITERS} writers got no clear reply and none won")
                } else {
                    format!(
                        "none of {WRITERS} writers won (HTTP {})",
                        statuses_text(&statuses)
                    )
                };
                self.round_note = Some(Round::Undecided(why));
            }
            [(i, etag, _)] => self.winner = Some((*i, etag.clone())),
            [(_, _, status), ..] => {
                self.round_note = Some(Round::Broken {
                    status: *status,
                    detail: format!(
                        "round {round} of {ROUNDS}: {} of {WRITERS} concurrent {} succeeded; \
                         exactly one may. Two holders would each believe they hold the lock",
                        winners.len(),
                        kind.what()
                    ),
                });
            }
        }
        let key = match kind {
            Kind::Create => self.create_key(round),
            Kind::Update => match &self.target {
                Some((key, _)) => key.clone(),
                None => return self.next(kind, round),
            },
        };
        self.requests += 1;
        self.phase = Phase::Verifying(kind, round);
        RaceStep::Send(S3Request::new(Method::Get, &key, MAX_REPLY_BYTES))
    }

    /// The read after a round: the key must hold the winner's body.
    pub fn on_read(&mut self, reply: Result<S3Response, Error>) -> RaceStep {
        let Phase::Verifying(kind, round) = self.phase.clone() else {
            return RaceStep::Done;
        };
        let outcome = self.judge_read(kind, round, reply);
        let tally = match kind {
            Kind::Create => &mut self.create,
            Kind::Update => &mut self.update,
        };
        tally.rounds.push(outcome);
        self.next(kind, round)
    }

    fn next(&mut self, kind: Kind, round: u32) -> RaceStep {
        self.race(kind, round + 1)
    }

    fn judge_read(&mut self, kind: Kind, round: u32, reply: Result<S3Response, Error>) -> Round {
        let note = self.round_note.take();
        // Whatever the round showed, the next update races on what is
        // stored now.
        if let Ok(r) = &reply {
            if let (200, Some(etag)) = (r.status, r.etag()) {
                self.target_after(kind, round, etag.to_string());
            }
        }
        if let Some(broken @ Round::Broken { .. }) = note {
            return broken;
        }
        let read = match reply {
            Ok(r) if r.status == 200 && r.body_too_large.is_none() => {
                Some((r.body.clone(), r.etag().map(str::to_string)))
            }
            Ok(r) if r.status == 404 => None,
            // The read decides nothing; the count stands.
            _ => {
                return match (note, &self.winner) {
                    (Some(undecided), _) => undecided,
                    (None, Some(_)) => Round::OneWinner,
                    (None, None) => Round::Undecided("the key could not be read back".into()),
                }
            }
        };
        let broken = |detail: String| Round::Broken {
            status: 200,
            detail: format!(
                "round {round} of {ROUNDS} of {WRITERS} concurrent {}: {detail}",
                kind.what()
            ),
        };
        let writer = read
            .as_ref()
            .and_then(|(body, _)| self.bodies.iter().position(|b| b == body));
        let told = writer.and_then(|w| self.told.get(w).copied());
        match (&self.winner, read) {
            (Some((w, etag)), Some((_, read_etag))) => {
                if writer != Some(*w) {
                    // Another writer's write landed as well as the winner's
                    // (or the body is no writer's at all).
                    return broken(
                        "the key holds another body than the winner's: a second write landed"
                            .into(),
                    );
                }
                // A read without an ETag: the winner's reply names it.
                if let (None, Some(etag)) = (read_etag, etag) {
                    self.target_after(kind, round, etag.clone());
                }
                Round::OneWinner
            }
            (Some(_), None) => {
                broken("the winner's write is gone: an accepted write was lost".into())
            }
            (None, Some(_)) => {
                if told == Some(Told::Refused) {
                    return broken(
                        "the key holds the body of a writer that was refused: a refused write landed"
                            .into(),
                    );
                }
                note.unwrap_or_else(|| Round::Undecided("no writer won".into()))
            }
            (None, None) => note.unwrap_or_else(|| Round::Undecided("no writer won".into())),
        }
    }

    /// The update rounds race on the first key a create round made, at
    /// the ETag read last.
    fn target_after(&mut self, kind: Kind, round: u32, etag: String) {
        match kind {
            Kind::Create if self.target.is_none() => {
                self.target = Some((self.create_key(round), etag));
            }
            Kind::Update => {
                if let Some((_, current)) = &mut self.target {
                    *current = etag;
                }
            }
            Kind::Create => {}
        }
    }

    /// Keys that may exist now: the cleanup deletes them.
    pub fn raced(&self) -> &[String] {
        &self.raced
    }

    /// A verdict per capability raced.
    pub fn results(&self) -> Vec<CapabilityResult> {
        [(Kind::Create, &self.create), (Kind::Update, &self.update)]
            .into_iter()
            .map(|(kind, tally)| result(kind, tally))
            .collect()
    }
}

fn statuses_text(statuses: &[u16]) -> String {
    let mut seen: Vec<u16> = Vec::new();
    for s in statuses {
        if !seen.contains(s) {
            seen.push(*s);
        }
    }
    crate::text::join(seen.iter().map(|s| s.to_string()), ", ")
}

fn result(kind: Kind, tally: &Tally) -> CapabilityResult {
    let capability = kind.capability();
    let broken = tally.rounds.iter().find_map(|r| match r {
        Round::Broken { status, detail } => Some((*status, detail.clone())),
        _ => None,
    });
    if let Some((status, detail)) = broken {
        return CapabilityResult {
            capability,
            verdict: Verdict::Fail,
            status: Some(status),
            code: String::new(),
            detail,
            silent: true,
        };
    }
    let won = tally
        .rounds
        .iter()
        .filter(|r| **r == Round::OneWinner)
        .count();
    let undecided: Vec<String> = tally
        .rounds
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Round::Undecided(why) => Some(format!("round {}: {why}", i + 1)),
            _ => None,
        })
        .collect();
    let tried = format!(
        "{WRITERS} concurrent {}, {} rounds",
        kind.what(),
        tally.rounds.len()
    );
    let (verdict, detail) = if tally.rounds.is_empty() {
        (
            Verdict::Unknown,
            format!("not raced: no key to race on ({WRITERS} writers per round)"),
        )
    } else if won == 0 {
        (
            Verdict::Unknown,
            format!(
                "{tried}: no round had a clear winner ({})",
                crate::text::join(&undecided, "; ")
            ),
        )
    } else if undecided.is_empty() {
        (
            Verdict::Pass,
            format!("{tried}: exactly one won each round"),
        )
    } else {
        (
            Verdict::Pass,
            format!(
                "{tried}: exactly one won in {won}, the others decided nothing ({})",
                crate::text::join(&undecided, "; ")
            ),
        )
    };
    CapabilityResult {
        capability,
        verdict,
        status: (verdict == Verdict::Pass).then_some(200),
        code: String::new(),
        detail,
        silent: false,
    }
}
