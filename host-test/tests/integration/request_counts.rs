//! The protocol's cost is part of its contract: requests per operation,
//! counted at the host's wasi:http hook.

use super::*;
use host_test::hooks::RequestRecord;

/// What SeaweedFS answers GetBucketLifecycleConfiguration on a bucket
/// without rules.
const LIFECYCLE_STATUS: u16 = 404;

/// Each request's method and reply status, in order.
pub fn shape(requests: &[RequestRecord]) -> Vec<(String, Option<u16>)> {
    requests
        .iter()
        .map(|r| (r.method.clone(), r.status))
        .collect()
}

pub fn s(method: &str, status: u16) -> (String, Option<u16>) {
    (method.to_string(), Some(status))
}

#[test]
fn each_operation_costs_what_the_contract_says() {
    let prefix = fresh_prefix("counts");
    let (mut a, mut b) = (opened(&prefix), opened(&prefix));

    let lease = try_acquire(&mut a, "k", &options(30_000)).unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(
        shape(&log),
        [
            s("GET", 404),
            s("PUT", 200),
            s("GET", 404),
            s("PUT", 200),
            s("PUT", 200)
        ],
        "the prefix's first client: the seal key (none, created), then \
         try-acquire on a free key (its token floor, then its lock object)"
    );
    assert!(
        log[0].path_and_query.ends_with(".s3-lease-seal-key"),
        "{:?}",
        log[0].path_and_query
    );
    assert_eq!(log[1].if_none_match.as_deref(), Some("*"));
    assert_eq!(log[3].if_none_match.as_deref(), Some("*"));

    assert_eq!(try_acquire(&mut b, "k", &options(30_000)), None);
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("GET", 200)],
        "another client's first call: the seal key, then try-acquire on a held key"
    );

    let lease = a.renew(&lease).unwrap().unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(shape(&log), [s("PUT", 200)], "renew of our own lease");
    assert!(log[0].if_match.is_some());

    // A lease this client did not write: one read checks its token first.
    let lease = b.renew(&lease).unwrap().unwrap();
    assert_eq!(
        shape(&b.hooks.take_requests()),
        [s("GET", 200), s("PUT", 200)],
        "renew of a lease another client wrote"
    );
    let lease = a.renew(&lease).unwrap().unwrap();
    assert_eq!(
        shape(&a.hooks.take_requests()),
        [s("GET", 200), s("PUT", 200)]
    );

    b.inspect("k").unwrap().unwrap();
    assert_eq!(shape(&b.hooks.take_requests()), [s("GET", 200)], "inspect");

    a.release(&lease).unwrap().unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(shape(&log), [s("PUT", 200)], "release");
    assert_eq!(log[0].if_match.as_deref(), Some(lease.etag.as_str()));

    // The releaser takes it back on what it knows: one conditional PUT.
    let again = try_acquire(&mut a, "k", &options(30_000)).unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(
        shape(&log),
        [s("PUT", 200)],
        "try-acquire of a key we released"
    );
    // On the released object's ETag (not the lease's, which the release replaced).
    assert!(log[0].if_match.is_some());
    assert_ne!(log[0].if_match.as_deref(), Some(lease.etag.as_str()));
    assert_eq!(again.token, lease.token + 1);
    a.release(&again).unwrap().unwrap();
    a.hooks.take_requests();

    try_acquire(&mut b, "k", &options(30_000)).unwrap();
    let log = b.hooks.take_requests();
    assert_eq!(
        shape(&log),
        [s("GET", 200), s("PUT", 200)],
        "try-acquire on a released key"
    );
    assert!(log[1].if_match.is_some());

    for r in a.hooks.requests().iter().chain(b.hooks.requests().iter()) {
        assert!(r.payload_hash_ok, "{r:?}");
    }
}

#[test]
fn every_request_carries_the_hash_of_the_body_it_sends() {
    let prefix = fresh_prefix("hash");
    let mut a = opened(&prefix);
    let lease = try_acquire(&mut a, "k", &named(30_000, &"h".repeat(200))).unwrap();
    a.renew(&lease).unwrap().unwrap();
    let log = a.hooks.take_requests();
    // The seal key's GET and PUT, the grant's GET, the key's token floor
    // and the grant's PUT, the renew's PUT.
    assert_eq!(log.len(), 6);
    assert!(log.iter().all(|r| r.payload_hash_ok), "{log:?}");
}

#[test]
fn the_preflight_costs_what_the_contract_says() {
    let prefix = fresh_prefix("counts-preflight");
    let mut a = opened(&prefix);
    let report = a.preflight().unwrap().unwrap();
    let log = a.hooks.take_requests();
    assert_eq!(log.len(), report.requests as usize);
    if !super::preflight::on_seaweedfs() {
        return;
    }
    assert_eq!(
        shape(&log[..14]),
        [
            s("GET", 404),              // c, never written: the bucket exists
            s("GET", LIFECYCLE_STATUS), // the bucket's lifecycle rules
            s("PUT", 200),              // a, If-None-Match: *
            s("PUT", 200),              // b, If-None-Match: *
            s("PUT", 412),              // a again, If-None-Match: *
            s("PUT", 412),              // a, If-Match: wrong
            s("PUT", 200),              // a, If-Match: right
            s("PUT", 412),              // missing key, If-Match (AWS: 404)
            s("GET", 200),              // a, If-None-Match: other
            s("GET", 304),              // a, If-None-Match: same
            s("GET", 200),              // LIST start-after a
            s("PUT", 200),              // wrong payload hash, stored (AWS: 400)
            s("DELETE", 412),           // a, If-Match: wrong
            s("DELETE", 204),           // a, If-Match: right
        ],
        "preflight on SeaweedFS: the probes"
    );
    // The race: 3 rounds of 8 creates of a new key (one wins), each read
    // back; 3 rounds of 8 updates on one ETag (one wins), each read back.
    let round = |loser: u16| {
        let mut r = vec![s("PUT", 200)];
        r.extend(vec![s("PUT", loser); 7]);
        r
    };
    let race = &log[14..68];
    for (n, chunk) in race.chunks(9).enumerate() {
        let mut writers = shape(&chunk[..8]);
        writers.sort();
        let mut want = round(412);
        want.sort();
        assert_eq!(writers, want, "race round {n}");
        assert_eq!(shape(&chunk[8..]), [s("GET", 200)], "race round {n}'s read");
    }
    assert_eq!(
        shape(&log[68..]),
        vec![s("DELETE", 204); 5],
        "the cleanup: b, the wrongly hashed object, the three keys raced"
    );
    assert_eq!(report.requests, 73);
    // Only the probe that means to sends a wrong payload hash.
    let wrong: Vec<_> = log.iter().filter(|r| !r.payload_hash_ok).collect();
    assert_eq!(wrong.len(), 1, "{wrong:?}");
    assert_eq!(wrong[0].method, "PUT");
}
