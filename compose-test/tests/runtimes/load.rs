//! Many client threads incrementing counters at once, and what must hold
//! afterwards: every 200 is one increment, nothing else is.

use compose_test::http;
use host_test::Instance;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// One client thread: where it sends, and which counter it increments.
#[derive(Clone)]
pub struct Lane {
    pub server: SocketAddr,
    pub counter: String,
}

/// `threads_each` client threads on each of `servers`, all on `counter`.
pub fn lanes_on(servers: &[SocketAddr], threads_each: usize, counter: &str) -> Vec<Lane> {
    servers
        .iter()
        .flat_map(|&server| {
            (0..threads_each).map(move |_| Lane {
                server,
                counter: counter.into(),
            })
        })
        .collect()
}

/// One reply (or transport failure) as a client saw it.
#[derive(Debug, Clone)]
pub struct Sample {
    pub server: SocketAddr,
    pub counter: String,
    pub status: u16,
    /// (value, token) of a 200.
    pub granted: Option<(u64, u64)>,
    pub latency: Duration,
    pub body: String,
}

pub struct Run {
    pub samples: Vec<Sample>,
    pub wall: Duration,
}

/// Every lane sends `per_lane` increments, one after another, all lanes at once.
pub fn run(lanes: &[Lane], per_lane: usize) -> Run {
    let barrier = Arc::new(Barrier::new(lanes.len() + 1));
    let threads: Vec<_> = lanes
        .iter()
        .cloned()
        .map(|lane| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let path = format!("/counters/{}/increment", lane.counter);
                (0..per_lane)
                    .map(|_| {
                        let sent = Instant::now();
                        let reply = http::request(lane.server, "POST", &path);
                        let latency = sent.elapsed();
                        match reply {
                            Ok(r) => Sample {
                                server: lane.server,
                                counter: lane.counter.clone(),
                                status: r.status,
                                granted: (r.status == 200).then(|| value_and_token(&r.json())),
                                latency,
                                body: String::from_utf8_lossy(&r.body).into_owned(),
                            },
                            Err(e) => Sample {
                                server: lane.server,
                                counter: lane.counter.clone(),
                                status: 0,
                                granted: None,
                                latency,
                                body: format!("transport: {e}"),
                            },
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let samples = threads
        .into_iter()
        .flat_map(|t| t.join().expect("client thread"))
        .collect();
    Run {
        samples,
        wall: started.elapsed(),
    }
}

fn value_and_token(json: &serde_json::Value) -> (u64, u64) {
    let field = |name: &str| {
        json.get(name)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or_else(|| panic!("200 without {name}: {json}"))
    };
    (field("value"), field("token"))
}

/// What one counter's replies add up to.
pub struct Tally {
    pub ok: usize,
    pub unavailable: usize,
}

/// The invariants of one counter after a run:
/// - every reply is a 200 or a 503 (no transport errors, no other status);
/// - the values of the 200s are exactly 1..=n, each once: no increment lost
///   or doubled; and the tokens rise with the values, each once;
/// - the stored counter is n, written by the token of the n-th increment:
///   so no 503 incremented anything.
pub fn check_counter(run: &Run, counter: &str, prefix: &str, observer: &mut Instance) -> Tally {
    let samples: Vec<&Sample> = run
        .samples
        .iter()
        .filter(|s| s.counter == counter)
        .collect();
    let odd: Vec<&&Sample> = samples
        .iter()
        .filter(|s| s.status != 200 && s.status != 503)
        .collect();
    assert!(
        odd.is_empty(),
        "{counter}: replies other than 200/503: {odd:#?}"
    );
    for s in samples.iter().filter(|s| s.status == 503) {
        assert!(s.body.contains("lock-timeout"), "{counter}: {s:?}");
    }
    let mut by_value: BTreeMap<u64, u64> = BTreeMap::new();
    for (value, token) in samples.iter().filter_map(|s| s.granted) {
        assert!(
            by_value.insert(value, token).is_none(),
            "{counter}: value {value} granted twice (an increment doubled or lost)"
        );
    }
    let ok = by_value.len();
    let values: Vec<u64> = by_value.keys().copied().collect();
    assert_eq!(
        values,
        (1..=ok as u64).collect::<Vec<_>>(),
        "{counter}: the 200s' values are not exactly 1..={ok}"
    );
    let tokens: Vec<u64> = by_value.values().copied().collect();
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "{counter}: tokens do not rise strictly with the values: {tokens:?}"
    );
    let stored = observer
        .fenced_get(&format!("{prefix}counters/{counter}.json"))
        .expect("no trap")
        .expect("fenced-get")
        .unwrap_or_else(|| panic!("{counter}: no counter object"));
    let body: serde_json::Value = serde_json::from_slice(&stored.body).expect("JSON counter");
    let (value, token) = value_and_token(&body);
    assert_eq!(
        value, ok as u64,
        "{counter}: stored value {value}, but {ok} replies were 200"
    );
    let last_token = tokens.last().copied().unwrap_or(0);
    assert_eq!(token, last_token, "{counter}: stored body's token");
    assert_eq!(
        stored.token, last_token,
        "{counter}: the object's fencing token"
    );
    Tally {
        ok,
        unavailable: samples.len() - ok,
    }
}

/// How many increments `server` answered with a 200 in `run`.
pub fn increments_by(run: &Run, server: SocketAddr) -> usize {
    run.samples
        .iter()
        .filter(|s| s.server == server && s.status == 200)
        .count()
}

/// Requests per second and latency percentiles, for docs/measured.md.
pub fn summary(run: &Run) -> String {
    let mut latencies: Vec<Duration> = run.samples.iter().map(|s| s.latency).collect();
    latencies.sort();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
        latencies.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let ok = run.samples.iter().filter(|s| s.status == 200).count();
    format!(
        "{} requests ({ok} ok) in {:.2} s: {:.0} requests/s, {:.0} increments/s; latency p50 {:.0} ms, p90 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        run.samples.len(),
        run.wall.as_secs_f64(),
        run.samples.len() as f64 / run.wall.as_secs_f64(),
        ok as f64 / run.wall.as_secs_f64(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0),
    )
}

/// p50, p99 and max of `latencies`, in ms (0 when empty).
pub fn percentiles(latencies: &[Duration]) -> (f64, f64, f64) {
    let mut sorted = latencies.to_vec();
    sorted.sort();
    let pct = |p: f64| {
        let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
        sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    (pct(0.5), pct(0.99), pct(1.0))
}
