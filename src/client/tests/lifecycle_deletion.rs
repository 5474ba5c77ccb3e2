//! A lifecycle rule (or an operator) deletes an idle key's lock object:
//! the key's next grant creates it again, and its token must still rise
//! above every token the key granted before, or every object fenced by
//! those refuses the new holder. The key's token floor
//! (`strategy::floor`) survives the deletion and carries the counter on,
//! on every object store and both strategies.

use super::retries_across_calls::{azure, gcs};
use super::*;
use crate::stores::azure::model::AzureIo;
use crate::stores::gcs::model::GcsIo;
use crate::stores::s3::S3Request;
use crate::testing::model_io::Model;

fn put(body: &[u8]) -> Change {
    Change::Put {
        body: body.to_vec(),
        content_type: "text/plain".into(),
    }
}

/// What a rule that expires the lock objects under `locks/` (and leaves
/// the seal key and the floors beside them) deletes: `k`'s lock object,
/// or its epochs.
fn expire_lock_objects<M: Model>(io: &mut ModelIo<M>, objects: &[String]) {
    for key in objects {
        let reply = io.store.handle(&S3Request::new(Method::Delete, key, 1024));
        assert!(matches!(reply.status, 200..=299), "{key}: {reply:?}");
    }
}

/// Grants 1 and 2 (the second fences an object), the lock object deleted,
/// then a third grant: its token is above 2, and the fenced object takes
/// its write.
fn tokens_never_restart<M: Model>(
    mut c: ClientCore,
    mut io: ModelIo<M>,
    what: &str,
    lock_objects: impl Fn(&ModelIo<M>) -> Vec<String>,
) -> Vec<u64> {
    let grant_as = |c: &mut ClientCore, io: &mut ModelIo<M>, holder: &str| {
        io.advance(1_000);
        match c.try_acquire(io, "k", &grant(holder)).ready() {
            Ok(AcquireOutcome::Granted(l)) => l,
            other => panic!("{what}: {other:?}"),
        }
    };
    let first = grant_as(&mut c, &mut io, "a");
    io.advance(1_000);
    c.rewrite(&mut io, first.clone(), true).ready().unwrap();
    let second = grant_as(&mut c, &mut io, "b");
    io.advance(1_000);
    c.fenced_write(&mut io, &second, "data/x", put(b"by 2"), false)
        .ready()
        .unwrap();
    io.advance(1_000);
    c.rewrite(&mut io, second.clone(), true).ready().unwrap();
    // A day later, the rule deletes the idle lock object.
    io.advance(24 * 3_600_000);
    let objects = lock_objects(&io);
    assert!(!objects.is_empty(), "{what}");
    expire_lock_objects(&mut io, &objects);
    // A client that never saw the key (a process started after the rule ran).
    let mut fresh = ClientCore::new(c.config.clone());
    let third = grant_as(&mut fresh, &mut io, "c");
    io.advance(1_000);
    let written = fresh
        .fenced_write(&mut io, &third, "data/x", put(b"by 3"), false)
        .ready()
        .unwrap_or_else(|e| panic!("{what}: the new holder fenced out: {e:?}"));
    assert_eq!(written.previous_token, Some(second.token), "{what}");
    vec![first.token, second.token, third.token]
}

fn rising(tokens: &[u64], what: &str) {
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "{what}: tokens {tokens:?} went back"
    );
    assert_eq!(
        &tokens[..2],
        [1, 2],
        "{what}: a key never deleted counts 1, 2"
    );
}

#[test]
fn a_key_whose_lock_object_a_lifecycle_rule_deleted_never_repeats_a_token() {
    let s3_objects = |io: &ModelIo| -> Vec<String> {
        io.store
            .objects
            .keys()
            .filter(|k| *k == "locks/k" || k.starts_with("locks/k/"))
            .cloned()
            .collect()
    };
    for c in both() {
        let what = format!("S3 {:?}", c.config.strategy);
        let tokens = tokens_never_restart(c, io(), &what, s3_objects);
        rising(&tokens, &what);
    }
    let one = || vec!["locks/k".to_string()];
    let tokens = tokens_never_restart(azure(), AzureIo::starting_at(START_MS), "Azure", |_| one());
    rising(&tokens, "Azure");
    let tokens = tokens_never_restart(gcs(), GcsIo::starting_at(START_MS), "GCS", |_| one());
    rising(&tokens, "GCS");
}

/// A semaphore's object deleted the same way: its slots' tokens come from
/// the key's one counter, and go on above the floor too.
#[test]
fn a_semaphore_whose_object_was_deleted_never_repeats_a_token() {
    use crate::strategy::single_object::semaphore::SlotOutcome;
    let mut c = single();
    let mut io = io();
    let slot = |c: &mut ClientCore, io: &mut ModelIo, holder: &str| {
        io.advance(1_000);
        match c
            .try_acquire_slot(io, "sem", &grant(holder), 2, false)
            .ready()
        {
            Ok(SlotOutcome::Granted(l)) => l,
            other => panic!("{other:?}"),
        }
    };
    let first = slot(&mut c, &mut io, "a");
    let second = slot(&mut c, &mut io, "b");
    assert_eq!((first.token, second.token), (1, 2));
    for lease in [first, second.clone()] {
        c.rewrite(&mut io, lease, true).ready().unwrap();
    }
    io.advance(24 * 3_600_000);
    expire_lock_objects(&mut io, &["locks/sem".to_string()]);
    let mut fresh = single();
    let third = slot(&mut fresh, &mut io, "c");
    assert!(
        third.token > second.token,
        "{} after {}",
        third.token,
        second.token
    );
}

/// No lock and no fenced write reaches a key's floor.
#[test]
fn no_lock_or_fenced_write_reaches_a_floor() {
    let mut c = single();
    let mut io = io();
    let lease = granted(&mut c, &mut io, "a");
    io.take_requests();
    let e = c
        .try_acquire(&mut io, ".s3-lease-floor/k", &grant("a"))
        .ready();
    assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
    let e = c
        .fenced_write(&mut io, &lease, "locks/.s3-lease-floor/k", put(b"x"), false)
        .ready();
    assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
    assert!(io.take_requests().is_empty());
    assert_eq!(
        next_of_floor(&io),
        crate::strategy::floor::FLOOR_STRIDE,
        "the floor is as its grant wrote it"
    );
}

fn next_of_floor(io: &ModelIo) -> u64 {
    let body = &io.store.objects["locks/.s3-lease-floor/k"].body;
    let value: serde_json::Value = serde_json::from_slice(body).unwrap();
    value["next"].as_u64().unwrap()
}
