//! The store preflight: real requests under a scratch prefix that find out
//! whether an S3-compatible store has what a lock rests on, and so which
//! strategies and expiry clocks are safe on it. Stores differ exactly there:
//! some ignore `If-Match` or `If-None-Match` (every writer wins), some
//! answer 501, some 404 where others 412.
//!
//! A sans-IO `Operation` like the protocol's: it emits requests, reads
//! replies, and is told the time at each step. The probes run in a fixed
//! order (see `Phase`); a probe whose object could not be set up is skipped
//! and its capability reported `unknown`. Every object it created is
//! deleted at the end. Reading the replies into verdicts is `findings`;
//! deciding what is safe is `verdict`.

use crate::prelude::*;

mod findings;
mod lifecycle;
mod offset;
mod race;
mod verdict;

#[cfg(test)]
mod tests;

pub use crate::capability::{Capability, CapabilityResult, Verdict};
pub use offset::ClockOffset;
pub use race::{REQUESTS as RACE_REQUESTS, ROUNDS as RACE_ROUNDS, WRITERS as RACE_WRITERS};
pub use verdict::{Gate, Verdicts};

use crate::config::Strategy;
use crate::error::Error;
use crate::expiry::{server_time, ExpiryClock};
use crate::protocol::{Operation, Step};
use crate::sigv4;
use crate::stores::s3::dialects::{self, Dialect};
use crate::stores::s3::{self, list_request, Method, S3Request, S3Response};
use crate::stores::table_checks;
use crate::stores::{LifecycleRules, Profile, Store};
use offset::OffsetBounds;
use race::{Race, RaceStep};

/// What the preflight found: the contract's record, defined once in keep.
/// What it means for a configuration: [`Verdicts`].
pub use s3_lease_keep::records::PreflightReport as Report;

/// The probes, in the order they run. `a` and `b` are scratch objects the
/// preflight creates; `c` never exists; `d` exists only if the store
/// accepts a body with a wrong hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// S3 only: GET c (it never exists). Before anything is written: some
    /// stores create a missing bucket on the first PUT, and a probe must
    /// find the bucket missing, not make it.
    BucketExists,
    /// A store whose lifecycle rules can be read: the bucket's rules (a note for each that
    /// deletes objects under the key prefix; see `lifecycle`).
    Lifecycle,
    /// A table store only: its description, for the key schema.
    DescribeTable,
    /// A table store only: its TTL's description.
    DescribeTtl,
    /// PUT a, `If-None-Match: *`: must be accepted.
    CreateFirst,
    /// PUT b, `If-None-Match: *`: a second key for the LIST.
    CreateSecond,
    /// PUT a again, `If-None-Match: *`: must be refused.
    CreateExisting,
    /// PUT a, `If-Match: <wrong>`: must be refused.
    PutWrongEtag,
    /// PUT a, `If-Match: <a's ETag>`: must be accepted, with a new ETag.
    PutRightEtag,
    /// PUT c, `If-Match: <wrong>`: must be refused (404 or 412).
    PutMissingKey,
    /// GET a, `If-None-Match: <wrong>`: the object, with its dates.
    GetOtherEtag,
    /// GET a, `If-None-Match: <a's ETag>`: 304.
    GetSameEtag,
    /// LIST the scratch prefix after a: b, and not a.
    ListAfter,
    /// PUT d declaring the hash of other bytes: must be refused.
    WrongHash,
    /// DELETE a, `If-Match: <wrong>`: must be refused.
    DeleteWrongEtag,
    /// DELETE a, `If-Match: <a's ETag>`: must be accepted.
    DeleteRightEtag,
}

impl Phase {
    /// The request, for details a reader can follow.
    fn label(self) -> &'static str {
        match self {
            Phase::BucketExists => "GET (missing key: does the bucket exist?)",
            Phase::Lifecycle => "GET ?lifecycle (the bucket's lifecycle rules)",
            Phase::DescribeTable => "DescribeTable",
            Phase::DescribeTtl => "DescribeTimeToLive",
            Phase::CreateFirst => "PUT If-None-Match: * (new key)",
            Phase::CreateSecond => "PUT If-None-Match: * (second key)",
            Phase::CreateExisting => "PUT If-None-Match: * (existing key)",
            Phase::PutWrongEtag => "PUT If-Match (wrong ETag)",
            Phase::PutRightEtag => "PUT If-Match (right ETag)",
            Phase::PutMissingKey => "PUT If-Match (missing key)",
            Phase::GetOtherEtag => "GET If-None-Match (other ETag)",
            Phase::GetSameEtag => "GET If-None-Match (same ETag)",
            Phase::ListAfter => "LIST start-after",
            Phase::WrongHash => "PUT with a wrong payload hash",
            Phase::DeleteWrongEtag => "DELETE If-Match (wrong ETag)",
            Phase::DeleteRightEtag => "DELETE If-Match (right ETag)",
        }
    }
}

const PHASES: [Phase; 16] = [
    Phase::BucketExists,
    Phase::Lifecycle,
    Phase::DescribeTable,
    Phase::DescribeTtl,
    Phase::CreateFirst,
    Phase::CreateSecond,
    Phase::CreateExisting,
    Phase::PutWrongEtag,
    Phase::PutRightEtag,
    Phase::PutMissingKey,
    Phase::GetOtherEtag,
    Phase::GetSameEtag,
    Phase::ListAfter,
    Phase::WrongHash,
    Phase::DeleteWrongEtag,
    Phase::DeleteRightEtag,
];

/// Error bodies and scratch objects are small; a reply past this is not read.
const MAX_REPLY_BYTES: usize = 64 * 1024;
const TEXT: &str = "text/plain";

/// What one probe's reply said, kept for `findings`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Seen {
    /// `None`: no reply (`failure` says why).
    status: Option<u16>,
    code: String,
    etag: Option<String>,
    date_ms: Option<u64>,
    has_date_header: bool,
    last_modified_ms: Option<u64>,
    /// The ETag our request named in its condition, if any.
    sent_etag: Option<String>,
    failure: Option<String>,
    /// GET: the body equals the last accepted write's.
    body_matches: Option<bool>,
    /// LIST: whether it named a and b, or why the reply could not be read.
    listed: Option<Result<(bool, bool), String>>,
}

impl Seen {
    fn of(r: &S3Response) -> Self {
        let error = (r.status >= 300).then(|| r.s3_error().code);
        Seen {
            status: Some(r.status),
            code: error.unwrap_or_default(),
            etag: r.etag().map(str::to_string),
            date_ms: server_time(r, "date"),
            has_date_header: r.header("date").is_some(),
            last_modified_ms: server_time(r, "last-modified"),
            ..Seen::default()
        }
    }

    fn applied(&self) -> bool {
        matches!(self.status, Some(200..=299))
    }
}

/// The replies seen, one per probe that ran, in order. (Twelve at most: a
/// Vec keeps map code out of the component.)
#[derive(Debug, Default)]
struct Probes(Vec<(Phase, Seen)>);

impl Probes {
    fn get(&self, phase: &Phase) -> Option<&Seen> {
        self.0.iter().find(|(p, _)| p == phase).map(|(_, s)| s)
    }

    fn insert(&mut self, phase: Phase, seen: Seen) {
        self.0.retain(|(p, _)| *p != phase);
        self.0.push((phase, seen));
    }

    fn iter(&self) -> impl Iterator<Item = (&Phase, &Seen)> {
        self.0.iter().map(|(p, s)| (p, s))
    }
}

/// Whether a scratch object may exist and so must be deleted at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    Yes,
    Maybe,
}

pub struct Preflight {
    scratch: String,
    /// Distinct per run: the bodies and the wrong ETag carry it.
    nonce: String,
    strategy: Strategy,
    clock: ExpiryClock,
    /// The probe in flight; `None` before the first and after the last.
    phase: Option<Phase>,
    /// Every probe has run (or been skipped): only cleanup is left.
    probed: bool,
    seen: Probes,
    /// a's ETag and body after the last write the store accepted.
    current: Option<(String, Vec<u8>)>,
    /// Scratch objects to delete at the end, and the one being deleted.
    left: Vec<(String, Left)>,
    /// The probe awaiting its reply.
    in_flight: Option<S3Request>,
    deleting: Option<String>,
    cleanup_failures: Vec<String>,
    offset: OffsetBounds,
    sent_at_ms: u64,
    requests: u32,
    /// What the probed store is and does (`Profile`): which probes it
    /// takes, where it checks a body's digest, how its lifecycle rules
    /// are read.
    profile: &'static Profile,
    /// A store kept in a table: the table's checks run first, and the
    /// probes of a bucket (its existence, LIST, lifecycle) are left out.
    table: Option<String>,
    table_results: Vec<CapabilityResult>,
    /// The race, run after the probes (see `race`).
    race: Race,
    /// Where the race stands: not yet, under way, or over.
    racing: Racing,
    /// The store, when a reply's headers named one (see `stores`).
    store: Option<&'static Dialect>,
    /// What the bucket's lifecycle rules mean for the key prefix.
    lifecycle_notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Racing {
    NotYet,
    UnderWay,
    Over,
}

impl Preflight {
    /// Probes under `scratch` (a prefix no one else uses; it should end in
    /// `/`) for a client of `strategy` and `clock`. `nonce` makes this
    /// run's bodies and wrong ETag its own (16 hex digits, say).
    pub fn new(scratch: String, nonce: String, strategy: Strategy, clock: ExpiryClock) -> Self {
        Preflight {
            race: Race::new(scratch.clone(), nonce.clone()),
            scratch,
            nonce,
            strategy,
            clock,
            phase: None,
            probed: false,
            seen: Probes::default(),
            current: None,
            left: Vec::new(),
            in_flight: None,
            deleting: None,
            cleanup_failures: Vec::new(),
            offset: OffsetBounds::default(),
            sent_at_ms: 0,
            requests: 0,
            profile: &s3::PROFILE,
            table: None,
            table_results: Vec::new(),
            racing: Racing::NotYet,
            store: None,
            lifecycle_notes: Vec::new(),
        }
    }

    /// Probes `store` (S3's bucket when not called): the requests go as
    /// the store's own calls, the probes it cannot take are left out.
    pub fn on_store(mut self, store: &Store) -> Self {
        self.profile = store.profile();
        self.table = store.table().map(str::to_string);
        self
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.scratch)
    }

    /// The client's key prefix: what the scratch prefix is under
    /// (`<key-prefix>.s3-lease-preflight/<nonce>/`).
    fn key_prefix(&self) -> &str {
        match self.scratch.find(".s3-lease-preflight/") {
            Some(end) => &self.scratch[..end],
            None => "",
        }
    }

    /// An ETag no object has: well formed, so a store cannot refuse it as
    /// malformed instead of comparing it.
    fn wrong_etag(&self) -> String {
        let hex: String = self
            .nonce
            .chars()
            .filter(char::is_ascii_hexdigit)
            .take(16)
            .collect();
        format!("\"{hex:0>32}\"")
    }

    fn body(&self, what: &str) -> Vec<u8> {
        format!("s3-lease preflight {} {what}\n", self.nonce).into_bytes()
    }

    fn left_as(&self, key: &str) -> Option<Left> {
        self.left.iter().find(|(k, _)| k == key).map(|(_, l)| *l)
    }

    fn current_etag(&self) -> Option<String> {
        self.current.as_ref().map(|(etag, _)| etag.clone())
    }

    /// The request of `phase`, or `None` when what it needs is missing
    /// (then it is skipped and `findings` says why).
    fn request(&self, phase: Phase) -> Option<S3Request> {
        let a = self.key("a");
        let put = |key: &str, body: Vec<u8>| {
            S3Request::new(Method::Put, key, MAX_REPLY_BYTES).body(TEXT, body)
        };
        let a_exists = self.current.is_some();
        let in_table = self.table.is_some();
        let profile = self.profile;
        let request = match phase {
            // A table's existence is its own checks' to find.
            Phase::BucketExists if in_table => return None,
            Phase::BucketExists => S3Request::new(Method::Get, &self.key("c"), MAX_REPLY_BYTES),
            // Rules the store's own checks find (a table's TTL), or that its
            // credentials cannot read (the note says so).
            Phase::Lifecycle
                if !matches!(
                    profile.lifecycle,
                    LifecycleRules::Xml | LifecycleRules::BucketJson
                ) =>
            {
                return None
            }
            Phase::Lifecycle => lifecycle::request(),
            Phase::DescribeTable => table_checks::describe_table(self.table.as_deref()?),
            Phase::DescribeTtl => table_checks::describe_ttl(self.table.as_deref()?),
            // A store that lists no keys (its clients use single-object), or
            // takes no digest of a body.
            Phase::ListAfter if !profile.lists_keys => return None,
            Phase::WrongHash if profile.payload_hash.is_none() => return None,
            Phase::CreateFirst => put(&a, self.body("first")).header("if-none-match", "*"),
            Phase::CreateSecond => {
                put(&self.key("b"), self.body("second")).header("if-none-match", "*")
            }
            Phase::CreateExisting if a_exists => {
                put(&a, self.body("overwrite")).header("if-none-match", "*")
            }
            Phase::PutWrongEtag if a_exists => {
                put(&a, self.body("wrong etag")).header("if-match", &self.wrong_etag())
            }
            Phase::PutRightEtag => {
                let etag = self.current_etag()?;
                put(&a, self.body("right etag")).header("if-match", &etag)
            }
            Phase::PutMissingKey => {
                put(&self.key("c"), self.body("missing")).header("if-match", &self.wrong_etag())
            }
            Phase::GetOtherEtag if a_exists => S3Request::new(Method::Get, &a, MAX_REPLY_BYTES)
                .header("if-none-match", &self.wrong_etag()),
            Phase::GetSameEtag => {
                let etag = self.current_etag()?;
                S3Request::new(Method::Get, &a, MAX_REPLY_BYTES).header("if-none-match", &etag)
            }
            // Only when b surely exists: a LIST without it would be misread.
            Phase::ListAfter if a_exists && self.left_as(&self.key("b")) == Some(Left::Yes) => {
                list_request(&self.scratch, Some(&a))
            }
            Phase::WrongHash => {
                let body = self.body("hash");
                let declared = sigv4::sha256_hex(&self.body("other bytes"));
                put(&self.key("d"), body)
                    .header("if-none-match", "*")
                    .header(s3::PAYLOAD_HASH, &declared)
            }
            Phase::DeleteWrongEtag if a_exists => {
                S3Request::new(Method::Delete, &a, MAX_REPLY_BYTES)
                    .header("if-match", &self.wrong_etag())
            }
            Phase::DeleteRightEtag => {
                let etag = self.current_etag()?;
                S3Request::new(Method::Delete, &a, MAX_REPLY_BYTES).header("if-match", &etag)
            }
            _ => return None,
        };
        Some(request)
    }

    /// What a write's reply means for the scratch objects: which may exist,
    /// and a's ETag and body after it.
    fn note_write(&mut self, request: &S3Request, seen: &Seen) {
        let key = request.object_key.clone();
        let landed = if seen.applied() {
            Some(Left::Yes)
        } else if seen.status.is_none() || matches!(seen.status, Some(500..=599)) {
            // No clear answer: it may have landed.
            Some(Left::Maybe)
        } else {
            None
        };
        if request.method == Method::Delete {
            if seen.applied() {
                self.left.retain(|(k, _)| *k != key);
                self.current = None;
            }
            return;
        }
        match (landed, self.left.iter_mut().find(|(k, _)| *k == key)) {
            (Some(Left::Yes), Some((_, known))) => *known = Left::Yes,
            (Some(left), None) => self.left.push((key.clone(), left)),
            _ => {}
        }
        if key == self.key("a") {
            match (seen.applied(), &seen.etag) {
                (true, Some(etag)) => self.current = Some((etag.clone(), request.body.clone())),
                // Accepted without an ETag: nothing to name in a condition.
                (true, None) => self.current = None,
                _ => {}
            }
        }
    }

    fn record(&mut self, response: Option<&S3Response>, failure: Option<String>, now_ms: u64) {
        let Some(phase) = self.phase else { return };
        let mut seen = response.map(Seen::of).unwrap_or_default();
        seen.failure = failure;
        if let Some(date) = seen.date_ms {
            self.offset.add(self.sent_at_ms, now_ms, date);
        }
        let request = self.in_flight.take();
        if let Some(req) = &request {
            seen.sent_etag = req
                .headers
                .iter()
                .find(|(k, _)| k == "if-match" || k == "if-none-match")
                .map(|(_, v)| v.clone())
                .filter(|v| v != "*");
        }
        match phase {
            Phase::DescribeTable => {
                let failure = seen.failure.as_deref();
                self.table_results
                    .push(table_checks::key_schema(response, failure));
                return;
            }
            Phase::DescribeTtl => {
                let failure = seen.failure.as_deref();
                self.table_results
                    .push(table_checks::ttl(response, failure));
                return;
            }
            Phase::Lifecycle => {
                let failure = seen.failure.as_deref();
                self.lifecycle_notes =
                    lifecycle::notes(response, failure, self.key_prefix(), self.profile.lifecycle);
                return;
            }
            _ => {}
        }
        if let Some(r) = response {
            match phase {
                Phase::GetOtherEtag if r.status == 200 => {
                    let expected = self.current.as_ref().map(|(_, body)| body.as_slice());
                    seen.body_matches =
                        Some(r.body_too_large.is_none() && expected == Some(r.body.as_slice()));
                }
                Phase::ListAfter if r.status == 200 => {
                    seen.listed = Some(if r.body_too_large.is_some() {
                        Err("the LIST reply was too large to read".into())
                    } else {
                        s3::parse_list(&r.body).map(|page| {
                            let named = |key: String| page.keys.contains(&key);
                            (named(self.key("a")), named(self.key("b")))
                        })
                    });
                }
                _ => {}
            }
        }
        if let Some(req) = &request {
            if req.method != Method::Get {
                self.note_write(req, &seen);
            }
        }
        self.seen.insert(phase, seen);
    }

    /// Sends the next probe that can run, then the cleanup, then reports.
    fn advance(&mut self, now_ms: u64) -> Step<Report> {
        self.sent_at_ms = now_ms;
        let start = match self.phase {
            None if self.probed => PHASES.len(),
            None => 0,
            Some(p) => PHASES
                .iter()
                .position(|q| *q == p)
                .map_or(PHASES.len(), |i| i + 1),
        };
        for phase in PHASES.iter().skip(start).copied() {
            self.phase = Some(phase);
            if let Some(request) = self.request(phase) {
                self.requests += 1;
                self.in_flight = Some(request.clone());
                return Step::Send(request);
            }
        }
        self.phase = None;
        self.probed = true;
        if self.racing == Racing::NotYet {
            self.racing = Racing::UnderWay;
            let step = self.race.start();
            return self.raced(step, now_ms);
        }
        if let Some((key, _)) = self.left.pop() {
            self.deleting = Some(key.clone());
            self.requests += 1;
            // Plain DELETE: the store may not support a conditional one,
            // and these objects are ours alone.
            return Step::Send(S3Request::new(Method::Delete, &key, MAX_REPLY_BYTES));
        }
        Step::Done(Ok(self.report()))
    }

    /// The race's next step as the preflight's; once it is over, the keys
    /// it raced join the cleanup.
    fn raced(&mut self, step: RaceStep, now_ms: u64) -> Step<Report> {
        self.sent_at_ms = now_ms;
        match step {
            RaceStep::Send(request) => Step::Send(request),
            RaceStep::SendAll(requests) => Step::SendAll(requests),
            RaceStep::Done => {
                self.racing = Racing::Over;
                for key in self.race.raced() {
                    if self.left_as(key).is_none() {
                        self.left.push((key.clone(), Left::Maybe));
                    }
                }
                self.advance(now_ms)
            }
        }
    }

    fn report(&self) -> Report {
        let mut results = findings::results(&self.seen, &self.offset);
        let profile = self.profile;
        match profile.payload_hash {
            None => results.retain(|r| r.capability != Capability::PayloadHash),
            Some(header) => {
                for r in results
                    .iter_mut()
                    .filter(|r| r.capability == Capability::PayloadHash)
                {
                    r.detail = r.detail.replace("x-amz-content-sha256", header);
                }
            }
        }
        if !profile.lists_keys {
            for r in results
                .iter_mut()
                .filter(|r| r.capability == Capability::ListStartAfter)
            {
                r.verdict = Verdict::Fail;
                r.status = None;
                r.detail = format!(
                    "not probed: this client lists no keys on a {} store; epoch-objects is for \
                     S3 stores, a {} store takes single-object",
                    profile.name, profile.name
                );
            }
        }
        results.extend(self.table_results.iter().cloned());
        results.extend(self.race.results());
        // A dialect is named from S3 replies' headers: a store whose own
        // replies carry the same headers is not that dialect.
        let store = if profile.replies_as_s3 {
            self.store
        } else {
            None
        };
        dialects::name_store(&mut results, store);
        let mut notes = self.lifecycle_notes.clone();
        if let LifecycleRules::Unreadable(note) = profile.lifecycle {
            notes.push(lifecycle::unreadable_note(note, self.key_prefix()));
        }
        for failure in &self.cleanup_failures {
            notes.push(failure.clone());
        }
        verdict::report(
            results,
            self.offset.estimate(),
            self.strategy,
            self.clock,
            notes,
            self.requests + self.race.requests,
        )
    }

    /// The first probes' answer when it says the store cannot be probed
    /// at all (wrong keys, no bucket): an error, not a report. On the GET
    /// of a missing key a plain 403 `AccessDenied` decides nothing: S3
    /// answers it for a missing key to a reader without `s3:ListBucket`.
    fn unreachable(&self, r: &S3Response) -> Option<Error> {
        let first = match self.phase {
            Some(Phase::BucketExists) => true,
            Some(Phase::CreateFirst | Phase::DescribeTable) => false,
            _ => return None,
        };
        match r.clone().into_error() {
            Error::AccessDenied(e) if first && e.code == "AccessDenied" => None,
            e @ (Error::AccessDenied(_) | Error::NoSuchBucket(_) | Error::ClockSkewed(_)) => {
                Some(e)
            }
            _ => None,
        }
    }

    fn cleaned(&mut self, outcome: Result<&S3Response, &Error>) {
        let Some(key) = self.deleting.take() else {
            return;
        };
        let failure = match outcome {
            Ok(r) if matches!(r.status, 200..=299 | 404) => return,
            Ok(r) => r.s3_error().to_string(),
            Err(e) => e.to_string(),
        };
        self.cleanup_failures.push(format!(
            "could not delete the scratch object {key:?}: {failure}"
        ));
    }
}

impl Operation for Preflight {
    type Output = Report;

    fn start(&mut self, now_ms: u64) -> Step<Report> {
        self.advance(now_ms)
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Report> {
        self.store = self.store.or_else(|| dialects::of_reply(&r));
        if self.racing == Racing::UnderWay {
            let step = self.race.on_read(Ok(r));
            return self.raced(step, now_ms);
        }
        if self.deleting.is_some() {
            if let Some(date) = server_time(&r, "date") {
                self.offset.add(self.sent_at_ms, now_ms, date);
            }
            self.cleaned(Ok(&r));
            return self.advance(now_ms);
        }
        if let Some(error) = self.unreachable(&r) {
            return Step::Done(Err(error));
        }
        self.record(Some(&r), None, now_ms);
        self.advance(now_ms)
    }

    fn on_transport_error(&mut self, error: Error, now_ms: u64) -> Step<Report> {
        if self.racing == Racing::UnderWay {
            let step = self.race.on_read(Err(error));
            return self.raced(step, now_ms);
        }
        if self.deleting.is_some() {
            self.cleaned(Err(&error));
            return self.advance(now_ms);
        }
        if self.requests == 1 {
            // Nothing answered the first request: there is no store to probe.
            return Step::Done(Err(error));
        }
        self.record(None, Some(error.to_string()), now_ms);
        self.advance(now_ms)
    }

    fn on_replies(&mut self, replies: Vec<Result<S3Response, Error>>, now_ms: u64) -> Step<Report> {
        if self.racing != Racing::UnderWay {
            return Step::Done(Err(Error::InvalidArgument(
                "the preflight sent no batch of requests".into(),
            )));
        }
        for r in replies.iter().flatten() {
            self.store = self.store.or_else(|| dialects::of_reply(r));
            if let Some(date) = server_time(r, "date") {
                self.offset.add(self.sent_at_ms, now_ms, date);
            }
        }
        let step = self.race.on_replies(replies);
        self.raced(step, now_ms)
    }
}
