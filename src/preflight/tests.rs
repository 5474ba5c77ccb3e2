//! The preflight against the S3 model set up as each kind of store, and
//! against odd replies: every store gets a report (or, when it cannot be
//! reached at all, an error), never a panic.

use super::*;
use crate::driver::{self, Io};
use crate::ready::Ready;
use crate::stores::s3::model::MissingIfMatch;
use crate::stores::s3::S3Response;
use crate::testing::intercept::Intercept;
use crate::testing::model_io::ModelIo;

const NOW: u64 = 1_795_336_756_000;
const SCRATCH: &str = "locks/.s3-lease-preflight/00000000deadbeef/";

fn preflight(strategy: Strategy, clock: ExpiryClock) -> Preflight {
    Preflight::new(SCRATCH.into(), "00000000deadbeef".into(), strategy, clock)
}

fn run(io: &mut impl Io) -> Report {
    driver::run(io, preflight(Strategy::SingleObject, ExpiryClock::Server))
        .ready()
        .expect("a report")
}

fn verdict(report: &Report, c: Capability) -> &CapabilityResult {
    report
        .results
        .iter()
        .find(|r| r.capability == c)
        .expect("every capability is reported")
}

fn verdicts(report: &Report) -> Vec<(Capability, Verdict)> {
    report
        .results
        .iter()
        .map(|r| (r.capability, r.verdict))
        .collect()
}

/// Every capability an S3 store is reported on: the probes, then the race.
fn reported() -> Vec<Capability> {
    let mut all = crate::capability::S3_PROBES.to_vec();
    all.extend([Capability::ConcurrentCreate, Capability::ConcurrentUpdate]);
    all
}

fn all_pass_but(failing: &[(Capability, Verdict)]) -> Vec<(Capability, Verdict)> {
    reported()
        .iter()
        .map(|&c| {
            let v = failing
                .iter()
                .find(|(f, _)| *f == c)
                .map_or(Verdict::Pass, |(_, v)| *v);
            (c, v)
        })
        .collect()
}

fn methods(io: &ModelIo) -> Vec<&'static str> {
    io.requests.iter().map(|r| r.method.as_str()).collect()
}

/// The probes' 15 requests (the bucket's lifecycle rules among them), the
/// race's 57 (two races of 3 rounds of 8 writers and a read, and a DELETE
/// per key raced).
const PASSING_REQUESTS: u32 = 15 + RACE_REQUESTS;

#[test]
fn an_aws_like_store_passes_in_72_requests_and_is_left_clean() {
    let mut io = ModelIo::new(NOW);
    let report = run(&mut io);
    assert_eq!(verdicts(&report), all_pass_but(&[]), "{report:#?}");
    assert_eq!(
        report.safe_strategies,
        [Strategy::SingleObject, Strategy::EpochObjects]
    );
    assert_eq!(
        report.safe_expiry_clocks,
        [
            ExpiryClock::Holder,
            ExpiryClock::Server,
            ExpiryClock::Observed
        ]
    );
    assert!(report.config_safe);
    assert_eq!(report.recommended_strategy, Some(Strategy::SingleObject));
    assert_eq!(RACE_REQUESTS, 57);
    assert_eq!(report.requests, PASSING_REQUESTS);
    assert_eq!(io.requests.len(), 72);
    let methods = methods(&io);
    assert_eq!(
        methods[..14],
        [
            "GET", "GET", "PUT", "PUT", "PUT", "PUT", "PUT", "PUT", "GET", "GET", "GET", "PUT",
            "DELETE", "DELETE"
        ]
    );
    assert_eq!(
        io.requests[1].query,
        [("lifecycle".to_string(), String::new())]
    );
    assert!(
        report.notes.iter().all(|n| !n.starts_with("lifecycle")),
        "{:?}",
        report.notes
    );
    // Each race round: 8 writers, then a read; then the cleanup deletes
    // the probes' second key and the three keys raced.
    let round = [["PUT"; 8].as_slice(), &["GET"]].concat();
    assert_eq!(methods[14..68], round.repeat(6));
    assert_eq!(methods[68..], ["DELETE"; 4]);
    assert!(io.store.objects.is_empty(), "{:?}", io.store.objects.keys());
    assert!(io
        .requests
        .iter()
        .all(|r| r.object_key.is_empty() || r.object_key.starts_with(SCRATCH)));
    let missing = verdict(&report, Capability::IfMatchMissingKey);
    assert_eq!(
        (missing.status, missing.code.as_str()),
        (Some(404), "NoSuchKey")
    );
    let hash = verdict(&report, Capability::PayloadHash);
    assert_eq!(hash.code, "XAmzContentSHA256Mismatch");
    let offset = report.clock_offset.expect("the model sends Date");
    assert!(offset.worst_ms() <= 1_000, "{offset:?}");
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("Raced 8 concurrent writers per round, 3 rounds")));
    let create = verdict(&report, Capability::ConcurrentCreate);
    assert_eq!(
        create.detail,
        "8 concurrent If-None-Match: * creates of one new key, 3 rounds: exactly one won each round"
    );
    let update = verdict(&report, Capability::ConcurrentUpdate);
    assert_eq!(
        update.detail,
        "8 concurrent If-Match updates carrying one ETag, 3 rounds: exactly one won each round"
    );
    assert_eq!(
        report.gate(Strategy::SingleObject, ExpiryClock::Holder),
        Gate::Open
    );
}

#[test]
fn a_seaweedfs_like_store_passes_with_its_differences_reported() {
    let mut io = ModelIo::new(NOW);
    io.store.missing_if_match = MissingIfMatch::PreconditionFailed;
    io.store.checks_payload_hash = false;
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[(Capability::PayloadHash, Verdict::Fail)])
    );
    let missing = verdict(&report, Capability::IfMatchMissingKey);
    assert_eq!(missing.status, Some(412));
    assert!(
        missing.detail.contains("AWS answers 404"),
        "{}",
        missing.detail
    );
    let hash = verdict(&report, Capability::PayloadHash);
    assert!(!hash.silent && hash.detail.contains("does not check payload hashes"));
    assert!(report.config_safe);
    assert_eq!(report.safe_strategies.len(), 2);
    // The body stored under a wrong hash is deleted too.
    assert_eq!(report.requests, PASSING_REQUESTS + 1);
    assert!(io.store.objects.is_empty());
}

#[test]
fn a_store_that_ignores_conditions_fails_every_strategy() {
    let mut io = ModelIo::new(NOW);
    io.store.ignore_conditions = true;
    let report = run(&mut io);
    let create = verdict(&report, Capability::IfNoneMatchExisting);
    assert_eq!(
        (create.verdict, create.silent, create.status),
        (Verdict::Fail, true, Some(200))
    );
    assert!(verdict(&report, Capability::IfMatchPut).silent);
    assert!(verdict(&report, Capability::IfMatchMissingKey).silent);
    assert!(report.safe_strategies.is_empty() && report.safe_expiry_clocks.is_empty());
    assert_eq!(report.recommended_strategy, None);
    assert!(!report.config_safe);
    match report.gate(Strategy::EpochObjects, ExpiryClock::Observed) {
        Gate::Closed(r) => assert_eq!(r.capability, Capability::IfNoneMatchExisting),
        other => panic!("{other:?}"),
    }
    assert!(io.store.objects.is_empty(), "{:?}", io.store.objects.keys());
}

#[test]
fn a_store_without_if_match_recommends_epoch_objects() {
    let mut io = ModelIo::new(NOW);
    io.store.if_match_unsupported = true;
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[
            (Capability::IfMatchPut, Verdict::Fail),
            (Capability::IfMatchMissingKey, Verdict::Fail),
            (Capability::IfMatchDelete, Verdict::Fail),
            // Every racing update answered 501: no round decided.
            (Capability::ConcurrentUpdate, Verdict::Unknown),
        ])
    );
    assert_eq!(verdict(&report, Capability::IfMatchPut).status, Some(501));
    assert!(verdict(&report, Capability::ConcurrentUpdate)
        .detail
        .contains("none of 8 writers won (HTTP 501)"));
    assert!(report.results.iter().all(|r| !r.silent));
    assert_eq!(report.safe_strategies, [Strategy::EpochObjects]);
    assert_eq!(report.recommended_strategy, Some(Strategy::EpochObjects));
    assert!(!report.config_safe, "the client is single-object");
    assert!(!report.safe_expiry_clocks.contains(&ExpiryClock::Holder));
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("cannot renew or release")));
    match report.gate(Strategy::SingleObject, ExpiryClock::Server) {
        Gate::Closed(r) => assert_eq!(r.capability, Capability::IfMatchPut),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        report.gate(Strategy::EpochObjects, ExpiryClock::Server),
        Gate::Open
    );
    // a is removed by a plain DELETE once the conditional one is refused.
    assert!(io.store.objects.is_empty(), "{:?}", io.store.objects.keys());
}

fn has(request: &S3Request, name: &str) -> bool {
    request.headers.iter().any(|(k, _)| k == name)
}

fn reply(status: u16, code: &str) -> S3Response {
    let body = if code.is_empty() {
        String::new()
    } else {
        format!("<Error><Code>{code}</Code><Message>m</Message></Error>")
    };
    S3Response {
        status,
        headers: vec![("date".into(), crate::stores::s3::model::http_date(NOW))],
        body: body.into_bytes(),
        body_too_large: None,
    }
}

#[test]
fn a_501_to_delete_if_match_alone_is_reported_and_leaves_both_strategies_safe() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        (req.method == Method::Delete && has(req, "if-match"))
            .then(|| Ok(reply(501, "NotImplemented")))
    });
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[(Capability::IfMatchDelete, Verdict::Fail)])
    );
    let delete = verdict(&report, Capability::IfMatchDelete);
    assert_eq!(
        (delete.status, delete.code.as_str()),
        (Some(501), "NotImplemented")
    );
    assert_eq!(report.safe_strategies.len(), 2);
    assert!(io.io.store.objects.is_empty());
}

#[test]
fn ignoring_delete_if_match_fails_the_store() {
    // s3s-fs 0.14: DELETE deletes whatever If-Match says.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        (req.method == Method::Delete).then(|| {
            let mut plain = req.clone();
            plain.headers.retain(|(k, _)| k != "if-match");
            io.send(&plain).ready()
        })
    });
    let report = run(&mut io);
    let delete = verdict(&report, Capability::IfMatchDelete);
    assert!(
        delete.silent && delete.verdict == Verdict::Fail,
        "{delete:?}"
    );
    assert!(report.safe_strategies.is_empty());
    assert!(io.io.store.objects.is_empty());
}

/// The model's reply, with `headers` added: what a store names itself by.
fn with_headers(
    reply: Result<S3Response, Error>,
    headers: &[(&str, &str)],
) -> Result<S3Response, Error> {
    reply.map(|mut r| {
        for (k, v) in headers {
            r.headers.push((k.to_string(), v.to_string()));
        }
        r
    })
}

const GCS_HEADERS: [(&str, &str); 2] = [
    ("x-goog-generation", "1764312000000000"),
    ("x-guploader-uploadid", "ABPtcPq"),
];

#[test]
fn gcs_xml_api_is_refused_by_name_and_by_the_race() {
    // storage.googleapis.com: conditions on PUT ignored, every writer 200.
    let mut model = ModelIo::new(NOW);
    model.store.ignore_conditions = true;
    let mut io = Intercept::new(&mut model, |req, io| {
        Some(with_headers(io.send(req).ready(), &GCS_HEADERS))
    });
    let report = run(&mut io);
    assert!(report.safe_strategies.is_empty(), "{report:#?}");
    for c in [Capability::ConcurrentCreate, Capability::ConcurrentUpdate] {
        let raced = verdict(&report, c);
        assert!(raced.silent && raced.verdict == Verdict::Fail, "{raced:?}");
        assert!(raced.detail.contains("concurrent"), "{}", raced.detail);
    }
    let Gate::Closed(reason) = report.gate(Strategy::EpochObjects, ExpiryClock::Server) else {
        panic!("{report:#?}")
    };
    assert!(
        reason.detail.starts_with(
            "this is Google Cloud Storage's XML API (its replies carry x-goog-* headers), \
             which ignores If-None-Match and If-Match on writes"
        ),
        "{}",
        reason.detail
    );
    assert!(
        reason.detail.contains("a lock on it is unsafe"),
        "{}",
        reason.detail
    );
    // Every silent failure says so, the race's too; nothing else does.
    for r in &report.results {
        assert_eq!(r.silent, r.detail.contains("Google Cloud Storage"), "{r:?}");
    }

    // The same behaviour from a store that does not name itself: no name.
    let mut io = ModelIo::new(NOW);
    io.store.ignore_conditions = true;
    let report = run(&mut io);
    assert!(report
        .results
        .iter()
        .all(|r| !r.detail.contains("Google Cloud Storage")));
}

#[test]
fn gcs_headers_on_a_store_that_keeps_its_conditions_name_nothing() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        Some(with_headers(io.send(req).ready(), &GCS_HEADERS))
    });
    let report = run(&mut io);
    assert_eq!(verdicts(&report), all_pass_but(&[]), "{report:#?}");
    assert!(report
        .results
        .iter()
        .all(|r| !r.detail.contains("Google Cloud Storage")));
}

/// A store that refuses every conditional PUT with `status` and `code`,
/// its reply carrying `headers`.
fn refusing_conditional_puts(
    status: u16,
    headers: &'static [(&'static str, &'static str)],
) -> Report {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, move |req, io| {
        let conditional = has(req, "if-match") || has(req, "if-none-match");
        if req.method == Method::Put && conditional {
            Some(with_headers(Ok(reply(status, "NotImplemented")), headers))
        } else {
            Some(with_headers(io.send(req).ready(), headers))
        }
    });
    run(&mut io)
}

#[test]
fn b2_and_oss_are_named_beside_their_refusal_and_others_are_not() {
    for (status, headers, name) in [
        (
            501,
            &[("x-bz-request-id", "a1b2")][..],
            Some("Backblaze B2"),
        ),
        // OSS: NotImplemented under 400.
        (
            400,
            &[("x-oss-request-id", "5F1A")][..],
            Some("Alibaba Cloud OSS"),
        ),
        (501, &[][..], None),
    ] {
        let report = refusing_conditional_puts(status, headers);
        let create = verdict(&report, Capability::IfNoneMatchExisting);
        assert_eq!(
            (create.verdict, create.status, create.silent),
            (Verdict::Fail, Some(status), false),
            "{create:?}"
        );
        assert!(
            create
                .detail
                .starts_with("If-None-Match: * answered NotImplemented"),
            "{}",
            create.detail
        );
        match name {
            Some(name) => assert!(
                create.detail.ends_with(&format!(
                    "({name} answers so: a known store without conditional writes)"
                )),
                "{}",
                create.detail
            ),
            None => assert!(!create.detail.contains("answers so"), "{}", create.detail),
        }
        assert!(report.safe_strategies.is_empty());
        // Passing capabilities keep their reasons.
        let get = verdict(&report, Capability::ListStartAfter);
        assert!(!get.detail.contains("answers so"), "{}", get.detail);
    }
}

#[test]
fn an_if_match_that_wants_the_etag_unquoted_is_named() {
    // DigitalOcean Spaces: a quoted ETag in If-Match never matches.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        let quoted = req
            .headers
            .iter()
            .any(|(k, v)| k == "if-match" && v.starts_with('"'));
        (req.method != Method::Get && quoted).then(|| Ok(reply(412, "PreconditionFailed")))
    });
    let report = run(&mut io);
    let put = verdict(&report, Capability::IfMatchPut);
    assert_eq!(
        (put.verdict, put.status, put.silent),
        (Verdict::Fail, Some(412), false)
    );
    assert!(
        put.detail.contains(
            "a store that matches If-Match only on an unquoted ETag, as DigitalOcean Spaces does"
        ),
        "{}",
        put.detail
    );
    let delete = verdict(&report, Capability::IfMatchDelete);
    assert!(
        delete.detail.contains("DigitalOcean Spaces"),
        "{}",
        delete.detail
    );
    assert_eq!(report.safe_strategies, [Strategy::EpochObjects]);

    // A store refusing the right ETag after the object changed under it is
    // not this store.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        let right = req.method == Method::Put
            && req
                .headers
                .iter()
                .any(|(k, v)| k == "if-match" && !v.contains("00000000"));
        if right {
            io.store.put_object(&req.object_key, b"someone else");
            return Some(Ok(reply(412, "PreconditionFailed")));
        }
        None
    });
    let report = run(&mut io);
    let put = verdict(&report, Capability::IfMatchPut);
    assert_eq!(
        (put.verdict, put.status),
        (Verdict::Fail, Some(412)),
        "{put:?}"
    );
    assert!(!put.detail.contains("DigitalOcean"), "{}", put.detail);
}

#[test]
fn a_304_for_another_etag_is_a_silent_failure_and_no_304_a_costly_one() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        (req.method == Method::Get && has(req, "if-none-match")).then(|| Ok(reply(304, "")))
    });
    let report = run(&mut io);
    let get = verdict(&report, Capability::ConditionalGet);
    assert!(get.silent, "{get:?}");
    assert!(report.safe_strategies.is_empty());
    assert_eq!(
        verdict(&report, Capability::ServerDates).verdict,
        Verdict::Unknown
    );

    let mut io = ModelIo::new(NOW);
    io.store.conditional_get = false;
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[(Capability::ConditionalGet, Verdict::Fail)])
    );
    assert!(report.config_safe);
}

#[test]
fn a_clock_minutes_off_rules_out_the_holder_clock_only() {
    let mut io = ModelIo::new(NOW);
    io.clock_offset_ms = 5 * 60 * 1000;
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[(Capability::ClockOffset, Verdict::Fail)])
    );
    let offset = report.clock_offset.unwrap();
    assert!(
        (299_000..=301_000).contains(&offset.offset_ms),
        "{offset:?}"
    );
    assert_eq!(
        report.safe_expiry_clocks,
        [ExpiryClock::Server, ExpiryClock::Observed]
    );
    assert!(verdict(&report, Capability::ClockOffset)
        .detail
        .contains("ahead of"));

    io.clock_offset_ms = -40 * 60 * 1000;
    let report = run(&mut io);
    let clock = verdict(&report, Capability::ClockOffset);
    assert!(
        clock.detail.contains("behind") && clock.detail.contains("15 minutes"),
        "{}",
        clock.detail
    );
}

#[test]
fn replies_without_dates_rule_out_the_server_and_holder_clocks() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        let mut r = io.send(req).ready();
        if let Ok(r) = &mut r {
            r.headers
                .retain(|(k, _)| k != "date" && k != "last-modified");
        }
        Some(r)
    });
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[
            (Capability::ServerDates, Verdict::Fail),
            (Capability::ClockOffset, Verdict::Unknown),
        ])
    );
    assert_eq!(report.safe_expiry_clocks, [ExpiryClock::Observed]);
    assert_eq!(report.clock_offset, None);
    match report.gate(Strategy::SingleObject, ExpiryClock::Server) {
        Gate::Closed(r) => assert_eq!(r.capability, Capability::ServerDates),
        other => panic!("{other:?}"),
    }
    match report.gate(Strategy::SingleObject, ExpiryClock::Holder) {
        Gate::Undecided(r) => assert_eq!(r.capability, Capability::ClockOffset),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_last_modified_on_another_clock_fails_server_dates() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        let mut r = io.send(req).ready();
        if let Ok(r) = &mut r {
            for (k, v) in &mut r.headers {
                if k == "last-modified" {
                    // Local time an hour east, labelled GMT.
                    *v = crate::stores::s3::model::http_date(NOW + 3_600_000);
                }
            }
        }
        Some(r)
    });
    let report = run(&mut io);
    let dates = verdict(&report, Capability::ServerDates);
    assert_eq!(dates.verdict, Verdict::Fail, "{dates:?}");
    assert!(
        dates.detail.contains("not on the clock"),
        "{}",
        dates.detail
    );
}

#[test]
fn a_list_that_ignores_start_after_rules_out_epoch_objects() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        let mut plain = req.clone();
        plain.query.retain(|(k, _)| k != "start-after");
        Some(io.send(&plain).ready())
    });
    let report = run(&mut io);
    assert_eq!(
        verdicts(&report),
        all_pass_but(&[(Capability::ListStartAfter, Verdict::Fail)])
    );
    assert_eq!(report.safe_strategies, [Strategy::SingleObject]);
    assert_eq!(report.recommended_strategy, Some(Strategy::SingleObject));

    // A LIST page that does not parse is not safe.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        req.object_key.is_empty().then(|| {
            let mut r = reply(200, "");
            r.body = b"<ListBucketResult><Contents><Key>x</Key>".to_vec();
            Ok(r)
        })
    });
    let report = run(&mut io);
    let list = verdict(&report, Capability::ListStartAfter);
    assert!(list.detail.contains("could not be read"), "{list:?}");

    // A LIST answered with a web page is no S3 store's: the preflight
    // ends there, a configuration error, rather than report on a store.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        req.object_key.is_empty().then(|| {
            let mut r = reply(200, "");
            r.body = b"<html>maintenance</html>".to_vec();
            Ok(r)
        })
    });
    let err = driver::run(
        &mut io,
        preflight(Strategy::SingleObject, ExpiryClock::Server),
    )
    .ready()
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidConfig { field, reason }
            if field == "endpoint" && reason.contains("no <ListBucketResult>")),
        "{err:?}"
    );
}

#[test]
fn a_store_that_keeps_etags_or_loses_writes_fails_silently() {
    // The ETag of a stays the same whatever is written.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, io| {
        let mut req = req.clone();
        let real = io.store.object(&req.object_key).map(|o| o.etag.clone());
        for (k, v) in &mut req.headers {
            if k.starts_with("if-") && v == "\"constant\"" {
                *v = real.clone().unwrap_or_default();
            }
        }
        let mut r = io.send(&req).ready();
        if let Ok(r) = &mut r {
            for (k, v) in &mut r.headers {
                if k == "etag" && req.object_key.ends_with("/a") {
                    *v = "\"constant\"".into();
                }
            }
        }
        Some(r)
    });
    let report = run(&mut io);
    assert!(
        verdict(&report, Capability::IfMatchPut).silent,
        "{report:#?}"
    );

    // The right-ETag write is acknowledged but not stored.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        let right = req.method == Method::Put
            && req
                .headers
                .iter()
                .any(|(k, v)| k == "if-match" && !v.contains("deadbeef"));
        right.then(|| {
            let mut r = reply(200, "");
            r.headers.push(("etag".into(), "\"fresh\"".into()));
            Ok(r)
        })
    });
    let report = run(&mut io);
    let put = verdict(&report, Capability::IfMatchPut);
    assert!(put.silent && put.detail.contains("read back"), "{put:?}");
}

#[test]
fn a_store_that_cannot_be_reached_is_an_error_not_a_report() {
    let mut io = ModelIo::new(NOW);
    io.scripted.push_back(reply(403, "InvalidAccessKeyId"));
    let err = driver::run(
        &mut io,
        preflight(Strategy::SingleObject, ExpiryClock::Server),
    )
    .ready()
    .unwrap_err();
    assert!(matches!(err, Error::AccessDenied(_)), "{err:?}");
    assert_eq!(io.requests.len(), 1);

    let mut io = ModelIo::new(NOW);
    io.scripted.push_back(reply(404, "NoSuchBucket"));
    let err = driver::run(
        &mut io,
        preflight(Strategy::SingleObject, ExpiryClock::Server),
    )
    .ready()
    .unwrap_err();
    assert!(matches!(err, Error::NoSuchBucket(_)), "{err:?}");

    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |_, _| {
        Some(Err(Error::Transport("refused".into())))
    });
    let err = driver::run(
        &mut io,
        preflight(Strategy::SingleObject, ExpiryClock::Server),
    )
    .ready()
    .unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
}

#[test]
fn a_missing_bucket_is_found_before_anything_is_written() {
    // A store that creates a missing bucket on the first PUT it gets (as
    // SeaweedFS does for an admin's keys, by default): until then every
    // request is answered NoSuchBucket.
    let mut model = ModelIo::new(NOW);
    let mut created = false;
    let mut sent = Vec::new();
    let mut io = Intercept::new(&mut model, |req, _| {
        sent.push(req.method.as_str());
        if req.method == Method::Put {
            created = true;
        }
        (!created).then(|| Ok(reply(404, "NoSuchBucket")))
    });
    let outcome = driver::run(
        &mut io,
        preflight(Strategy::SingleObject, ExpiryClock::Server),
    )
    .ready();
    drop(io);
    assert!(
        matches!(outcome, Err(Error::NoSuchBucket(_))),
        "{outcome:?}"
    );
    assert_eq!(sent, ["GET"], "nothing written");
}

#[test]
fn a_reader_without_list_permission_is_still_probed() {
    // S3 answers a GET of a missing key 403 AccessDenied to a reader
    // without s3:ListBucket: that says nothing about the bucket.
    let mut model = ModelIo::new(NOW);
    let mut first = true;
    let mut io = Intercept::new(&mut model, |_, _| {
        std::mem::take(&mut first).then(|| Ok(reply(403, "AccessDenied")))
    });
    let report = run(&mut io);
    assert!(report.config_safe, "{report:#?}");
}

#[test]
fn a_lost_reply_leaves_its_capability_unknown_and_its_object_deleted() {
    let mut model = ModelIo::new(NOW);
    let mut n = 0;
    let mut io = Intercept::new(&mut model, |req, io| {
        n += 1;
        // The fourth request (PUT b, after the GETs and PUT a) lands, and
        // its reply is lost.
        (n == 4).then(|| {
            let _ = io.send(req).ready();
            Err(Error::Transport("reply lost".into()))
        })
    });
    let report = run(&mut io);
    let list = verdict(&report, Capability::ListStartAfter);
    assert_eq!(list.verdict, Verdict::Unknown, "{list:?}");
    assert_eq!(report.safe_strategies, [Strategy::SingleObject]);
    match report.gate(Strategy::EpochObjects, ExpiryClock::Server) {
        Gate::Undecided(r) => assert_eq!(r.capability, Capability::ListStartAfter),
        other => panic!("{other:?}"),
    }
    assert!(
        io.io.store.objects.is_empty(),
        "{:?}",
        io.io.store.objects.keys()
    );
}

#[test]
fn a_failed_cleanup_is_noted() {
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        (req.method == Method::Delete && !has(req, "if-match"))
            .then(|| Ok(reply(403, "AccessDenied")))
    });
    let report = run(&mut io);
    assert!(report.config_safe);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("could not delete the scratch object") && n.contains("/b")),
        "{:?}",
        report.notes
    );
}

/// Replies no store should send, and some that stores do.
fn odd_replies() -> Vec<Result<S3Response, Error>> {
    let with = |status: u16, headers: &[(&str, &str)], body: &[u8]| {
        Ok(S3Response {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.to_vec(),
            body_too_large: None,
        })
    };
    vec![
        with(200, &[], b""),
        with(
            200,
            &[
                ("etag", ""),
                ("date", "yesterday"),
                ("last-modified", "Sun, 06 Foo 1994 08:49:37 GMT"),
            ],
            b"\xff\xfe",
        ),
        with(
            200,
            &[("date", "Thu, 01 Jan 1970 00:00:00 GMT"), ("etag", "\"e\"")],
            b"<ListBucketResult><Contents><Key>x</Key>",
        ),
        with(304, &[], b""),
        with(404, &[], b"<html>not here</html>"),
        with(412, &[], b""),
        with(409, &[("date", "Fri, 31 Dec 9999 23:59:59 GMT")], b""),
        with(500, &[], b"<Error><Code>InternalError</Code></Error>"),
        with(501, &[], b"<Error><Code>NotImplemented</Code></Error>"),
        with(503, &[], b"<Error><Code>SlowDown</Code></Error>"),
        with(400, &[], b"<Error><Code>InvalidRequest</Code></Error>"),
        with(999, &[("etag", "\"\u{7f}\"")], &[0; 70_000]),
        Ok(S3Response {
            status: 200,
            headers: vec![],
            body: vec![],
            body_too_large: Some(u64::MAX),
        }),
        Err(Error::Transport("connection reset".into())),
    ]
}

#[test]
fn odd_replies_at_any_step_never_panic_and_always_report_every_capability() {
    for odd in odd_replies() {
        for at in 1..=17 + RACE_REQUESTS {
            let mut model = ModelIo::new(NOW);
            let mut n = 0;
            let odd = odd.clone();
            let mut io = Intercept::new(&mut model, |_, _| {
                n += 1;
                (n == at).then(|| odd.clone())
            });
            match driver::run(
                &mut io,
                preflight(Strategy::EpochObjects, ExpiryClock::Observed),
            )
            .ready()
            {
                Ok(report) => {
                    assert_eq!(report.results.len(), reported().len());
                    assert!(
                        report.requests <= 17 + RACE_REQUESTS,
                        "{at}: {}",
                        report.requests
                    );
                }
                // A reply no S3 store sends ends it where it comes: the
                // endpoint is not S3 (`s3::not_the_store`).
                Err(Error::InvalidConfig { field, .. }) if field == "endpoint" => {}
                Err(e) => assert_eq!(at, 1, "only the first request may end it: {e:?}"),
            }
        }
        // And every reply odd.
        let mut model = ModelIo::new(NOW);
        let mut io = Intercept::new(&mut model, |_, _| Some(odd.clone()));
        if let Ok(report) = driver::run(
            &mut io,
            preflight(Strategy::SingleObject, ExpiryClock::Holder),
        )
        .ready()
        {
            assert!(
                !report.config_safe || report.results.iter().all(|r| r.verdict == Verdict::Pass)
            );
            assert!(report.requests <= 17 + RACE_REQUESTS);
        }
    }
}

mod race {
    //! The race: stores that honour every condition one request at a time
    //! and break when writers race.
    use super::*;
    use crate::testing::racing::{Race, Racing};

    fn raced(race: Race) -> (Report, ModelIo) {
        let mut model = ModelIo::new(NOW);
        let report = run(&mut Racing::new(&mut model, race));
        (report, model)
    }

    #[test]
    fn a_store_that_checks_then_writes_is_refused_naming_the_round() {
        let (report, model) = raced(Race::CheckThenWrite);
        // One request at a time it is faithful: every probe passes.
        for c in crate::capability::S3_PROBES {
            assert_eq!(verdict(&report, c).verdict, Verdict::Pass, "{c:?}");
        }
        let create = verdict(&report, Capability::ConcurrentCreate);
        assert_eq!(
            (create.verdict, create.silent, create.status),
            (Verdict::Fail, true, Some(200))
        );
        assert!(
            create.detail.starts_with(
                "round 1 of 3: 8 of 8 concurrent If-None-Match: * creates of one new key succeeded"
            ),
            "{}",
            create.detail
        );
        let update = verdict(&report, Capability::ConcurrentUpdate);
        assert_eq!((update.verdict, update.silent), (Verdict::Fail, true));
        assert!(
            update.detail.starts_with(
                "round 1 of 3: 8 of 8 concurrent If-Match updates carrying one ETag succeeded"
            ),
            "{}",
            update.detail
        );
        assert!(report.safe_strategies.is_empty(), "{report:#?}");
        assert!(!report.config_safe);
        match report.gate(Strategy::SingleObject, ExpiryClock::Server) {
            Gate::Closed(r) => assert_eq!(r.capability, Capability::ConcurrentCreate),
            other => panic!("{other:?}"),
        }
        match report.gate(Strategy::EpochObjects, ExpiryClock::Server) {
            Gate::Closed(r) => assert_eq!(r.capability, Capability::ConcurrentCreate),
            other => panic!("{other:?}"),
        }
        // The keys raced are deleted with the rest.
        assert!(
            model.store.objects.is_empty(),
            "{:?}",
            model.store.objects.keys()
        );
    }

    #[test]
    fn a_refused_write_that_lands_anyway_is_refused_too() {
        let (report, _) = raced(Race::RefusedButApplied);
        let create = verdict(&report, Capability::ConcurrentCreate);
        assert_eq!((create.verdict, create.silent), (Verdict::Fail, true));
        assert!(
            create.detail.contains("round 1 of 3")
                && create.detail.contains("a second write landed"),
            "{}",
            create.detail
        );
        assert!(!report.config_safe);
    }

    #[test]
    fn an_atomic_store_passes_every_round() {
        let (report, _) = raced(Race::Atomic);
        assert_eq!(verdicts(&report), all_pass_but(&[]));
    }

    /// Lost replies and 5xx among the racing writers decide nothing: an
    /// atomic store is never called broken for them, and a capability
    /// with no clear round is unknown (probed again), never passed.
    #[test]
    fn unclear_replies_never_fail_an_atomic_store() {
        for lose_every in [2, 3, 8] {
            let mut model = ModelIo::new(NOW);
            let mut n = 0;
            let mut io = Intercept::new(&mut model, |req, io| {
                // Only the racing writers: their bodies say "race".
                if !req.body.windows(4).any(|w| w == b"race") {
                    return None;
                }
                n += 1;
                (n % lose_every == 0).then(|| {
                    let applied = io.send(req).ready();
                    match n % 3 {
                        0 => Err(Error::Transport("reply lost".into())),
                        _ => applied.map(|_| S3Response {
                            status: 503,
                            ..S3Response::default()
                        }),
                    }
                })
            });
            let report = run(&mut io);
            for c in [Capability::ConcurrentCreate, Capability::ConcurrentUpdate] {
                let r = verdict(&report, c);
                assert!(
                    !r.silent && r.verdict != Verdict::Fail,
                    "{lose_every}: {r:?}"
                );
            }
        }
        // Every writer's reply lost: nothing decided.
        let mut model = ModelIo::new(NOW);
        let mut io = Intercept::new(&mut model, |req, io| {
            req.body.windows(4).any(|w| w == b"race").then(|| {
                let _ = io.send(req).ready();
                Err(Error::Transport("reply lost".into()))
            })
        });
        let report = run(&mut io);
        let create = verdict(&report, Capability::ConcurrentCreate);
        assert_eq!(create.verdict, Verdict::Unknown, "{create:?}");
        assert!(
            matches!(
                report.gate(Strategy::SingleObject, ExpiryClock::Server),
                Gate::Undecided(_)
            ),
            "{report:#?}"
        );
    }
}

/// A bucket whose lifecycle rule expires everything under the key prefix:
/// the report names the rule in a note (and its verdicts are unchanged);
/// one whose rule is elsewhere gets none; a refused read says so.
#[test]
fn a_lifecycle_rule_over_the_key_prefix_is_named_in_a_note() {
    let rule = |prefix: &str| {
        format!(
            "<LifecycleConfiguration><Rule><ID>expire-old</ID><Filter><Prefix>{prefix}</Prefix>\
             </Filter><Status>Enabled</Status><Expiration><Days>7</Days></Expiration></Rule>\
             </LifecycleConfiguration>"
        )
    };
    let mut io = ModelIo::new(NOW);
    io.store.lifecycle = Some(rule("locks/"));
    let report = run(&mut io);
    assert!(report.config_safe, "{report:#?}");
    let notes: Vec<_> = report
        .notes
        .iter()
        .filter(|n| n.starts_with("lifecycle:"))
        .collect();
    assert_eq!(notes.len(), 1, "{:?}", report.notes);
    assert!(
        notes[0].contains("\"expire-old\" (expiration after 7 days, prefix locks/)")
            && notes[0].contains("under this client's key prefix \"locks/\""),
        "{notes:?}"
    );
    let mut io = ModelIo::new(NOW);
    io.store.lifecycle = Some(rule("logs/"));
    let report = run(&mut io);
    assert!(
        report.notes.iter().all(|n| !n.starts_with("lifecycle:")),
        "{:?}",
        report.notes
    );
    // A reader without s3:GetLifecycleConfiguration.
    let mut model = ModelIo::new(NOW);
    let mut io = Intercept::new(&mut model, |req, _| {
        req.query
            .iter()
            .any(|(k, _)| k == "lifecycle")
            .then(|| Ok(reply(403, "AccessDenied")))
    });
    let report = run(&mut io);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("could not read the bucket's lifecycle rules")),
        "{:?}",
        report.notes
    );
}

/// GCS's rules come from the bucket's metadata, Azure's cannot be read.
#[test]
fn gcs_rules_are_read_from_the_bucket_and_azures_are_said_to_be_unreadable() {
    use crate::stores::gcs::model::GcsIo;
    let mut io = GcsIo::starting_at(NOW);
    io.store.lifecycle = Some(serde_json::json!({ "rule": [
        { "action": { "type": "Delete" }, "condition": { "age": 3 } }
    ]}));
    let op = preflight(Strategy::SingleObject, ExpiryClock::Server).on_store(
        &crate::stores::gcs::model::client_config(crate::stores::gcs::model::BUCKET).store,
    );
    let report = driver::run(&mut io, op).ready().unwrap();
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("(delete at age 3 days, every object)")),
        "{:?}",
        report.notes
    );
    let mut io = crate::stores::azure::model::AzureIo::starting_at(NOW);
    let op = preflight(Strategy::SingleObject, ExpiryClock::Server).on_store(
        &crate::stores::azure::model::client_config(crate::stores::azure::model::CONTAINER).store,
    );
    let report = driver::run(&mut io, op).ready().unwrap();
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("Azure's lifecycle management is a policy")),
        "{:?}",
        report.notes
    );
    assert!(io
        .requests
        .iter()
        .all(|r| r.query.iter().all(|(k, _)| k != "lifecycle")));
}
