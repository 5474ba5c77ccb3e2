//! A key's token floor: where its counter continues when its lock object
//! is gone. A lock object holds its key's token counter, and an object
//! store deletes objects it is told to (a lifecycle rule that expires idle
//! objects, an operator's cleanup): the key's next grant would then create
//! the object again with token 1, below tokens it granted before, and
//! every object fenced by those refuses its new holders. So before a grant
//! creates a lock object (or a key's first epoch, or a semaphore) it
//! writes the key's floor object, `<key-prefix>.s3-lease-floor/<key>`:
//!
//! ```json
//! {"next":1099511627776,"purpose":"s3-lease: the key's tokens continue above this when its lock object is created again","write":"<the grant's write id>"}
//! ```
//!
//! - absent: the key never had a lock object. It is created
//!   (`If-None-Match: *`) holding `next` = one stride, and the grant's
//!   token is 1;
//! - present, holding `next` = N: the lock object was deleted (or another
//!   client is creating it at this moment). It is raised to N + one stride
//!   (`If-Match` on its ETag: it never goes down, whatever replies come
//!   late), and the grant's token is N + 1.
//!
//! A floor written within the grant's ttl (by the server's clock) is a
//! concurrent creator's, joined rather than raised
//! (`Floor::joining_within`): epoch-objects' creators exclude one another
//! only by creating the same epoch object, so they must agree on its
//! number, and a new key starts at 1 however its first grant raced.
//!
//! So an incarnation of a key's lock object grants tokens from its base up
//! to its base plus a stride (2^40: a thousand grants a second for 34
//! years), and the next incarnation starts above. A key whose lock object
//! is never deleted keeps its tokens 1, 2, 3...; one created again jumps
//! by a stride. The floor is written once per creation, never on a renew
//! or a take-over, and the lock object's write follows only once it
//! stands: a grant whose floor write failed writes nothing of the lock
//! (its error is the floor's, transient when that is). A floor write whose
//! reply was lost is read back and recognised by the grant's write id. Nothing protects a
//! floor object itself from a rule that deletes it: the docs say which
//! prefixes to keep out of lifecycle rules (docs/stores.md).
//!
//! A store whose item keeps its counter keeps no floor
//! (`Profile::keeps_token_floor`): its item survives release and no TTL
//! sweeps it.

use crate::prelude::*;

use crate::error::{Error, S3Error};
use crate::expiry::{server_time, SERVER_SLACK_MS};
use crate::limits::MAX_REREADS;
use crate::protocol::is_ambiguous;
use crate::stores::s3::{Method, S3Request, S3Response};
use serde_json::Value;

/// How far apart two incarnations of a key's lock object start.
pub const FLOOR_STRIDE: u64 = 1 << 40;

pub use crate::lease::FLOOR_DIR;

const PURPOSE: &str =
    "s3-lease: the key's tokens continue above this when its lock object is created again";
/// The object is about 150 bytes; anything far larger is not ours.
const MAX_FLOOR_BYTES: usize = 1024;

/// The floor object of the lock object `lock_object_key` under `key_prefix`.
pub fn floor_key(key_prefix: &str, lock_object_key: &str) -> String {
    let key = lock_object_key
        .strip_prefix(key_prefix)
        .unwrap_or(lock_object_key);
    format!("{key_prefix}{FLOOR_DIR}{key}")
}

fn body(next: u64, write_id: &str) -> Vec<u8> {
    let mut o = crate::json_out::JsonObject::default();
    o.u64("next", next);
    o.str("purpose", PURPOSE);
    o.str("write", write_id);
    o.finish()
}

/// A floor object's `next` and the write id that stored it.
fn read_floor(object_key: &str, body: &[u8]) -> Result<(u64, String), Error> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| Error::corrupt(object_key, "the token floor object is not JSON"))?;
    let next = value
        .get("next")
        .and_then(Value::as_u64)
        .ok_or_else(|| Error::corrupt(object_key, "the token floor object has no \"next\""))?;
    let write = value
        .get("write")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok((next, write))
}

/// Where a floor's writing is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Creating,
    Reading,
    /// Raising it from `next`, conditional on the ETag it was read at.
    Raising(u64),
}

/// What the operation using a floor does next.
#[derive(Debug)]
pub enum FloorStep {
    Send(S3Request),
    /// The floor stands: the grant's token is this plus 1.
    Base(u64),
    Failed(Error),
}

/// Writes a key's floor before its lock object is created (see the
/// module): a sub-machine of the operations that create one. A write whose
/// reply is lost (or a 5xx) is read back and recognised by its write id,
/// so it neither fails the grant nor raises the floor twice.
#[derive(Debug, Clone)]
pub struct Floor {
    object_key: String,
    write_id: String,
    phase: Phase,
    reads: u32,
    /// The base it found, once it stands.
    base: Option<u64>,
    /// Why the last write's fate is unknown, while it is.
    unsure: Option<Error>,
    /// See `joining_within`.
    join_within_ms: Option<u64>,
}

impl Floor {
    /// `write_id`: the grant's, recorded in the floor it writes.
    pub fn new(object_key: String, write_id: String) -> Self {
        Floor {
            object_key,
            write_id,
            phase: Phase::Creating,
            reads: 0,
            base: None,
            unsure: None,
            join_within_ms: None,
        }
    }

    /// A floor written this recently (by the server's clock: its
    /// `Last-Modified` against the reply's `Date`) is a concurrent
    /// creator's of this same incarnation (or an attempt's whose create
    /// never landed), which this one joins (same base) rather than raising
    /// past it. Epoch-objects needs it: its creators exclude one another
    /// only by creating the same epoch object, so they must agree on its
    /// number. The others use it so that a new key starts at 1 however its
    /// first grant raced. (A lifecycle rule deletes objects idle for days,
    /// never one written moments ago; a lock object deleted by hand within
    /// a ttl of its creation may start again at its base.) Without it a
    /// found floor is always raised.
    pub fn joining_within(mut self, window_ms: u64) -> Self {
        self.join_within_ms = Some(window_ms);
        self
    }

    /// The floor `r` read was written within the join window.
    fn just_written(&self, r: &S3Response) -> bool {
        let (Some(window), Some(written), Some(now)) = (
            self.join_within_ms,
            server_time(r, "last-modified"),
            server_time(r, "date"),
        ) else {
            return false;
        };
        now.saturating_sub(written) <= window.saturating_add(SERVER_SLACK_MS)
    }

    /// The base this floor gave, once it stands (a grant that loses its
    /// race and decides again needs no second floor).
    pub fn base(&self) -> Option<u64> {
        self.base
    }

    pub fn start(&mut self) -> FloorStep {
        self.create()
    }

    fn create(&mut self) -> FloorStep {
        self.phase = Phase::Creating;
        FloorStep::Send(self.put(FLOOR_STRIDE, ("if-none-match", "*")))
    }

    fn put(&self, next: u64, condition: (&str, &str)) -> S3Request {
        S3Request::new(Method::Put, &self.object_key, MAX_FLOOR_BYTES)
            .header(condition.0, condition.1)
            .body("application/json", body(next, &self.write_id))
    }

    fn read(&mut self) -> FloorStep {
        if self.reads >= MAX_REREADS {
            return FloorStep::Failed(self.unsure.take().unwrap_or_else(|| {
                Error::Conflict(S3Error {
                    status: 409,
                    code: "ConditionalRequestConflict".into(),
                    message: format!(
                        "the token floor {:?} kept changing: {MAX_REREADS} conditional writes failed",
                        self.object_key
                    ),
                    request_id: String::new(),
                })
            }));
        }
        self.reads += 1;
        self.phase = Phase::Reading;
        FloorStep::Send(S3Request::new(
            Method::Get,
            &self.object_key,
            MAX_FLOOR_BYTES,
        ))
    }

    fn stands(&mut self, base: u64) -> FloorStep {
        self.base = Some(base);
        FloorStep::Base(base)
    }

    pub fn on_response(&mut self, r: S3Response) -> FloorStep {
        match core::mem::replace(&mut self.phase, Phase::Creating) {
            Phase::Creating if r.status == 200 => self.stands(0),
            Phase::Raising(next) if r.status == 200 => self.stands(next),
            // It exists (or changed, or vanished, since we read it): read it.
            Phase::Creating | Phase::Raising(_)
                if matches!(r.status, 409 | 412) || r.is_missing_object() =>
            {
                self.read()
            }
            // Our write may have landed: read it back.
            Phase::Creating | Phase::Raising(_) if is_ambiguous(&r) => {
                self.unsure = Some(r.into_error());
                self.read()
            }
            Phase::Reading if r.is_missing_object() => self.create(),
            Phase::Reading if r.status == 200 => self.on_read(&r),
            // A refusal, a failed read: nothing of the lock is written, and
            // the grant ends with this error (transient when it is).
            _ => FloorStep::Failed(r.into_error()),
        }
    }

    pub fn on_transport_error(&mut self, error: Error) -> FloorStep {
        match self.phase {
            Phase::Creating | Phase::Raising(_) => {
                self.unsure = Some(error);
                self.read()
            }
            Phase::Reading => FloorStep::Failed(self.unsure.take().unwrap_or(error)),
        }
    }

    /// The floor as read: ours (a write whose reply was lost), or raised
    /// from it by one stride, on its ETag.
    fn on_read(&mut self, r: &S3Response) -> FloorStep {
        if r.body_too_large.is_some() {
            return FloorStep::Failed(Error::corrupt(
                &self.object_key,
                "the token floor object is too large to be ours",
            ));
        }
        let (next, write) = match read_floor(&self.object_key, &r.body) {
            Ok(found) => found,
            Err(e) => return FloorStep::Failed(e),
        };
        let ours = !self.write_id.is_empty() && write == self.write_id;
        if ours || self.just_written(r) {
            return self.stands(next.saturating_sub(FLOOR_STRIDE));
        }
        let Some(raised) = next.checked_add(FLOOR_STRIDE) else {
            return FloorStep::Failed(Error::corrupt(
                &self.object_key,
                "the token floor is at its maximum and cannot rise",
            ));
        };
        let etag = match r.read_etag(&self.object_key) {
            Ok(etag) => etag,
            Err(e) => return FloorStep::Failed(e),
        };
        self.phase = Phase::Raising(next);
        FloorStep::Send(self.put(raised, ("if-match", &etag)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Operation, Step};
    use crate::ready::Ready;
    use crate::testing::model_io::ModelIo;

    /// The floor as an operation of its own, for the model's `Io`.
    struct Writing(Floor);

    impl Writing {
        fn step(step: FloorStep) -> Step<u64> {
            match step {
                FloorStep::Send(request) => Step::Send(request),
                FloorStep::Base(base) => Step::Done(Ok(base)),
                FloorStep::Failed(e) => Step::Done(Err(e)),
            }
        }
    }

    impl Operation for Writing {
        type Output = u64;
        fn start(&mut self, _now_ms: u64) -> Step<u64> {
            Self::step(self.0.start())
        }
        fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<u64> {
            Self::step(self.0.on_response(r))
        }
        fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<u64> {
            Self::step(self.0.on_transport_error(error))
        }
    }

    const KEY: &str = "locks/.s3-lease-floor/k";

    fn write(io: &mut ModelIo) -> Result<u64, Error> {
        let floor = Floor::new(KEY.into(), crate::testing::write_id());
        crate::driver::run(io, Writing(floor)).ready()
    }

    fn next(io: &ModelIo) -> u64 {
        read_floor(KEY, &io.store.objects[KEY].body).unwrap().0
    }

    #[test]
    fn a_new_key_starts_at_0_and_each_creation_after_one_stride_higher() {
        assert_eq!(
            floor_key("locks/", "locks/jobs/k"),
            "locks/.s3-lease-floor/jobs/k"
        );
        let mut io = ModelIo::new(0);
        assert_eq!(write(&mut io), Ok(0));
        assert_eq!(next(&io), FLOOR_STRIDE);
        assert_eq!(io.take_requests().len(), 1, "one create-only PUT");
        assert_eq!(write(&mut io), Ok(FLOOR_STRIDE));
        assert_eq!(write(&mut io), Ok(2 * FLOOR_STRIDE));
        assert_eq!(next(&io), 3 * FLOOR_STRIDE);
        // Refused create, read, raise on the ETag read.
        let methods: Vec<_> = io.take_requests().iter().map(|r| r.method).collect();
        assert_eq!(methods, [Method::Put, Method::Get, Method::Put].repeat(2));
    }

    #[test]
    fn a_floor_write_whose_reply_was_lost_is_recognised_not_raised_again() {
        let mut io = ModelIo::new(0);
        io.lose_put_replies = 1;
        assert_eq!(write(&mut io), Ok(0), "the create landed: ours");
        io.lose_put_replies = 2;
        assert_eq!(write(&mut io), Ok(FLOOR_STRIDE), "the raise landed: ours");
        assert_eq!(next(&io), 2 * FLOOR_STRIDE);
        // Unanswered and not landed (a cut): the grant fails, transient,
        // and the floor stays where it was.
        io.cut = true;
        let e = write(&mut io).unwrap_err();
        assert!(e.is_transient(), "{e:?}");
        io.cut = false;
        assert_eq!(next(&io), 2 * FLOOR_STRIDE);
    }

    #[test]
    fn a_raise_that_loses_a_race_reads_again_and_never_lowers_the_floor() {
        let mut io = ModelIo::new(0);
        write(&mut io).unwrap();
        // Another creator raises it between our read and our write.
        let mut raced = false;
        let base = {
            let mut racing = crate::testing::intercept::Intercept::new(&mut io, |request, io| {
                let raise = request.headers.iter().any(|(k, _)| k == "if-match");
                if request.method == Method::Put && raise && !raced {
                    raced = true;
                    let theirs = Floor::new(KEY.into(), "theirs".into());
                    let base = crate::driver::run(io, Writing(theirs)).ready();
                    assert_eq!(base, Ok(FLOOR_STRIDE));
                }
                None
            });
            let floor = Floor::new(KEY.into(), "ours".into());
            crate::driver::run(&mut racing, Writing(floor)).ready()
        };
        assert_eq!(base, Ok(2 * FLOOR_STRIDE));
        assert_eq!(next(&io), 3 * FLOOR_STRIDE);
    }

    #[test]
    fn an_unreadable_floor_is_corrupt_and_writes_nothing_more() {
        let mut io = ModelIo::new(0);
        io.store.put_object(KEY, b"not json");
        let e = write(&mut io).unwrap_err();
        assert!(matches!(e, Error::CorruptLockObject { .. }), "{e:?}");
        assert_eq!(io.store.objects[KEY].body, b"not json");
    }
}
