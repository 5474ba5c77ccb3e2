//! The seal key kept in the store: what it costs a client, the race to
//! create it, and the object no lock or fenced write may touch.

use super::*;

const KEY_OBJECT: &str = "locks/.s3-lease-seal-key";

fn to_key_object(requests: &[crate::stores::s3::S3Request]) -> Vec<Method> {
    requests
        .iter()
        .filter(|r| r.object_key == KEY_OBJECT)
        .map(|r| r.method)
        .collect()
}

#[test]
fn two_clients_racing_to_create_the_seal_key_end_with_the_one_stored() {
    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let mut io = io();
        let (mut a, mut b) = (
            core(strategy, ExpiryClock::Server),
            core(strategy, ExpiryClock::Server),
        );
        // b reads no key; a creates one (and takes the lock) before b's
        // create arrives.
        let mut a_lease = None;
        let mut racing = Intercept::new(&mut io, |request, io: &mut ModelIo| {
            if request.object_key == KEY_OBJECT
                && request.method == Method::Put
                && a_lease.is_none()
            {
                a_lease = Some(granted(&mut a, io, "a"));
            }
            None
        });
        let held = b
            .try_acquire(&mut racing, "k", &grant("b"))
            .ready()
            .unwrap();
        drop(racing);
        assert!(
            matches!(held, AcquireOutcome::Held(Some(_))),
            "{strategy:?}: {held:?}"
        );
        let sent = io.take_requests();
        assert_eq!(
            to_key_object(&sent),
            // b: GET (none); a: GET, PUT (created); b: PUT (412), GET (a's).
            [
                Method::Get,
                Method::Get,
                Method::Put,
                Method::Put,
                Method::Get
            ],
            "{strategy:?}"
        );
        // One key: b renews and releases a's lease, a renews what b returns.
        let lease = a_lease.unwrap();
        let lease = b.rewrite(&mut io, lease, false).ready().unwrap();
        let lease = a.rewrite(&mut io, lease, false).ready().unwrap();
        b.rewrite(&mut io, lease, true).ready().unwrap();
        let theirs = granted(&mut b, &mut io, "b");
        a.rewrite(&mut io, theirs, true).ready().unwrap();
    }
}

/// Each request as (method, "key" for the seal key object, else "lock").
fn sent(io: &mut ModelIo) -> Vec<(Method, &'static str)> {
    io.take_requests()
        .iter()
        .map(|r| {
            (
                r.method,
                if r.object_key == KEY_OBJECT {
                    "key"
                } else if r.object_key.contains(".s3-lease-floor/") {
                    "floor"
                } else {
                    "lock"
                },
            )
        })
        .collect()
}

#[test]
fn a_client_reads_the_seal_key_once_and_renews_its_own_leases_in_one_put() {
    use Method::{Get, Put};
    let mut io = io();
    let mut first = single();
    let lease = granted(&mut first, &mut io, "a");
    assert_eq!(
        sent(&mut io),
        [
            (Get, "key"),
            (Put, "key"),
            (Get, "lock"),
            (Put, "floor"),
            (Put, "lock")
        ],
        "the prefix's first client creates the key, then grants (the key's floor first)"
    );
    let lease = first.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), [(Put, "lock")], "its own lease: one PUT");

    // Another process renews the lease (from a file, say): one read of the
    // key for its life, one read that checks the lease's token, the PUT.
    let mut other = single();
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), [(Get, "key"), (Get, "lock"), (Put, "lock")]);
    // What it renewed it wrote: one PUT from then on.
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), [(Put, "lock")]);
    // The first client no longer wrote the latest object: one read first.
    let lease = first.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(sent(&mut io), [(Get, "lock"), (Put, "lock")]);
    first.rewrite(&mut io, lease, true).ready().unwrap();
    assert_eq!(sent(&mut io), [(Put, "lock")], "release: one PUT");

    // A third client's first call on a held or free key: + the key's GET.
    let mut third = single();
    granted(&mut third, &mut io, "c");
    assert_eq!(sent(&mut io), [(Get, "key"), (Get, "lock"), (Put, "lock")]);
    third
        .try_acquire(&mut io, "k", &grant("d"))
        .ready()
        .unwrap();
    assert_eq!(sent(&mut io), [(Get, "lock")], "later calls: no key read");
    // Calls that neither seal nor check a lease never read it.
    let mut reader = single();
    reader.inspect(&mut io, "k").ready().unwrap();
    reader.fenced_get(&mut io, "data/x").ready().unwrap();
    assert!(sent(&mut io).iter().all(|(_, o)| *o == "lock"));
}

#[test]
fn a_configured_seal_key_never_reads_the_store() {
    let mut io = io();
    let mut c = core_with(Strategy::SingleObject, |r| {
        r.seal_key = Some(crate::seal::SealKey::new("shared"))
    });
    let lease = granted(&mut c, &mut io, "a");
    c.rewrite(&mut io, lease, true).ready().unwrap();
    assert!(to_key_object(&io.take_requests()).is_empty());
    assert!(!io.store.objects.contains_key(KEY_OBJECT));
}

#[test]
fn an_unreadable_seal_key_is_a_typed_error_and_grants_nothing() {
    let mut io = io();
    io.store
        .put_object(KEY_OBJECT, b"{\"seal_key\": \"short\"}");
    let mut c = single();
    for _ in 0..2 {
        match c.try_acquire(&mut io, "k", &grant("a")).ready() {
            Err(Error::CorruptLockObject { object_key, .. }) => assert_eq!(object_key, KEY_OBJECT),
            other => panic!("{other:?}"),
        }
    }
    assert!(!io.store.objects.contains_key("locks/k"), "nothing written");
    // Deleted (a rotation), the next call makes a new key and grants.
    io.store.objects.remove(KEY_OBJECT);
    granted(&mut c, &mut io, "a");
}

#[test]
fn no_lock_or_fenced_write_reaches_the_seal_key_object() {
    for mut c in both() {
        let mut io = io();
        let lease = granted(&mut c, &mut io, "a");
        let stored = io.store.objects[KEY_OBJECT].body.clone();
        for key in [".s3-lease-seal-key", "x.s3-lease-seal-key"] {
            let refused = c.try_acquire(&mut io, key, &grant("a")).ready();
            assert!(
                matches!(refused, Err(Error::InvalidArgument(_))),
                "{refused:?}"
            );
        }
        for object in [KEY_OBJECT, ".s3-lease-seal-key", "other/.s3-lease-seal-key"] {
            let change = Change::Put {
                body: b"x".to_vec(),
                content_type: "text/plain".into(),
            };
            let refused = c
                .fenced_write(&mut io, &lease, object, change, false)
                .ready();
            assert!(
                matches!(refused, Err(Error::InvalidArgument(_))),
                "{refused:?}"
            );
            let refused = c
                .fenced_write(&mut io, &lease, object, Change::Delete { nonce: 1 }, false)
                .ready();
            assert!(
                matches!(refused, Err(Error::InvalidArgument(_))),
                "{refused:?}"
            );
        }
        assert_eq!(io.store.objects[KEY_OBJECT].body, stored);
    }
}
