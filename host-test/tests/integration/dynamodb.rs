//! The DynamoDB store, through the built component, against dynalite on
//! loopback (started by `host_test::dynalite`): each call's requests
//! counted at the host's hook, the item it leaves, 16 instances racing,
//! a lost reply, a missing table, the preflight, and an elector whose
//! network goes silent (a loopback fault proxy) handing over to another.

use super::*;
use host_test::bindings::Verdict;
use host_test::dynalite::{self, DynamoEndpoint};
use host_test::fault_proxy::{Fault as ProxyFault, FaultProxy};
use host_test::hooks::{Fault, RequestRecord};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn dynamo() -> &'static DynamoEndpoint {
    dynalite::shared()
}

/// An instance open on a fresh table of its own (`hint`), or on `table`.
fn on_table(table: &str, prefix: &str) -> Instance {
    opened_with(&dynamo().config(table, prefix))
}

/// Each request's DynamoDB operation and HTTP status, in order.
fn calls(log: &[RequestRecord]) -> Vec<String> {
    log.iter()
        .map(|r| {
            let op = r.target.as_deref().unwrap_or("not a DynamoDB call");
            match r.status {
                Some(s) => format!("{op} {s}"),
                None => format!("{op} -"),
            }
        })
        .collect()
}

/// The item as DynamoDB holds it, read outside the component.
fn item(table: &str, key: &str) -> Option<Value> {
    let r = dynamo()
        .admin(table)
        .unwrap()
        .send(s3_lease::stores::dynamodb::call(
            "GetItem",
            &json!({ "TableName": table, "Key": { "key": { "S": key } }, "ConsistentRead": true }),
            1 << 20,
        ))
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.s3_error());
    let reply: Value = serde_json::from_slice(&r.body).unwrap();
    reply.get("Item").cloned()
}

#[test]
fn each_call_is_one_conditional_dynamodb_request_as_the_contract_says() {
    let table = dynamo().fresh_table("counts").unwrap();
    let prefix = fresh_prefix("ddb-counts");
    let (mut a, mut b) = (on_table(&table, &prefix), on_table(&table, &prefix));

    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    assert_eq!(lease.token, 1);
    assert_eq!(
        calls(&a.hooks.take_requests()),
        ["GetItem 200", "PutItem 200", "GetItem 200", "PutItem 200"],
        "the prefix's first client: the seal key's item (none, created), \
         then try-acquire of a free key"
    );
    let key_item = item(&table, &format!("{prefix}.s3-lease-seal-key")).expect("the seal key");
    assert!(key_item.get("lease_expiry").is_none(), "{key_item}");
    let stored = item(&table, &format!("{prefix}k")).expect("the item");
    assert_eq!(stored["lease_version"]["S"], lease.etag.as_str());
    assert_eq!(stored["token"]["N"], "1");
    assert_eq!(stored["holder"]["S"], "a");
    // No TTL attribute: no sweep may take the item and its counter.
    assert!(stored.get("lease_expiry").is_none(), "{stored}");

    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    // The loser's PutItem is never sent: it saw a live holder. (Its first
    // GetItem reads the seal key.)
    assert_eq!(
        calls(&b.hooks.take_requests()),
        ["GetItem 200", "GetItem 200"]
    );

    let lease = a.renew(&lease).unwrap().unwrap();
    assert_eq!(calls(&a.hooks.take_requests()), ["PutItem 200"], "renew");
    // A lease another client wrote: still one PutItem, whose condition
    // holds the token.
    let lease = b.renew(&lease).unwrap().unwrap();
    assert_eq!(calls(&b.hooks.take_requests()), ["PutItem 200"], "renew");
    let lease = a.renew(&lease).unwrap().unwrap();
    assert_eq!(calls(&a.hooks.take_requests()), ["PutItem 200"], "renew");
    let seen = b.inspect("k").unwrap().unwrap().unwrap();
    assert_eq!(
        (seen.holder_id.as_str(), seen.token, seen.live),
        ("a", 1, true)
    );
    assert_eq!(seen.etag, lease.etag);
    assert_eq!(calls(&b.hooks.take_requests()), ["GetItem 200"], "inspect");

    a.release(&lease).unwrap().unwrap();
    assert_eq!(calls(&a.hooks.take_requests()), ["PutItem 200"], "release");
    let stored = item(&table, &format!("{prefix}k")).expect("release keeps the item");
    assert!(stored.get("lease_expiry").is_none(), "{stored}");

    let again = try_acquire(&mut a, "k", &named(30_000, "a")).unwrap();
    assert_eq!(again.token, 2, "the counter survived the release");
    assert_eq!(
        calls(&a.hooks.take_requests()),
        ["PutItem 200"],
        "try-acquire of a key this client released"
    );
    // A stale lease: its condition fails (DynamoDB answers 400), `lost`.
    let err = a.renew(&lease).unwrap().unwrap_err();
    assert!(matches!(err, LeaseError::Lost(_)), "{err:?}");
    assert_eq!(
        calls(&a.hooks.take_requests()),
        ["PutItem 400", "GetItem 200"]
    );
}

#[test]
fn sixteen_instances_race_with_one_winner_each_round_and_tokens_one_to_n() {
    const ROUNDS: usize = 30;
    let table = dynamo().fresh_table("race").unwrap();
    let config = dynamo().config(&table, &fresh_prefix("ddb-race"));
    let race = super::contention::race(&config, 16, ROUNDS);
    let tokens = race.one_winner_a_round(ROUNDS);
    assert_eq!(tokens, (1..=ROUNDS as u64).collect::<Vec<_>>());
    let requests = race.requests;
    println!(
        "DynamoDB (dynalite): 16 instances x {ROUNDS} rounds, {requests} requests, {:.1} per instance-round",
        requests as f64 / (16 * ROUNDS) as f64
    );
}

#[test]
fn a_grant_whose_reply_was_lost_is_recognised_by_reading_back() {
    let table = dynamo().fresh_table("lost").unwrap();
    let prefix = fresh_prefix("ddb-lost");
    let (mut a, mut b) = (on_table(&table, &prefix), on_table(&table, &prefix));
    load_seal_key(&mut a);
    a.hooks.inject(Fault::Delay(Duration::ZERO));
    a.hooks.inject(Fault::LoseReply);
    let lease = try_acquire(&mut a, "k", &named(30_000, "a")).expect("granted");
    assert_eq!(lease.token, 1);
    // GetItem, PutItem (applied, 200, then its reply dropped), GetItem:
    // our write id.
    assert_eq!(
        calls(&a.hooks.take_requests()),
        ["GetItem 200", "PutItem 200", "GetItem 200"]
    );
    assert_eq!(try_acquire(&mut b, "k", &named(30_000, "b")), None);
    let lease = a.renew(&lease).unwrap().unwrap();
    a.hooks.inject(Fault::LoseReply);
    a.release(&lease).unwrap().unwrap();
    assert_eq!(
        try_acquire(&mut b, "k", &named(30_000, "b")).map(|l| l.token),
        Some(2),
        "released for real, no ghost lease"
    );
}

#[test]
fn a_missing_table_is_no_such_bucket_naming_dynamodbs_error() {
    let mut a = on_table("no-such-table", &fresh_prefix("ddb-missing"));
    let err = expect_err(a.inspect("k"));
    let LeaseError::NoSuchBucket(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.code, "ResourceNotFoundException");
    assert!(
        !e.request_id.is_empty(),
        "dynalite sends a request id: {e:?}"
    );
}

#[test]
fn the_preflight_passes_a_table_keyed_by_key_and_reports_its_ttl() {
    let table = dynamo().fresh_table("preflight").unwrap();
    let mut a = on_table(&table, &fresh_prefix("ddb-preflight"));
    let report = a.preflight().expect("no trap").expect("a report");
    let verdict = |name: &str| {
        report
            .results
            .iter()
            .find(|r| r.capability.wit_name() == name)
            .unwrap_or_else(|| panic!("no {name}: {report:?}"))
            .verdict
    };
    for needed in [
        "table-key-schema",
        "if-none-match-existing",
        "if-match-put",
        "if-match-missing-key",
        "if-match-delete",
        "conditional-get",
    ] {
        assert_eq!(verdict(needed), Verdict::Pass, "{needed}: {report:?}");
    }
    // dynalite has no TTL: DescribeTimeToLive always says DISABLED, and
    // no TTL anywhere but on `token` matters to lock items.
    assert_eq!(verdict("ttl-attribute"), Verdict::Pass);
    assert!(report.config_safe, "{report:?}");
    // 13 as before the race, and the race's 57.
    assert_eq!(report.requests, 13 + 57);
    let probes = a.hooks.take_requests();
    assert_eq!(
        calls(&probes[..2]),
        ["DescribeTable 200", "DescribeTimeToLive 200"]
    );
}

const LEASE_MS: u64 = 3_000;
const DEADLINE_MS: u64 = 2_000;

fn elector(table: &str, prefix: &str, url: &str, holder: &str) -> s3_lease_host::blocking::Elector {
    let mut config = dynamo()
        .host_config(table, prefix)
        .unwrap()
        .with_endpoint(url);
    config.request_timeout = Some(std::time::Duration::from_secs(30));
    let client = s3_lease_host::blocking::Client::connect(harness().runtime(), &config).unwrap();
    client
        .elect(
            &s3_lease_host::ElectorConfig::new("k")
                .lease_duration(Duration::from_millis(LEASE_MS))
                .renew_deadline(Duration::from_millis(DEADLINE_MS))
                .retry_period(Duration::from_millis(250))
                .holder_id(holder),
        )
        .unwrap()
}

fn wait_for(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
    started.elapsed()
}

#[test]
fn a_leader_whose_network_goes_silent_stops_by_its_deadline_and_the_follower_takes_over() {
    let table = dynamo().fresh_table("failover").unwrap();
    let prefix = fresh_prefix("ddb-failover");
    let proxy = FaultProxy::in_front_of(&dynamo().url).unwrap();
    let a = elector(&table, &prefix, &proxy.url(), "a");
    wait_for(Duration::from_secs(10), "a leads", || {
        matches!(a.role(), s3_lease_host::Role::Leader(_))
    });
    let b = elector(&table, &prefix, &dynamo().url, "b");
    wait_for(
        Duration::from_secs(10),
        "b follows a",
        || matches!(b.role(), s3_lease_host::Role::Follower(Some(s)) if s.holder_id.as_deref() == Some("a")),
    );
    let s3_lease_host::Role::Leader(a_lease) = a.role() else {
        panic!("a leads")
    };

    proxy.set(ProxyFault::Silent);
    let silent_at = Instant::now();
    let last_reply = proxy.last_reply().expect("a had replies");
    // a stops by its renew deadline, counted from before its last reply.
    let stopped = wait_for(Duration::from_secs(10), "a stops leading", || {
        !matches!(a.role(), s3_lease_host::Role::Leader(_))
    });
    assert!(
        silent_at + stopped <= last_reply + Duration::from_millis(DEADLINE_MS + 200),
        "a led {:?} past its deadline",
        (silent_at + stopped) - (last_reply + Duration::from_millis(DEADLINE_MS))
    );
    let a_stopped_at = silent_at + stopped;
    // b, under `observed`, takes over once it has watched a's last version
    // unchanged for the lease and its slack: never while a leads, and not
    // before a lease after that version was written (before a's last reply).
    wait_for(Duration::from_secs(15), "b leads", || {
        matches!(b.role(), s3_lease_host::Role::Leader(_))
    });
    let b_led_at = Instant::now();
    let s3_lease_host::Role::Leader(b_lease) = b.role() else {
        panic!("b leads")
    };
    assert!(
        b_lease.token > a_lease.token,
        "{} after {}",
        b_lease.token,
        a_lease.token
    );
    assert!(b_led_at > a_stopped_at, "b led while a still did");
    let since_last_reply = b_led_at - last_reply;
    assert!(
        since_last_reply >= Duration::from_millis(LEASE_MS),
        "b led {since_last_reply:?} after a's last reply, within a's lease"
    );
    let (stopped, took) = (stopped, b_led_at - silent_at);
    println!("DynamoDB failover: a stopped {stopped:?} after the silence, b led {took:?} after it");
    proxy.set(ProxyFault::Pass);
}

/// One action of `scripts/dynamodb_lease_client.py` (boto3, written from the
/// dynamodb-lease design alone) on `table`: its JSON outcome.
fn dynamodb_lease_client(table: &str, args: &[&str]) -> Value {
    let python = host_test::env_or_workspace_path("S3LEASE_PYTHON", ".venv/bin/python");
    let script = host_test::env_or_workspace_path(
        "S3LEASE_DYNAMODB_LEASE_CLIENT",
        "scripts/dynamodb_lease_client.py",
    );
    let out = std::process::Command::new(&python)
        .arg(&script)
        .args(["--endpoint", &dynamo().url, "--table", table])
        .args(args)
        .env("AWS_ACCESS_KEY_ID", &dynamo().access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &dynamo().secret_access_key)
        .env("AWS_REGION", &dynamo().region)
        .output()
        .unwrap_or_else(|e| panic!("{} {}: {e}", python.display(), script.display()));
    assert!(
        out.status.success(),
        "dynamodb_lease_client {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_dynamodb_lease_client_and_ours_share_a_table_and_exclude_each_other() {
    let table = dynamo().fresh_table("dynamodb-lease").unwrap();
    let prefix = fresh_prefix("ddb-dynamodb-lease");
    let key = format!("{prefix}k");
    let mut ours = on_table(&table, &prefix);

    // Its lease, 6 s (its expiry is whole seconds, rounded down, and each
    // of its steps is a new Python process: 2 s was gone on a loaded
    // machine before ours looked): ours read it as held, with no token and
    // no holder, until its lease_expiry, and cannot take it meanwhile.
    let theirs = dynamodb_lease_client(&table, &["acquire", &key, "--ttl", "6"]);
    assert_eq!(theirs["ok"], true, "{theirs}");
    let seen = ours.inspect("k").unwrap().unwrap().expect("its item");
    assert!(seen.live, "{seen:?}");
    assert_eq!((seen.token, seen.holder_id.as_str()), (0, ""));
    assert_eq!(seen.etag, theirs["version"].as_str().unwrap());
    assert_eq!(
        seen.expires_at_ms,
        theirs["expiry"].as_u64().unwrap() * 1000
    );
    assert_eq!(try_acquire(&mut ours, "k", &named(10_000, "ours")), None);
    // It extends as its design says, and stays exclusive.
    let theirs = dynamodb_lease_client(
        &table,
        &[
            "extend",
            &key,
            "--version",
            theirs["version"].as_str().unwrap(),
            "--ttl",
            "6",
        ],
    );
    assert_eq!(theirs["ok"], true, "{theirs}");
    assert_eq!(try_acquire(&mut ours, "k", &named(10_000, "ours")), None);

    // Once its lease_expiry has passed (judged as its design does, by the
    // wall clock), ours takes the key over, with the first token.
    let expiry_ms = theirs["expiry"].as_u64().unwrap() * 1000;
    let now_ms = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    std::thread::sleep(Duration::from_millis(
        expiry_ms.saturating_sub(now_ms()) + 50,
    ));
    let lease = try_acquire(&mut ours, "k", &named(10_000, "ours")).expect("taken over");
    assert_eq!(lease.token, 1);
    // Its extend and its drop now fail their conditions: it lost the key.
    let version = theirs["version"].as_str().unwrap();
    for action in ["extend", "drop"] {
        let lost =
            dynamodb_lease_client(&table, &[action, &key, "--version", version, "--ttl", "2"]);
        assert_eq!(
            lost["code"], "ConditionalCheckFailedException",
            "{action}: {lost}"
        );
    }
    // While ours holds it, and after ours released it (the item stays, with
    // its token), its acquire fails: the key is never free to it again.
    let held = dynamodb_lease_client(&table, &["acquire", &key, "--ttl", "2"]);
    assert_eq!(held["code"], "ConditionalCheckFailedException", "{held}");
    ours.release(&lease).unwrap().unwrap();
    let released = dynamodb_lease_client(&table, &["acquire", &key, "--ttl", "2"]);
    assert_eq!(
        released["code"], "ConditionalCheckFailedException",
        "{released}"
    );
    let again = try_acquire(&mut ours, "k", &named(10_000, "ours")).unwrap();
    assert_eq!(again.token, 2, "the token counter outlived the release");
}

#[test]
fn a_semaphore_on_dynamodb_admits_two_queues_the_third_and_serves_it_in_turn() {
    use host_test::bindings::{SlotAttempt, SlotOptions};
    let two = SlotOptions {
        limit: 2,
        fair: true,
    };
    let table = dynamo().fresh_table("semaphore").unwrap();
    let prefix = fresh_prefix("ddb-semaphore");
    let mut holders: Vec<Instance> = (0..3).map(|_| on_table(&table, &prefix)).collect();
    let mut leases = Vec::new();
    for (i, name) in ["a", "b"].iter().enumerate() {
        match holders[i]
            .try_acquire_slot("k", &named(30_000, name), two)
            .unwrap()
            .unwrap()
        {
            SlotAttempt::Granted(lease) => leases.push(lease),
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(leases.iter().map(|l| l.token).collect::<Vec<_>>(), [1, 2]);
    // The third waits in the queue: its write keeps both holders' entries,
    // which a DynamoDB item cannot stamp with a Last-Modified.
    let waiting = holders[2]
        .try_acquire_slot("k", &named(30_000, "c"), two)
        .unwrap()
        .unwrap();
    assert_eq!(waiting, SlotAttempt::Queued(1));
    let renewed = holders[0].renew(&leases[0]).unwrap().unwrap();
    holders[1].release(&leases[1]).unwrap().unwrap();
    match holders[2]
        .try_acquire_slot("k", &named(30_000, "c"), two)
        .unwrap()
        .unwrap()
    {
        SlotAttempt::Granted(lease) => assert_eq!(lease.token, 3),
        other => panic!("c: {other:?}"),
    }
    holders[0].release(&renewed).unwrap().unwrap();
}
