//! A call retried as a new call (a scheduler's next renew, an elector's
//! next step, the host's re-run after refused credentials) after one whose
//! write landed unanswered and whose read-back failed in the same outage:
//! the retry's condition fails on the holder's own write, which carries
//! another write id. On every store and both strategies the record with
//! the lease's own holder and token, unreleased, is the lease's: the retry
//! adopts it and goes on, never reporting the holder's own write as a lost
//! lease.

use super::*;
use crate::config::Store;
use crate::stores::azure::model::{self as azure_model, AzureIo, CONTAINER};
use crate::stores::dynamodb::model::DynamoIo;
use crate::stores::gcs::model::{self as gcs_model, GcsIo, BUCKET};
use crate::testing::model_io::Model;

fn on_store(store: Store) -> ClientCore {
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Server);
    raw.expiry_clock = None;
    raw.store = store;
    ClientCore::new(ClientConfig::validate(raw).unwrap())
}

fn dynamodb() -> ClientCore {
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Observed);
    raw.store = Store::DynamoDb(crate::testing::test_table("locks"));
    ClientCore::new(ClientConfig::validate(raw).unwrap())
}

pub(super) fn azure() -> ClientCore {
    on_store(azure_model::client_config(CONTAINER).store)
}

pub(super) fn gcs() -> ClientCore {
    on_store(gcs_model::client_config(BUCKET).store)
}

fn held_by(outcome: AcquireOutcome) -> (String, u64) {
    match outcome {
        AcquireOutcome::Held(Some(s)) => (s.record.holder_id, s.record.token),
        other => panic!("expected the key held, got {other:?}"),
    }
}

/// The renew's write lands, its reply is lost and the read-back fails
/// (one outage): the call ends transient. The same lease renewed again as
/// a new call, once the network is back, renews it (one more write); the
/// key stays the holder's, and its release frees it.
fn a_renew_retried_across_calls_renews<M: Model>(
    mut c: ClientCore,
    mut io: ModelIo<M>,
    what: &str,
) {
    let lease = match c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap() {
        AcquireOutcome::Granted(l) => l,
        other => panic!("{what}: {other:?}"),
    };
    io.advance(1_000);
    io.lose_put_replies = 1;
    io.cut_after_lost_reply = true;
    let e = c
        .rewrite(&mut io, lease.clone(), false)
        .ready()
        .unwrap_err();
    assert!(e.is_transient(), "{what}: {e:?}");
    io.cut = false;
    io.cut_after_lost_reply = false;
    io.advance(1_000);
    let renewed = c
        .rewrite(&mut io, lease.clone(), false)
        .ready()
        .unwrap_or_else(|e| panic!("{what}: the holder's own write read as {e:?}"));
    assert_eq!(renewed.token, lease.token, "{what}");
    assert_eq!(renewed.holder_id, "a", "{what}");
    // Counted from this call: the lease runs a whole ttl from now.
    assert!(
        renewed.expires_at_ms >= crate::driver::Io::now_ms(&mut io) + 9_000,
        "{what}: {renewed:?}"
    );
    // It is the live lease: it renews again, and nobody else gets the key.
    io.advance(1_000);
    let again = c.rewrite(&mut io, renewed, false).ready().unwrap();
    let mut other = c.clone();
    let outcome = other
        .try_acquire(&mut io, "k", &grant("b"))
        .ready()
        .unwrap();
    assert_eq!(held_by(outcome), ("a".into(), lease.token), "{what}");
    c.rewrite(&mut io, again, true).ready().unwrap();
    let next = match other
        .try_acquire(&mut io, "k", &grant("b"))
        .ready()
        .unwrap()
    {
        AcquireOutcome::Granted(l) => l,
        o => panic!("{what}: released, yet {o:?}"),
    };
    assert_eq!(next.token, lease.token + 1, "{what}");
}

#[test]
fn a_renew_retried_after_its_own_write_landed_unanswered_renews_on_every_store() {
    for c in both() {
        let what = format!("S3 {:?}", c.config.strategy);
        a_renew_retried_across_calls_renews(c, io(), &what);
    }
    let mut s3_404 = io();
    s3_404.store.missing_if_match = MissingIfMatch::NotFound;
    a_renew_retried_across_calls_renews(
        core(Strategy::SingleObject, ExpiryClock::Server),
        s3_404,
        "S3 answering 404 to If-Match",
    );
    a_renew_retried_across_calls_renews(
        dynamodb(),
        DynamoIo::with_table("locks", START_MS),
        "DynamoDB",
    );
    a_renew_retried_across_calls_renews(azure(), AzureIo::starting_at(START_MS), "Azure");
    a_renew_retried_across_calls_renews(gcs(), GcsIo::starting_at(START_MS), "GCS");
}

/// A client that did not write the lease (another process of the same
/// holder, or one started again) reads the lock object before its renew:
/// the holder's own newer write there is adopted the same way.
#[test]
fn a_renew_by_another_client_after_the_holders_own_unanswered_write_renews() {
    let mut writer = core(Strategy::SingleObject, ExpiryClock::Server);
    let mut io = io();
    let lease = granted(&mut writer, &mut io, "a");
    io.advance(1_000);
    io.lose_put_replies = 1;
    io.cut_after_lost_reply = true;
    assert!(writer
        .rewrite(&mut io, lease.clone(), false)
        .ready()
        .is_err());
    io.cut = false;
    io.cut_after_lost_reply = false;
    let mut fresh = core(Strategy::SingleObject, ExpiryClock::Server);
    let renewed = fresh
        .rewrite(&mut io, lease.clone(), false)
        .ready()
        .unwrap();
    assert_eq!(
        (renewed.token, renewed.holder_id.as_str()),
        (lease.token, "a")
    );
}

/// A release whose own earlier release landed finds the key released:
/// the lease is gone (a `Lost` naming no live holder), and nobody holds it.
/// A renew of a lease its holder released is never revived by adoption.
#[test]
fn a_released_record_of_the_lease_is_never_adopted() {
    for mut c in both() {
        let what = format!("{:?}", c.config.strategy);
        let mut io = io();
        let lease = granted(&mut c, &mut io, "a");
        io.lose_put_replies = 1;
        io.cut_after_lost_reply = true;
        assert!(c.rewrite(&mut io, lease.clone(), true).ready().is_err());
        io.cut = false;
        io.cut_after_lost_reply = false;
        for release in [true, false] {
            match c.rewrite(&mut io, lease.clone(), release).ready() {
                Err(Error::Lost { current, .. }) => {
                    assert!(current.is_none_or(|s| !s.live), "{what}")
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        let next = granted(&mut c, &mut io, "b");
        assert_eq!(next.token, lease.token + 1, "{what}");
    }
}

fn put(body: &[u8]) -> Change {
    Change::Put {
        body: body.to_vec(),
        content_type: "text/plain".into(),
    }
}

fn fenced_tokens(result: Result<crate::fenced::Written, Error>) -> (u64, u64) {
    match result {
        Err(Error::Fenced {
            our_token,
            stored_token,
            ..
        }) => (our_token, stored_token),
        other => panic!("expected fenced, got {other:?}"),
    }
}

/// A fenced write with `reject_equal` whose PUT landed unanswered and whose
/// read-back failed, sent again as a new call: the object holds this
/// very write (the same lease, the same bytes), which the retry recognises
/// by its write id rather than refusing its own write as an equal token's.
/// Other bytes under the same token are still refused, as is a delete.
fn a_fenced_write_retried_across_calls_is_recognised<M: Model>(
    mut c: ClientCore,
    mut io: ModelIo<M>,
    what: &str,
) {
    let lease = match c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap() {
        AcquireOutcome::Granted(l) => l,
        other => panic!("{what}: {other:?}"),
    };
    io.lose_put_replies = 1;
    io.cut_after_lost_reply = true;
    let e = c
        .fenced_write(&mut io, &lease, "data/x", put(b"v1"), true)
        .ready()
        .unwrap_err();
    assert!(e.is_transient(), "{what}: {e:?}");
    io.cut = false;
    io.cut_after_lost_reply = false;
    io.advance(1_000);
    let written = c
        .fenced_write(&mut io, &lease, "data/x", put(b"v1"), true)
        .ready()
        .unwrap_or_else(|e| panic!("{what}: its own write read as {e:?}"));
    assert_eq!(written.token, lease.token, "{what}");
    io.advance(1_000);
    let other = c
        .fenced_write(&mut io, &lease, "data/x", put(b"v2"), true)
        .ready();
    assert_eq!(fenced_tokens(other), (1, 1), "{what}");
    let delete = c
        .fenced_write(&mut io, &lease, "data/x", Change::Delete { nonce: 3 }, true)
        .ready();
    assert_eq!(fenced_tokens(delete), (1, 1), "{what}");
}

#[test]
fn a_fenced_write_retried_after_it_landed_unanswered_is_recognised_not_refused() {
    for c in both() {
        let what = format!("S3 {:?}", c.config.strategy);
        a_fenced_write_retried_across_calls_is_recognised(c, io(), &what);
    }
    a_fenced_write_retried_across_calls_is_recognised(
        azure(),
        AzureIo::starting_at(START_MS),
        "Azure",
    );
    a_fenced_write_retried_across_calls_is_recognised(gcs(), GcsIo::starting_at(START_MS), "GCS");
}
