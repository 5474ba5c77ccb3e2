//! Under the `server` expiry clock a GET reply without `Date` or
//! `Last-Modified` is refused, as epoch-objects refuses it: falling back to
//! the reader's clock (as before) let a reader whose clock ran ahead take a
//! lease the server still called live. Other clocks do not need the times.

use super::*;
use crate::expiry::{ExpiryClock, Judge, Observation};
use crate::ready::Ready;
use crate::testing::intercept::Intercept;

/// `a` holds a 10 s lease; the reader's clock is an hour ahead, so by its
/// own clock the lease is long expired, by the server's it is live.
fn held_by_a_with_reader_ahead() -> ModelIo {
    let mut s = store();
    granted(try_acquire(&mut s, "a"));
    s.clock_offset_ms = 3_600_000;
    s
}

/// `b`'s try-acquire under `judge`, every GET reply stripped of `header`.
fn acquire_without(
    s: &mut ModelIo,
    header: &'static str,
    judge: Judge,
) -> Result<AcquireOutcome, Error> {
    let mut io = Intercept::new(s, move |request, io: &mut ModelIo| {
        (request.method == Method::Get).then(|| {
            io.send(request).ready().map(|mut r| {
                r.headers.retain(|(k, _)| k != header);
                r
            })
        })
    });
    let op = TryAcquire::new(
        "k".into(),
        "locks/k".into(),
        grant("b"),
        seal(),
        judge,
        wid(),
    );
    driver::run(&mut io, op).ready()
}

#[test]
fn under_the_server_clock_a_reply_without_date_or_last_modified_is_refused() {
    for header in ["date", "last-modified"] {
        let mut s = held_by_a_with_reader_ahead();
        let r = acquire_without(&mut s, header, Judge::new(ExpiryClock::Server, None));
        match &r {
            Err(Error::S3(e)) => {
                assert!(e.message.contains(header), "{header}: {}", e.message);
                assert!(e.message.contains("server expiry clock"), "{}", e.message);
                assert!(!r.as_ref().unwrap_err().is_transient());
            }
            other => panic!("{header}: expected a refusal, got {other:?}"),
        }
        // Nothing was written: a's lease stands.
        assert_eq!(record(&s, "locks/k").holder_id, "a", "{header}");
        // With the times, the server's clock calls it live: held.
        let op = TryAcquire::new(
            "k".into(),
            "locks/k".into(),
            grant("b"),
            seal(),
            Judge::new(ExpiryClock::Server, None),
            wid(),
        );
        let outcome = driver::run(&mut s, op).ready().unwrap();
        assert!(
            matches!(outcome, AcquireOutcome::Held(Some(_))),
            "{outcome:?}"
        );
    }
}

#[test]
fn a_304_without_date_is_refused_under_the_server_clock() {
    let mut s = held_by_a_with_reader_ahead();
    let state = driver::run(
        &mut s,
        Inspect::new(
            "k".into(),
            "locks/k".into(),
            Judge::new(ExpiryClock::Server, None),
        ),
    )
    .ready()
    .unwrap()
    .unwrap();
    let judge = Judge::new(
        ExpiryClock::Server,
        Some(Observation {
            entries_seen_for_ms: Vec::new(),
            state,
            seen_for_ms: 0,
            first_date_ms: None,
            entries_first_date_ms: Vec::new(),
        }),
    );
    let r = acquire_without(&mut s, "date", judge);
    assert!(
        matches!(&r, Err(Error::S3(e)) if e.message.contains("date")),
        "{r:?}"
    );
    assert_eq!(s.requests.last().unwrap().headers[0].0, "if-none-match");
}

#[test]
fn the_holder_and_observed_clocks_judge_such_replies_as_before() {
    for header in ["date", "last-modified"] {
        // holder: the reader's clock (an hour ahead) calls the lease
        // expired, with or without the server's times: b takes it.
        let mut s = held_by_a_with_reader_ahead();
        let r = acquire_without(&mut s, header, Judge::holder());
        assert!(
            matches!(&r, Ok(AcquireOutcome::Granted(l)) if l.token == 2),
            "{r:?}"
        );
        // observed: never seen before, so live for a full ttl: held.
        let mut s = held_by_a_with_reader_ahead();
        let r = acquire_without(&mut s, header, Judge::new(ExpiryClock::Observed, None));
        assert!(matches!(&r, Ok(AcquireOutcome::Held(Some(_)))), "{r:?}");
    }
}
