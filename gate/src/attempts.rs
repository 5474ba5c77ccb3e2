//! What each attempt at a key came to, for both builds: the waiting
//! machine's `Missed`, what was seen (`Seen`), and the answer when the wait
//! is given up. Plain Rust, tested natively; each build makes the attempts
//! (`acquire` with no wait for a plain lock, so a miss names the holder;
//! `try-acquire-slot`, limit 1 and fair, for the fair gate).

use crate::answer::Answer;
use crate::seen::{Holder, Recent, Seen};
use s3_lease_guest::{Error, LockState};
use s3_lease_keep::wait::Missed;

/// One attempt's outcome, the builds' own types aside: `H` is the held
/// lease.
pub enum Attempted<H> {
    /// A plain lock's attempt: `acquire` with no wait.
    Plain(Result<H, Error>),
    /// A fair slot's attempt: `try-acquire-slot`.
    Slot(Result<Slot<H>, Error>),
}

/// `SlotAttempt`'s cases.
pub enum Slot<H> {
    Granted(H),
    Queued(u32),
    Full(Option<LockState>),
}

/// What the waiting driver does with an attempt.
pub enum Judged<H> {
    Granted(H),
    Missed(Missed),
    /// An error retrying cannot fix: the answer.
    Failed(Answer),
}

/// Whether retrying may fix `e` (as the core's `is_transient`).
pub fn transient(e: &Error) -> bool {
    match e {
        Error::Transport(_) | Error::Conflict(_) => true,
        Error::S3(s3) => s3.status >= 500 || s3.status == 429,
        _ => false,
    }
}

fn holder(state: &LockState) -> Holder {
    Holder {
        id: state.holder_id.clone(),
        token: state.token,
        acquired_at_ms: state.acquired_at_ms,
        expires_in_ms: u64::try_from(state.expires_in.as_millis()).unwrap_or(u64::MAX),
    }
}

/// Judges an attempt answered at `now_ms` (monotonic), noting what it saw
/// and the last transient error.
pub fn judge<H>(
    attempted: Attempted<H>,
    now_ms: u64,
    seen: &mut Seen,
    last_error: &mut Option<Error>,
) -> Judged<H> {
    let mut held_by = |state: Option<&LockState>| match state {
        Some(state) => {
            let holder = holder(state);
            let expires_in_ms = holder.expires_in_ms;
            seen.held_by(now_ms, holder);
            Missed::Held {
                expires_in_ms: Some(expires_in_ms),
            }
        }
        None => {
            seen.missed_unseen();
            Missed::Held {
                expires_in_ms: None,
            }
        }
    };
    let error = match attempted {
        Attempted::Plain(Ok(held)) | Attempted::Slot(Ok(Slot::Granted(held))) => {
            return Judged::Granted(held)
        }
        Attempted::Plain(Err(Error::Timeout { holder, .. })) => {
            return Judged::Missed(held_by(holder.as_deref()))
        }
        Attempted::Slot(Ok(Slot::Full(state))) => return Judged::Missed(held_by(state.as_ref())),
        Attempted::Slot(Ok(Slot::Queued(place))) => {
            seen.queued(now_ms, place);
            return Judged::Missed(Missed::Queued);
        }
        Attempted::Plain(Err(e)) | Attempted::Slot(Err(e)) => e,
    };
    if transient(&error) {
        // A request the store did not answer within its bound (the
        // component's words for it): the store is slow, not gone.
        if matches!(&error, Error::Transport(text) if text.contains("timed out")) {
            seen.store_slow = true;
        }
        *last_error = Some(error);
        Judged::Missed(Missed::Undecided)
    } else {
        Judged::Failed(store_error(&error))
    }
}

/// 502: the store refused or failed.
pub fn store_error(e: &Error) -> Answer {
    Answer::store_error(e.code(), &e.to_string())
}

/// The answer to a wait given up: 503 naming what was seen; or, when
/// nothing was (every attempt failed in transit), 502 with the last error.
pub fn gave_up(
    key: &str,
    seen: &Seen,
    recent: &Recent,
    last_error: Option<Error>,
    wait_ms: u64,
    waited_ms: u64,
    now_wall_ms: u64,
) -> Answer {
    let nothing_seen = seen.holder.is_none()
        && seen.place.is_none()
        && seen.unseen_misses == 0
        && !seen.store_slow;
    match last_error {
        Some(e) if nothing_seen => store_error(&e),
        _ => Answer::held(
            key,
            seen.holder.as_ref().map(|h| h.id.as_str()),
            waited_ms,
            seen.retry_after_ms(recent, now_wall_ms),
            &seen.message(wait_ms),
        ),
    }
}

/// How often a queued waiter looks: the typical hold this instance saw
/// (25 ms at least), at most the library's fair pace for the ttl; 50 ms
/// with nothing seen.
pub fn fair_poll_ms(recent: &Recent, ttl_ms: u64) -> u64 {
    let most = s3_lease_keep::wait::fair_poll_ms(ttl_ms);
    recent.typical().unwrap_or(50).clamp(25, most)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn state(holder: &str, token: u64) -> LockState {
        LockState {
            key: "k".into(),
            holder_id: holder.into(),
            token,
            expires_at_ms: 0,
            acquired_at_ms: 0,
            metadata: String::new(),
            etag: String::new(),
            live: true,
            expires_in: Duration::from_millis(2_000),
        }
    }

    #[test]
    fn a_miss_names_its_holder_or_counts_as_unseen() {
        let (mut seen, mut last) = (Seen::default(), None);
        let timeout = |holder| Error::Timeout {
            key: "k".into(),
            waited: Duration::ZERO,
            holder,
        };
        let j = judge::<()>(
            Attempted::Plain(Err(timeout(Some(Box::new(state("h", 4)))))),
            10,
            &mut seen,
            &mut last,
        );
        assert!(matches!(
            j,
            Judged::Missed(Missed::Held {
                expires_in_ms: Some(2_000)
            })
        ));
        assert_eq!(seen.holder.as_ref().map(|h| h.token), Some(4));
        judge::<()>(
            Attempted::Plain(Err(timeout(None))),
            20,
            &mut seen,
            &mut last,
        );
        assert_eq!(seen.unseen_misses, 1);
        judge::<()>(
            Attempted::Slot(Ok(Slot::Queued(3))),
            30,
            &mut seen,
            &mut last,
        );
        assert_eq!(seen.place, Some(3));
    }

    #[test]
    fn transient_errors_are_kept_for_the_answer_and_others_end_the_wait() {
        let (mut seen, mut last) = (Seen::default(), None);
        let j = judge::<()>(
            Attempted::Plain(Err(Error::Transport("refused".into()))),
            0,
            &mut seen,
            &mut last,
        );
        assert!(matches!(j, Judged::Missed(Missed::Undecided)));
        assert!(!seen.store_slow);
        let a = gave_up("k", &seen, &Recent::default(), last.clone(), 200, 200, 0);
        assert_eq!(
            (a.status, a.body.starts_with(b"{\"error\":\"transport\"")),
            (502, true)
        );
        let j = judge::<()>(
            Attempted::Plain(Err(Error::InvalidArgument("no".into()))),
            0,
            &mut seen,
            &mut last,
        );
        assert!(matches!(j, Judged::Failed(a) if a.status == 502));
        // A request the store did not answer in time: a 503 that says so.
        let mut slow = Seen::default();
        let timed_out = Error::Transport("timed out waiting for the reply".into());
        judge::<()>(Attempted::Plain(Err(timed_out)), 0, &mut slow, &mut last);
        let a = gave_up("k", &slow, &Recent::default(), last.clone(), 200, 200, 0);
        assert_eq!(a.status, 503);
        // Once something was seen, a 503 says it, transport errors or not.
        seen.missed_unseen();
        assert_eq!(
            gave_up("k", &seen, &Recent::default(), last, 200, 200, 0).status,
            503
        );
    }

    #[test]
    fn the_fair_pace_follows_recent_holds() {
        let mut recent = Recent::default();
        assert_eq!(fair_poll_ms(&recent, 3_000), 50);
        for ms in [10, 10, 10] {
            recent.record(ms);
        }
        assert_eq!(fair_poll_ms(&recent, 3_000), 25);
        for ms in [900, 900, 900, 900] {
            recent.record(ms);
        }
        assert_eq!(fair_poll_ms(&recent, 3_000), 300);
    }
}
