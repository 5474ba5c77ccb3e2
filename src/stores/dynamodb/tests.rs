//! The DynamoDB store over the model: what each call sends and costs, the
//! replies read back, and the items dynamodb-lease clients write.

use super::*;
use crate::client::ClientCore;
use crate::config::{ClientConfig, Store, Strategy};
use crate::error::Error;
use crate::expiry::ExpiryClock;
use crate::lease::Grant;
use crate::preflight::Verdicts;
use crate::protocol::AcquireOutcome;
use crate::ready::Ready;
use crate::stores::dynamodb::model::DynamoIo;
use crate::testing::raw_config;

const START_MS: u64 = 1_700_000_000_000;

fn config(clock: Option<ExpiryClock>) -> ClientConfig {
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Observed);
    raw.expiry_clock = clock;
    raw.store = Store::DynamoDb(crate::testing::test_table("locks"));
    ClientConfig::validate(raw).unwrap()
}

fn client() -> ClientCore {
    ClientCore::new(config(None))
}

fn grant(holder: &str) -> Grant {
    Grant::new(10_000, holder.into(), "meta".into()).unwrap()
}

fn operations(io: &mut DynamoIo) -> Vec<String> {
    io.take_requests();
    std::mem::take(&mut io.store.calls)
}

#[test]
fn config_defaults_to_observed_and_refuses_what_dynamodb_cannot_do() {
    assert_eq!(config(None).expiry_clock, ExpiryClock::Observed);
    assert_eq!(
        config(Some(ExpiryClock::Holder)).expiry_clock,
        ExpiryClock::Holder
    );
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Server);
    raw.store = Store::DynamoDb(crate::testing::test_table("locks"));
    let e = ClientConfig::validate(raw.clone()).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidConfig { field, .. } if field == "expiry-clock"),
        "{e:?}"
    );
    raw.expiry_clock = None;
    raw.strategy = Some(Strategy::EpochObjects);
    let e = ClientConfig::validate(raw.clone()).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidConfig { field, .. } if field == "strategy"),
        "{e:?}"
    );
    raw.strategy = None;
    for bad in ["ab", "has space", "slash/no", &"x".repeat(256)] {
        raw.store = Store::DynamoDb(crate::testing::test_table(bad));
        let e = ClientConfig::validate(raw.clone()).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "store.dynamodb"),
            "{bad}: {e:?}"
        );
    }
    raw.store = Store::DynamoDb(crate::testing::test_table("my_table-1.x"));
    assert!(ClientConfig::validate(raw).is_ok());
}

#[test]
fn each_call_costs_what_the_wit_says() {
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    let AcquireOutcome::Granted(lease) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not granted")
    };
    assert_eq!(lease.token, 1);
    // The table's first client creates its seal key: GetItem (none), a
    // PutItem with `attribute_not_exists`; then the grant's two calls.
    assert_eq!(
        operations(&mut io),
        ["GetItem", "PutItem", "GetItem", "PutItem"]
    );
    let key_item = &io.store.items["locks/.s3-lease-seal-key"];
    assert!(key_item.contains_key("lease_body"), "{key_item:?}");
    let lease = c.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(operations(&mut io), ["PutItem"]);
    // Another client's first call reads the key once; a lease it did not
    // write renews in one PutItem too, whose condition holds the token.
    let mut other = client();
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(operations(&mut io), ["GetItem", "PutItem"]);
    let lease = other.rewrite(&mut io, lease, false).ready().unwrap();
    assert_eq!(operations(&mut io), ["PutItem"]);
    assert!(c.inspect(&mut io, "k").ready().unwrap().unwrap().live);
    assert_eq!(operations(&mut io), ["GetItem"]);
    c.rewrite(&mut io, lease, true).ready().unwrap();
    assert_eq!(operations(&mut io), ["PutItem"]);
    // This client released it: it takes it again without reading.
    let AcquireOutcome::Granted(again) = c.try_acquire(&mut io, "k", &grant("b")).ready().unwrap()
    else {
        panic!("not granted")
    };
    assert_eq!(again.token, 2, "release kept the item and its counter");
    assert_eq!(operations(&mut io), ["PutItem"]);
}

#[test]
fn the_item_keeps_the_dynamodb_lease_key_and_version_and_never_a_ttl_attribute() {
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    let AcquireOutcome::Granted(lease) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not granted")
    };
    let item = io.store.items.get("locks/k").unwrap().clone();
    assert_eq!(item["key"]["S"], "locks/k");
    assert_eq!(item["lease_version"]["S"].as_str().unwrap(), lease.etag);
    assert_eq!(item["token"]["N"], "1");
    assert_eq!(item["holder"]["S"], "a");
    assert!(item.get("lease_expiry").is_none(), "{item:?}");
    let lease = c.rewrite(&mut io, lease, false).ready().unwrap();
    assert!(io.store.items["locks/k"].get("lease_expiry").is_none());
    c.rewrite(&mut io, lease, true).ready().unwrap();
    let item = io.store.items.get("locks/k").unwrap();
    assert!(item.get("lease_expiry").is_none(), "{item:?}");
    assert_eq!(item["token"]["N"], "1");
}

#[test]
fn two_clients_exclude_each_other_and_observed_expiry_hands_over() {
    let (mut a, mut b) = (client(), client());
    let mut io = DynamoIo::with_table("locks", START_MS);
    let AcquireOutcome::Granted(held) = a.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not granted")
    };
    let seen = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
    assert!(matches!(seen, AcquireOutcome::Held(Some(_))), "{seen:?}");
    // b has watched the same version for the ttl and its slack: expired.
    io.advance(10_000 + 200);
    let AcquireOutcome::Granted(next) = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap()
    else {
        panic!("not handed over")
    };
    assert_eq!(next.token, 2);
    // a's lease is superseded: its renew is refused.
    assert!(matches!(
        a.rewrite(&mut io, held, false).ready(),
        Err(Error::Lost { .. })
    ));
}

#[test]
fn a_grant_whose_reply_was_lost_is_recognised() {
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    c.lock_seal(&mut io, "locks/k").ready().unwrap();
    operations(&mut io);
    io.lose_put_replies = 1;
    let AcquireOutcome::Granted(lease) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not granted")
    };
    assert_eq!(lease.token, 1);
    assert_eq!(operations(&mut io), ["GetItem", "PutItem", "GetItem"]);
    c.rewrite(&mut io, lease, false).ready().unwrap();
}

#[test]
fn throttled_calls_are_retried_with_backoff_then_reported() {
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    io.store.throttle_next = 2;
    let before = crate::driver::Io::monotonic_ms(&mut io);
    assert!(c.inspect(&mut io, "k").ready().unwrap().is_none());
    assert_eq!(operations(&mut io), ["GetItem"; 3]);
    assert!(
        crate::driver::Io::monotonic_ms(&mut io) - before >= 25 + 50,
        "backed off"
    );
    io.store.throttle_next = 4;
    let e = c.inspect(&mut io, "k").ready().unwrap_err();
    assert!(e.is_transient(), "{e:?}");
    let Error::S3(s3) = &e else { panic!("{e:?}") };
    assert_eq!(
        (s3.status, s3.code.as_str()),
        (429, "ProvisionedThroughputExceededException")
    );
    assert!(s3.request_id.starts_with("MODEL"), "{s3:?}");
}

#[test]
fn a_missing_table_and_a_corrupt_item_are_typed_errors() {
    let mut c = ClientCore::new({
        let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Observed);
        raw.store = Store::DynamoDb(crate::testing::test_table("nope"));
        ClientConfig::validate(raw).unwrap()
    });
    let mut io = DynamoIo::with_table("locks", START_MS);
    io.store.client_table = "nope".into();
    let e = c.inspect(&mut io, "k").ready().unwrap_err();
    assert!(
        matches!(&e, Error::NoSuchBucket(s) if s.code == "ResourceNotFoundException"),
        "{e:?}"
    );

    io.store.client_table = "locks".into();
    let mut c = client();
    let mut item = serde_json::Map::new();
    item.insert("key".into(), serde_json::json!({ "S": "locks/k" }));
    item.insert("lease_version".into(), serde_json::json!({ "N": "3" }));
    io.store.items.insert("locks/k".into(), item);
    let e = c.inspect(&mut io, "k").ready().unwrap_err();
    assert!(
        matches!(&e, Error::CorruptLockObject { object_key, reason }
        if object_key == "locks/k" && reason.contains("lease_version")),
        "{e:?}"
    );
    let e = c
        .try_acquire(&mut io, "k", &grant("a"))
        .ready()
        .unwrap_err();
    assert!(matches!(e, Error::CorruptLockObject { .. }), "{e:?}");
}

#[test]
fn fenced_writes_are_refused_before_any_request() {
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    let AcquireOutcome::Granted(lease) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not granted")
    };
    operations(&mut io);
    let change = crate::fenced::Change::Put {
        body: b"x".to_vec(),
        content_type: "text/plain".into(),
    };
    let e = c
        .fenced_write(&mut io, &lease, "data", change, true)
        .ready()
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidConfig { field, .. } if field == "store"),
        "{e:?}"
    );
    assert!(operations(&mut io).is_empty());
}

/// What a client written from the dynamodb-lease design alone puts in the table.
fn dynamodb_lease_item(
    key: &str,
    version: &str,
    expiry_s: u64,
) -> serde_json::Map<String, serde_json::Value> {
    let mut item = serde_json::Map::new();
    item.insert("key".into(), serde_json::json!({ "S": key }));
    item.insert("lease_version".into(), serde_json::json!({ "S": version }));
    item.insert(
        "lease_expiry".into(),
        serde_json::json!({ "N": expiry_s.to_string() }),
    );
    item
}

#[test]
fn a_dynamodb_lease_clients_lease_is_held_until_its_expiry_then_taken_over_with_a_token() {
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    let expiry_s = START_MS / 1000 + 60;
    io.store.items.insert(
        "locks/k".into(),
        dynamodb_lease_item("locks/k", "uuid-1", expiry_s),
    );
    let state = c.inspect(&mut io, "k").ready().unwrap().unwrap();
    assert!(state.live);
    assert_eq!((state.record.token, state.etag.as_str()), (0, "uuid-1"));
    assert_eq!(state.record.expires_at_ms, expiry_s * 1000);
    assert!(matches!(
        c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap(),
        AcquireOutcome::Held(Some(_))
    ));
    // Its lease_expiry passed (judged on this clock, as the design does).
    io.advance(61_000);
    let AcquireOutcome::Granted(lease) = c.try_acquire(&mut io, "k", &grant("a")).ready().unwrap()
    else {
        panic!("not taken over")
    };
    assert_eq!(lease.token, 1);
    // The dynamodb-lease holder's extend, conditional on its version, now fails.
    let reply = io.store.call(
        "UpdateItem",
        br##"{"TableName":"locks","Key":{"key":{"S":"locks/k"}},"UpdateExpression":"SET lease_version = :n, lease_expiry = :e","ConditionExpression":"lease_version = :v","ExpressionAttributeValues":{":n":{"S":"uuid-2"},":e":{"N":"1"},":v":{"S":"uuid-1"}}}"##,
    );
    assert_eq!(reply.status, 400);
    assert!(String::from_utf8_lossy(&reply.body).contains("ConditionalCheckFailedException"));
}

#[test]
fn requests_are_signed_for_dynamodb_as_json_1_0_posts() {
    let c = config(None);
    let req = S3Request::new(Method::Put, "locks/k", 1024)
        .header("if-none-match", "*")
        .body(
            "application/json",
            br#"{"expires_at":0,"token":1}"#.to_vec(),
        );
    let http = crate::config::ClientConfig::prepare(&c, &req, 1_700_000_000);
    assert_eq!(http.method, Method::Post);
    assert_eq!(http.path_and_query, "/");
    let header = |n: &str| {
        http.headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(header("content-type"), Some(CONTENT_TYPE));
    assert_eq!(header("x-amz-target"), Some("DynamoDB_20120810.PutItem"));
    let auth = header("authorization").unwrap();
    assert!(auth.contains("/us-east-1/dynamodb/aws4_request"), "{auth}");
    assert!(
        auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-target"),
        "{auth}"
    );
    let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["ConditionExpression"], "attribute_not_exists(#k)");
    assert_eq!(body["TableName"], "locks");
}

#[test]
fn the_preflight_checks_the_table_then_its_conditions() {
    use crate::capability::{Capability, Verdict};
    let mut c = client();
    let mut io = DynamoIo::with_table("locks", START_MS);
    let report = c.preflight(&mut io).ready().unwrap();
    let verdict = |cap: Capability| {
        report
            .results
            .iter()
            .find(|r| r.capability == cap)
            .map(|r| (r.verdict, r.detail.clone()))
            .unwrap_or_else(|| panic!("{cap:?} not reported: {report:?}"))
    };
    for cap in [
        Capability::TableKeySchema,
        Capability::TtlAttribute,
        Capability::IfNoneMatchExisting,
        Capability::IfMatchPut,
        Capability::IfMatchMissingKey,
        Capability::IfMatchDelete,
        Capability::ConditionalGet,
    ] {
        assert_eq!(verdict(cap).0, Verdict::Pass, "{cap:?}: {}", verdict(cap).1);
    }
    // No Last-Modified on an item: the server clock cannot be had.
    assert_eq!(verdict(Capability::ServerDates).0, Verdict::Fail);
    assert_eq!(verdict(Capability::ListStartAfter).0, Verdict::Fail);
    assert!(report
        .results
        .iter()
        .all(|r| r.capability != Capability::PayloadHash));
    assert!(report.config_safe, "{report:?}");
    assert_eq!(report.safe_strategies, [Strategy::SingleObject]);
    assert!(report.safe_expiry_clocks.contains(&ExpiryClock::Observed));
    // Every scratch item was deleted.
    assert!(io.store.items.is_empty(), "{:?}", io.store.items);
    let calls = std::mem::take(&mut io.store.calls);
    assert_eq!(&calls[..2], ["DescribeTable", "DescribeTimeToLive"]);

    // Our items carry no TTL attribute: TTL off or anywhere else passes,
    // on `token` (the one number they carry) it fails and is unsafe.
    for (attribute, passes) in [
        (None, true),
        (Some("expires"), true),
        (Some("holder"), true),
        (Some("token"), false),
    ] {
        let mut other = DynamoIo::with_table("locks", START_MS);
        other.store.ttl_attribute = attribute.map(str::to_string);
        let report = client().preflight(&mut other).ready().unwrap();
        let ttl = report
            .results
            .iter()
            .find(|r| r.capability == Capability::TtlAttribute)
            .unwrap();
        let want = if passes { Verdict::Pass } else { Verdict::Fail };
        assert_eq!(ttl.verdict, want, "{attribute:?}: {}", ttl.detail);
        if let Some(a) = attribute {
            assert!(ttl.detail.contains(a), "{}", ttl.detail);
        }
        assert_eq!(report.config_safe, passes, "{attribute:?}");
        assert_eq!(
            report.gate(Strategy::SingleObject, ExpiryClock::Observed)
                == crate::preflight::Gate::Open,
            passes
        );
    }
    // Not knowing where the TTL is blocks nothing.
    let mut refused = DynamoIo::with_table("locks", START_MS);
    refused.store.ttl_attribute = Some("token".into());
    let mut report = client().preflight(&mut refused).ready().unwrap();
    for r in &mut report.results {
        if r.capability == Capability::TtlAttribute {
            r.verdict = Verdict::Unknown;
        }
    }
    assert_eq!(
        report.gate(Strategy::SingleObject, ExpiryClock::Observed),
        crate::preflight::Gate::Open
    );

    // A missing table is an error, not a report.
    io.store.client_table = "nope".into();
    let e = client().preflight(&mut io).ready().unwrap_err();
    assert!(matches!(e, Error::NoSuchBucket(_)), "{e:?}");
}

#[test]
fn a_table_of_another_key_fails_the_preflight_and_closes_the_gate() {
    use crate::capability::{Capability, Verdict};
    let mut raw = raw_config(Strategy::SingleObject, ExpiryClock::Observed);
    raw.store = Store::DynamoDb(crate::testing::test_table("locks"));
    raw.preflight = Some(true);
    let mut c = ClientCore::new(ClientConfig::validate(raw).unwrap());
    let mut io = DynamoIo::with_table("locks", START_MS);
    io.store.key_attribute = "id".into();
    let e = c
        .try_acquire(&mut io, "k", &grant("a"))
        .ready()
        .unwrap_err();
    let Error::StoreUnsafe(failed) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(
        (failed.capability, failed.verdict),
        (Capability::TableKeySchema, Verdict::Fail)
    );
    assert!(failed.detail.contains("id (HASH)"), "{}", failed.detail);
}

#[test]
fn a_signature_error_keeps_no_canonical_request_and_so_no_session_token() {
    let body = serde_json::json!({
        "__type": "com.amazon.coral.service#InvalidSignatureException",
        "message": "The request signature we calculated does not match the signature you provided.\n\n\
            The Canonical String for this request should have been\n'POST\n/\n\n\
            x-amz-security-token:SECRET-SESSION-TOKEN\n'"
    });
    let reply = crate::stores::s3::S3Response {
        status: 400,
        headers: vec![("x-amzn-requestid".into(), "RID1".into())],
        body: serde_json::to_vec(&body).unwrap(),
        body_too_large: None,
    };
    let req = crate::stores::s3::S3Request::new(Method::Get, "locks/k", 1024);
    let e = read_reply(&req, reply).into_error();
    let shown = format!("{e} {e:?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    let Error::AccessDenied(s3) = e else {
        panic!("{shown}")
    };
    assert_eq!(
        (s3.code.as_str(), s3.request_id.as_str()),
        ("InvalidSignatureException", "RID1")
    );
    assert!(s3.message.ends_with("you provided."), "{}", s3.message);
}

#[test]
fn dynamodb_lease_items_are_read_with_fractional_or_odd_expiries_without_a_panic() {
    let read = |expiry: serde_json::Value| {
        let mut item = dynamodb_lease_item("locks/k", "v", 0);
        item.insert("lease_expiry".into(), expiry);
        decode_item(&item).map(|(_, body)| crate::lock_object::LockRecord::from_json(&body))
    };
    let record = read(serde_json::json!({ "N": "1700000060.75" }))
        .unwrap()
        .unwrap();
    assert_eq!(record.expires_at_ms, 1_700_000_060_000);
    for odd in [
        serde_json::json!({ "N": "-5" }),
        serde_json::json!({ "N": "1e300" }),
        serde_json::json!({ "N": "1." }),
        serde_json::json!({ "N": ".5" }),
        serde_json::json!({ "N": "NaN" }),
        serde_json::json!({ "S": "tomorrow" }),
        serde_json::json!({ "N": "99999999999999999999" }),
        serde_json::json!(7),
    ] {
        assert!(read(odd.clone()).is_err(), "{odd}");
    }
}

#[test]
fn a_server_cannot_call_an_item_unreadable_with_the_translations_own_header() {
    let item = serde_json::json!({ "Item": {
        "key": { "S": "locks/k" },
        "lease_version": { "S": "v1" },
        "lease_body": { "S": r#"{"expires_at":0,"token":3}"# },
    }});
    let reply = crate::stores::s3::S3Response {
        status: 200,
        headers: vec![
            (crate::stores::s3::UNREADABLE_HEADER.into(), "forged".into()),
            (
                crate::stores::s3::NOT_THE_STORE_HEADER.into(),
                "forged".into(),
            ),
            ("x-amzn-requestid".into(), "R1".into()),
        ],
        body: serde_json::to_vec(&item).unwrap(),
        body_too_large: None,
    };
    let req = S3Request::new(Method::Get, "locks/k", 1024);
    let read = read_reply(&req, reply.clone());
    assert_eq!(read.header(crate::stores::s3::UNREADABLE_HEADER), None);
    assert_eq!(read.header(crate::stores::s3::NOT_THE_STORE_HEADER), None);
    assert_eq!(read.etag(), Some("v1"));
    // Nor an S3 server, through the same door.
    let s3_config = ClientConfig {
        store: Store::S3(crate::testing::test_bucket()),
        ..config(None)
    };
    let s3 = crate::config::ClientConfig::read_reply(&s3_config, &req, reply);
    assert_eq!(s3.header(crate::stores::s3::UNREADABLE_HEADER), None);
    assert_eq!(s3.header(crate::stores::s3::NOT_THE_STORE_HEADER), None);
}

/// The wrong endpoint's error `reply` to `req` ends this store's
/// operation with, if any.
fn judged(req: &S3Request, reply: crate::stores::s3::S3Response) -> Option<String> {
    let read = read_reply(req, reply);
    crate::testing::wrong_endpoint_reason(
        &crate::stores::dynamodb::PROFILE,
        req,
        &read,
        "not a DynamoDB endpoint",
    )
}

#[test]
fn a_reply_no_dynamodb_sends_is_a_wrong_endpoint() {
    let reply = crate::testing::response;
    let id = [("x-amzn-requestid", "R1")];
    let get = S3Request::new(Method::Get, "locks/k", 1024);
    let put = S3Request::new(Method::Put, "locks/k", 1024).body("application/json", b"{}".to_vec());
    for req in [&get, &put] {
        // A bare or HTML 404: a SeaweedFS master, any web server.
        for body in ["", "404 page not found\n", "<html>not here</html>"] {
            let reason = judged(req, reply(404, &[], body)).unwrap();
            assert!(
                reason.contains("with 404 and no DynamoDB error"),
                "{reason}"
            );
        }
        // A filer's 201; a 200 without DynamoDB's request id or JSON.
        assert!(judged(req, reply(201, &id, "{}"))
            .unwrap()
            .contains("with 201"));
        let reason = judged(req, reply(200, &[], "{}")).unwrap();
        assert!(reason.contains("no x-amzn-RequestId"), "{reason}");
        let reason = judged(req, reply(200, &id, "<html>index</html>")).unwrap();
        assert!(reason.contains("not a JSON object"), "{reason}");
    }
    // DynamoDB's own replies.
    assert_eq!(judged(&get, reply(200, &id, "{}")), None);
    assert_eq!(judged(&put, reply(200, &id, "{}")), None);
    let missing =
        r#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"no"}"#;
    assert_eq!(judged(&get, reply(400, &id, missing)), None);
    // Other statuses are read as before, whatever their body.
    for status in [400, 403, 409, 412, 429, 500, 502, 503] {
        assert_eq!(
            judged(&get, reply(status, &[], "<html>busy</html>")),
            None,
            "{status}"
        );
    }
}

mod sweeper;

#[test]
fn the_preflight_races_the_tables_conditions_too() {
    use crate::capability::{Capability, Verdict};
    use crate::testing::racing::{Race, Racing};
    for (race, passes) in [(Race::Atomic, true), (Race::CheckThenWrite, false)] {
        let mut table = DynamoIo::with_table("locks", START_MS);
        let mut io = Racing::new(&mut table, race);
        let report = client().preflight(&mut io).ready().unwrap();
        for cap in [Capability::ConcurrentCreate, Capability::ConcurrentUpdate] {
            let r = report.results.iter().find(|r| r.capability == cap).unwrap();
            let want = if passes { Verdict::Pass } else { Verdict::Fail };
            assert_eq!(r.verdict, want, "{race:?} {cap:?}: {}", r.detail);
        }
        assert_eq!(report.config_safe, passes, "{race:?}");
        // Racing PutItems, then a consistent GetItem per round.
        let calls = &table.store.calls;
        assert!(
            calls.iter().filter(|c| *c == "PutItem").count() >= 48,
            "{calls:?}"
        );
        assert!(
            table.store.items.is_empty(),
            "{:?}",
            table.store.items.keys()
        );
    }
}
