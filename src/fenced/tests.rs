//! Fenced writes against the in-memory S3 model: S3's conditional PUT and
//! MD5 ETags (equal bytes give equal ETags, as on S3).

use super::*;
use crate::driver::Io;
use crate::ready::Ready;
use crate::stores::s3::model::Object;
use crate::testing::model_io::ModelIo;

/// 2023-11-14T22:13:20Z.
const START_MS: u64 = 1_700_000_000_000;

/// One client of the model that runs fenced operations, and can let a test
/// act just before each of its PUTs (another writer in between).
struct Client {
    io: ModelIo,
}

impl Client {
    fn new() -> Self {
        Client {
            io: ModelIo::new(START_MS),
        }
    }

    /// Runs `op`, calling `before_put` just before each PUT reaches the store.
    fn run<O: Operation>(
        &mut self,
        mut op: O,
        mut before_put: impl FnMut(&mut Client),
    ) -> Result<O::Output, Error> {
        let mut step = op.start(self.io.now_ms());
        loop {
            match step {
                Step::Done(result) => return result,
                Step::SendAll(_) => panic!("a fenced write sends no batch"),
                Step::Send(request) => {
                    if request.method == Method::Put {
                        before_put(self);
                    }
                    let response = self.io.send(&request).ready()?;
                    step = op.on_response(response, self.io.now_ms());
                }
            }
        }
    }

    fn put(&mut self, token: u64, body: &str) -> Result<Written, Error> {
        self.run(write(token, false, body), |_| {})
    }

    fn get(&mut self) -> Option<FencedObject> {
        self.run(FencedGet::new(KEY.into()), |_| {}).unwrap()
    }

    /// The methods of the requests sent since the last call.
    fn count(&mut self) -> Vec<Method> {
        self.io
            .take_requests()
            .into_iter()
            .map(|r| r.method)
            .collect()
    }

    fn stored(&self) -> &Object {
        &self.io.store.objects[KEY]
    }
}

const KEY: &str = "data/x";

fn fence(token: u64, reject_equal: bool) -> Fence {
    Fence {
        lock: lock_identity("single-object", "locks/k"),
        token,
        reject_equal,
    }
}

fn write(token: u64, reject_equal: bool, body: &str) -> FencedWrite {
    FencedWrite::new(
        KEY.into(),
        fence(token, reject_equal),
        Change::Put {
            body: body.as_bytes().to_vec(),
            content_type: "text/plain".into(),
        },
        crate::testing::write_id(),
    )
    .unwrap()
}

fn delete(token: u64, nonce: u64) -> FencedWrite {
    FencedWrite::new(
        KEY.into(),
        fence(token, false),
        Change::Delete { nonce },
        crate::testing::write_id(),
    )
    .unwrap()
}

fn fenced(result: Result<Written, Error>) -> (u64, u64) {
    match result {
        Err(Error::Fenced {
            our_token,
            stored_token,
            ..
        }) => (our_token, stored_token),
        other => panic!("expected fenced, got {other:?}"),
    }
}

#[test]
fn creates_with_if_none_match_and_records_the_token() {
    let mut s = Client::new();
    let w = s.put(5, "v1").unwrap();
    assert_eq!((w.token, w.previous_token), (5, None));
    assert_eq!(
        s.io.requests[1].headers[0],
        ("if-none-match".into(), "*".into())
    );
    assert_eq!(s.count(), [Method::Head, Method::Put]);
    let got = s.get().unwrap();
    assert_eq!(
        (got.body.as_slice(), got.token, got.content_type.as_str()),
        (&b"v1"[..], 5, "text/plain")
    );
    assert_eq!(got.etag, w.etag);
}

#[test]
fn overwrites_with_if_match_when_the_stored_token_is_not_higher() {
    let mut s = Client::new();
    let first = s.put(5, "v1").unwrap();
    s.count();
    let w = s.put(7, "v2").unwrap();
    assert_eq!(w.previous_token, Some(5));
    assert_eq!(s.io.requests[1].headers[0], ("if-match".into(), first.etag));
    // Equal tokens: the same holder retrying.
    assert_eq!(s.put(7, "v3").unwrap().previous_token, Some(7));
}

#[test]
fn a_lower_token_is_fenced_after_one_head() {
    let mut s = Client::new();
    s.put(7, "new").unwrap();
    s.count();
    assert_eq!(fenced(s.put(6, "stale")), (6, 7));
    assert_eq!(s.count(), [Method::Head]);
    assert_eq!(s.get().unwrap().body, b"new");
}

#[test]
fn equal_tokens_can_be_rejected() {
    let mut s = Client::new();
    s.put(7, "once").unwrap();
    assert_eq!(fenced(s.run(write(7, true, "twice"), |_| {})), (7, 7));
    assert!(s.run(write(8, true, "newer"), |_| {}).is_ok());
}

#[test]
fn a_newer_write_between_read_and_write_is_seen_and_fences_us() {
    let mut s = Client::new();
    s.put(1, "old").unwrap();
    let mut once = true;
    let result = s.run(write(2, false, "stale"), |other| {
        if std::mem::take(&mut once) {
            other.put(3, "newer").unwrap();
        }
    });
    assert_eq!(fenced(result), (2, 3));
    assert_eq!(s.get().unwrap().body, b"newer");
}

#[test]
fn an_equal_or_older_write_in_between_only_costs_a_retry() {
    let mut s = Client::new();
    s.put(1, "old").unwrap();
    let mut once = true;
    let w = s
        .run(write(3, false, "ours"), |other| {
            if std::mem::take(&mut once) {
                other.put(2, "in between").unwrap();
            }
        })
        .unwrap();
    assert_eq!(w.previous_token, Some(2));
    assert_eq!(s.get().unwrap().body, b"ours");
}

#[test]
fn a_delete_leaves_a_unique_tombstone_that_older_tokens_cannot_pass() {
    let mut s = Client::new();
    s.put(4, "v").unwrap();
    s.count();
    s.run(delete(5, 1), |_| {}).unwrap();
    assert_eq!(s.count(), [Method::Head, Method::Put]);
    assert_eq!(s.get(), None, "a tombstone reads as absent");
    assert_eq!(fenced(s.put(4, "resurrect")), (4, 5));
    assert_eq!(fenced(s.run(delete(4, 2), |_| {})), (4, 5));
    // Two deletes with the same token store different bytes: distinct etags.
    let before = s.stored().etag.clone();
    s.run(delete(5, 2), |_| {}).unwrap();
    assert_ne!(s.stored().etag, before);
    // The holder of the tombstone's token, or a newer one, recreates it.
    assert_eq!(s.put(6, "back").unwrap().previous_token, Some(5));
    assert_eq!(s.get().unwrap().body, b"back");
}

#[test]
fn deleting_an_absent_object_still_fences_it() {
    let mut s = Client::new();
    s.run(delete(9, 1), |_| {}).unwrap();
    assert_eq!(fenced(s.put(8, "late")), (8, 9));
}

#[test]
fn an_object_written_without_fencing_counts_as_token_zero() {
    let mut s = Client::new();
    s.io.store.put_object(KEY, b"plain");
    assert_eq!(s.get().unwrap().token, 0);
    assert_eq!(s.put(1, "fenced").unwrap().previous_token, Some(0));
}

#[test]
fn bad_token_metadata_is_a_typed_error_and_nothing_is_written() {
    let mut s = Client::new();
    let object = Object::new(b"x".to_vec(), START_MS).with_metadata(META_TOKEN, "seven");
    s.io.store.objects.insert(KEY.into(), object);
    match s.put(1, "y") {
        Err(Error::CorruptLockObject { object_key, reason }) => {
            assert_eq!(object_key, KEY);
            assert!(reason.contains("\"seven\", not a token"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.run(FencedGet::new(KEY.into()), |_| {}),
        Err(Error::CorruptLockObject { .. })
    ));
    assert_eq!(s.stored().body, b"x");
}

#[test]
fn a_lease_of_another_lock_is_refused() {
    let mut s = Client::new();
    s.put(1, "v").unwrap();
    let other = Fence {
        lock: lock_identity("single-object", "locks/other"),
        token: 99,
        reject_equal: false,
    };
    let op = FencedWrite::new(
        KEY.into(),
        other,
        Change::Put {
            body: vec![],
            content_type: String::new(),
        },
        crate::testing::write_id(),
    )
    .unwrap();
    match s.run(op, |_| {}) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("do not compare"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn endless_interference_ends_in_conflict() {
    let mut s = Client::new();
    s.put(1, "v").unwrap();
    let mut n = 0;
    let result = s.run(write(5, false, "ours"), |other| {
        n += 1;
        other.put(1, &format!("churn {n}")).unwrap();
    });
    assert!(matches!(result, Err(Error::Conflict(_))), "{result:?}");
    assert_eq!(n, MAX_FENCE_ATTEMPTS);
}

#[test]
fn bad_arguments_are_refused_before_any_request() {
    let put = |token, body: Vec<u8>, content_type: &str| {
        FencedWrite::new(
            KEY.into(),
            fence(token, false),
            Change::Put {
                body,
                content_type: content_type.into(),
            },
            crate::testing::write_id(),
        )
        .err()
    };
    assert!(matches!(
        put(0, vec![], "a/b"),
        Some(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        put(1, vec![0; MAX_FENCED_OBJECT_BYTES + 1], "a/b"),
        Some(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        put(1, vec![], "text/plain\r\nx-evil: 1"),
        Some(Error::InvalidArgument(_))
    ));
    assert!(put(1, vec![], "").is_none(), "empty: octet-stream");
}

#[test]
fn lock_identity_fits_in_a_header() {
    let id = lock_identity("epoch-objects", "locks/ü k\n");
    assert!(id.bytes().all(|b| b.is_ascii_graphic()), "{id}");
}

#[test]
fn equal_bytes_under_a_newer_token_let_a_pending_older_write_through_as_documented() {
    // docs/protocol.md's "equal bytes, equal etags" limit, shown on the model as on
    // S3: token 6 writes exactly the bytes token 5 read, so token 5's
    // If-Match still passes and its write lands over token 6's.
    let mut s = Client::new();
    s.put(4, "same").unwrap();
    let mut once = true;
    let w = s
        .run(write(5, false, "same"), |other| {
            if std::mem::take(&mut once) {
                assert_eq!(other.put(6, "same").unwrap().previous_token, Some(4));
            }
        })
        .unwrap();
    assert_eq!(w.previous_token, Some(4), "token 5 never saw token 6");
    assert_eq!(s.get().unwrap().token, 5);
}

#[test]
fn a_lease_with_a_raised_token_cannot_fence_out_the_real_holder() {
    let seal = crate::testing::sealer("bucket").for_lock("single-object:locks/k".into());
    let lease = seal.seal(Lease {
        key: "k".into(),
        token: 3,
        holder_id: "a".into(),
        etag: "\"e\"".into(),
        expires_at_ms: 20_000,
        acquired_at_ms: 10_000,
        ttl_ms: 10_000,
        metadata: String::new(),
        seal: String::new(),
    });
    let fence = Fence::for_lease(&lease, &seal, "lock".into(), false).unwrap();
    assert_eq!(fence.token, 3);
    let raised = Lease {
        token: 1_000,
        ..lease
    };
    let r = Fence::for_lease(&raised, &seal, "lock".into(), false);
    assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
}
