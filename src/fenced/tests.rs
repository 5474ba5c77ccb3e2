//! Fenced writes against an in-memory store with S3's conditional PUT and
//! content-addressed etags (so equal bytes give equal etags, as on S3).

use super::*;
use std::collections::HashMap;

#[derive(Clone)]
struct Object {
    body: Vec<u8>,
    headers: Vec<(String, String)>,
}

#[derive(Default)]
struct Store {
    objects: HashMap<String, Object>,
    requests: Vec<S3Request>,
}

fn etag_of(body: &[u8]) -> String {
    format!("\"{}\"", &crate::sigv4::sha256_hex(body)[..32])
}

impl Store {
    fn apply(&mut self, r: &S3Request) -> S3Response {
        self.requests.push(r.clone());
        let current = self.objects.get(&r.object_key).cloned();
        let header = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let reply = |status: u16| S3Response {
            status,
            ..Default::default()
        };
        match (r.method, current) {
            (Method::Head | Method::Get, None) => reply(404),
            (Method::Head | Method::Get, Some(o)) => {
                let mut headers = o.headers.clone();
                headers.push(("etag".into(), etag_of(&o.body)));
                S3Response {
                    status: 200,
                    headers,
                    body: if r.method == Method::Get {
                        o.body
                    } else {
                        Vec::new()
                    },
                    body_too_large: None,
                }
            }
            (Method::Put, current) => {
                let exists = current.is_some();
                if header("if-none-match").is_some() && exists {
                    return reply(412);
                }
                if let Some(want) = header("if-match") {
                    match &current {
                        Some(o) if etag_of(&o.body) == want => {}
                        _ => return reply(412),
                    }
                }
                self.objects.insert(
                    r.object_key.clone(),
                    Object {
                        body: r.body.clone(),
                        headers: r
                            .headers
                            .iter()
                            .filter(|(k, _)| k.starts_with("x-amz-meta-") || k == "content-type")
                            .cloned()
                            .collect(),
                    },
                );
                S3Response {
                    status: 200,
                    headers: vec![("etag".into(), etag_of(&r.body))],
                    ..Default::default()
                }
            }
            _ => reply(405),
        }
    }

    /// Runs `op`, calling `before_put` just before each PUT reaches the store.
    fn run<O: Operation>(
        &mut self,
        mut op: O,
        mut before_put: impl FnMut(&mut Store),
    ) -> Result<O::Output, Error> {
        let mut step = op.start(0);
        loop {
            match step {
                Step::Done(result) => return result,
                Step::Send(request) => {
                    if request.method == Method::Put {
                        before_put(self);
                    }
                    let response = self.apply(&request);
                    step = op.on_response(response, 0);
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

    fn count(&mut self) -> Vec<Method> {
        std::mem::take(&mut self.requests)
            .into_iter()
            .map(|r| r.method)
            .collect()
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
    )
    .unwrap()
}

fn delete(token: u64, nonce: u64) -> FencedWrite {
    FencedWrite::new(KEY.into(), fence(token, false), Change::Delete { nonce }).unwrap()
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
    let mut s = Store::default();
    let w = s.put(5, "v1").unwrap();
    assert_eq!((w.token, w.previous_token), (5, None));
    assert_eq!(
        s.requests[1].headers[0],
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
    let mut s = Store::default();
    let first = s.put(5, "v1").unwrap();
    s.count();
    let w = s.put(7, "v2").unwrap();
    assert_eq!(w.previous_token, Some(5));
    assert_eq!(s.requests[1].headers[0], ("if-match".into(), first.etag));
    // Equal tokens: the same holder retrying.
    assert_eq!(s.put(7, "v3").unwrap().previous_token, Some(7));
}

#[test]
fn a_lower_token_is_fenced_after_one_head() {
    let mut s = Store::default();
    s.put(7, "new").unwrap();
    s.count();
    assert_eq!(fenced(s.put(6, "stale")), (6, 7));
    assert_eq!(s.count(), [Method::Head]);
    assert_eq!(s.get().unwrap().body, b"new");
}

#[test]
fn equal_tokens_can_be_rejected() {
    let mut s = Store::default();
    s.put(7, "once").unwrap();
    assert_eq!(fenced(s.run(write(7, true, "twice"), |_| {})), (7, 7));
    assert!(s.run(write(8, true, "newer"), |_| {}).is_ok());
}

#[test]
fn a_newer_write_between_read_and_write_is_seen_and_fences_us() {
    let mut s = Store::default();
    s.put(1, "old").unwrap();
    let mut once = true;
    let result = s.run(write(2, false, "stale"), |store| {
        if std::mem::take(&mut once) {
            store.put(3, "newer").unwrap();
        }
    });
    assert_eq!(fenced(result), (2, 3));
    assert_eq!(s.get().unwrap().body, b"newer");
}

#[test]
fn an_equal_or_older_write_in_between_only_costs_a_retry() {
    let mut s = Store::default();
    s.put(1, "old").unwrap();
    let mut once = true;
    let w = s
        .run(write(3, false, "ours"), |store| {
            if std::mem::take(&mut once) {
                store.put(2, "in between").unwrap();
            }
        })
        .unwrap();
    assert_eq!(w.previous_token, Some(2));
    assert_eq!(s.get().unwrap().body, b"ours");
}

#[test]
fn a_delete_leaves_a_unique_tombstone_that_older_tokens_cannot_pass() {
    let mut s = Store::default();
    s.put(4, "v").unwrap();
    s.count();
    s.run(delete(5, 1), |_| {}).unwrap();
    assert_eq!(s.count(), [Method::Head, Method::Put]);
    assert_eq!(s.get(), None, "a tombstone reads as absent");
    assert_eq!(fenced(s.put(4, "resurrect")), (4, 5));
    assert_eq!(fenced(s.run(delete(4, 2), |_| {})), (4, 5));
    // Two deletes with the same token store different bytes: distinct etags.
    let before = etag_of(&s.objects[KEY].body);
    s.run(delete(5, 2), |_| {}).unwrap();
    assert_ne!(etag_of(&s.objects[KEY].body), before);
    // The holder of the tombstone's token, or a newer one, recreates it.
    assert_eq!(s.put(6, "back").unwrap().previous_token, Some(5));
    assert_eq!(s.get().unwrap().body, b"back");
}

#[test]
fn deleting_an_absent_object_still_fences_it() {
    let mut s = Store::default();
    s.run(delete(9, 1), |_| {}).unwrap();
    assert_eq!(fenced(s.put(8, "late")), (8, 9));
}

#[test]
fn an_object_written_without_fencing_counts_as_token_zero() {
    let mut s = Store::default();
    s.objects.insert(
        KEY.into(),
        Object {
            body: b"plain".to_vec(),
            headers: vec![],
        },
    );
    assert_eq!(s.get().unwrap().token, 0);
    assert_eq!(s.put(1, "fenced").unwrap().previous_token, Some(0));
}

#[test]
fn bad_token_metadata_is_a_typed_error_and_nothing_is_written() {
    let mut s = Store::default();
    s.objects.insert(
        KEY.into(),
        Object {
            body: b"x".to_vec(),
            headers: vec![(META_TOKEN.into(), "seven".into())],
        },
    );
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
    assert_eq!(s.objects[KEY].body, b"x");
}

#[test]
fn a_lease_of_another_lock_is_refused() {
    let mut s = Store::default();
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
    )
    .unwrap();
    match s.run(op, |_| {}) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("do not compare"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn endless_interference_ends_in_conflict() {
    let mut s = Store::default();
    s.put(1, "v").unwrap();
    let mut n = 0;
    let result = s.run(write(5, false, "ours"), |store| {
        n += 1;
        store.put(1, &format!("churn {n}")).unwrap();
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
