//! The epoch-objects strategy against an in-memory store with its own clock:
//! `Last-Modified` and `Date` in whole seconds, LIST with prefix, start-after
//! and pages, as S3 and SeaweedFS answer them.

use super::*;
use crate::driver::{self, Io};
use std::collections::BTreeMap;

const DIR: &str = "locks/k/";

#[derive(Default)]
struct Store {
    /// key -> (body, etag, last modified, server ms)
    objects: BTreeMap<String, (Vec<u8>, String, u64)>,
    next_etag: u64,
    /// The server's clock; the client's is `local_ms`.
    server_ms: u64,
    local_ms: u64,
    requests: Vec<S3Request>,
    /// 501 for `If-Match`, like a store without it.
    no_if_match: bool,
    /// Run just before the next PUT reaches the store.
    before_put: Option<BeforePut>,
}

type BeforePut = Box<dyn FnOnce(&mut Store)>;

fn http_date(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const M: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "Mon, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        M[(month - 1) as usize],
        secs / 3600 % 24,
        secs / 60 % 60,
        secs % 60
    )
}

impl Store {
    fn new() -> Self {
        Store {
            server_ms: 1_700_000_000_000,
            local_ms: 1_700_000_000_000,
            ..Default::default()
        }
    }

    fn reply(&self, status: u16) -> S3Response {
        S3Response {
            status,
            headers: vec![("date".into(), http_date(self.server_ms))],
            ..Default::default()
        }
    }

    fn apply(&mut self, r: &S3Request) -> S3Response {
        let query = |name: &str| {
            r.query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let header = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let current = self.objects.get(&r.object_key).cloned();
        match r.method {
            Method::Get if r.object_key.is_empty() => {
                let prefix = query("prefix").unwrap_or_default();
                let after = query("start-after").unwrap_or_default();
                let max: usize = query("max-keys").unwrap().parse().unwrap();
                let keys: Vec<&String> = self
                    .objects
                    .keys()
                    .filter(|k| k.starts_with(&prefix) && **k > after)
                    .collect();
                let mut xml = format!(
                    "<ListBucketResult><IsTruncated>{}</IsTruncated>",
                    keys.len() > max
                );
                for k in keys.iter().take(max) {
                    xml.push_str(&format!("<Contents><Key>{k}</Key></Contents>"));
                }
                xml.push_str("</ListBucketResult>");
                S3Response {
                    body: xml.into_bytes(),
                    ..self.reply(200)
                }
            }
            Method::Get => match current {
                None => self.reply(404),
                Some((body, etag, modified)) => {
                    let mut reply = self.reply(200);
                    reply.headers.push(("etag".into(), etag));
                    reply
                        .headers
                        .push(("last-modified".into(), http_date(modified)));
                    reply.body = body;
                    reply
                }
            },
            Method::Put => {
                if let Some(f) = self.before_put.take() {
                    f(self);
                }
                let current = self.objects.get(&r.object_key).cloned();
                if header("if-none-match").is_some() && current.is_some() {
                    return self.reply(412);
                }
                if let Some(want) = header("if-match") {
                    if self.no_if_match {
                        return self.reply(501);
                    }
                    match &current {
                        Some((_, etag, _)) if *etag == want => {}
                        _ => return self.reply(412),
                    }
                }
                self.next_etag += 1;
                let etag = format!("\"e{}\"", self.next_etag);
                self.objects.insert(
                    r.object_key.clone(),
                    (r.body.clone(), etag.clone(), self.server_ms),
                );
                let mut reply = self.reply(200);
                reply.headers.push(("etag".into(), etag));
                reply
            }
            Method::Delete => {
                self.objects.remove(&r.object_key);
                self.reply(204)
            }
            Method::Head => self.reply(405),
        }
    }

    fn advance(&mut self, ms: u64) {
        self.server_ms += ms;
        self.local_ms += ms;
    }

    fn methods(&mut self) -> Vec<Method> {
        std::mem::take(&mut self.requests)
            .into_iter()
            .map(|r| r.method)
            .collect()
    }

    fn epochs(&self) -> Vec<u64> {
        self.objects
            .keys()
            .filter_map(|k| parse_epoch_key(DIR, k))
            .collect()
    }
}

impl Io for Store {
    fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        self.requests.push(request.clone());
        Ok(self.apply(request))
    }
    fn now_ms(&mut self) -> u64 {
        self.local_ms
    }
    fn monotonic_ms(&mut self) -> u64 {
        self.local_ms
    }
    fn sleep_ms(&mut self, ms: u64) {
        self.advance(ms);
    }
    fn random_u64(&mut self) -> u64 {
        7
    }
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn attempt(s: &mut Store, holder: &str, hint: u64) -> EpochOutcome {
    let op = EpochTryAcquire::new("k".into(), DIR.into(), grant(holder), hint);
    let (outcome, cleanup) = driver::run(s, op).unwrap();
    driver::run(s, Cleanup::new(cleanup.clone())).unwrap();
    (outcome, cleanup)
}

fn granted(s: &mut Store, holder: &str) -> Lease {
    match attempt(s, holder, 0).0 {
        AcquireOutcome::Granted(l) => l,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn held(s: &mut Store, holder: &str) -> Option<LockState> {
    match attempt(s, holder, 0).0 {
        AcquireOutcome::Held(h) => h,
        other => panic!("expected held, got {other:?}"),
    }
}

#[test]
fn keys_are_fixed_width_and_foreign_keys_are_ignored() {
    assert_eq!(
        epoch_key(DIR, 42),
        "locks/k/epoch-00000000000000000042.json"
    );
    assert_eq!(
        parse_epoch_key(DIR, &epoch_key(DIR, u64::MAX)),
        Some(u64::MAX)
    );
    for foreign in [
        "locks/k/epoch-42.json",
        "locks/k/epoch-0000000000000000004x.json",
        "locks/k/epoch-99999999999999999999.json",
        "locks/k/epoch-00000000000000000042.json.bak",
        "locks/k/other",
        "locks/kk/epoch-00000000000000000042.json",
    ] {
        assert_eq!(parse_epoch_key(DIR, foreign), None, "{foreign}");
    }
}

#[test]
fn first_grant_lists_creates_and_verifies_in_three_requests() {
    let mut s = Store::new();
    let lease = granted(&mut s, "a");
    assert_eq!(lease.token, 1);
    assert_eq!(s.methods(), [Method::Get, Method::Put, Method::Get]);
    let record = EpochRecord::from_json(&s.objects[&epoch_key(DIR, 1)].0, 1).unwrap();
    assert_eq!((record.expired, record.validity_ms), (false, 10_000));
}

#[test]
fn a_live_epoch_holds_others_off_with_two_requests() {
    let mut s = Store::new();
    granted(&mut s, "a");
    s.methods();
    let h = held(&mut s, "b").expect("holder seen");
    assert_eq!((h.record.token, h.record.holder_id.as_str()), (1, "a"));
    assert!(h.live);
    assert_eq!(s.methods(), [Method::Get, Method::Get]);
}

#[test]
fn validity_is_judged_by_the_server_clock_not_the_readers() {
    let mut s = Store::new();
    granted(&mut s, "a");
    // A reader whose clock is an hour ahead still sees the epoch live.
    s.local_ms += 3_600_000;
    assert!(held(&mut s, "b").is_some());
    // Only the server's time passing expires it: validity plus slack.
    s.server_ms += 10_000 + EXPIRY_SLACK_MS;
    assert!(held(&mut s, "b").is_some(), "at the limit it is still live");
    s.server_ms += 1_000;
    assert_eq!(granted(&mut s, "b").token, 2);
}

#[test]
fn release_frees_the_key_at_once_and_tokens_keep_rising() {
    let mut s = Store::new();
    let a = granted(&mut s, "a");
    s.methods();
    driver::run(&mut s, EpochRewrite::release(a, DIR.into())).unwrap();
    assert_eq!(s.methods(), [Method::Put]);
    let record = EpochRecord::from_json(&s.objects[&epoch_key(DIR, 1)].0, 1).unwrap();
    assert!(record.expired);
    let b = granted(&mut s, "b");
    assert_eq!(b.token, 2);
    assert_eq!(
        s.methods(),
        [Method::Get, Method::Get, Method::Put, Method::Get],
        "LIST, GET, PUT, verifying LIST; nothing old enough to clean"
    );
}

#[test]
fn renew_moves_last_modified_and_late_renewals_are_lost() {
    let mut s = Store::new();
    let a = granted(&mut s, "a");
    s.advance(8_000);
    let renewed = driver::run(&mut s, EpochRewrite::renew(a.clone(), DIR.into())).unwrap();
    assert_eq!(renewed.expires_at_ms, s.local_ms + 10_000);
    assert_eq!(s.objects[&epoch_key(DIR, 1)].2, s.server_ms);
    // 8 s after the first grant's expiry: still live thanks to the renewal.
    s.advance(10_000);
    assert!(held(&mut s, "b").is_some());
    // Past the renewed lease's expiry, renew writes nothing and reports lost.
    s.advance(5_000);
    s.methods();
    let late = driver::run(&mut s, EpochRewrite::renew(renewed, DIR.into()));
    assert!(
        matches!(late, Err(Error::Lost { token: 1, .. })),
        "{late:?}"
    );
    assert!(s.methods().is_empty());
}

#[test]
fn a_renew_whose_reply_comes_after_expiry_is_lost() {
    let mut s = Store::new();
    let a = granted(&mut s, "a");
    s.advance(9_000);
    // The reply takes 2 s: the server may have judged us expired by then.
    s.before_put = Some(Box::new(|s: &mut Store| s.advance(2_000)));
    let r = driver::run(&mut s, EpochRewrite::renew(a, DIR.into()));
    assert!(matches!(r, Err(Error::Lost { .. })), "{r:?}");
}

#[test]
fn a_store_without_if_match_is_renewed_by_plain_put() {
    let mut s = Store::new();
    let a = granted(&mut s, "a");
    s.no_if_match = true;
    s.methods();
    driver::run(&mut s, EpochRewrite::renew(a, DIR.into())).unwrap();
    let puts = std::mem::take(&mut s.requests);
    assert_eq!(puts.len(), 2);
    assert!(puts[1].headers.iter().all(|(k, _)| k != "if-match"));
}

#[test]
fn a_rewritten_epoch_means_renew_and_release_are_lost_naming_the_holder() {
    let mut s = Store::new();
    let a = granted(&mut s, "a");
    // Someone (an operator) rewrote our epoch object.
    s.objects.get_mut(&epoch_key(DIR, 1)).unwrap().1 = "\"other\"".into();
    for op in [
        EpochRewrite::renew(a.clone(), DIR.into()),
        EpochRewrite::release(a.clone(), DIR.into()),
    ] {
        s.methods();
        match driver::run(&mut s, op) {
            Err(Error::Lost {
                token: 1,
                current: Some(c),
                ..
            }) => assert_eq!((c.record.token, c.etag.as_str()), (1, "\"other\"")),
            other => panic!("{other:?}"),
        }
        assert_eq!(s.methods(), [Method::Put, Method::Get, Method::Get]);
    }
}

#[test]
fn cleanup_keeps_the_prefix_small_over_many_handovers() {
    let mut s = Store::new();
    for round in 1..=100u64 {
        let lease = granted(&mut s, &format!("h{round}"));
        assert_eq!(lease.token, round);
        driver::run(&mut s, EpochRewrite::release(lease, DIR.into())).unwrap();
        assert!(s.epochs().len() <= KEEP_EPOCHS as usize, "{:?}", s.epochs());
    }
    assert_eq!(s.epochs(), [99, 100]);
}

#[test]
fn a_re_created_old_epoch_is_not_a_grant() {
    let mut s = Store::new();
    let a = granted(&mut s, "a");
    driver::run(&mut s, EpochRewrite::release(a, DIR.into())).unwrap();
    // While our client decides to create epoch 2, others create 2 and 3
    // and cleanup deletes 2 again: our PUT succeeds, on a stale epoch.
    s.before_put = Some(Box::new(|s: &mut Store| {
        let body = s.objects[&epoch_key(DIR, 1)].0.clone();
        for e in [2, 3] {
            s.objects.insert(
                epoch_key(DIR, e),
                (body.clone(), format!("\"x{e}\""), s.server_ms),
            );
        }
        s.objects.remove(&epoch_key(DIR, 2));
    }));
    assert_eq!(held(&mut s, "late"), None);
}

#[test]
fn losing_the_create_race_is_held() {
    let mut s = Store::new();
    s.before_put = Some(Box::new(|s: &mut Store| {
        s.objects.insert(
            epoch_key(DIR, 1),
            (b"{}".to_vec(), "\"w\"".into(), s.server_ms),
        );
    }));
    assert_eq!(held(&mut s, "b"), None);
}

#[test]
fn a_hint_lists_from_just_below_it_and_falls_back_to_a_full_listing() {
    let mut s = Store::new();
    for _ in 0..3 {
        let l = granted(&mut s, "a");
        driver::run(&mut s, EpochRewrite::release(l, DIR.into())).unwrap();
    }
    s.methods();
    assert!(matches!(attempt(&mut s, "b", 3).0, AcquireOutcome::Granted(ref l) if l.token == 4));
    let first = &s.requests[0];
    assert!(first
        .query
        .contains(&("start-after".into(), epoch_key(DIR, 1))));
    // A hint beyond everything listed (the prefix was wiped): the client
    // lists fully, then still never goes below what it saw.
    s.objects.clear();
    s.methods();
    assert!(matches!(attempt(&mut s, "b", 9).0, AcquireOutcome::Granted(ref l) if l.token == 10));
    assert_eq!(s.methods()[..2], [Method::Get, Method::Get]);
}

#[test]
fn inspect_reports_the_highest_epoch() {
    let mut s = Store::new();
    assert_eq!(
        driver::run(&mut s, EpochInspect::new("k".into(), DIR.into(), 0)).unwrap(),
        None
    );
    let a = granted(&mut s, "a");
    s.methods();
    let state = driver::run(&mut s, EpochInspect::new("k".into(), DIR.into(), 0))
        .unwrap()
        .unwrap();
    assert_eq!(s.methods(), [Method::Get, Method::Get]);
    assert_eq!((state.record.token, state.etag), (1, a.etag));
    assert!(state.live);
}

#[test]
fn foreign_keys_under_the_prefix_are_ignored_and_corrupt_epochs_are_typed() {
    let mut s = Store::new();
    s.objects.insert(
        "locks/k/epoch-garbage.json".into(),
        (b"x".to_vec(), "\"g\"".into(), s.server_ms),
    );
    assert_eq!(granted(&mut s, "a").token, 1);
    s.objects.insert(
        epoch_key(DIR, 7),
        (
            b"{\"expired\": \"no\"}".to_vec(),
            "\"c\"".into(),
            s.server_ms,
        ),
    );
    let op = EpochTryAcquire::new("k".into(), DIR.into(), grant("b"), 0);
    match driver::run(&mut s, op) {
        Err(Error::CorruptLockObject { object_key, reason }) => {
            assert_eq!(object_key, epoch_key(DIR, 7));
            assert!(reason.contains("\"expired\" must be a boolean"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn epoch_records_refuse_each_kind_of_corruption() {
    let cases: &[(&[u8], &str)] = &[
        (b"nope", "not JSON"),
        (b"[]", "expected a JSON object"),
        (br#"{"validity_ms": 5}"#, "missing field \"expired\""),
        (br#"{"expired": false}"#, "missing field \"validity_ms\""),
        (br#"{"expired": false, "validity_ms": -1}"#, "validity_ms"),
        (
            br#"{"expired": false, "validity_ms": 5, "token": 8}"#,
            "names epoch 7",
        ),
        (
            br#"{"expired": false, "validity_ms": 5, "holder": []}"#,
            "\"holder\" must be a string",
        ),
    ];
    for (body, want) in cases {
        let err = EpochRecord::from_json(body, 7).unwrap_err();
        assert!(
            err.contains(want),
            "{}: {err}",
            String::from_utf8_lossy(body)
        );
    }
    // The design's own minimal object is readable.
    let r = EpochRecord::from_json(br#"{"expired": false, "validity_ms": 60000}"#, 7).unwrap();
    assert_eq!((r.token, r.holder_id.as_str()), (7, ""));
}

#[test]
fn replies_without_server_time_or_with_garbage_listings_are_typed_errors() {
    let mut s = Store::new();
    granted(&mut s, "a");
    let key = epoch_key(DIR, 1);
    let mut reply = s.apply(&S3Request::new(Method::Get, &key, MAX_LOCK_OBJECT_BYTES));
    reply.headers.retain(|(k, _)| k != "date");
    match read_epoch("k", DIR, 1, reply) {
        Err(Error::S3(e)) => assert!(e.message.contains("date"), "{}", e.message),
        other => panic!("{other:?}"),
    }
    let garbage = S3Response {
        status: 200,
        body: b"<html>hello</html>".to_vec(),
        ..Default::default()
    };
    let mut op = EpochTryAcquire::new("k".into(), DIR.into(), grant("b"), 0);
    op.start(0);
    match op.on_response(garbage, 0) {
        Step::Done(Err(Error::S3(e))) => {
            assert!(
                e.message.contains("unreadable ListObjectsV2"),
                "{}",
                e.message
            )
        }
        other => panic!("{other:?}"),
    }
}
