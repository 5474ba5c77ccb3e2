//! The client over the S3 model: lost replies after applied writes (every
//! write operation, both strategies), expiry clocks with skewed readers, and
//! conditional GETs.

use super::*;
use crate::expiry::ExpiryClock;
use crate::ready::Ready;
use crate::sigv4::Credentials;
use crate::stores::s3::model::MissingIfMatch;
use crate::stores::s3::Method;
use crate::testing::intercept::Intercept;
use crate::testing::model_io::ModelIo;
use crate::testing::raw_config;

const START_MS: u64 = 1_700_000_000_000;

fn core(strategy: Strategy, clock: ExpiryClock) -> ClientCore {
    ClientCore::new(ClientConfig::validate(raw_config(strategy, clock)).unwrap())
}

fn both() -> [ClientCore; 2] {
    [
        core(Strategy::SingleObject, ExpiryClock::Server),
        core(Strategy::EpochObjects, ExpiryClock::Server),
    ]
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), String::new()).unwrap()
}

fn granted(c: &mut ClientCore, io: &mut ModelIo, holder: &str) -> Lease {
    match c.try_acquire(io, "k", &grant(holder)).ready().unwrap() {
        AcquireOutcome::Granted(l) => l,
        other => panic!("expected a grant, got {other:?}"),
    }
}

/// The model's `random_u64` differs every call, so each operation draws
/// a write id of its own.
fn io() -> ModelIo {
    ModelIo::new(START_MS)
}

#[test]
fn a_grant_whose_reply_was_lost_is_recognised_not_left_as_a_ghost() {
    for mut c in both() {
        let mut io = io();
        io.lose_put_replies = 1;
        let lease = granted(&mut c, &mut io, "a");
        assert_eq!(lease.token, 1, "{:?}", c.config.strategy);
        // The caller holds it: renew works, and nobody else gets it.
        let renewed = c.rewrite(&mut io, lease, false).ready().unwrap();
        let mut other = c.clone();
        let held = other
            .try_acquire(&mut io, "k", &grant("b"))
            .ready()
            .unwrap();
        assert!(matches!(held, AcquireOutcome::Held(Some(_))), "{held:?}");
        c.rewrite(&mut io, renewed, true).ready().unwrap();
    }
}

#[test]
fn a_renew_or_release_whose_reply_was_lost_is_recognised() {
    for mut c in both() {
        let mut io = io();
        let lease = granted(&mut c, &mut io, "a");
        io.advance(1_000);
        io.lose_put_replies = 1;
        let renewed = c.rewrite(&mut io, lease.clone(), false).ready().unwrap();
        assert_eq!(renewed.token, lease.token);
        // The renewed lease is the live one: it renews again.
        let again = c.rewrite(&mut io, renewed, false).ready().unwrap();
        io.lose_put_replies = 1;
        c.rewrite(&mut io, again, true).ready().unwrap();
        // Released for real: the next holder gets the key at once.
        let next = granted(&mut c, &mut io, "b");
        assert_eq!(next.token, 2, "{:?}", c.config.strategy);
    }
}

#[test]
fn a_write_whose_reply_was_lost_and_that_did_not_land_is_sent_again() {
    for mut c in both() {
        let mut io = io();
        // The first PUT never arrives (refused before the store).
        let mut first = true;
        let mut flaky = Intercept::new(&mut io, |request, _| {
            (request.method == Method::Put && std::mem::take(&mut first))
                .then(|| Err(Error::Transport("connection refused".into())))
        });
        let lease = match c.try_acquire(&mut flaky, "k", &grant("a")).ready().unwrap() {
            AcquireOutcome::Granted(l) => l,
            other => panic!("{other:?}"),
        };
        assert_eq!(lease.token, 1);
    }
}

#[test]
fn a_fenced_write_or_delete_whose_reply_was_lost_is_recognised() {
    for mut c in both() {
        let mut io = io();
        let lease = granted(&mut c, &mut io, "a");
        for change in [
            Change::Put {
                body: b"v1".to_vec(),
                content_type: "text/plain".into(),
            },
            Change::Delete { nonce: 9 },
        ] {
            io.lose_put_replies = 1;
            let written = c
                .fenced_write(&mut io, &lease, "data/x", change, false)
                .ready()
                .unwrap_or_else(|e| panic!("{e:?}"));
            assert_eq!(written.token, lease.token);
        }
    }
}

#[test]
fn conditional_gets_observe_an_unchanged_lock_with_a_304() {
    for mut c in both() {
        let mut io = io();
        let mut holder = c.clone();
        granted(&mut holder, &mut io, "a");
        io.take_requests();
        c.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
        c.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
        let gets: Vec<_> = io
            .take_requests()
            .into_iter()
            .filter(|r| r.method == Method::Get && !r.object_key.is_empty())
            .filter(|r| r.object_key != "locks/.s3-lease-seal-key")
            .collect();
        assert_eq!(gets.len(), 2);
        assert!(gets[0].headers.iter().all(|(k, _)| k != "if-none-match"));
        assert!(gets[1].headers.iter().any(|(k, _)| k == "if-none-match"));
    }
}

#[test]
fn each_expiry_clock_ignores_a_reader_minutes_ahead() {
    for (strategy, clock) in [
        (Strategy::SingleObject, ExpiryClock::Server),
        (Strategy::SingleObject, ExpiryClock::Observed),
        (Strategy::EpochObjects, ExpiryClock::Server),
        (Strategy::EpochObjects, ExpiryClock::Observed),
    ] {
        let mut io = io();
        let mut a = core(strategy, clock);
        let mut b = core(strategy, clock);
        granted(&mut a, &mut io, "a");
        io.clock_offset_ms = 300_000;
        let held = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
        assert!(
            matches!(&held, AcquireOutcome::Held(Some(s)) if s.live),
            "{strategy:?} {clock:?}: {held:?}"
        );
        // Not before the ttl has passed (observed: since b first saw it).
        io.advance(9_000);
        let held = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
        assert!(
            matches!(held, AcquireOutcome::Held(_)),
            "{strategy:?} {clock:?}"
        );
        // Well after: taken.
        io.advance(4_000);
        let taken = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
        assert!(
            matches!(taken, AcquireOutcome::Granted(_)),
            "{strategy:?} {clock:?}: {taken:?}"
        );
    }
}

#[test]
fn the_holder_clock_is_refused_for_epoch_objects() {
    let raw = raw_config(Strategy::EpochObjects, ExpiryClock::Holder);
    assert!(matches!(
        ClientConfig::validate(raw),
        Err(Error::InvalidConfig { field, .. }) if field == "expiry-clock"
    ));
}

fn preflighted(strategy: Strategy, clock: ExpiryClock) -> ClientCore {
    let mut raw = raw_config(strategy, clock);
    raw.preflight = Some(true);
    ClientCore::new(ClientConfig::validate(raw).unwrap())
}

#[test]
fn a_preflighted_client_probes_once_then_grants() {
    let mut c = preflighted(Strategy::SingleObject, ExpiryClock::Server);
    let mut io = io();
    granted(&mut c, &mut io, "a");
    // 15 probes (the bucket's lifecycle rules among them) and their
    // cleanup, the race (57), the seal key (GET: none; PUT), then the
    // grant's GET, the key's floor and its PUT.
    assert_eq!(io.take_requests().len(), 15 + 57 + 2 + 3);
    assert!(io
        .store
        .objects
        .keys()
        .all(|k| !k.contains(".s3-lease-preflight/")));
    let held = c.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
    assert!(matches!(held, AcquireOutcome::Held(Some(_))));
    assert_eq!(io.take_requests().len(), 1, "the verdict is cached");
}

#[test]
fn a_preflighted_client_refuses_to_grant_on_a_failing_store_naming_the_capability() {
    let mut c = preflighted(Strategy::SingleObject, ExpiryClock::Server);
    let mut io = io();
    io.store.ignore_conditions = true;
    for round in 0..2 {
        match c.try_acquire(&mut io, "k", &grant("a")).ready() {
            Err(Error::StoreUnsafe(r)) => {
                assert_eq!(
                    r.capability,
                    crate::preflight::Capability::IfNoneMatchExisting
                );
                assert!(r.silent, "{r:?}");
            }
            other => panic!("{other:?}"),
        }
        let sent = io.take_requests();
        let scratch = |v: &str| v.contains(".s3-lease-preflight/");
        let lifecycle =
            |r: &crate::stores::s3::S3Request| r.query.iter().any(|(k, _)| k == "lifecycle");
        assert!(sent.iter().all(|r| scratch(&r.object_key)
            || r.query.iter().any(|(_, v)| scratch(v))
            || lifecycle(r)));
        assert_eq!(
            sent.is_empty(),
            round == 1,
            "probed once, then refused from the cache"
        );
    }
    assert!(io.store.objects.is_empty(), "no lock object written");
    let err = c
        .acquire(&mut io, "k", &grant("a"), 5_000)
        .ready()
        .unwrap_err();
    assert!(err.to_string().contains("if-none-match-existing"), "{err}");
    assert!(io.take_requests().is_empty());

    // A store without If-Match fails single-object only.
    let mut io = self::io();
    io.store.if_match_unsupported = true;
    let mut single = preflighted(Strategy::SingleObject, ExpiryClock::Server);
    let refused = single.try_acquire(&mut io, "k", &grant("a")).ready();
    assert!(
        matches!(&refused, Err(Error::StoreUnsafe(r)) if r.capability == crate::preflight::Capability::IfMatchPut),
        "{refused:?}"
    );
    let mut epoch = preflighted(Strategy::EpochObjects, ExpiryClock::Server);
    granted(&mut epoch, &mut io, "a");
}

#[test]
fn an_undecided_preflight_is_tried_again() {
    let mut c = preflighted(Strategy::EpochObjects, ExpiryClock::Server);
    let mut io = io();
    let mut calls = 0;
    let mut flaky = Intercept::new(&mut io, |req, _| {
        calls += 1;
        // The first preflight's LIST meets a busy store.
        (calls < 14 && req.object_key.is_empty()).then(|| {
            Ok(crate::stores::s3::S3Response {
                status: 503,
                ..Default::default()
            })
        })
    });
    let first = c.try_acquire(&mut flaky, "k", &grant("a")).ready();
    assert!(
        matches!(&first, Err(Error::StoreUnsafe(r)) if r.verdict == crate::preflight::Verdict::Unknown),
        "{first:?}"
    );
    let second = c.try_acquire(&mut flaky, "k", &grant("a")).ready().unwrap();
    assert!(matches!(second, AcquireOutcome::Granted(_)), "{second:?}");
}

#[test]
fn without_the_option_no_preflight_is_sent() {
    let mut c = core(Strategy::SingleObject, ExpiryClock::Server);
    let mut io = io();
    io.store.ignore_conditions = true;
    granted(&mut c, &mut io, "a");
    assert_eq!(
        io.take_requests().len(),
        2 + 3,
        "the seal key's two, the grant's three (its GET, the key's floor, its PUT)"
    );
}

#[test]
fn the_key_memory_replaces_values_forgets_keys_and_starts_over_when_full() {
    let mut map = KeyMap::new();
    map.insert("a", 1);
    map.insert("b", 2);
    map.insert("a", 3);
    assert_eq!(
        (map.get("a"), map.get("b"), map.0.len()),
        (Some(&3), Some(&2), 2)
    );
    map.remove("a");
    assert_eq!((map.get("a"), map.get("b")), (None, Some(&2)));
    for i in 1..MAX_REMEMBERED_KEYS {
        map.insert(&i.to_string(), 0);
    }
    assert_eq!(map.0.len(), MAX_REMEMBERED_KEYS);
    map.insert("b", 5); // known: replaced, nothing forgotten
    assert_eq!(map.0.len(), MAX_REMEMBERED_KEYS);
    map.insert("new", 6); // unknown and full: starts over
    assert_eq!(
        (map.0.len(), map.get("new"), map.get("b")),
        (1, Some(&6), None)
    );
}

fn single() -> ClientCore {
    core(Strategy::SingleObject, ExpiryClock::Server)
}

/// Method and `If-Match` of each request.
fn shape(io: &mut ModelIo) -> Vec<(Method, Option<String>)> {
    io.take_requests()
        .into_iter()
        .map(|r| {
            let if_match = r
                .headers
                .iter()
                .find(|(k, _)| k == "if-match")
                .map(|(_, v)| v.clone());
            (r.method, if_match)
        })
        .collect()
}

#[test]
fn a_client_takes_back_a_key_it_released_with_one_conditional_put() {
    let mut c = single();
    let mut io = io();
    let first = granted(&mut c, &mut io, "a");
    let released = c.rewrite(&mut io, first, true).ready().unwrap();
    io.take_requests();
    let again = granted(&mut c, &mut io, "a");
    assert_eq!(
        shape(&mut io),
        [(Method::Put, Some(released.etag.clone()))],
        "one PUT, conditional on the released object"
    );
    assert_eq!(again.token, released.token + 1);
    // And it is a real grant: renewable, and others see it held.
    let again = c.rewrite(&mut io, again, false).ready().unwrap();
    let held = single()
        .try_acquire(&mut io, "k", &grant("b"))
        .ready()
        .unwrap();
    assert!(matches!(held, AcquireOutcome::Held(Some(_))), "{held:?}");
    c.rewrite(&mut io, again, true).ready().unwrap();
}

#[test]
fn a_stale_released_etag_costs_a_read_and_never_a_second_holder() {
    let mut c = single();
    let mut io = io();
    let first = granted(&mut c, &mut io, "a");
    let released = c.rewrite(&mut io, first, true).ready().unwrap();
    // Someone else takes it meanwhile.
    let mut other = single();
    let theirs = granted(&mut other, &mut io, "b");
    io.take_requests();
    let outcome = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap();
    match &outcome {
        AcquireOutcome::Held(Some(s)) => assert_eq!(s.record.token, theirs.token),
        other => panic!("expected held by b, got {other:?}"),
    }
    let requests = shape(&mut io);
    assert_eq!(
        requests,
        [
            (Method::Put, Some(released.etag.clone())),
            (Method::Get, None)
        ],
        "the stale PUT is refused (412), then one read"
    );
    // Released again by them: taken after a read, with the next token.
    other.rewrite(&mut io, theirs, true).ready().unwrap();
    let ours = granted(&mut c, &mut io, "a");
    assert_eq!(ours.token, released.token + 2);
}

#[test]
fn a_released_object_that_vanished_is_created_again_on_either_stores_answer() {
    for missing in [MissingIfMatch::NotFound, MissingIfMatch::PreconditionFailed] {
        let mut c = single();
        let mut io = io();
        io.store.missing_if_match = missing;
        let first = granted(&mut c, &mut io, "a");
        c.rewrite(&mut io, first, true).ready().unwrap();
        io.store.objects.clear();
        io.take_requests();
        let lease = granted(&mut c, &mut io, "a");
        let methods: Vec<Method> = shape(&mut io).into_iter().map(|(m, _)| m).collect();
        // The stale PUT, the read, then (the floor went with everything
        // else) the key's floor created again and the grant.
        assert_eq!(
            methods,
            [Method::Put, Method::Get, Method::Put, Method::Put],
            "{missing:?}"
        );
        assert_eq!(lease.token, 1, "{missing:?}");
    }
}

#[test]
fn a_retake_whose_reply_was_lost_is_recognised() {
    let mut c = single();
    let mut io = io();
    let first = granted(&mut c, &mut io, "a");
    let released = c.rewrite(&mut io, first, true).ready().unwrap();
    io.lose_put_replies = 1;
    let again = granted(&mut c, &mut io, "a");
    assert_eq!(again.token, released.token + 1);
    let held = single()
        .try_acquire(&mut io, "k", &grant("b"))
        .ready()
        .unwrap();
    assert!(matches!(held, AcquireOutcome::Held(Some(_))), "{held:?}");
}

fn credentials(access_key_id: &str, secret: &str) -> Credentials {
    Credentials {
        access_key_id: access_key_id.into(),
        secret_access_key: secret.into(),
        session_token: Some(format!("token-of-{access_key_id}")),
    }
}

/// A client of the model whose config differs from `core`'s by `change`.
fn core_with(strategy: Strategy, change: impl FnOnce(&mut crate::config::RawConfig)) -> ClientCore {
    let mut raw = raw_config(strategy, ExpiryClock::Server);
    change(&mut raw);
    ClientCore::new(ClientConfig::validate(raw).unwrap())
}

/// The access key id the request is signed with, as the component signs
/// it: `s3::prepare` with the client's config at the time of the call.
fn signing_key_id(c: &ClientCore, request: &crate::stores::s3::S3Request) -> String {
    let signed = crate::config::ClientConfig::prepare(&c.config, request, START_MS / 1000);
    let (_, auth) = signed
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .expect("signed");
    let credential = auth.split("Credential=").nth(1).expect("credential");
    credential.split('/').next().unwrap().to_string()
}

#[test]
fn a_lease_sealed_under_some_credentials_is_renewed_and_released_under_others() {
    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let mut io = io();
        let mut a = core_with(strategy, |r| {
            crate::testing::bucket_of(r).credentials = credentials("AKIDA", "secret-a")
        });
        let mut b = core_with(strategy, |r| {
            crate::testing::bucket_of(r).credentials = credentials("AKIDB", "secret-b")
        });
        let lease = granted(&mut a, &mut io, "a");
        io.advance(1_000);
        let renewed = b.rewrite(&mut io, lease, false).ready().unwrap();
        let renewed = a.rewrite(&mut io, renewed, false).ready().unwrap();
        b.rewrite(&mut io, renewed, true).ready().unwrap();
    }
}

#[test]
fn a_lease_is_refused_by_a_client_of_another_bucket_or_seal_key() {
    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let mut io = io();
        let key = |k: &str| Some(crate::seal::SealKey::new(k));
        let mut keyed = core_with(strategy, |r| r.seal_key = key("shared"));
        let lease = granted(&mut keyed, &mut io, "a");
        let others = [
            core_with(strategy, |r| {
                crate::testing::bucket_of(r).bucket = "other-bucket".into()
            }),
            core_with(strategy, |r| r.seal_key = key("another")),
            core_with(strategy, |_| {}),
        ];
        for mut other in others {
            io.take_requests();
            let err = other
                .rewrite(&mut io, lease.clone(), false)
                .ready()
                .unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err:?}");
            // Before any request but a client's one read of its seal key
            // (created by the first client without a configured one).
            let sent = io.take_requests();
            assert!(
                sent.iter()
                    .all(|r| r.object_key == "locks/.s3-lease-seal-key"),
                "{sent:?}"
            );
        }
        // The same seal key under other credentials accepts it.
        let mut same = core_with(strategy, |r| {
            r.seal_key = key("shared");
            crate::testing::bucket_of(r).credentials = credentials("AKIDB", "secret-b");
        });
        same.rewrite(&mut io, lease, true).ready().unwrap();
    }
}

#[test]
fn set_credentials_signs_the_next_request_with_them_and_keeps_leases() {
    for mut c in both() {
        let mut io = io();
        let lease = granted(&mut c, &mut io, "a");
        let before = io.take_requests();
        assert_eq!(signing_key_id(&c, before.last().unwrap()), "AKID");
        c.set_credential(Credential::Aws(credentials("AKID2", "rotated-secret")))
            .unwrap();
        // The lease stays valid, and so does what the client remembers.
        let renewed = c.rewrite(&mut io, lease, false).ready().unwrap();
        let after = io.take_requests();
        assert!(!after.is_empty());
        for request in &after {
            assert_eq!(signing_key_id(&c, request), "AKID2");
        }
        let signed = crate::config::ClientConfig::prepare(&c.config, &after[0], START_MS / 1000);
        let token = signed
            .headers
            .iter()
            .find(|(name, _)| name == "x-amz-security-token")
            .map(|(_, v)| v.as_str());
        assert_eq!(token, Some("token-of-AKID2"));
        // Invalid credentials are refused as the constructor refuses them,
        // and the client keeps the ones it had.
        let err = c
            .set_credential(Credential::Aws(credentials("", "s")))
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidConfig { field, .. } if field == "credentials.access-key-id"),
            "{err:?}"
        );
        let Credential::Aws(kept) = c.config.store.credential() else {
            panic!("an S3 client's credential is AWS keys")
        };
        assert_eq!(kept.access_key_id, "AKID2");
        c.rewrite(&mut io, renewed, true).ready().unwrap();
    }
}

/// epoch-objects deletes the epochs a grant made obsolete before it
/// returns the grant. A cleanup that hung past the grant's ttl returned a
/// lease that had lapsed meanwhile, after others could have been granted
/// newer tokens (the simulation found it): the cleanup's requests are
/// bounded by the grant's life, and a grant that lapsed is not returned.
#[test]
fn an_epoch_grant_that_lapses_while_old_epochs_are_cleaned_up_is_not_returned() {
    let mut c = core(Strategy::EpochObjects, ExpiryClock::Server);
    let mut model = io();
    // Once set, each DELETE takes 11 s.
    let slow_deletes = std::cell::Cell::new(false);
    let mut io = Intercept::new(&mut model, |request, io: &mut ModelIo| {
        if request.method == Method::Delete && slow_deletes.get() {
            io.advance(11_000);
        }
        None
    });
    // Epochs 1 and 2, released: the next grant cleans up the old ones.
    for holder in ["a", "b"] {
        let lease = match c.try_acquire(&mut io, "k", &grant(holder)).ready().unwrap() {
            AcquireOutcome::Granted(l) => l,
            other => panic!("{other:?}"),
        };
        c.rewrite(&mut io, lease, true).ready().unwrap();
    }
    slow_deletes.set(true);
    let outcome = c.try_acquire(&mut io, "k", &grant("c")).ready().unwrap();
    assert_eq!(outcome, AcquireOutcome::Held(None));
    // The bound each DELETE was sent with.
    let bounds: Vec<Option<u32>> = io
        .io
        .requests
        .iter()
        .filter(|r| r.method == Method::Delete)
        .map(|r| r.within_ms)
        .collect();
    assert!(
        bounds.iter().all(|b| b.is_some_and(|ms| ms <= 10_000)),
        "{:?}",
        bounds
    );
}

mod forged_leases;
mod lifecycle_deletion;
mod request_timeouts;
mod retries_across_calls;
mod stored_seal_key;

/// A bare 404 to everything: a SeaweedFS master, or any web server.
fn bare_404s(io: &mut ModelIo) {
    for _ in 0..20 {
        io.scripted.push_back(crate::stores::s3::S3Response {
            status: 404,
            ..Default::default()
        });
    }
}

fn is_wrong_endpoint(result: Result<impl core::fmt::Debug, Error>) -> bool {
    match result {
        Err(Error::InvalidConfig { field, reason }) => {
            field == "endpoint"
                && reason.starts_with(crate::testing::model_io::MODEL_ENDPOINT)
                && reason.contains("not an S3 endpoint")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_endpoint_that_is_not_s3_ends_every_call_at_its_first_request() {
    for mut c in both() {
        let strategy = c.config.strategy;
        let mut io = io();
        bare_404s(&mut io);
        let try_once = c.try_acquire(&mut io, "k", &grant("a")).ready();
        assert!(is_wrong_endpoint(try_once), "{strategy:?}");
        // The seal key's GET, and nothing written.
        let methods: Vec<_> = io.take_requests().iter().map(|r| r.method).collect();
        assert_eq!(methods, [Method::Get], "{strategy:?}");

        // Not retried until the deadline: a configuration error.
        let waited = c.acquire(&mut io, "k", &grant("a"), 60_000).ready();
        assert!(is_wrong_endpoint(waited), "{strategy:?}");
        assert_eq!(io.take_requests().len(), 1, "{strategy:?}");

        assert!(is_wrong_endpoint(c.inspect(&mut io, "k").ready()));
        assert_eq!(io.take_requests().len(), 1, "{strategy:?}");

        assert!(is_wrong_endpoint(c.preflight(&mut io).ready()));
        assert_eq!(io.take_requests().len(), 1, "{strategy:?}");
        assert!(io.store.objects.is_empty());
    }
}
