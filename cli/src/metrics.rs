//! Prometheus metrics of an elector, made by the Prometheus project's own
//! client (`prometheus-client`) from the host's figures
//! (`ElectorWatcher::stats`, `Runtime::request_counts`), read at scrape
//! time: nothing here runs on the elector's thread.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use s3_lease_host::stats::LATENCY_BUCKETS_SECONDS;
use s3_lease_host::{ElectorWatcher, LatencyHistogram, RequestCounts};
use std::sync::Arc;
use std::time::Instant;

/// What one `--serve` endpoint reports on.
#[derive(Clone)]
pub struct Sources {
    pub key: String,
    pub elector: ElectorWatcher,
    pub requests: Arc<RequestCounts>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources").field("key", &self.key).finish()
    }
}

/// The registry `/metrics` encodes: names start with `s3lease_`.
pub fn registry(sources: Sources) -> Registry {
    let mut registry = Registry::with_prefix("s3lease");
    registry.register_collector(Box::new(ElectorCollector(sources)));
    registry
}

/// The text exposition format, as Prometheus scrapes it.
pub fn render(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(text)
}

#[derive(Debug)]
struct ElectorCollector(Sources);

impl Collector for ElectorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let stats = s.elector.stats();
        let key = [("key", s.key.as_str())];
        let now = Instant::now();

        gauge(
            &mut encoder,
            "leader",
            "1 while this process leads the key, else 0",
            None,
            &key,
            i64::from(stats.leading),
        )?;
        if let Some(token) = stats.leader_token {
            let token = i64::try_from(token).unwrap_or(i64::MAX);
            gauge(&mut encoder, "fencing_token", "The fencing token of the key's leader as this process last knew it (its own while it leads)", None, &key, token)?;
        }
        counter(
            &mut encoder,
            "leadership_changes",
            "Times this process became leader of the key or stopped leading it",
            &key,
            stats.leadership_changes,
        )?;
        counter(
            &mut encoder,
            "elector_steps",
            "Elector steps taken (each a renew, a look or a try)",
            &key,
            stats.steps,
        )?;
        counter(
            &mut encoder,
            "elector_failed_steps",
            "Elector steps whose request got no usable answer (the elector keeps trying)",
            &key,
            stats.failed_steps,
        )?;
        histogram(
            &mut encoder,
            "renew_duration",
            "How long a renew took (the elector step that renewed)",
            &key,
            &stats.renew_latency,
        )?;
        histogram(
            &mut encoder,
            "acquire_duration",
            "How long the step that won leadership took",
            &key,
            &stats.acquire_latency,
        )?;
        if let Some(at) = stats.last_renew {
            let age = now.saturating_duration_since(at).as_secs_f64();
            gauge_f64(
                &mut encoder,
                "since_last_renew",
                "Seconds since the last successful renew was sent",
                &key,
                age,
            )?;
        }
        if let Some(at) = stats.last_success {
            let age = now.saturating_duration_since(at).as_secs_f64();
            gauge_f64(&mut encoder, "since_last_success", "Seconds since the last elector step that got an answer was sent (renew, look or try)", &key, age)?;
        }

        let mut family = encoder.encode_descriptor(
            "requests",
            "Requests sent to the store, by operation and outcome (HTTP status, or error)",
            None,
            MetricType::Counter,
        )?;
        for (op, outcome, n) in s.requests.snapshot() {
            let labels = [("op", op), ("outcome", outcome.as_str())];
            ConstCounter::new(n).encode(family.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

type KeyLabel<'a> = [(&'a str, &'a str); 1];

fn gauge(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    key: &KeyLabel,
    v: i64,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, unit, MetricType::Gauge)?;
    ConstGauge::new(v).encode(m.encode_family(key)?)
}

fn gauge_f64(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    key: &KeyLabel,
    v: f64,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Gauge)?;
    ConstGauge::new(v).encode(m.encode_family(key)?)
}

fn counter(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    key: &KeyLabel,
    v: u64,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(v).encode(m.encode_family(key)?)
}

fn histogram(
    e: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    key: &KeyLabel,
    h: &LatencyHistogram,
) -> Result<(), std::fmt::Error> {
    let mut m = e.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    // prometheus-client takes each bucket's own count (it sums them as it
    // writes), and writes `le="+Inf"` for an upper bound of f64::MAX.
    let buckets: Vec<(f64, u64)> = LATENCY_BUCKETS_SECONDS
        .iter()
        .copied()
        .zip(h.buckets)
        .chain(std::iter::once((f64::MAX, h.above)))
        .collect();
    m.encode_family(key)?
        .encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &buckets, None)
}
