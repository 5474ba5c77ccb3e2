//! Lock records another writer stored, judged on every store model under
//! every expiry clock the store allows: records whose `expires_at` and
//! `ttl_ms` disagree are held to the later expiry, a record with only the
//! design's fields to its `expires_at`, and a record claiming a lease no
//! writer may grant is refused.

use crate::client::ClientCore;
use crate::config::{ClientConfig, Store, Strategy};
use crate::error::Error;
use crate::expiry::ExpiryClock;
use crate::lease::Grant;
use crate::lock_object::{LockRecord, MAX_LOCK_OBJECT_BYTES};
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::stores::s3::{Method, S3Request};
use crate::stores::{
    azure::model as azure_model, dynamodb::model as dynamodb_model, gcs::model as gcs_model,
    s3::model as s3_model,
};
use crate::testing::model_io::{Model, ModelIo};
use crate::testing::raw_config;

/// A whole second, so `Last-Modified` of a write made now is now.
const T0: u64 = 1_700_000_000_000;
const OBJECT: &str = "locks/k";
/// The foreign record's token: a takeover writes the next.
const TOKEN: u64 = 5;

#[derive(Debug, Clone, Copy)]
enum StoreModel {
    S3,
    DynamoDb,
    AzureBlob,
    Gcs,
}

const STORES: [StoreModel; 4] = [
    StoreModel::S3,
    StoreModel::DynamoDb,
    StoreModel::AzureBlob,
    StoreModel::Gcs,
];

impl StoreModel {
    /// The clocks a client of this store may use (DynamoDB items have no
    /// server-side write time: no `server`).
    fn clocks(self) -> &'static [ExpiryClock] {
        match self {
            StoreModel::DynamoDb => &[ExpiryClock::Holder, ExpiryClock::Observed],
            _ => &[
                ExpiryClock::Holder,
                ExpiryClock::Server,
                ExpiryClock::Observed,
            ],
        }
    }

    fn config(self, clock: ExpiryClock) -> ClientConfig {
        let mut raw = raw_config(Strategy::SingleObject, clock);
        match self {
            StoreModel::S3 => {}
            StoreModel::DynamoDb => {
                raw.store = Store::DynamoDb(crate::testing::test_table("locks"));
            }
            StoreModel::AzureBlob => {
                raw.store = azure_model::client_config(azure_model::CONTAINER).store;
            }
            StoreModel::Gcs => {
                raw.store = gcs_model::client_config(gcs_model::BUCKET).store;
            }
        }
        ClientConfig::validate(raw).unwrap()
    }
}

/// What a contender's try-acquire found.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Held,
    Taken(u64),
    Refused(String),
}

/// The scenario on one store model: `body` stored at `T0` by another
/// writer, then a contender of `clock` tries at each `(ms after T0,
/// expected)`. The first try is at `T0`, so `observed` counts from there.
fn scenario<M: Model>(
    mut io: ModelIo<M>,
    store: StoreModel,
    clock: ExpiryClock,
    body: &str,
    tries: &[(u64, Seen)],
) {
    let put = S3Request::new(Method::Put, OBJECT, MAX_LOCK_OBJECT_BYTES)
        .body("application/json", body.as_bytes().to_vec());
    let stored = io.store.handle(&put);
    assert_eq!(stored.status, 200, "{store:?}: {stored:?}");
    let mut contender = ClientCore::new(store.config(clock));
    let grant = Grant::new(10_000, "contender".into(), String::new()).unwrap();
    let mut at = 0;
    for (after, expected) in tries {
        io.advance(after - at);
        at = *after;
        let seen = match contender.try_acquire(&mut io, "k", &grant).ready() {
            Ok(AcquireOutcome::Granted(lease)) => Seen::Taken(lease.token),
            Ok(AcquireOutcome::Held(_)) => Seen::Held,
            Err(Error::CorruptLockObject { reason, .. }) => Seen::Refused(reason),
            Err(e) => panic!("{store:?} {clock:?} at +{after} ms: {e:?}"),
        };
        let matches = match (&seen, expected) {
            (Seen::Refused(reason), Seen::Refused(want)) => reason.contains(want.as_str()),
            (seen, expected) => seen == expected,
        };
        assert!(
            matches,
            "{store:?} {clock:?} at +{after} ms: {seen:?}, expected {expected:?}; record {body}"
        );
        if let Seen::Refused(_) = seen {
            let get = S3Request::new(Method::Get, OBJECT, MAX_LOCK_OBJECT_BYTES);
            let stored = io.store.handle(&get);
            assert_eq!(
                String::from_utf8_lossy(&stored.body),
                body,
                "{store:?} {clock:?}: nothing is written over a refused record"
            );
        }
    }
}

/// `scenario` on every store model, under every clock it allows; `tries`
/// per clock.
fn on_every_store_and_clock(body: &str, tries: impl Fn(ExpiryClock) -> Vec<(u64, Seen)>) {
    for store in STORES {
        for &clock in store.clocks() {
            let tries = tries(clock);
            match store {
                StoreModel::S3 => scenario(
                    ModelIo::of(s3_model::S3Model::new(T0)),
                    store,
                    clock,
                    body,
                    &tries,
                ),
                StoreModel::DynamoDb => scenario(
                    dynamodb_model::DynamoIo::with_table("locks", T0),
                    store,
                    clock,
                    body,
                    &tries,
                ),
                StoreModel::AzureBlob => scenario(
                    ModelIo::of(azure_model::AzureModel::new(T0)),
                    store,
                    clock,
                    body,
                    &tries,
                ),
                StoreModel::Gcs => scenario(
                    ModelIo::of(gcs_model::GcsModel::new(T0)),
                    store,
                    clock,
                    body,
                    &tries,
                ),
            }
        }
    }
}

/// A record as another client writes it, `expires_at` and `renewed_at`
/// given in ms after `T0`.
fn record(expires_after_ms: u64, ttl_ms: Option<u64>, renewed_after_ms: Option<u64>) -> String {
    let seconds = |ms: u64| format!("{}", (T0 + ms) as f64 / 1000.0);
    let mut fields = vec![
        format!("\"expires_at\": {}", seconds(expires_after_ms)),
        format!("\"token\": {TOKEN}"),
    ];
    if let Some(ttl) = ttl_ms {
        fields.push(format!("\"ttl_ms\": {ttl}"));
    }
    if let Some(at) = renewed_after_ms {
        fields.push(format!("\"renewed_at\": {}", seconds(at)));
    }
    format!("{{{}}}", fields.join(", "))
}

/// Held until a 30 s lease from `T0` ends on every clock, taken after:
/// `holder` at 30 s, `observed` at 30 s + 1% + 100 ms after its first
/// look (at `T0`), `server` 2 s past 30 s from `Last-Modified` (`T0`).
fn thirty_seconds(_: ExpiryClock) -> Vec<(u64, Seen)> {
    vec![
        (0, Seen::Held),
        (7_000, Seen::Held),
        (29_000, Seen::Held),
        (33_000, Seen::Taken(TOKEN + 1)),
    ]
}

#[test]
fn a_record_whose_expires_at_outlasts_its_ttl_is_held_to_its_expires_at() {
    // The case that was taken over 6 to 7 s after its write on the
    // server clock, 23 s before its expires_at: with the write's time,
    // and without.
    on_every_store_and_clock(&record(30_000, Some(4_000), Some(0)), thirty_seconds);
    on_every_store_and_clock(&record(30_000, Some(4_000), None), thirty_seconds);
}

#[test]
fn a_record_whose_ttl_outlasts_its_expires_at_is_held_to_its_ttl_where_the_clock_can_place_it() {
    // With `renewed_at`, every clock can: `holder` holds it to
    // `renewed_at` + `ttl_ms`.
    on_every_store_and_clock(&record(4_000, Some(30_000), Some(0)), thirty_seconds);
    // Without it, `holder` has only `expires_at` (the design's rule, and
    // every plain client's); `server` and `observed` still hold the ttl.
    on_every_store_and_clock(&record(4_000, Some(30_000), None), |clock| {
        if clock == ExpiryClock::Holder {
            vec![
                (0, Seen::Held),
                (4_000, Seen::Held),
                (4_001, Seen::Taken(TOKEN + 1)),
            ]
        } else {
            thirty_seconds(clock)
        }
    });
}

#[test]
fn a_record_with_only_the_designs_fields_is_held_to_its_expires_at_on_every_clock() {
    on_every_store_and_clock(&record(30_000, None, None), |_| {
        vec![
            (0, Seen::Held),
            (30_000, Seen::Held),
            (30_001, Seen::Taken(TOKEN + 1)),
        ]
    });
    // Released is released on every clock.
    on_every_store_and_clock(
        &format!("{{\"expires_at\": 0, \"token\": {TOKEN}}}"),
        |_| vec![(0, Seen::Taken(TOKEN + 1))],
    );
}

#[test]
fn a_record_that_agrees_is_judged_by_its_ttl_as_before() {
    // What our writers store: `expires_at` is `renewed_at` plus `ttl_ms`.
    on_every_store_and_clock(&record(10_000, Some(10_000), Some(0)), |clock| {
        let taken = match clock {
            ExpiryClock::Holder => 10_001,
            // 10 s + 1% + 100 ms after its first look.
            ExpiryClock::Observed => 10_200,
            // Last-Modified + 10 s + 2 s, past the whole second.
            ExpiryClock::Server => 13_000,
        };
        vec![
            (0, Seen::Held),
            (taken - 1, Seen::Held),
            (taken, Seen::Taken(TOKEN + 1)),
        ]
    });
}

#[test]
fn a_record_claiming_a_lease_longer_than_any_ttl_is_refused_and_left_alone() {
    let week_and_a_second = crate::limits::MAX_TTL_MS + 1_000;
    on_every_store_and_clock(&record(week_and_a_second, Some(4_000), Some(0)), |_| {
        vec![(
            0,
            Seen::Refused("\"expires_at\" is more than 604800000 ms after \"renewed_at\"".into()),
        )]
    });
}

#[test]
fn what_the_claims_come_to() {
    let r = |expires_at_ms, ttl_ms, renewed_at_ms| LockRecord {
        expires_at_ms,
        ttl_ms,
        renewed_at_ms,
        ..LockRecord::default()
    };
    assert_eq!(
        r(T0 + 10_000, 10_000, T0).claimed_duration_ms(),
        Some(10_000)
    );
    assert_eq!(
        r(T0 + 30_000, 4_000, T0).claimed_duration_ms(),
        Some(30_000)
    );
    assert_eq!(
        r(T0 + 4_000, 30_000, T0).claimed_duration_ms(),
        Some(30_000)
    );
    // Written after its own expiry: the ttl is the only claim left.
    assert_eq!(r(T0, 4_000, T0 + 9_000).claimed_duration_ms(), Some(4_000));
    assert_eq!(r(T0 + 30_000, 4_000, 0).claimed_duration_ms(), None);
    assert_eq!(r(0, 4_000, T0).claimed_duration_ms(), None);
}
