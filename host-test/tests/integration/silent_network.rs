//! The host `Elector` of a leader whose network goes silent (through a
//! `host_test::fault_proxy` of its own: requests accepted, never
//! answered, nothing refused or reset), with a request timeout of 30 s so
//! that nothing but the elector's own deadline can end its leadership in
//! time: `role()` stops saying `Leader` and `leading_until()` stops
//! promising no later than the renew deadline after its last successful
//! renew was sent, and the other elector leads only after that.
//!
//! Twice: on a host that honours the request timeouts the component sets
//! (bounded by the time left to the deadline, so the step itself returns
//! then), and on one that ignores them (the step stays blocked: only the
//! watchdog can end leadership on time).

use super::{endpoint, fresh_prefix, harness};
use host_test::fault_proxy::{Fault, FaultProxy};
use s3_lease_host::blocking::{Client, Elector};
use s3_lease_host::http::{HttpSender, IoFuture, RequestOptions, ResponseFuture, WasiBody};
use s3_lease_host::{ClientOptions, ElectorConfig, InstanceOptions, Role, Strategy};
use std::time::{Duration, Instant};

const LEASE_MS: u64 = 4_000;
const DEADLINE_MS: u64 = 2_000;
const RETRY_MS: u64 = 500;
/// The thread scheduling allowed past a deadline.
const SLACK: Duration = Duration::from_millis(200);
/// Far past the deadline: a request that hangs is not cut short by it.
const REQUEST_TIMEOUT_MS: u32 = 30_000;

/// A host that does not support request timeouts: the guest's are dropped
/// (the pooled sender then waits up to its own 600 s).
struct IgnoresTimeouts(HttpSender);

impl s3_lease_host::http::WasiHttpHooks for IgnoresTimeouts {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> ResponseFuture {
        self.0.send(request, None)
    }
}

fn client(prefix: &str, proxy: &FaultProxy, strategy: Strategy, ignores_timeouts: bool) -> Client {
    let mut config = endpoint()
        .host_config(prefix)
        .unwrap()
        .with_endpoint(proxy.url());
    config.request_timeout = Some(std::time::Duration::from_millis(REQUEST_TIMEOUT_MS.into()));
    config.strategy = Some(strategy);
    let runtime = harness().runtime();
    let sender = runtime.http().clone();
    let options = ClientOptions::default()
        .instances(1)
        .instance_options(move || InstanceOptions {
            hooks: ignores_timeouts.then(|| {
                Box::new(IgnoresTimeouts(sender.clone()))
                    as Box<dyn s3_lease_host::http::WasiHttpHooks>
            }),
            wall_clock: None,
        });
    Client::connect_with(runtime, &config, options).unwrap()
}

fn elector(client: &Client, holder: &str) -> Elector {
    client
        .elect(
            &ElectorConfig::new("k")
                .lease_duration(Duration::from_millis(LEASE_MS))
                .renew_deadline(Duration::from_millis(DEADLINE_MS))
                .retry_period(Duration::from_millis(RETRY_MS))
                .holder_id(holder),
        )
        .unwrap()
}

fn leads(e: &Elector) -> bool {
    matches!(e.role(), Role::Leader(_))
}

fn wait_for(limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn a_silent_leader_stops_leading_by_its_deadline(strategy: Strategy, ignores_timeouts: bool) {
    let url = &endpoint().url;
    if !url.starts_with("http://") {
        println!("skipped: the fault proxy needs an http:// endpoint, not {url}");
        return;
    }
    let prefix = fresh_prefix(&format!("silent-{strategy:?}"));
    let (proxy_a, proxy_b) = (
        FaultProxy::in_front_of(url).unwrap(),
        FaultProxy::in_front_of(url).unwrap(),
    );
    let a = elector(&client(&prefix, &proxy_a, strategy, ignores_timeouts), "a");
    wait_for(Duration::from_secs(20), "a to lead", || leads(&a));
    let b = elector(&client(&prefix, &proxy_b, strategy, false), "b");
    wait_for(
        Duration::from_secs(20),
        "b to follow a",
        || matches!(b.role(), Role::Follower(Some(s)) if s.holder_id.as_deref() == Some("a") && s.live),
    );
    // A few renews of a's.
    std::thread::sleep(Duration::from_millis(3 * RETRY_MS));
    assert!(leads(&a), "a still leads before the fault: {:?}", a.role());
    assert!(!leads(&b));

    proxy_a.set(Fault::Silent);
    let silent_at = Instant::now();
    // No reply reaches a from now on, so its last successful renew was
    // sent before the last reply the proxy began passing on.
    let last_reply = proxy_a.last_reply().expect("a had replies");
    let deadline = last_reply + Duration::from_millis(DEADLINE_MS);
    let promised = a.leading_until().expect("a leads");
    assert!(
        promised <= deadline + Duration::from_millis(10),
        "a's leadership runs {:?} past the deadline of its last reply",
        promised - deadline
    );
    let error_before = a.last_error();

    // Watch both until b leads (a stays silent, so a cannot lead again).
    let mut a_stopped: Option<Instant> = None;
    let mut a_step_returned: Option<Instant> = None;
    let b_led = loop {
        let now = Instant::now();
        assert!(
            now < silent_at + Duration::from_secs(30),
            "b never led; a {:?}, b {:?} ({:?})",
            a.role(),
            b.role(),
            b.last_error()
        );
        if a_step_returned.is_none() && a.last_error() != error_before {
            a_step_returned = Some(now);
        }
        if a_stopped.is_none() && !leads(&a) {
            let until = a.leading_until();
            assert!(
                until.is_none_or(|u| u <= Instant::now()),
                "a is not leader, but its leadership runs until {:?} from now",
                until.map(|u| u - now)
            );
            a_stopped = Some(now);
        }
        if leads(&b) {
            break now;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let a_stopped = a_stopped.expect("b led while a still did");
    let ms = |from: Instant, to: Instant| {
        if to >= from {
            (to - from).as_millis() as i64
        } else {
            -((from - to).as_millis() as i64)
        }
    };
    println!(
        "silent network, {strategy:?}: last reply {} ms before the silence; a stopped leading {} ms after the silence ({} ms after the deadline); a's step returned {}; b led {} ms after a stopped",
        ms(last_reply, silent_at),
        ms(silent_at, a_stopped),
        ms(deadline, a_stopped),
        match a_step_returned {
            Some(t) if t <= a_stopped => format!("{} ms BEFORE a stopped (not blocked)", ms(t, a_stopped)),
            Some(t) => format!("{} ms after a stopped", ms(a_stopped, t)),
            None => "not yet (still blocked)".to_string(),
        },
        ms(a_stopped, b_led)
    );
    assert!(
        a_stopped <= deadline + SLACK,
        "a still led {} ms after its renew deadline",
        ms(deadline, a_stopped)
    );
    assert!(b_led > a_stopped, "b led before a stopped");
    if ignores_timeouts {
        // The case the watchdog is for: the deadline ended it, not a step
        // that returned (a's requests were still waiting for a reply).
        assert!(
            a_step_returned.is_none_or(|t| t > a_stopped + Duration::from_millis(500)),
            "a's step returned by the time a stopped leading: not the blocked case"
        );
    } else {
        // The component bounded the renew by the deadline: the step
        // itself ends then, not a request timeout (30 s) later.
        let returned = a_step_returned.expect("a's bounded step returned");
        assert!(
            returned <= deadline + SLACK,
            "a's step returned {} ms after the deadline",
            ms(deadline, returned)
        );
    }

    // Passing again, a's resign (on drop) can finish.
    proxy_a.set(Fault::Pass);
    drop(b);
    drop(a);
}

#[test]
fn a_silent_single_object_leader_stops_leading_by_its_deadline() {
    a_silent_leader_stops_leading_by_its_deadline(Strategy::SingleObject, false);
}

#[test]
fn a_silent_epoch_objects_leader_stops_leading_by_its_deadline() {
    a_silent_leader_stops_leading_by_its_deadline(Strategy::EpochObjects, false);
}

#[test]
fn on_a_host_that_ignores_timeouts_a_silent_single_object_leader_stops_by_its_deadline() {
    a_silent_leader_stops_leading_by_its_deadline(Strategy::SingleObject, true);
}

#[test]
fn on_a_host_that_ignores_timeouts_a_silent_epoch_objects_leader_stops_by_its_deadline() {
    a_silent_leader_stops_leading_by_its_deadline(Strategy::EpochObjects, true);
}
