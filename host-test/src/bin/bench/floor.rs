//! How close the component is to the floor: the bare requests each operation
//! sends, signed ahead of time and sent by a plain keep-alive HTTP/1.1
//! client, against the same server in the same run, interleaved round by
//! round with the component's own operations so that both see the same
//! machine. And where the component's extra time goes: the host's HTTP send
//! (timed at the wasi:http hook), the rest of the call (wasm: into and out of
//! wasmtime, signing, building and parsing, wasi-http streams), and a call
//! into the component that sends nothing.

use crate::percentile;
use anyhow::{bail, Context, Result};
use bytes::Bytes;
use host_test::admin::to_http;
use host_test::server::Endpoint;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client as HyperClient};
use hyper_util::rt::TokioExecutor;
use s3_lease::stores::s3::{Method, S3Request};
use s3_lease_host::blocking::Client;
use s3_lease_host::http::{full, HttpSender, IoFuture, ResponseFuture};
use s3_lease_host::{
    CompileCache, ComponentSource, Credentials, InstanceOptions, Runtime, RuntimeOptions,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wasmtime_wasi_http::{RequestOptions, WasiBody, WasiHttpHooks};

/// The bare requests a lock operation is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bare {
    ConditionalPut,
    Get,
    NotModified,
}

impl Bare {
    const ALL: [Bare; 3] = [Bare::ConditionalPut, Bare::Get, Bare::NotModified];

    fn label(self) -> &'static str {
        match self {
            Bare::ConditionalPut => "conditional PUT (If-Match), 200",
            Bare::Get => "GET, 200",
            Bare::NotModified => "conditional GET (If-None-Match), 304",
        }
    }

    fn expected_status(self) -> u16 {
        match self {
            Bare::NotModified => 304,
            _ => 200,
        }
    }

    /// The bare request that is the least `sent` can cost: the component's
    /// PUTs are all conditional and of a lock object's size; a GET costs a
    /// 304 or a full GET as the server answered.
    fn floor_of(sent: &Sent) -> Option<Bare> {
        match (sent.method.as_str(), sent.status) {
            ("PUT", _) => Some(Bare::ConditionalPut),
            ("GET", Some(304)) => Some(Bare::NotModified),
            ("GET", _) => Some(Bare::Get),
            _ => None,
        }
    }
}

/// One request the component sent, as the host's hook saw it.
struct Sent {
    method: String,
    condition: &'static str,
    body_bytes: usize,
    status: Option<u16>,
    /// When the component handed the request to wasi:http (its headers
    /// built and signed), when it had written the whole body through the
    /// wasi:http stream (it writes after `handle`), and when the whole
    /// reply was in the host's hands (pool, network and server in between).
    handed_over: Instant,
    body_written: Instant,
    replied: Instant,
}

impl Sent {
    fn describe(&self) -> String {
        let status = self.status.map_or("failed".into(), |s| s.to_string());
        format!("{} {}→{status}", self.method, self.condition)
            .replace("  ", " ")
            .replace(" →", "→")
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The runtime's own sender, with each request timed and recorded.
#[derive(Clone)]
struct TimedHooks {
    next: HttpSender,
    sent: Arc<Mutex<Vec<Sent>>>,
}

impl WasiHttpHooks for TimedHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> ResponseFuture {
        let handed_over = Instant::now();
        let headers = request.headers();
        let condition = if headers.contains_key("if-match") {
            "If-Match"
        } else if headers.contains_key("if-none-match") {
            "If-None-Match"
        } else {
            ""
        };
        let body_bytes = headers
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let method = request.method().to_string();
        let next = self.next.clone();
        let log = self.sent.clone();
        Box::new(async move {
            // Collected here, as the pool would, to see when the guest is
            // done writing it; the pool then takes the bytes as they are.
            let (parts, body) = request.into_parts();
            let body = body.collect().await?.to_bytes();
            let body_written = Instant::now();
            let request = http::Request::from_parts(parts, full(body));
            let result = Box::into_pin(next.send(request, options)).await;
            let status = result.as_ref().ok().map(|(r, _)| r.status().as_u16());
            lock(&log).push(Sent {
                method,
                condition,
                body_bytes,
                status,
                handed_over,
                body_written,
                replied: Instant::now(),
            });
            result
        })
    }
}

/// One sequence of requests an operation sent.
struct Sequence {
    rounds: usize,
    /// The bare requests that are their floor (`None`: none measured).
    floors: Vec<Option<Bare>>,
}

/// One operation's samples over the rounds.
#[derive(Default)]
struct OpSamples {
    total: Vec<Duration>,
    /// The call's time split where the hook saw its requests (summed over
    /// them when it sent more than one): in wasm before each was handed
    /// over (building, signing), writing bodies, in the host's exchange
    /// (pool, network, server), and in wasm after the replies (reading,
    /// parsing, returning).
    before: Vec<Duration>,
    writing: Vec<Duration>,
    exchange: Vec<Duration>,
    after: Vec<Duration>,
    /// The requests sent, described, and how often.
    sequences: BTreeMap<String, Sequence>,
    /// The body size of the last PUT sent.
    put_body_bytes: Option<usize>,
}

impl OpSamples {
    fn record(&mut self, started: Instant, ended: Instant, sent: &[Sent]) {
        let mut before = Duration::ZERO;
        let mut since = started;
        for s in sent {
            before += s.handed_over.saturating_duration_since(since);
            since = s.replied;
        }
        self.total.push(ended - started);
        self.before.push(before);
        self.writing.push(
            sent.iter()
                .map(|s| s.body_written.saturating_duration_since(s.handed_over))
                .sum(),
        );
        self.exchange.push(
            sent.iter()
                .map(|s| s.replied.saturating_duration_since(s.body_written))
                .sum(),
        );
        self.after.push(ended.saturating_duration_since(since));
        let described: Vec<String> = sent.iter().map(Sent::describe).collect();
        let entry = self
            .sequences
            .entry(described.join(" + "))
            .or_insert_with(|| Sequence {
                rounds: 0,
                floors: sent.iter().map(Bare::floor_of).collect(),
            });
        entry.rounds += 1;
        if let Some(put) = sent.iter().rev().find(|s| s.method == "PUT") {
            self.put_body_bytes = Some(put.body_bytes);
        }
    }

    /// The sequence most rounds sent.
    fn usual(&self) -> Option<(&String, &Sequence)> {
        self.sequences.iter().max_by_key(|(_, s)| s.rounds)
    }
}

pub const OPERATIONS: [&str; 4] = ["try-acquire", "renew", "release", "inspect"];

/// The bare requests, signed ahead of time: `rounds` of each kind.
struct Presigned {
    by_kind: BTreeMap<Bare, Vec<http::Request<Bytes>>>,
}

impl Presigned {
    /// The floor object is written once, plainly, so its ETag (the MD5 of
    /// the fixed body) is known; an If-Match PUT of the same body leaves
    /// it unchanged, so every pre-signed request stays valid all run.
    fn new(e: &Endpoint, key: &str, body: &[u8], count: usize) -> Result<Self> {
        let etag = e.admin()?.put(key, body)?;
        let config = e.client_config()?;
        let request = |kind: Bare| match kind {
            Bare::ConditionalPut => S3Request::new(Method::Put, key, usize::MAX)
                .header("if-match", &etag)
                .body("application/json", body.to_vec()),
            Bare::Get => S3Request::new(Method::Get, key, usize::MAX),
            Bare::NotModified => {
                S3Request::new(Method::Get, key, usize::MAX).header("if-none-match", &etag)
            }
        };
        let mut by_kind = BTreeMap::new();
        for kind in Bare::ALL {
            let mut signed = Vec::with_capacity(count);
            for _ in 0..count {
                // SigV4 dates stay valid for 15 minutes: far longer than a run.
                let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
                signed.push(to_http(s3_lease::config::ClientConfig::prepare(
                    &config,
                    &request(kind),
                    now,
                ))?);
            }
            by_kind.insert(kind, signed);
        }
        Ok(Presigned { by_kind })
    }

    fn take(&mut self, kind: Bare) -> Result<http::Request<Bytes>> {
        self.by_kind
            .get_mut(&kind)
            .and_then(Vec::pop)
            .context("ran out of pre-signed requests")
    }
}

/// The two ways the bare requests go out: a plain hyper-util client (one
/// keep-alive connection, driven on this thread: the floor), and the host's
/// own pool (`HttpSender`, its connections on a runtime thread of their own),
/// which tells the pool's cost apart from the network's.
struct FloorSenders {
    /// `None` on https: the plain client speaks plain HTTP only.
    bare: Option<HyperClient<HttpConnector, Full<Bytes>>>,
    pool: HttpSender,
    driver: tokio::runtime::Runtime,
}

impl FloorSenders {
    fn new(e: &Endpoint, pool: HttpSender) -> Result<Self> {
        let bare = e.url.starts_with("http://").then(|| {
            let mut tcp = HttpConnector::new();
            tcp.set_nodelay(true);
            HyperClient::builder(TokioExecutor::new()).build(tcp)
        });
        let driver = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(FloorSenders { bare, pool, driver })
    }

    /// Sends through the plain client; the time to the whole reply.
    fn bare(&self, kind: Bare, request: http::Request<Bytes>) -> Result<Option<Duration>> {
        let Some(client) = &self.bare else {
            return Ok(None);
        };
        let started = Instant::now();
        let status = self.driver.block_on(async {
            let reply = client.request(request.map(Full::new)).await?;
            let status = reply.status().as_u16();
            reply.into_body().collect().await?;
            anyhow::Ok(status)
        })?;
        let took = started.elapsed();
        check(kind, status)?;
        Ok(Some(took))
    }

    /// Sends through the host's pool; the time to the whole reply.
    fn pooled(&self, kind: Bare, request: http::Request<Bytes>) -> Result<Duration> {
        let started = Instant::now();
        let sending = self.pool.send(request.map(full), None);
        let status = self.driver.block_on(async {
            let (reply, _io) = Box::into_pin(sending)
                .await
                .map_err(|e| anyhow::anyhow!("sending: {e:?}"))?;
            let status = reply.status().as_u16();
            reply
                .into_body()
                .collect()
                .await
                .map_err(|e| anyhow::anyhow!("reading: {e:?}"))?;
            anyhow::Ok(status)
        })?;
        let took = started.elapsed();
        check(kind, status)?;
        Ok(took)
    }
}

fn check(kind: Bare, status: u16) -> Result<()> {
    if status != kind.expected_status() {
        bail!("{}: the server answered {status}", kind.label());
    }
    Ok(())
}

/// What one run measured.
pub struct Report {
    ops: [OpSamples; 4],
    bare: BTreeMap<Bare, Vec<Duration>>,
    pooled: BTreeMap<Bare, Vec<Duration>>,
    no_request_call: Vec<Duration>,
    put_body_bytes: usize,
}

/// try-acquire, renew, release and inspect (as the main table runs them),
/// each round followed by the bare requests through both senders and a
/// call that sends nothing.
pub fn run(e: &Endpoint, prefix: &str, rounds: usize) -> Result<Report> {
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env()),
    )?;
    let hooks = TimedHooks {
        next: runtime.http().clone(),
        sent: Arc::default(),
    };
    let timed_hooks = hooks.clone();
    let client = Client::connect_with(
        &runtime,
        &e.host_config(prefix)?,
        crate::one_instance().instance_options(move || InstanceOptions {
            hooks: Some(Box::new(timed_hooks.clone())),
            wall_clock: None,
        }),
    )?;
    let credentials = Credentials::new(e.access_key_id.clone(), e.secret_access_key.clone());
    let credentials = match &e.session_token {
        Some(token) => credentials.with_session_token(token.clone()),
        None => credentials,
    };

    // A first round, not counted: connections open, and the renew's PUT
    // shows the size of a lock object.
    let mut warmup: [OpSamples; 4] = Default::default();
    operations(&client, &hooks, "floor-op-warmup", &mut warmup)?;
    let put_body_bytes = warmup[1].put_body_bytes.context("the renew sent no PUT")?;

    let floor_key = format!("{prefix}bare-object");
    let body = vec![b'x'; put_body_bytes];
    // Two per round (the plain client and the pool) and one warm-up each.
    let mut presigned = Presigned::new(e, &floor_key, &body, 2 * rounds + 2)?;
    let senders = FloorSenders::new(e, runtime.http().clone())?;
    for kind in Bare::ALL {
        senders.bare(kind, presigned.take(kind)?)?;
        senders.pooled(kind, presigned.take(kind)?)?;
    }

    let mut report = Report {
        ops: Default::default(),
        bare: BTreeMap::new(),
        pooled: BTreeMap::new(),
        no_request_call: Vec::new(),
        put_body_bytes,
    };
    for round in 0..rounds {
        let key = format!("floor-op-{}", round % 8);
        operations(&client, &hooks, &key, &mut report.ops)?;
        for kind in Bare::ALL {
            if let Some(took) = senders.bare(kind, presigned.take(kind)?)? {
                report.bare.entry(kind).or_default().push(took);
            }
            let took = senders.pooled(kind, presigned.take(kind)?)?;
            report.pooled.entry(kind).or_default().push(took);
        }
        let started = Instant::now();
        client.set_credentials(&credentials)?;
        report.no_request_call.push(started.elapsed());
    }
    Ok(report)
}

/// One round of the main table's operations on `key`, each timed with the
/// requests it sent.
fn operations(
    client: &Client,
    hooks: &TimedHooks,
    key: &str,
    ops: &mut [OpSamples; 4],
) -> Result<()> {
    let mut timed = |op: usize, call: &mut dyn FnMut() -> Result<()>| -> Result<()> {
        lock(&hooks.sent).clear();
        let started = Instant::now();
        call()?;
        let ended = Instant::now();
        ops[op].record(started, ended, &std::mem::take(&mut *lock(&hooks.sent)));
        Ok(())
    };
    crate::four_operations(client, key, &mut timed)
}

impl Report {
    fn p50(&self, kind: Bare) -> Option<f64> {
        let samples = self.bare.get(&kind).or_else(|| self.pooled.get(&kind))?;
        Some(percentile(&mut samples.clone(), 0.5))
    }

    pub fn print(&self) {
        let ms = |samples: &[Duration], p: f64| percentile(&mut samples.to_vec(), p);
        println!(
            "\nthe floor: bare requests signed ahead of time, same server, interleaved with the \
             operations below (ms)\n\
             {:<40} {:>17} {:>17}\n{:<40} {:>8}{:>9} {:>8}{:>9}",
            "", "plain client", "host's pool", "request", "p50", "p99", "p50", "p99"
        );
        for kind in Bare::ALL {
            let label = match kind {
                Bare::ConditionalPut => format!("{}, {} B", kind.label(), self.put_body_bytes),
                _ => kind.label().to_string(),
            };
            let (bare_p50, bare_p99) = self.bare.get(&kind).map_or(("-".into(), "-".into()), |s| {
                (format!("{:.3}", ms(s, 0.5)), format!("{:.3}", ms(s, 0.99)))
            });
            let pooled = self.pooled.get(&kind).map_or(&[][..], Vec::as_slice);
            println!(
                "{label:<40} {bare_p50:>8}{bare_p99:>9} {:>8.3}{:>9.3}",
                ms(pooled, 0.5),
                ms(pooled, 0.99)
            );
        }
        println!(
            "{:<40} {:>8.3}{:>9.3}   (through the component, no request)",
            "set-credentials",
            ms(&self.no_request_call, 0.5),
            ms(&self.no_request_call, 0.99)
        );

        println!(
            "\n{:<12} {:<32} {:>7} {:>7} {:>6}   {:>7}{:>8}{:>9}{:>7}",
            "operation",
            "requests sent (rounds)",
            "p50",
            "floor",
            "ratio",
            "before",
            "writing",
            "exchange",
            "after"
        );
        for (name, op) in OPERATIONS.iter().zip(&self.ops) {
            let Some((sent, sequence)) = op.usual() else {
                continue;
            };
            // The floor of the usual sequence: the sum of its bare requests.
            let floor: Option<f64> = sequence
                .floors
                .iter()
                .map(|kind| kind.and_then(|k| self.p50(k)))
                .sum();
            let p50 = ms(&op.total, 0.5);
            let cell = |v: Option<f64>, digits: usize| {
                v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
            };
            println!(
                "{name:<12} {:<32} {p50:>7.3} {:>7} {:>6}   {:>7.3}{:>8.3}{:>9.3}{:>7.3}",
                format!("{sent} ({})", sequence.rounds),
                cell(floor, 3),
                cell(floor.map(|f| p50 / f), 2),
                ms(&op.before, 0.5),
                ms(&op.writing, 0.5),
                ms(&op.exchange, 0.5),
                ms(&op.after, 0.5),
            );
        }
        println!(
            "  floor: the plain client's p50s of the requests the operation sent. Where the \
             call's time went, at the host's wasi:http hook (p50 of each part, so they need \
             not add up): before: in wasm until the request is handed over (building, \
             signing); writing: the guest writing the body; exchange: the host's pool, the \
             network and the server; after: in wasm from the reply to the call's return"
        );
    }
}
