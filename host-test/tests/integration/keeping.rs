//! A client keeping leases over its whole life: its scheduler holds one
//! entry per lease however often they renew, it keeps renewing whatever
//! runtime the client was connected on, a close releases everything held,
//! and no order of drops and runtime shutdowns panics.

use super::{acquire_options as options, endpoint, fresh_prefix, harness};
use aws_credential_types::provider::SharedCredentialsProvider;
use s3_lease_host::{Client, ClientStats, Lease, SdkProvider, SharedSource};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn client(prefix: &str) -> Client {
    let config = endpoint().host_config(prefix).unwrap();
    Client::connect(harness().runtime(), &config).await.unwrap()
}

/// A free key's lease. At so short a ttl, a grant on a loaded machine may
/// come back past its margin (the first call of an instance makes it):
/// such a grant is released and refused as transient, so try again.
async fn held(c: &Client, key: &str, ttl_ms: u64) -> Lease {
    // A loaded machine may get a grant back past its claim at a short ttl:
    // it is released in the background (the key may still read held for a
    // moment) and the attempt fails transient; try again for a while.
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match c.try_acquire(key, &options(ttl_ms)).await {
            Ok(Some(lease)) => return lease,
            Ok(None) if Instant::now() < until => {}
            Err(e) if e.is_transient() && Instant::now() < until => {}
            other => panic!("acquire {key}: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// 20 leases at ttl 300 ms (a renew every 90 ms each) held for 3 s: the
/// scheduler never holds more entries than the leases it keeps, and the
/// renews flow. (The old scheduler pushed two entries for each one it
/// took out, so its heap grew with every renew.)
#[test]
fn the_scheduler_holds_one_entry_per_lease_however_often_they_renew() {
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let prefix = fresh_prefix("keeping-entries");
        let c = client(&prefix).await;
        let mut leases = Vec::new();
        for i in 0..20 {
            leases.push(held(&c, &format!("k{i}"), 300).await);
        }
        let start = Instant::now();
        let mut most = ClientStats::default();
        while start.elapsed() < Duration::from_secs(3) {
            let stats = c.stats();
            assert!(
                stats.scheduled_entries <= stats.leases_kept && stats.leases_kept <= 20,
                "more entries than leases: {stats:?}"
            );
            most.scheduled_entries = most.scheduled_entries.max(stats.scheduled_entries);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let stats = c.stats();
        // About 33 renews a lease in 3 s. A loaded machine sends fewer and
        // may lose leases at this ttl (then their entries go too): the
        // point is the entries, so only ask that renews went on.
        assert!(stats.renews_sent >= 20 * 2, "renews stalled: {stats:?}");
        let held = leases.iter().filter(|l| l.is_held()).count();
        for lease in leases.iter().filter(|l| !l.is_held()) {
            eprintln!("keeping: lost {:?}", lease.lost_reason());
        }
        eprintln!(
            "keeping: {held}/20 held after 3 s, {stats:?}, most entries {}",
            most.scheduled_entries
        );
        drop(leases);
    });
}

/// A client connected on one runtime, which then ends, and used on
/// another: its leases still renew (ttl 1.5 s, held for 4 s). The old
/// scheduler was a task of the connecting runtime: it ended with it, and
/// later leases were silently never renewed.
#[test]
fn a_client_keeps_renewing_after_the_runtime_it_was_connected_on_ends() {
    let _ = (endpoint(), harness());
    let prefix = fresh_prefix("keeping-runtimes");
    let first = runtime();
    let c = first.block_on(client(&prefix));
    first.shutdown_timeout(Duration::from_secs(5));
    runtime().block_on(async {
        let lease = held(&c, "k", 1_500).await;
        tokio::time::sleep(Duration::from_secs(4)).await;
        let stats = c.stats();
        assert!(
            lease.is_held() && stats.renews_sent > 0,
            "held after 4 s: {}, {:?}, {stats:?}",
            lease.is_held(),
            lease.lost_reason()
        );
        lease.release().await.unwrap();
    });
}

/// Whether `key` is free for others now (never locked, or not live).
async fn free(c: &Client, key: &str) -> bool {
    c.inspect(key).await.unwrap().is_none_or(|s| !s.live)
}

/// A service shutting down: 50 leases held at ttl 30 s. Ten handles are
/// dropped (each released at once in the background), then the client is
/// closed with the other forty still held: every key is free at once, not
/// live for another 30 s; the handles say released, nothing renews any
/// more, and a grant after the close is refused and released.
#[test]
fn a_close_releases_every_lease_held_and_a_drop_releases_its_own() {
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let prefix = fresh_prefix("keeping-close");
        let c = client(&prefix).await;
        let mut leases = Vec::new();
        for i in 0..50 {
            leases.push(held(&c, &format!("k{i}"), 30_000).await);
        }
        let kept: Vec<Lease> = leases.split_off(10);
        drop(leases);
        let dropped_at = Instant::now();
        for i in 0..10 {
            let key = format!("k{i}");
            while !free(&c, &key).await {
                assert!(
                    dropped_at.elapsed() < Duration::from_secs(2),
                    "{key} still held"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let report = c.close(Duration::from_secs(10)).await;
        assert_eq!(report.released, 40, "{report:?}");
        assert!(report.all_released(), "{report:?}");
        for i in 10..50 {
            let key = format!("k{i}");
            let state = c.inspect(&key).await.unwrap();
            assert!(state.as_ref().is_some_and(|s| !s.live), "{key}: {state:?}");
        }
        assert!(kept.iter().all(|l| !l.is_held()));
        let stats = c.stats();
        assert_eq!(
            (stats.leases_kept, stats.scheduled_entries),
            (0, 0),
            "{stats:?}"
        );
        let refused = c.try_acquire("after", &options(30_000)).await.unwrap_err();
        assert!(refused.to_string().contains("closed"), "{refused}");
        assert!(free(&c, "after").await, "a grant after the close was kept");
        // A wait ends at its first grant: none can be kept. (Before, it
        // took and released the key again and again until its wait ran out.)
        let asked = Instant::now();
        let wait = Duration::from_secs(20);
        let refused = c
            .acquire("after", &options(30_000), wait)
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("closed"), "{refused}");
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{:?}",
            asked.elapsed()
        );
        // Let go already: dropping the handles sends nothing more.
        drop(kept);
        assert!(c.close(Duration::from_secs(1)).await.all_released());
    });
}

/// Panics in this process, on any thread, whose message says a runtime
/// was dropped where blocking is not allowed (counted from the first call).
fn runtime_drop_panics() -> usize {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    static HOOK: OnceLock<()> = OnceLock::new();
    HOOK.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if message.contains("Cannot drop a runtime") {
                COUNT.fetch_add(1, Ordering::SeqCst);
            }
            previous(info)
        }));
    });
    COUNT.load(Ordering::SeqCst)
}

/// A service whose credentials come from a source with a runtime of its
/// own (the AWS SDK's providers are async: the AWS chain and an
/// `SdkConfig`'s provider each run one), holding 20 leases at ttl 300 ms
/// (a renew under way most of the time), is dropped by its runtime's
/// shutdown, three times over: no thread panics. (Such a source's runtime,
/// dropped in async code or in a runtime's shutdown, panicked: "Cannot
/// drop a runtime in a context where blocking is not allowed".) The source
/// alone, dropped in async code, is tried too.
#[test]
fn a_runtime_shut_down_while_renews_are_under_way_never_panics() {
    let _ = (endpoint(), harness());
    let before = runtime_drop_panics();
    let source = || {
        let e = endpoint();
        let keys = aws_credential_types::Credentials::new(
            &e.access_key_id,
            &e.secret_access_key,
            e.session_token.clone(),
            None,
            "test",
        );
        let provider = SharedCredentialsProvider::new(keys);
        SharedSource::new(SdkProvider::new(provider).unwrap())
    };
    for round in 0..3 {
        let prefix = fresh_prefix(&format!("keeping-shutdown-{round}"));
        let e = endpoint();
        let keys = s3_lease_host::Credentials::new(&e.access_key_id, &e.secret_access_key);
        let config = s3_lease_host::S3Builder::new(&e.bucket, &e.region, keys)
            .endpoint(&e.url)
            .credentials_source(source())
            .unwrap()
            .build()
            .with_key_prefix(prefix);
        let rt = runtime();
        let service = rt.block_on(async {
            let c = Client::connect(harness().runtime(), &config).await.unwrap();
            let mut leases = Vec::new();
            for i in 0..20 {
                leases.push(held(&c, &format!("k{i}"), 300).await);
            }
            (leases, c, config)
        });
        rt.spawn(async move {
            let _service = service;
            std::future::pending::<()>().await
        });
        let shutdown = std::thread::spawn(move || drop(rt)).join();
        assert!(shutdown.is_ok(), "the runtime's shutdown panicked");
    }
    let alone = source();
    let dropped = std::thread::spawn(move || runtime().block_on(async move { drop(alone) }));
    assert!(
        dropped.join().is_ok(),
        "dropping the source in async code panicked"
    );
    // Renews under way at the shutdown end on the scheduler's thread.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        runtime_drop_panics(),
        before,
        "a runtime was dropped in async code"
    );
}

/// The blocking facade's close: the same release of everything held, from
/// code that is not async.
#[test]
fn the_blocking_close_releases_every_lease_held() {
    let prefix = fresh_prefix("keeping-blocking-close");
    let config = endpoint().host_config(&prefix).unwrap();
    let c = s3_lease_host::blocking::Client::connect(harness().runtime(), &config).unwrap();
    let guards: Vec<_> = (0..5)
        .map(|i| {
            let key = format!("k{i}");
            c.acquire(&key, &options(30_000), Duration::from_secs(10))
                .unwrap()
        })
        .collect();
    let report = c.close(Duration::from_secs(10));
    assert!(report.all_released() && report.released == 5, "{report:?}");
    for i in 0..5 {
        let state = c.inspect(&format!("k{i}")).unwrap();
        assert!(state.as_ref().is_some_and(|s| !s.live), "k{i}: {state:?}");
    }
    assert_eq!(c.stats().leases_kept, 0);
    drop(guards);
}

/// Renews one lease thousands of times on one instance, a request each:
/// after a warm-up, neither the guest's linear memory nor the host
/// resources it holds handles to have grown. (wasi:http's `handle` kept
/// every request's options in the instance's resource table, about 100
/// bytes a renew for as long as the instance lived.)
#[test]
fn an_instance_holds_no_more_after_thousands_of_renews() {
    let prefix = fresh_prefix("keeping-footprint");
    let mut i = super::opened(&prefix);
    let mut lease = super::try_acquire(&mut i, "k", &super::options(60_000)).expect("free");
    let mut renew = |i: &mut host_test::instance::Instance, n: usize| {
        for _ in 0..n {
            lease = i.renew(&lease).unwrap().expect("renewed");
        }
    };
    renew(&mut i, 500);
    let warm = i.footprint();
    renew(&mut i, 2_000);
    assert_eq!(i.footprint(), warm, "the instance grew over 2,000 renews");
}

/// A lease handed to a closed client (`hold`, say a record detached by
/// another process) is not kept: the handle says released at once, and
/// the record is released, so the key is free. (Before, a closed client
/// kept renewing it: `hold` never looked at the close.)
#[test]
fn a_closed_client_keeps_no_lease_handed_to_it() {
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let prefix = fresh_prefix("keeping-hold-after-close");
        let (giver, c) = (client(&prefix).await, client(&prefix).await);
        let record = held(&giver, "k", 30_000).await.detach().await;
        assert!(c.close(Duration::from_secs(5)).await.all_released());
        let lease = c.hold(record, Instant::now(), &options(30_000));
        assert!(
            !lease.is_held(),
            "a closed client holds {:?}",
            lease.record()
        );
        assert_eq!(
            lease.lost_reason(),
            Some(s3_lease_host::LostReason::Released)
        );
        let given = Instant::now();
        while !free(&c, "k").await {
            assert!(given.elapsed() < Duration::from_secs(5), "k still held");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let stats = c.stats();
        assert_eq!((stats.leases_kept, stats.renews_sent), (0, 0), "{stats:?}");
    });
}

/// One renew answered as no S3 server would (a bare 404, what a proxy or
/// a load balancer's error page sends) by the endpoint that granted the
/// lease a moment ago: a blip on the way, not a wrong configuration. The
/// lease is retried like after any transient failure, and stays held.
/// (Before, the wrong endpoint's `InvalidConfig` ended the lease at once,
/// `Failed`, with most of its ttl to go.)
#[test]
fn one_wrong_endpoint_verdict_during_a_renew_is_retried_not_fatal() {
    use host_test::hooks::Fault;
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let prefix = fresh_prefix("keeping-wrong-endpoint-renew");
        let config = endpoint().host_config(&prefix).unwrap();
        let (options_with_hooks, hooks, _clock) = harness().test_client_options();
        let c = Client::connect_with(harness().runtime(), &config, options_with_hooks)
            .await
            .unwrap();
        let lease = held(&c, "k", 3_000).await;
        let renews = c.stats().renews_sent;
        hooks.inject(Fault::Respond {
            status: 404,
            content_type: "text/plain; charset=utf-8",
            body: "404 page not found\n".into(),
        });
        let started = Instant::now();
        while c.stats().renews_sent < renews + 3 {
            assert!(
                lease.is_held(),
                "lost after one wrong-endpoint renew: {:?}",
                lease.lost_reason()
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "renews stalled"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let stats = c.stats();
        assert!(stats.renews_failed >= 1, "the fault was not met: {stats:?}");
        assert!(lease.is_held(), "{:?}", lease.lost_reason());
        lease.release().await.unwrap();
    });
}

/// A `tracing` subscriber with a bug: it panics when a span other than
/// the first it made (the caller's) is entered: the call's own span (once,
/// then never again).
struct PanicsOnEnterOfAnotherSpan {
    armed: std::sync::atomic::AtomicBool,
    /// The ids it gave out so far.
    made: std::sync::atomic::AtomicU64,
    /// The caller's span's metadata, once made, and whether it is entered.
    span: Mutex<Option<&'static tracing::Metadata<'static>>>,
    in_span: std::sync::atomic::AtomicBool,
}

impl tracing::Subscriber for PanicsOnEnterOfAnotherSpan {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = self.made.fetch_add(1, Ordering::SeqCst) + 1;
        if id == 1 {
            *self.span.lock().unwrap() = Some(attrs.metadata());
        }
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, id: &tracing::span::Id) {
        if id.into_u64() == 1 {
            self.in_span.store(true, Ordering::SeqCst);
        } else if self.armed.swap(false, Ordering::SeqCst) {
            panic!("the subscriber's own bug");
        }
    }
    fn exit(&self, id: &tracing::span::Id) {
        if id.into_u64() == 1 {
            self.in_span.store(false, Ordering::SeqCst);
        }
    }
    fn current_span(&self) -> tracing_core::span::Current {
        match *self.span.lock().unwrap() {
            Some(meta) if self.in_span.load(Ordering::SeqCst) => {
                tracing_core::span::Current::new(tracing::span::Id::from_u64(1), meta)
            }
            _ => tracing_core::span::Current::none(),
        }
    }
}

/// A panic inside a blocking call (here the caller's subscriber, entering
/// the call's span, which the call polls on the caller's thread) comes
/// back as the call's error, kind `Host`, naming the panic; the caller's
/// thread does not panic, and the client goes on working. (Before, the
/// caller panicked with "the s3-lease driver stopped", which the call's
/// panic was not.)
#[test]
fn a_panic_inside_a_blocking_call_is_its_error_not_the_callers_panic() {
    let prefix = fresh_prefix("keeping-blocking-panic");
    let config = endpoint().host_config(&prefix).unwrap();
    let c = s3_lease_host::blocking::Client::connect(harness().runtime(), &config).unwrap();
    let subscriber = PanicsOnEnterOfAnotherSpan {
        armed: std::sync::atomic::AtomicBool::new(true),
        made: std::sync::atomic::AtomicU64::new(0),
        span: Mutex::new(None),
        in_span: std::sync::atomic::AtomicBool::new(false),
    };
    let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("the caller's");
            let _entered = span.enter();
            c.inspect("k")
        })
    }));
    let e = match answered {
        Ok(Err(e)) => e,
        Ok(Ok(state)) => panic!("the panic went unseen: {state:?}"),
        Err(_) => panic!("the caller's thread panicked"),
    };
    assert_eq!(e.kind(), s3_lease_host::ErrorKind::Host, "{e}");
    assert!(e.to_string().contains("the subscriber's own bug"), "{e}");
    assert_eq!(c.inspect("k").unwrap(), None, "the client works on");
    let guard = c
        .acquire("k", &options(30_000), Duration::from_secs(10))
        .unwrap();
    assert!(guard.is_held());
    guard.release().unwrap();
}

/// A client on a test's clock ([`Clock::for_tests`]), which the test moves
/// as the system's clock moves when a machine resumes from a suspend.
async fn client_on(prefix: &str, clock: &s3_lease_host::clock::Clock) -> Client {
    let config = endpoint().host_config(prefix).unwrap();
    let options = s3_lease_host::ClientOptions::default().clock(clock.clone());
    Client::connect_with(harness().runtime(), &config, options)
        .await
        .unwrap()
}

/// Within a look of a resume (`clock::RESUME_CHECK`), on a loaded machine.
const AT_THE_RESUME: Duration = Duration::from_millis(1_500);

/// The machine is suspended for a minute while a lease (ttl 30 s) has
/// most of its claim to go. When it resumes, the lease is over at once:
/// `is_held` says no, `lost()` resolves (`Expired`) within a look of the
/// resume, not at the next renew 10 s on, nor 30 s on as on a clock that
/// stood still while the machine slept (std's `Instant`, before), and the
/// scheduler drops it without sending a renew.
#[test]
fn a_lease_suspended_past_its_claim_is_lost_as_the_machine_resumes() {
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let clock = s3_lease_host::clock::Clock::for_tests();
        let c = client_on(&fresh_prefix("keeping-suspend-lease"), &clock).await;
        let lease = std::sync::Arc::new(held(&c, "k", 30_000).await);
        let watcher = lease.clone();
        let lost = tokio::spawn(async move { watcher.lost().await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(lease.is_held());
        let renews = c.stats().renews_sent;
        clock.resume_after(Duration::from_secs(60));
        let resumed = Instant::now();
        assert!(
            !lease.is_held(),
            "held after a minute's suspend at ttl 30 s"
        );
        assert!(lease.held_token().is_err());
        let reason = tokio::time::timeout(Duration::from_secs(20), lost)
            .await
            .expect("lost() never resolved")
            .unwrap();
        assert_eq!(reason, s3_lease_host::LostReason::Expired(None));
        assert!(resumed.elapsed() < AT_THE_RESUME, "{:?}", resumed.elapsed());
        while c.stats().leases_kept > 0 {
            assert!(resumed.elapsed() < AT_THE_RESUME, "still kept");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(c.stats().renews_sent, renews, "a lapsed lease was renewed");
    });
}

/// The same for a leader (lease 30 s, renew deadline 20 s): when the
/// machine resumes from a minute's suspend, leadership ends at once
/// (`StoppedLeading(RenewDeadline)`, the role no longer `Leader`), within
/// a look of the resume; the component's monotonic clock, the client's,
/// jumped too.
#[test]
fn a_leader_suspended_past_its_renew_deadline_steps_down_as_the_machine_resumes() {
    use s3_lease_host::{ElectionEvent, ElectorConfig, StopReason};
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let clock = s3_lease_host::clock::Clock::for_tests();
        let c = client_on(&fresh_prefix("keeping-suspend-leader"), &clock).await;
        let config = ElectorConfig::new("lead")
            .lease_duration(Duration::from_secs(30))
            .renew_deadline(Duration::from_secs(20))
            .retry_period(Duration::from_secs(5));
        let mut elector = c.elect(&config).await.unwrap();
        let became = tokio::time::timeout(Duration::from_secs(20), elector.next_event()).await;
        assert!(
            matches!(became, Ok(Some(ElectionEvent::BecameLeader(_)))),
            "{became:?}"
        );
        assert!(elector.leading_until().is_some());
        clock.resume_after(Duration::from_secs(60));
        let resumed = Instant::now();
        let stopped = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match elector.next_event().await {
                    Some(ElectionEvent::StoppedLeading(reason)) => return reason,
                    Some(_) => continue,
                    None => panic!("the elector stopped"),
                }
            }
        })
        .await
        .expect("leadership never ended");
        assert_eq!(stopped, StopReason::RenewDeadline);
        eprintln!(
            "keeping: stepped down {:?} after the resume",
            resumed.elapsed()
        );
        assert!(resumed.elapsed() < AT_THE_RESUME, "{:?}", resumed.elapsed());
        elector.resign().await.unwrap();
    });
}
