//! The async client (`s3_lease_host::Client`) on tokio, against the real
//! server: calls made from async code never panic; a waiting acquire holds
//! nothing, so it never delays another lease's renew, even on one instance;
//! a dropped acquire leaves nothing held; many leases renew on one task.

use super::{acquire_options as options, endpoint, fresh_prefix, harness};
use host_test::hooks::Fault;
use s3_lease_host::{Client, ClientOptions, ErrorKind, LeaseStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs `test` on a multi-thread runtime, the harness (SeaweedFS, the
/// compiled component) set up first, outside it.
fn on_tokio<F: std::future::Future>(test: impl FnOnce() -> F) -> F::Output {
    let _ = (endpoint(), harness());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(test())
}

async fn client(prefix: &str, options: ClientOptions) -> Client {
    let config = endpoint().host_config(prefix).unwrap();
    Client::connect_with(harness().runtime(), &config, options)
        .await
        .unwrap()
}

/// Threads of this process, from the kernel's own count.
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:").map(|n| n.trim().parse().ok()))
                .flatten()
        })
        .unwrap_or(0)
}

/// Every call, the blocking facade's too, from inside a runtime: none
/// panics (the old host drove the component with `Handle::block_on`, which
/// panics there).
#[test]
fn calls_from_async_code_never_panic() {
    let prefix = fresh_prefix("async-no-panic");
    let _ = (endpoint(), harness());
    for flavor in ["current_thread", "multi_thread"] {
        let runtime = match flavor {
            "current_thread" => tokio::runtime::Builder::new_current_thread(),
            _ => tokio::runtime::Builder::new_multi_thread(),
        }
        .enable_all()
        .build()
        .unwrap();
        runtime.block_on(async {
            let c = client(&prefix, ClientOptions::default()).await;
            assert_eq!(c.inspect(&format!("{flavor}-never")).await.unwrap(), None);
            let lease = c
                .acquire(flavor, &options(2_000), Duration::from_secs(5))
                .await
                .unwrap();
            lease.release().await.unwrap();
            // The blocking facade, called from async code: it blocks this
            // thread, and does not panic.
            let config = endpoint().host_config(&prefix).unwrap();
            let blocking =
                s3_lease_host::blocking::Client::connect(harness().runtime(), &config).unwrap();
            assert!(blocking.inspect(flavor).unwrap().is_some());
        });
    }
}

/// One instance for everything: `a` is held (ttl 2 s, renewed every
/// 600 ms) while the same client waits 6 s for `b`, which another client
/// holds. The waiting acquire holds the instance only for each attempt, so
/// `a`'s renews go through between them and `a` is never lost. (The old
/// host held its one instance for the whole wait: `a` was lost after its
/// deadline.)
#[test]
fn a_waiting_acquire_never_delays_another_leases_renew() {
    on_tokio(a_waiting_acquire_never_delays_another_leases_renew_async)
}

async fn a_waiting_acquire_never_delays_another_leases_renew_async() {
    let prefix = fresh_prefix("async-wait");
    let one = client(&prefix, ClientOptions::default().instances(1)).await;
    let other = client(&prefix, ClientOptions::default()).await;
    let a = one
        .acquire("a", &options(2_000), Duration::from_secs(5))
        .await
        .unwrap();
    let b = other
        .acquire("b", &options(30_000), Duration::from_secs(5))
        .await
        .unwrap();
    let started = Instant::now();
    let waited = one
        .acquire("b", &options(2_000), Duration::from_secs(6))
        .await;
    assert_eq!(waited.err().map(|e| e.kind()), Some(ErrorKind::Timeout));
    assert!(started.elapsed() >= Duration::from_secs(6));
    assert!(
        a.is_held(),
        "a was lost while b was waited for: {:?}",
        a.lost_reason()
    );
    release_held(a).await;
    release_held(b).await;
}

/// A grant whose reply comes after the caller gave up on it is released:
/// the acquire is dropped while its PUT (delayed 1 s) is under way; the
/// grant lands, and is released at once, not left to its ttl (60 s).
#[test]
fn a_dropped_acquire_leaves_nothing_held() {
    on_tokio(a_dropped_acquire_leaves_nothing_held_async)
}

async fn a_dropped_acquire_leaves_nothing_held_async() {
    let prefix = fresh_prefix("async-cancel");
    let (hooks, clock) = (
        harness().test_options().1,
        host_test::instance::SkewedClock::default(),
    );
    let delayed = Arc::new(AtomicBool::new(false));
    let object = format!("{prefix}k");
    hooks.add_rule(move |request: &mut http::request::Parts| {
        let grant = request.method == http::Method::PUT && request.uri.path().ends_with(&object);
        (grant && !delayed.swap(true, Ordering::SeqCst))
            .then_some(Fault::Delay(Duration::from_millis(1_000)))
    });
    let c = client(&prefix, harness().client_options(&hooks, &clock)).await;
    let gave_up = tokio::time::timeout(
        Duration::from_millis(300),
        c.acquire("k", &options(60_000), Duration::from_secs(10)),
    )
    .await;
    assert!(
        gave_up.is_err(),
        "the acquire was still waiting for its PUT"
    );
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let other = client(&prefix, ClientOptions::default()).await;
    let state = other.inspect("k").await.unwrap().expect("the grant landed");
    assert_eq!(state.token, Some(1));
    assert!(
        !state.live,
        "the grant nobody waited for is still held: {state:?}"
    );
    let lease = other
        .try_acquire("k", &options(60_000))
        .await
        .unwrap()
        .expect("free at once");
    assert_eq!(lease.token(), 2);
    lease.release().await.unwrap();
}

/// 300 leases (ttl 6 s) held for 8 s through one client: none lost, each
/// renewed, and no thread per lease (the old host started one each). The
/// count is the process's, and other tests run beside this one: the bound
/// is half a thread per lease, far below one each.
#[test]
fn many_leases_renew_on_one_scheduler() {
    on_tokio(many_leases_renew_on_one_scheduler_async)
}

async fn many_leases_renew_on_one_scheduler_async() {
    let prefix = fresh_prefix("async-many");
    let c = client(&prefix, ClientOptions::default()).await;
    let before = threads();
    let mut leases = Vec::new();
    for i in 0..300 {
        let key = format!("k{i}");
        leases.push(
            c.try_acquire(&key, &options(6_000))
                .await
                .unwrap()
                .expect("free"),
        );
    }
    let tokens: Vec<u64> = leases.iter().map(|l| l.token()).collect();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let grown = threads().saturating_sub(before);
    for (lease, token) in leases.iter().zip(&tokens) {
        assert!(
            matches!(*lease.watch().borrow(), LeaseStatus::Held { .. }),
            "lost: {:?}",
            lease.lost_reason()
        );
        assert_eq!(lease.token(), *token, "renewed under its own token");
        assert!(!lease.record().etag.is_empty(), "renewed");
    }
    assert!(grown < 150, "{grown} more threads for 300 leases");
    for lease in leases {
        release_held(lease).await;
    }
}

/// Releases a lease the test saw held to the end. Under load a renew may
/// run out of its lease's time and land after its call gave up; the
/// release's condition then fails on our own newer write. The lease is not
/// adopted (the seal binds the record to its etag), so the release says
/// Lost, naming this very holder and token, and the lease runs out by
/// itself: nobody else got it. Anything else fails the test.
async fn release_held(lease: s3_lease_host::Lease) {
    let (holder, token) = (lease.record().holder_id, lease.token());
    match lease.release().await {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::Lost => {
            let current = e.holder().expect("what holds it");
            assert_eq!(
                (current.holder_id.as_deref(), current.token),
                (Some(holder.as_str()), Some(token)),
                "lost to someone else: {e}"
            );
        }
        Err(e) => panic!("release: {e}"),
    }
}

/// A release, a detach or a drop while a renew is under way lets go of
/// the lease that renew wrote (release and detach wait for it; a drop
/// leaves the release to its outcome): the record from before the renew
/// is spent (the renew rewrote the lock object), so releasing it is
/// refused and the key stays held by nobody for a whole ttl, and handing
/// it over hands over a record nobody can renew. ttl 6 s (a renew every
/// 1.8 s, its reply in time even on a loaded machine); the first renew of
/// each key is sent 600 ms late, and release, detach or drop comes while
/// it is held back.
#[test]
fn a_release_detach_or_drop_during_a_renew_lets_go_of_the_renewed_lease() {
    on_tokio(a_release_detach_or_drop_during_a_renew_lets_go_of_the_renewed_lease_async)
}

async fn a_release_detach_or_drop_during_a_renew_lets_go_of_the_renewed_lease_async() {
    let prefix = fresh_prefix("async-mid-renew");
    let (options_a, hooks, _) = harness().test_client_options();
    let a = client(&prefix, options_a).await;
    let b = client(&prefix, ClientOptions::default()).await;
    let released = a.try_acquire("released", &options(6_000)).await.unwrap();
    let detached = a.try_acquire("detached", &options(6_000)).await.unwrap();
    let dropped = a.try_acquire("dropped", &options(6_000)).await.unwrap();
    let (released, detached) = (released.expect("free"), detached.expect("free"));
    let dropped = dropped.expect("free");
    // From here a's only PUTs on the lock objects are renews (and the
    // release); the first of each key is held back.
    let held_back: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let seen = held_back.clone();
    hooks.add_rule(move |request: &mut http::request::Parts| {
        let path = request.uri.path().to_string();
        let ours = ["/released", "/detached", "/dropped"]
            .iter()
            .any(|key| path.ends_with(key));
        let mut held_back = seen.lock().unwrap();
        (request.method == http::Method::PUT && ours && !held_back.contains(&path)).then(|| {
            held_back.push(path);
            Fault::Delay(Duration::from_millis(600))
        })
    });
    let renewing = |key: &'static str| {
        let held_back = held_back.clone();
        async move {
            let started = Instant::now();
            while !held_back.lock().unwrap().iter().any(|p| p.ends_with(key)) {
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "no renew of {key}"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };

    let release = async {
        renewing("released").await;
        released.release().await
    };
    let detach = async {
        renewing("detached").await;
        let before = detached.record();
        (before, detached.detach().await)
    };
    let drop_it = async {
        renewing("dropped").await;
        drop(dropped);
    };
    let (release, (before, record), ()) = tokio::join!(release, detach, drop_it);

    release.expect("the renewed lease is released");
    let state = b
        .inspect("released")
        .await
        .unwrap()
        .expect("the lock object");
    assert!(
        !state.live && state.expires_at_ms == 0,
        "released at once, not left to run out: {state:?}"
    );
    assert_ne!(record.etag, before.etag, "the record the renew wrote");
    let renewed = b
        .renew(&record)
        .await
        .expect("another client renews the detached lease");
    b.release(&renewed).await.unwrap();
    let state = b
        .inspect("detached")
        .await
        .unwrap()
        .expect("the lock object");
    assert!(!state.live, "{state:?}");
    // Dropped mid-renew: released (in the background) once the renew is in.
    let started = Instant::now();
    loop {
        let state = b
            .inspect("dropped")
            .await
            .unwrap()
            .expect("the lock object");
        if !state.live && state.expires_at_ms == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_millis(1_500),
            "dropped mid-renew, not released: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
