//! Leases made outside the client: re-sealed with the old bucket-derived
//! key, or sealed with the right key by someone who read it. Neither may
//! lower a key's token or write an object over the cap.

use super::*;
use crate::lock_object::LockRecord;
use crate::sigv4::{hex, hmac};

/// What anyone who knew the bucket's name could compute before: the `v2.`
/// seal, keyed by the bucket alone.
fn old_bucket_seal(bucket: &str, lock: &str, l: &Lease) -> String {
    let key = hmac(b"s3-lease lease seal v2: bucket key", bucket.as_bytes());
    let mut message = Vec::new();
    for text in [lock, &l.key, &l.holder_id, &l.etag, &l.metadata] {
        message.extend_from_slice(&(text.len() as u64).to_le_bytes());
        message.extend_from_slice(text.as_bytes());
    }
    for number in [l.token, l.expires_at_ms, l.acquired_at_ms, l.ttl_ms] {
        message.extend_from_slice(&number.to_le_bytes());
    }
    format!("v2.{}", hex(&hmac(&key, &message)[..16]))
}

fn stored(io: &ModelIo) -> LockRecord {
    LockRecord::from_json(&io.store.objects["locks/k"].body).unwrap()
}

/// Tokens 1 and 2 granted and released: the stored token is 2, and the
/// lock object's etag is what any reader of the bucket sees.
fn two_grants(c: &mut ClientCore, io: &mut ModelIo) -> (Lease, Vec<u64>) {
    let first = granted(c, io, "a");
    c.rewrite(io, first.clone(), true).ready().unwrap();
    let second = granted(c, io, "a");
    let released = c.rewrite(io, second.clone(), true).ready().unwrap();
    (released, vec![first.token, second.token])
}

/// The key's next grant, by a client of its own.
fn next_token(io: &mut ModelIo) -> u64 {
    granted(&mut single(), io, "next").token
}

#[test]
fn a_lease_resealed_with_the_old_bucket_key_and_a_lower_token_is_refused() {
    let mut c = single();
    let mut io = io();
    let (released, tokens) = two_grants(&mut c, &mut io);
    let mut forged = Lease {
        token: 1,
        ..released
    };
    forged.seal = old_bucket_seal("b", "single-object:locks/k", &forged);
    io.take_requests();
    for mut client in [single(), c.clone()] {
        let err = client
            .rewrite(&mut io, forged.clone(), false)
            .ready()
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(io.take_requests().iter().all(|r| r.method != Method::Put));
        assert_eq!(stored(&io).token, 2);
    }
    let next = next_token(&mut io);
    assert!(tokens.iter().all(|t| next > *t), "{next} after {tokens:?}");
}

#[test]
fn a_lease_with_70_kb_of_metadata_resealed_with_the_old_key_is_refused() {
    let mut c = single();
    let mut io = io();
    let (released, _) = two_grants(&mut c, &mut io);
    let mut forged = Lease {
        metadata: "x".repeat(70_000),
        ..released
    };
    forged.seal = old_bucket_seal("b", "single-object:locks/k", &forged);
    io.take_requests();
    let err = single()
        .rewrite(&mut io, forged, false)
        .ready()
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
    assert!(io.take_requests().iter().all(|r| r.method != Method::Put));
    single().inspect(&mut io, "k").ready().unwrap();
}

/// A lease sealed with the client's own key: what someone who read the
/// key could make.
fn sealed_as(c: &mut ClientCore, io: &mut ModelIo, lease: Lease) -> Lease {
    c.lock_seal(io, "locks/k").ready().unwrap().seal(lease)
}

#[test]
fn a_lease_sealed_with_the_right_key_and_a_lower_token_never_lowers_the_stored_one() {
    let mut c = single();
    let mut io = io();
    let (released, tokens) = two_grants(&mut c, &mut io);
    let forged = sealed_as(
        &mut c,
        &mut io,
        Lease {
            token: 1,
            ..released
        },
    );
    io.take_requests();
    // Another process, and the client that wrote the object itself.
    for mut client in [single(), c.clone()] {
        for release in [false, true] {
            let err = client
                .rewrite(&mut io, forged.clone(), release)
                .ready()
                .unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
            assert!(io.take_requests().iter().all(|r| r.method != Method::Put));
            assert_eq!(stored(&io).token, 2);
        }
    }
    let next = next_token(&mut io);
    assert!(tokens.iter().all(|t| next > *t), "{next} after {tokens:?}");
}

#[test]
fn a_lease_sealed_with_the_right_key_and_70_kb_of_metadata_writes_nothing() {
    let mut c = single();
    let mut io = io();
    let (released, _) = two_grants(&mut c, &mut io);
    let forged = sealed_as(
        &mut c,
        &mut io,
        Lease {
            metadata: "x".repeat(70_000),
            ..released
        },
    );
    io.take_requests();
    for mut client in [single(), c.clone()] {
        let err = client
            .rewrite(&mut io, forged.clone(), false)
            .ready()
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        assert!(io.take_requests().iter().all(|r| r.method != Method::Put));
    }
    // The key stays readable, and takes its next grant.
    assert_eq!(
        single()
            .inspect(&mut io, "k")
            .ready()
            .unwrap()
            .unwrap()
            .record
            .token,
        2
    );
    assert_eq!(next_token(&mut io), 3);
}

#[test]
fn on_epoch_objects_a_lower_token_rewrites_no_highest_epoch() {
    let mut c = core(Strategy::EpochObjects, ExpiryClock::Server);
    let mut io = io();
    let first = granted(&mut c, &mut io, "a");
    let first = c.rewrite(&mut io, first, true).ready().unwrap();
    let second = granted(&mut c, &mut io, "a");
    let second = c.rewrite(&mut io, second, true).ready().unwrap();
    let seal = c.lock_seal(&mut io, "locks/k").ready().unwrap();
    // Token 1 with the highest epoch's etag, or with epoch 1's own (that
    // write lands on epoch 1, and the LIST after it finds epoch 2), and a
    // live expiry, so the renew is sent.
    let now = io.now_ms();
    for etag in [second.etag.clone(), first.etag.clone()] {
        let forged = seal.seal(Lease {
            token: 1,
            etag,
            expires_at_ms: now + 10_000,
            ..second.clone()
        });
        let mut other = epoch_client();
        other.lock_seal(&mut io, "locks/k").ready().unwrap();
        io.take_requests();
        let result = other.rewrite(&mut io, forged, false).ready();
        assert!(matches!(result, Err(Error::Lost { .. })), "{result:?}");
        assert!(io.take_requests().iter().any(|r| r.method == Method::Put));
    }
    let next = granted(&mut epoch_client(), &mut io, "next");
    assert_eq!(next.token, 3);
}

fn epoch_client() -> ClientCore {
    core(Strategy::EpochObjects, ExpiryClock::Server)
}

#[test]
fn on_dynamodb_the_tables_condition_refuses_a_lower_token() {
    use crate::stores::dynamodb::model::DynamoIo;
    let dynamo = || {
        core_with(Strategy::SingleObject, |r| {
            r.store = crate::config::Store::DynamoDb(crate::testing::test_table("locks"));
            r.expiry_clock = None;
        })
    };
    let granted = |c: &mut ClientCore, io: &mut DynamoIo| match c
        .try_acquire(io, "k", &grant("a"))
        .ready()
        .unwrap()
    {
        AcquireOutcome::Granted(l) => l,
        other => panic!("{other:?}"),
    };
    let mut io = DynamoIo::with_table("locks", START_MS);
    let mut c = dynamo();
    let first = granted(&mut c, &mut io);
    c.rewrite(&mut io, first, true).ready().unwrap();
    let second = granted(&mut c, &mut io);
    let second = c.rewrite(&mut io, second, true).ready().unwrap();
    let seal = c.lock_seal(&mut io, "locks/k").ready().unwrap();
    let forged = seal.seal(Lease { token: 1, ..second });
    for mut client in [dynamo(), c.clone()] {
        io.take_requests();
        io.store.calls.clear();
        let err = client
            .rewrite(&mut io, forged.clone(), false)
            .ready()
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
        let token = &io.store.items["locks/k"]["token"]["N"];
        assert_eq!(token, "2", "{:?}", io.store.calls);
    }
    // The PutItem the table refused, and the read that tells why.
    assert_eq!(io.store.calls, ["PutItem", "GetItem"]);
    assert_eq!(granted(&mut dynamo(), &mut io).token, 3);
}
