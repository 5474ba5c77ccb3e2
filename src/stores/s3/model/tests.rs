//! The model against what S3 documents and what our transport does.

use super::*;
use crate::http_date::parse_ms;
use crate::stores::s3::{list_request, parse_list};

/// 2023-11-14T22:13:20.250Z: not on a whole second.
const NOW: u64 = 1_700_000_000_250;

fn get(key: &str) -> S3Request {
    S3Request::new(Method::Get, key, 1024)
}

fn head(key: &str) -> S3Request {
    S3Request::new(Method::Head, key, 1024)
}

fn put(key: &str, body: &[u8]) -> S3Request {
    S3Request::new(Method::Put, key, 1024).body("application/json", body.to_vec())
}

fn delete(key: &str) -> S3Request {
    S3Request::new(Method::Delete, key, 1024)
}

fn code(r: &S3Response) -> (u16, String) {
    (r.status, r.s3_error().code)
}

#[test]
fn etags_are_the_md5_of_the_bytes_whatever_the_metadata() {
    assert_eq!(etag_of(b""), "\"d41d8cd98f00b204e9800998ecf8427e\"");
    assert_eq!(etag_of(b"abc"), "\"900150983cd24fb0d6963f7d28e17f72\"");
    let mut s = S3Model::new(NOW);
    let a = s.handle(&put("a", b"same").header("x-amz-meta-token", "1"));
    let b = s.handle(
        &S3Request::new(Method::Put, "b", 1024)
            .header("x-amz-meta-token", "2")
            .body("text/plain", b"same".to_vec()),
    );
    assert_eq!(a.etag(), Some(etag_of(b"same").as_str()));
    assert_eq!(a.etag(), b.etag());
    assert_eq!(s.object("a").unwrap().etag, s.object("b").unwrap().etag);
    // Rewriting the same bytes keeps the ETag: an If-Match read before still passes.
    let again = s.handle(&put("a", b"same").header("if-match", a.etag().unwrap()));
    assert_eq!((again.status, again.etag()), (200, a.etag()));
}

#[test]
fn last_modified_and_date_are_whole_seconds_of_the_server_clock() {
    let mut s = S3Model::new(NOW);
    let r = s.handle(&put("k", b"v"));
    assert_eq!(s.object("k").unwrap().last_modified_ms, 1_700_000_000_000);
    assert_eq!(r.header("date"), Some("Tue, 14 Nov 2023 22:13:20 GMT"));
    s.advance(1_800);
    let r = s.handle(&get("k"));
    assert_eq!(
        r.header("last-modified").and_then(parse_ms),
        Some(1_700_000_000_000)
    );
    assert_eq!(r.header("date").and_then(parse_ms), Some(1_700_000_002_000));
    assert_eq!(r.header("content-type"), Some("application/json"));
}

#[test]
fn every_reply_has_a_date_and_a_fresh_request_id() {
    let mut s = S3Model::new(NOW);
    let replies = [
        s.handle(&get("missing")),
        s.handle(&head("missing")),
        s.handle(&put("k", b"v")),
        s.handle(&delete("k")),
        s.handle(&list_request("", None)),
        s.handle(&S3Request::new(Method::Put, "", 1024)),
    ];
    let mut ids: Vec<&str> = replies
        .iter()
        .map(|r| {
            assert!(r.header("date").and_then(parse_ms).is_some(), "{r:?}");
            r.header("x-amz-request-id").unwrap()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), replies.len());
}

#[test]
fn errors_carry_s3_xml_except_to_head() {
    let mut s = S3Model::new(NOW);
    let r = s.handle(&get("missing"));
    let e = r.s3_error();
    assert_eq!((e.status, e.code.as_str()), (404, "NoSuchKey"));
    assert_eq!(Some(e.request_id.as_str()), r.header("x-amz-request-id"));
    let body = String::from_utf8(r.body.clone()).unwrap();
    assert!(body.starts_with(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchKey</Code><Message>"
    ));
    assert!(body.contains(&format!("<RequestId>{}</RequestId></Error>", e.request_id)));
    assert!(r.is_missing_object());
    let r = s.handle(&head("missing"));
    assert_eq!(r.status, 404);
    assert!(r.body.is_empty());
    assert!(r.is_missing_object());
}

#[test]
fn get_and_head_return_the_object_and_its_metadata() {
    let mut s = S3Model::new(NOW);
    s.handle(
        &S3Request::new(Method::Put, "k", 1024)
            .header("X-Amz-Meta-Token", "7")
            .header("if-none-match", "*")
            .body("text/plain", b"hello".to_vec()),
    );
    let o = s.object("k").unwrap();
    assert_eq!(
        o.metadata,
        [("x-amz-meta-token".to_string(), "7".to_string())]
    );
    assert_eq!(o.content_type, "text/plain");
    for r in [s.handle(&get("k")), s.handle(&head("k"))] {
        assert_eq!(r.status, 200);
        assert_eq!(r.etag(), Some(etag_of(b"hello").as_str()));
        assert_eq!(r.header("x-amz-meta-token"), Some("7"));
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert_eq!(r.header("content-length"), Some("5"));
        assert!(r.header("last-modified").and_then(parse_ms).is_some());
    }
    assert_eq!(s.handle(&get("k")).body, b"hello");
    assert!(s.handle(&head("k")).body.is_empty());
    let plain = S3Request {
        body: b"x".to_vec(),
        ..S3Request::new(Method::Put, "plain", 1024)
    };
    s.handle(&plain);
    assert_eq!(
        s.object("plain").unwrap().content_type,
        "binary/octet-stream"
    );
}

#[test]
fn if_none_match_star_creates_once() {
    let mut s = S3Model::new(NOW);
    let create = |body: &[u8]| put("k", body).header("if-none-match", "*");
    assert_eq!(s.handle(&create(b"first")).status, 200);
    assert_eq!(
        code(&s.handle(&create(b"second"))),
        (412, "PreconditionFailed".into())
    );
    assert_eq!(s.object("k").unwrap().body, b"first");
    // PutObject takes only `*`.
    let r = s.handle(&put("k", b"x").header("if-none-match", &etag_of(b"first")));
    assert_eq!(code(&r), (501, "NotImplemented".into()));
}

#[test]
fn if_match_writes_only_over_the_named_etag() {
    let mut s = S3Model::new(NOW);
    let etag = s.put_object("k", b"v1");
    let stale = s.handle(&put("k", b"v2").header("if-match", "\"0123\""));
    assert_eq!(code(&stale), (412, "PreconditionFailed".into()));
    let ok = s.handle(&put("k", b"v2").header("if-match", &etag));
    assert_eq!((ok.status, ok.etag()), (200, Some(etag_of(b"v2").as_str())));
    // S3 takes the ETag bare as well as quoted.
    let bare = etag_of(b"v2").trim_matches('"').to_string();
    assert_eq!(
        s.handle(&put("k", b"v3").header("if-match", &bare)).status,
        200
    );
    assert_eq!(
        s.handle(&put("k", b"v4").header("if-match", "")).status,
        412
    );
}

#[test]
fn if_match_on_a_missing_key_is_404_on_aws_and_412_on_seaweedfs() {
    for (variant, want) in [
        (MissingIfMatch::NotFound, (404, "NoSuchKey".to_string())),
        (
            MissingIfMatch::PreconditionFailed,
            (412, "PreconditionFailed".to_string()),
        ),
    ] {
        let mut s = S3Model::new(NOW);
        s.missing_if_match = variant;
        let etag = etag_of(b"gone");
        assert_eq!(
            code(&s.handle(&put("k", b"v").header("if-match", &etag))),
            want
        );
        assert_eq!(
            code(&s.handle(&delete("k").header("if-match", &etag))),
            want
        );
        assert!(s.object("k").is_none());
    }
    assert_eq!(S3Model::new(0).missing_if_match, MissingIfMatch::NotFound);
}

#[test]
fn delete_is_204_and_conditional_on_if_match() {
    let mut s = S3Model::new(NOW);
    assert_eq!(s.handle(&delete("never")).status, 204);
    let etag = s.put_object("k", b"v");
    let r = s.handle(&delete("k").header("if-match", "\"other\""));
    assert_eq!(code(&r), (412, "PreconditionFailed".into()));
    assert!(s.object("k").is_some());
    let r = s.handle(&delete("k").header("if-match", &etag));
    assert_eq!((r.status, r.body.is_empty()), (204, true));
    assert!(s.object("k").is_none());
    s.put_object("k", b"v");
    assert_eq!(s.handle(&delete("k")).status, 204);
    assert!(s.objects.is_empty());
}

#[test]
fn injected_conflicts_come_before_any_evaluation_and_only_for_conditional_writes() {
    let mut s = S3Model::new(NOW);
    let etag = s.put_object("k", b"v");
    s.conflicts = 3;
    s.if_match_unsupported = true;
    // Unconditional requests are not counted.
    assert_eq!(s.handle(&get("k")).status, 200);
    assert_eq!(s.handle(&put("plain", b"p")).status, 200);
    let conditional = [
        put("k", b"w").header("if-match", &etag),
        put("new", b"n").header("if-none-match", "*"),
        delete("k").header("if-match", &etag),
    ];
    for req in &conditional {
        let r = s.handle(req);
        assert_eq!(code(&r), (409, "ConditionalRequestConflict".into()));
        assert!(matches!(r.into_error(), crate::error::Error::Conflict(_)));
    }
    assert_eq!(s.conflicts, 0);
    assert_eq!(s.object("k").unwrap().body, b"v");
    assert!(s.object("new").is_none());
    // Spent: the same request is now evaluated (here: 501, no If-Match).
    assert_eq!(
        code(&s.handle(&conditional[0])),
        (501, "NotImplemented".into())
    );
}

#[test]
fn a_store_without_if_match_answers_501_to_any_request_carrying_it() {
    let mut s = S3Model::new(NOW);
    let etag = s.put_object("k", b"v");
    s.if_match_unsupported = true;
    for req in [
        put("k", b"w").header("if-match", &etag),
        delete("k").header("if-match", &etag),
        get("k").header("if-match", &etag),
    ] {
        assert_eq!(code(&s.handle(&req)), (501, "NotImplemented".into()));
    }
    let r = s.handle(&head("k").header("if-match", &etag));
    assert_eq!((r.status, r.body.is_empty()), (501, true));
    assert_eq!(s.object("k").unwrap().body, b"v");
    // If-None-Match still works there.
    let r = s.handle(&put("k", b"w").header("if-none-match", "*"));
    assert_eq!(r.status, 412);
}

#[test]
fn a_store_that_ignores_conditions_lets_every_writer_win() {
    let mut s = S3Model::new(NOW);
    s.put_object("k", b"v");
    s.ignore_conditions = true;
    let r = s.handle(&put("k", b"w").header("if-none-match", "*"));
    assert_eq!(r.status, 200);
    let r = s.handle(&put("k", b"x").header("if-match", "\"stale\""));
    assert_eq!(r.status, 200);
    let r = s.handle(&put("missing", b"y").header("if-match", "\"stale\""));
    assert_eq!(r.status, 200);
    assert_eq!(s.object("k").unwrap().body, b"x");
    let r = s.handle(&delete("k").header("if-match", "\"stale\""));
    assert_eq!(r.status, 204);
    assert!(s.object("k").is_none());
}

#[test]
fn a_get_with_the_current_etag_is_304_without_a_body() {
    let mut s = S3Model::new(NOW);
    let etag = s.put_object("k", b"body");
    for req in [get("k"), head("k")] {
        let r = s.handle(&req.header("if-none-match", &etag));
        assert_eq!((r.status, r.etag()), (304, Some(etag.as_str())));
        assert!(r.body.is_empty());
        assert!(r.header("date").is_some());
    }
    let r = s.handle(&get("k").header("if-none-match", "\"older\""));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"body"[..]));
    s.conditional_get = false;
    let r = s.handle(&get("k").header("if-none-match", &etag));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"body"[..]));
    // If-Match on a read: a changed object is 412.
    let r = s.handle(&get("k").header("if-match", "\"older\""));
    assert_eq!(code(&r), (412, "PreconditionFailed".into()));
}

#[test]
fn bodies_past_the_requests_limit_are_reported_not_read() {
    let mut s = S3Model::new(NOW);
    s.put_object("big", &[7; 100]);
    let r = s.handle(&S3Request::new(Method::Get, "big", 99));
    assert_eq!((r.status, r.body_too_large), (200, Some(100)));
    assert!(r.body.is_empty());
    assert_eq!(r.etag(), Some(etag_of(&[7; 100]).as_str()));
    let r = s.handle(&S3Request::new(Method::Get, "big", 100));
    assert_eq!((r.body.len(), r.body_too_large), (100, None));
    let r = s.handle(&S3Request::new(Method::Head, "big", 0));
    assert_eq!((r.status, r.body_too_large), (200, None));
}

fn list_page(s: &mut S3Model, prefix: &str, after: Option<&str>, max: u32) -> S3Response {
    let mut req = list_request(prefix, after);
    for (k, v) in &mut req.query {
        if k == "max-keys" {
            *v = max.to_string();
        }
    }
    s.handle(&req)
}

#[test]
fn list_pages_keys_in_byte_order_after_start_after() {
    let mut s = S3Model::new(NOW);
    for key in ["p/b", "p/a", "p/c", "p/d", "p0", "o", "p/\u{e9}", "p/B"] {
        s.put_object(key, key.as_bytes());
    }
    let r = list_page(&mut s, "p/", None, 2);
    assert_eq!(r.status, 200);
    let page = parse_list(&r.body).unwrap();
    assert_eq!(page.keys, ["p/B", "p/a"]);
    assert!(page.truncated);
    let body = String::from_utf8(r.body).unwrap();
    assert!(
        body.contains("<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"),
        "{body}"
    );
    assert!(body.contains("<NextContinuationToken>p/a</NextContinuationToken>"));
    assert!(body.contains(&format!(
        "<ETag>&quot;{}&quot;</ETag><Size>3</Size>",
        etag_of(b"p/a").trim_matches('"')
    )));
    assert!(body.contains("<LastModified>2023-11-14T22:13:20.000Z</LastModified>"));

    let page = parse_list(&list_page(&mut s, "p/", Some("p/a"), 3).body).unwrap();
    assert_eq!(page.keys, ["p/b", "p/c", "p/d"]);
    assert!(page.truncated);
    let page = parse_list(&list_page(&mut s, "p/", Some("p/d"), 3).body).unwrap();
    assert_eq!(page.keys, ["p/\u{e9}"]);
    assert!(!page.truncated);
    // A start-after before the prefix, or past everything.
    let page = parse_list(&list_page(&mut s, "p/", Some("a"), 1000).body).unwrap();
    assert_eq!(page.keys.len(), 6);
    let page = parse_list(&list_page(&mut s, "p/", Some("q"), 1000).body).unwrap();
    assert_eq!((page.keys.len(), page.truncated), (0, false));
    // The crate's own request: max-keys 200, the whole prefix.
    let page = parse_list(&s.handle(&list_request("", None)).body).unwrap();
    assert_eq!(page.keys.len(), 8);
}

#[test]
fn list_follows_continuation_tokens_and_escapes_keys() {
    let mut s = S3Model::new(NOW);
    let odd = ["k/a&b", "k/<c>", "k/\"d\"", "k/'e'"];
    for key in odd {
        s.put_object(key, b"x");
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut req = S3Request::new(Method::Get, "", 1 << 20);
        req.query = vec![
            ("list-type".into(), "2".into()),
            ("prefix".into(), "k/".into()),
            ("max-keys".into(), "1".into()),
        ];
        if let Some(t) = &token {
            req.query.push(("continuation-token".into(), t.clone()));
        }
        let r = s.handle(&req);
        let page = parse_list(&r.body).unwrap();
        seen.extend(page.keys.iter().cloned());
        if !page.truncated {
            break;
        }
        token = page.keys.last().cloned();
    }
    let mut want = odd.map(str::to_string).to_vec();
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn list_without_max_keys_is_1000_and_too_large_listings_are_reported() {
    let mut s = S3Model::new(NOW);
    for i in 0..1001 {
        s.put_object(&format!("k{i:04}"), b"");
    }
    let mut req = S3Request::new(Method::Get, "", 1 << 20);
    req.query = vec![("list-type".into(), "2".into())];
    let page = parse_list(&s.handle(&req).body).unwrap();
    assert_eq!((page.keys.len(), page.truncated), (1000, true));
    req.max_response_bytes = 100;
    let r = s.handle(&req);
    assert!(r.body.is_empty() && r.body_too_large.is_some_and(|n| n > 100));
}

#[test]
fn what_is_not_modelled_is_400_and_nothing_panics() {
    let mut s = S3Model::new(NOW);
    s.put_object("k", b"v");
    let mut bad = vec![
        S3Request::new(Method::Put, "", 1024),
        S3Request::new(Method::Delete, "", 1024),
        S3Request::new(Method::Head, "", 1024),
        S3Request::new(Method::Get, "", 1024),
        S3Request::new(Method::Get, &"k".repeat(1025), 1024),
    ];
    for max in ["-1", "lots", "", "99999999999999999999999"] {
        let mut req = list_request("", None);
        req.query[1].1 = max.into();
        bad.push(req);
    }
    for req in &bad {
        let r = s.handle(req);
        assert_eq!(r.status, 400, "{req:?}");
        if req.method != Method::Head {
            assert!(!r.s3_error().code.is_empty(), "{req:?}");
        }
    }
    // Odd but answerable: a huge max-keys is S3's 1000, odd headers are ignored.
    let mut req = list_request("", None);
    req.query[1].1 = "18446744073709551615".into();
    assert_eq!(s.handle(&req).status, 200);
    let r = s.handle(&get("k").header("if-none-match", "").header("If-Match", "*"));
    assert_eq!(r.status, 200);
    assert_eq!(
        s.handle(&S3Request::new(Method::Get, "k", 0))
            .body_too_large,
        Some(1)
    );
}

#[test]
fn http_dates_name_the_right_weekday_and_round_trip() {
    assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(http_date(784_111_777_999), "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date(951_782_400_000), "Tue, 29 Feb 2000 00:00:00 GMT");
    assert_eq!(
        http_date(1_835_481_599_000),
        "Tue, 29 Feb 2028 23:59:59 GMT"
    );
    assert_eq!(
        http_date(4_107_542_400_000),
        "Mon, 01 Mar 2100 00:00:00 GMT"
    );
    assert_eq!(
        http_date(4_107_542_399_000),
        "Sun, 28 Feb 2100 23:59:59 GMT"
    );
    assert_eq!(
        http_date(253_402_300_799_000),
        "Fri, 31 Dec 9999 23:59:59 GMT"
    );
    // Every day for 150 years, at a time of day that varies: each parses
    // back, and each weekday follows the day before's.
    let day = 86_400_000u64;
    let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    let mut previous: Option<usize> = None;
    for d in 0..150 * 366 {
        let ms = d * day + (d * 7_919_321) % day;
        let text = http_date(ms);
        assert_eq!(parse_ms(&text), Some(ms - ms % 1000), "{text}");
        let weekday = weekdays.iter().position(|w| text.starts_with(w)).unwrap();
        if let Some(p) = previous {
            assert_eq!(weekday, (p + 1) % 7, "{text}");
        }
        previous = Some(weekday);
    }
    // And instants scattered up to the end of year 9999.
    for i in 0..10_000u64 {
        let ms = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 253_402_300_800_000;
        assert_eq!(parse_ms(&http_date(ms)), Some(ms - ms % 1000), "{ms}");
    }
    // Far past year 9999 it still answers (parse_ms refuses those years).
    assert!(http_date(u64::MAX).ends_with(" GMT"));
}

/// Every key under `prefix`, following `NextContinuationToken` as a client
/// must, and the keys seen on each page.
fn follow_tokens(s: &mut S3Model, prefix: &str, after: Option<&str>) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut req = list_request(prefix, after);
    loop {
        let page = parse_list(&s.handle(&req).body).unwrap();
        pages.push(page.keys.clone());
        if !page.truncated {
            return pages;
        }
        req = crate::stores::s3::list_continue(prefix, &page.next_token.expect("a token"));
    }
}

#[test]
fn list_pages_can_be_short_or_empty_and_their_tokens_resume_them() {
    let mut s = S3Model::new(NOW);
    for key in ["p/a", "p/b", "p/c", "p/d", "p/e", "q"] {
        s.put_object(key, b"x");
    }
    let all: Vec<String> = ["p/a", "p/b", "p/c", "p/d", "p/e"]
        .map(String::from)
        .to_vec();
    // By default one page holds everything.
    assert_eq!(
        follow_tokens(&mut s, "p/", None),
        std::slice::from_ref(&all)
    );
    // At most two keys a page.
    s.list_page_keys = Some(2);
    let pages = follow_tokens(&mut s, "p/", None);
    assert_eq!(pages.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2, 1]);
    assert_eq!(pages.concat(), all);
    // Three empty truncated pages, from the start, after a start-after, and
    // after a token: none loses or repeats a key.
    s.empty_list_pages = 3;
    let pages = follow_tokens(&mut s, "p/", None);
    assert_eq!(s.empty_list_pages, 0);
    assert_eq!(
        pages.iter().map(Vec::len).collect::<Vec<_>>(),
        [0, 0, 0, 2, 2, 1]
    );
    assert_eq!(pages.concat(), all);
    s.empty_list_pages = 1;
    let pages = follow_tokens(&mut s, "p/", Some("p/b"));
    assert_eq!(
        pages,
        [
            vec![],
            vec!["p/c".to_string(), "p/d".into()],
            vec!["p/e".into()]
        ]
    );
    s.list_page_keys = None;
    let mut second = list_request("p/", None);
    second
        .query
        .push(("continuation-token".into(), "p/a".into()));
    s.empty_list_pages = 1;
    let page = parse_list(&s.handle(&second).body).unwrap();
    assert_eq!((page.keys.len(), page.truncated), (0, true));
    assert_eq!(page.next_token.as_deref(), Some("p/a"));
    // Nothing left at all: still an empty truncated page, then the end.
    s.empty_list_pages = 1;
    assert_eq!(
        follow_tokens(&mut s, "p/", Some("p/e")),
        [vec![], vec![]] as [Vec<String>; 2]
    );
    // A one-character prefix from the start has no position to name.
    s.empty_list_pages = 1;
    assert_eq!(follow_tokens(&mut s, "q", None), [vec!["q".to_string()]]);
    assert_eq!(s.empty_list_pages, 1);
}
