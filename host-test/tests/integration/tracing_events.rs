//! What a `tracing` subscriber sees of the host's calls: a span
//! `s3lease.call` per public call with its fields, an event
//! `s3lease.request` per HTTP request under it; the failed requests of a
//! waiting `acquire` as they happen, naming the endpoint; and never a
//! header value or query (an Azure SAS token, a SigV4 signature).
//!
//! The subscriber is the process's global one (the calls run on worker
//! threads, not the test's): it keeps only the `s3_lease` targets, and the
//! tests pick their own spans out by key.

use super::{acquire_options, endpoint, fresh_prefix, harness};
use s3_lease_host::{AzureBlobBuilder, AzureCredential, Client, StoreConfig};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

#[derive(Clone, Debug)]
struct SpanSeen {
    meta: &'static Metadata<'static>,
    name: String,
    level: Level,
    fields: BTreeMap<String, String>,
}

#[derive(Clone, Debug)]
struct EventSeen {
    name: String,
    level: Level,
    parent: Option<u64>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Collector {
    next: AtomicU64,
    spans: Mutex<HashMap<u64, SpanSeen>>,
    events: Mutex<Vec<EventSeen>>,
}

thread_local! {
    static CURRENT: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

fn ours(meta: &Metadata) -> bool {
    meta.target().starts_with("s3_lease")
}

impl Subscriber for Collector {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if ours(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }
    fn enabled(&self, meta: &Metadata) -> bool {
        ours(meta)
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::DEBUG)
    }
    fn new_span(&self, attrs: &Attributes) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let seen = SpanSeen {
            meta: attrs.metadata(),
            name: attrs.metadata().name().into(),
            level: *attrs.metadata().level(),
            fields,
        };
        self.spans.lock().unwrap().insert(id, seen);
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record) {
        if let Some(seen) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event) {
        let parent = match event.parent() {
            Some(id) => Some(id.into_u64()),
            None if event.is_contextual() => CURRENT.with(|c| c.borrow().last().copied()),
            None => None,
        };
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(EventSeen {
            name: event.metadata().name().into(),
            level: *event.metadata().level(),
            parent,
            fields,
        });
    }
    fn current_span(&self) -> tracing_core::span::Current {
        let current = CURRENT.with(|c| c.borrow().last().copied());
        let spans = self.spans.lock().unwrap();
        match current.and_then(|id| Some((id, spans.get(&id)?.meta))) {
            Some((id, meta)) => tracing_core::span::Current::new(Id::from_u64(id), meta),
            None => tracing_core::span::Current::none(),
        }
    }
    fn enter(&self, span: &Id) {
        CURRENT.with(|c| c.borrow_mut().push(span.into_u64()));
    }
    fn exit(&self, span: &Id) {
        CURRENT.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(at) = c.iter().rposition(|&s| s == span.into_u64()) {
                c.remove(at);
            }
        });
    }
}

fn collector() -> &'static Arc<Collector> {
    static COLLECTOR: OnceLock<Arc<Collector>> = OnceLock::new();
    COLLECTOR.get_or_init(|| {
        let collector = Arc::new(Collector::default());
        tracing::subscriber::set_global_default(collector.clone())
            .expect("no other global subscriber in this suite");
        collector
    })
}

impl Collector {
    /// The `s3lease.call` spans of `op` on `key`, with their ids.
    fn calls(&self, op: &str, key: &str) -> Vec<(u64, SpanSeen)> {
        let spans = self.spans.lock().unwrap();
        let mut found: Vec<_> = spans
            .iter()
            .filter(|(_, s)| {
                s.name == "s3lease.call"
                    && s.fields.get("op").map(String::as_str) == Some(op)
                    && s.fields.get("key").map(String::as_str) == Some(key)
            })
            .map(|(id, s)| (*id, s.clone()))
            .collect();
        found.sort_by_key(|(id, _)| *id);
        found
    }

    /// The request events under span `parent`.
    fn requests_in(&self, parent: u64) -> Vec<EventSeen> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.name == "s3lease.request" && e.parent == Some(parent))
            .cloned()
            .collect()
    }

    /// Every value a subscriber was given, spans' and events'.
    fn everything(&self) -> String {
        let spans = self.spans.lock().unwrap();
        let events = self.events.lock().unwrap();
        format!("{:?}\n{:?}", spans.values().collect::<Vec<_>>(), *events)
    }
}

/// A loopback port nothing listens on (bound, then let go).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A try_acquire on the real server: one span with the call's fields, and
/// one DEBUG event per request under it, as many as the span counted.
#[test]
fn a_call_is_a_span_with_one_event_per_request() {
    let collector = collector();
    let _ = (endpoint(), harness());
    let prefix = fresh_prefix("tracing-span");
    let key = format!("traced-{}", std::process::id());
    let config = endpoint().host_config(&prefix).unwrap();
    runtime().block_on(async {
        let client = Client::connect(harness().runtime(), &config).await.unwrap();
        let lease = client
            .try_acquire(&key, &acquire_options(10_000))
            .await
            .unwrap()
            .expect("a fresh key is free");
        lease.release().await.unwrap();
    });
    let calls = collector.calls("try_acquire", &key);
    assert_eq!(calls.len(), 1, "{calls:?}");
    let (id, span) = &calls[0];
    let f = &span.fields;
    assert_eq!(span.level, Level::INFO);
    assert_eq!(f["store"], "S3", "{f:?}");
    assert_eq!(f["endpoint"], config.endpoint(), "{f:?}");
    assert_eq!(Some(f["bucket"].as_str()), config.bucket(), "{f:?}");
    assert_eq!(f["outcome"], "ok", "{f:?}");
    assert_eq!(f["retries"], "0", "{f:?}");
    assert!(f["duration_ms"].parse::<u64>().is_ok(), "{f:?}");
    let requests: usize = f["requests"].parse().unwrap();
    assert!(requests >= 1, "{f:?}");
    let events = collector.requests_in(*id);
    assert_eq!(events.len(), requests, "{events:?}");
    let url = config.endpoint().trim_end_matches('/');
    for e in &events {
        assert_eq!(e.level, Level::DEBUG, "{e:?}");
        assert_eq!(e.fields["endpoint"], url, "{e:?}");
        assert!(e.fields["status"].parse::<u16>().is_ok(), "{e:?}");
        assert!(e.fields.contains_key("operation"), "{e:?}");
        assert!(e.fields.contains_key("method"), "{e:?}");
        assert!(e.fields["elapsed_ms"].parse::<u64>().is_ok(), "{e:?}");
    }
    // The release is a call of its own.
    assert_eq!(collector.calls("release", &key).len(), 1);
}

/// An acquire waiting on an endpoint that is down: its failed requests
/// reach the subscriber while it still waits, each naming the endpoint.
#[test]
fn a_waiting_acquire_reports_each_failed_request_as_it_happens() {
    let collector = collector();
    let _ = harness();
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}");
    let key = format!("down-{port}");
    let config = StoreConfig::from_vars("b", |name| match name {
        "AWS_ENDPOINT_URL" => Some(url.clone()),
        "AWS_REGION" => Some("us-east-1".into()),
        "AWS_ACCESS_KEY_ID" => Some("AKIDTRACINGTEST".into()),
        "AWS_SECRET_ACCESS_KEY" => Some("secret-never-logged".into()),
        _ => None,
    })
    .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (done, key) = (done.clone(), key.clone());
        std::thread::spawn(move || {
            let result = runtime().block_on(async {
                let client = Client::connect(harness().runtime(), &config).await?;
                client
                    .acquire(&key, &acquire_options(10_000), Duration::from_secs(5))
                    .await
            });
            done.store(true, Ordering::SeqCst);
            result
        })
    };
    // Seen from here while the acquire waits: two failed requests, or more.
    let started = Instant::now();
    let seen_while_waiting = loop {
        let failed: Vec<EventSeen> = collector
            .calls("acquire", &key)
            .iter()
            .flat_map(|(id, _)| collector.requests_in(*id))
            .filter(|e| e.level == Level::WARN)
            .collect();
        if failed.len() >= 2 {
            break failed;
        }
        assert!(
            !done.load(Ordering::SeqCst),
            "the acquire ended before two failed requests were seen: {failed:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        !done.load(Ordering::SeqCst),
        "seen only after the acquire ended"
    );
    for e in &seen_while_waiting {
        assert_eq!(e.fields["endpoint"], url, "{e:?}");
        assert!(e.fields.contains_key("error"), "{e:?}");
        assert!(e.fields["message"].contains(&url), "{e:?}");
    }
    let error = waiter.join().unwrap().expect_err("nothing listens there");
    assert!(error.to_string().contains(&url), "{error}");
    let (_, span) = collector.calls("acquire", &key).pop().unwrap();
    assert_eq!(span.fields["outcome"], error.kind().name(), "{span:?}");
    let retries: u64 = span.fields["retries"].parse().unwrap();
    assert!(retries >= 2, "{span:?}");
    assert_eq!(span.fields["requests"], span.fields["retries"], "{span:?}");
    // The SigV4 Authorization header (its Credential= names the key id)
    // never reaches a subscriber.
    let all = collector.everything();
    assert!(!all.contains("AKIDTRACINGTEST"), "{all}");
    assert!(!all.contains("secret-never-logged"), "{all}");
    assert!(!all.contains("Signature"), "{all}");
}

/// An Azure client with a SAS token (a query on every request) against
/// an endpoint that is down: the events name the endpoint, not the token.
#[test]
fn no_sas_token_or_authorization_reaches_a_subscriber() {
    let collector = collector();
    let _ = harness();
    let port = closed_port();
    let url = format!("http://127.0.0.1:{port}");
    let key = format!("sas-{port}");
    let sas = "sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2099-01-01T00:00:00Z&sig=SASSECRETSIGNATURE";
    let config = AzureBlobBuilder::new("acct", "locks", AzureCredential::Sas(sas.into()))
        .endpoint(&url)
        .build();
    let result = runtime().block_on(async {
        let client = Client::connect(harness().runtime(), &config).await?;
        client.try_acquire(&key, &acquire_options(10_000)).await
    });
    let error = result.expect_err("nothing listens there");
    let calls = collector.calls("try_acquire", &key);
    assert_eq!(calls.len(), 1, "{error}");
    let events = collector.requests_in(calls[0].0);
    assert!(!events.is_empty(), "{calls:?}");
    for e in &events {
        assert_eq!(e.fields["endpoint"], url, "{e:?}");
    }
    let all = collector.everything();
    for secret in ["SASSECRETSIGNATURE", "sig=", "sv=2022", "se=2099"] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }
}
