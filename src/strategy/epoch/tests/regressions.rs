//! The epoch-objects strategy's safety regressions, one test each: a
//! superseded epoch never renews, a store without If-Match never gets an
//! unconditional write, a released epoch stays released, waiters judge a
//! lease by the server's clock and do not poll tightly, a late grant is no
//! lease. Each failed on the code before its fix.

use super::*;
use crate::ready::Ready;
use crate::testing::intercept::slow_put_replies;

fn renew(s: &mut ModelIo, lease: &Lease) -> Result<Lease, Error> {
    driver::run(
        s,
        EpochRewrite::renew(lease.clone(), DIR.into(), seal(), wid()),
    )
    .ready()
}

fn release(s: &mut ModelIo, lease: &Lease) -> Result<Lease, Error> {
    driver::run(
        s,
        EpochRewrite::release(lease.clone(), DIR.into(), seal(), wid()),
    )
    .ready()
}

/// No request the strategy sends writes without a condition.
fn assert_every_write_is_conditional(requests: &[S3Request]) {
    for r in requests.iter().filter(|r| r.method == Method::Put) {
        assert!(
            r.headers
                .iter()
                .any(|(k, _)| k == "if-match" || k == "if-none-match"),
            "unconditional PUT of {}",
            r.object_key
        );
    }
}

#[test]
fn a_superseded_epoch_of_the_same_holder_never_renews_or_releases() {
    let mut s = store();
    let first = granted(&mut s, "h");
    // The same holder id takes the key again (a restarted process).
    let second = granted(&mut s, "h");
    assert_eq!((first.token, second.token), (1, 2));
    // Renewing epoch 1 rewrites the same bytes: under MD5 ETags its
    // If-Match still matches, so only the LIST that follows can tell.
    let r = renew(&mut s, &first);
    assert!(
        matches!(&r, Err(Error::Lost { token: 1, current: Some(c), .. }) if c.record.token == 2),
        "{r:?}"
    );
    let r = release(&mut s, &first);
    assert!(matches!(r, Err(Error::Lost { token: 1, .. })), "{r:?}");
    // The current lease renews.
    assert_eq!(renew(&mut s, &second).unwrap().token, 2);
}

#[test]
fn a_store_without_if_match_never_gets_an_unconditional_write() {
    let mut s = store();
    let a = granted(&mut s, "a");
    s.store.if_match_unsupported = true;
    s.take_requests();
    // Renew and release fail with the store's 501, and write nothing else.
    let r = renew(&mut s, &a);
    assert!(matches!(&r, Err(Error::S3(e)) if e.status == 501), "{r:?}");
    let r = release(&mut s, &a);
    assert!(matches!(&r, Err(Error::S3(e)) if e.status == 501), "{r:?}");
    // The reproduced story: once a's epoch lapses, b takes epoch 2, and a's
    // saved epoch-1 lease never renews again.
    s.advance(13_000);
    let b = granted(&mut s, "b");
    assert_eq!(b.token, 2);
    let r = renew(&mut s, &a);
    assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
    s.store.if_match_unsupported = false;
    let r = renew(&mut s, &a);
    assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
    assert_every_write_is_conditional(&s.take_requests());
}

#[test]
fn a_released_epoch_is_never_brought_back() {
    let mut s = store();
    let a = granted(&mut s, "a");
    release(&mut s, &a).unwrap();
    // The saved lease from before the release: its ETag is spent.
    let r = renew(&mut s, &a);
    assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
    assert!(record(&s, 1).expired);
    assert_eq!(granted(&mut s, "b").token, 2);
    assert_every_write_is_conditional(&s.take_requests());
}

/// Requests a waiter with this clock skew sends to wait out one 10 s lease.
fn requests_to_wait_out_a_lease(skew_ms: i64) -> usize {
    let mut s = store();
    granted(&mut s, "a");
    s.clock_offset_ms = skew_ms;
    s.take_requests();
    let lease = driver::acquire(
        &mut (),
        &mut s,
        "k",
        60_000,
        async |_: &mut (), io: &mut ModelIo| {
            let op = EpochTryAcquire::new(
                "k".into(),
                DIR.into(),
                grant("b"),
                seal(),
                judge(),
                wid(),
                0,
            );
            driver::run(io, op).await.map(|(outcome, _)| outcome)
        },
    )
    .ready()
    .unwrap();
    assert_eq!(lease.token, 2);
    s.take_requests().len()
}

#[test]
fn a_waiter_whose_clock_runs_minutes_ahead_waits_by_the_servers_clock() {
    let in_sync = requests_to_wait_out_a_lease(0);
    let ahead = requests_to_wait_out_a_lease(240_000);
    let behind = requests_to_wait_out_a_lease(-240_000);
    // Backoff looks about once a second (a release is noticed promptly);
    // the skew changes nothing. Before the fix: 3,254 requests when ahead.
    assert!(in_sync <= 50, "{in_sync} requests in sync");
    assert_eq!((ahead, behind), (in_sync, in_sync));
}

#[test]
fn whole_second_dates_do_not_cause_tight_polling() {
    let mut s = store();
    granted(&mut s, "a");
    // The server's clock sits mid-second when the waiter looks.
    s.advance(400);
    let state = held(&mut s, "b").unwrap();
    let expires_at = state.record.expires_at_ms;
    // The wait reaches the first whole-second Date past the expiry.
    assert_eq!(
        s.store.now_ms / 1000 * 1000 + state.expires_in_ms,
        (expires_at / 1000 + 1) * 1000
    );
    // Woken then, the waiter finds the key free: no second of tight polling.
    s.advance(state.expires_in_ms);
    assert_eq!(granted(&mut s, "b").token, 2);
}

#[test]
fn a_grant_whose_verification_comes_back_after_its_expiry_is_no_lease() {
    let mut s = store();
    // The create's reply arrives 11 s after it was sent: past the 10 s ttl.
    let op = EpochTryAcquire::new(
        "k".into(),
        DIR.into(),
        grant("a"),
        seal(),
        judge(),
        wid(),
        0,
    );
    let (outcome, _) = driver::run(&mut slow_put_replies(&mut s, 11_000), op)
        .ready()
        .unwrap();
    assert_eq!(outcome, AcquireOutcome::Held(None));
}

#[test]
fn a_fresh_instance_finds_the_highest_of_ten_thousand_epochs_in_few_lists() {
    let mut s = store();
    for e in 1..=10_000u64 {
        let body = EpochRecord {
            expired: true,
            validity_ms: 1_000,
            token: e,
            holder_id: "old".into(),
            acquired_at_ms: START_MS,
            metadata: String::new(),
            write_id: String::new(),
        };
        s.store.put_object(&epoch_key(DIR, e), &body.to_json());
    }
    let lease = granted(&mut s, "fresh");
    assert_eq!(lease.token, 10_001);
    let lists = s
        .take_requests()
        .iter()
        .filter(|r| r.object_key.is_empty())
        .count();
    assert!(lists <= 40, "{lists} LISTs");
}

#[test]
fn the_verifying_list_reads_past_a_truncated_page_of_foreign_keys() {
    let mut s = store();
    let first = granted(&mut s, "h");
    // 250 foreign keys sort between epoch 1 and epoch 2: more than a page.
    for n in 0..250 {
        let key = format!("{}.bak{n:03}", epoch_key(DIR, 1));
        s.store.put_object(&key, b"x");
    }
    let second = granted(&mut s, "h");
    assert_eq!(second.token, 2);
    let r = renew(&mut s, &first);
    assert!(matches!(r, Err(Error::Lost { token: 1, .. })), "{r:?}");
}

#[test]
fn an_altered_epoch_lease_is_refused_before_any_request() {
    let mut s = store();
    let a = granted(&mut s, "a");
    s.take_requests();
    for altered in [
        Lease {
            token: 7,
            ..a.clone()
        },
        Lease {
            expires_at_ms: u64::MAX,
            ..a.clone()
        },
        Lease {
            metadata: "x".repeat(100_000),
            ..a.clone()
        },
    ] {
        let r = renew(&mut s, &altered);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
        let r = release(&mut s, &altered);
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    }
    assert!(s.take_requests().is_empty());
}
