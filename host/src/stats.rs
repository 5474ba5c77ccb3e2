//! Figures an operator watches, kept by the host as it works: what an
//! elector did (role, token, leadership changes, renew and acquire
//! latency, the last success) and the requests a runtime sent, by operation
//! and outcome. Plain data, so an embedder exports them however it likes;
//! the command line turns them into Prometheus metrics (`--serve`).

pub use crate::engine::request_counts::RequestCounts;
use std::time::{Duration, Instant};

/// Upper bounds of the latency buckets, in seconds: a loopback store
/// answers in about a millisecond, S3 in tens, a renew deadline is seconds.
pub const LATENCY_BUCKETS_SECONDS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// A latency histogram: counts per bucket of [`LATENCY_BUCKETS_SECONDS`]
/// (each count is of observations at or below that bound and above the
/// previous one; `above` is past the last bound), their sum and count.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct LatencyHistogram {
    pub buckets: [u64; LATENCY_BUCKETS_SECONDS.len()],
    pub above: u64,
    pub sum_seconds: f64,
    pub count: u64,
}

impl LatencyHistogram {
    pub fn observe(&mut self, latency: Duration) {
        let seconds = latency.as_secs_f64();
        match LATENCY_BUCKETS_SECONDS.iter().position(|&b| seconds <= b) {
            Some(i) => self.buckets[i] += 1,
            None => self.above += 1,
        }
        self.sum_seconds += seconds;
        self.count += 1;
    }

    /// `(upper bound, observations at or below it)`, as Prometheus wants
    /// them, ending with `+Inf`.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        let mut out: Vec<(f64, u64)> = LATENCY_BUCKETS_SECONDS
            .iter()
            .zip(self.buckets)
            .map(|(&bound, n)| {
                total += n;
                (bound, total)
            })
            .collect();
        out.push((f64::INFINITY, total + self.above));
        out
    }
}

/// What an [`crate::Elector`] has done since it started.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ElectorStats {
    /// Whether this process leads now (by the host's watchdog).
    pub leading: bool,
    /// The fencing token of the leader as this process last knew it (its
    /// own while it leads); `None` when no one was seen to lead.
    pub leader_token: Option<u64>,
    /// The leader's holder id, as last known.
    pub leader_holder: Option<String>,
    /// Times this process became leader or stopped leading.
    pub leadership_changes: u64,
    /// Steps taken, and how many of them failed (their attempt got no
    /// answer it could use; the elector keeps trying).
    pub steps: u64,
    pub failed_steps: u64,
    /// When the last step that reached the store and got an answer was
    /// sent (a renew while leading, a look or a try while not).
    pub last_success: Option<Instant>,
    /// When the last successful renew was sent (not counting the grant).
    pub last_renew: Option<Instant>,
    /// How long steps that renewed took.
    pub renew_latency: LatencyHistogram,
    /// How long the steps that won leadership took.
    pub acquire_latency: LatencyHistogram,
}

/// What a [`crate::Client`]'s scheduler of renewals is doing: read it to
/// watch a service that holds many leases for a long time (the scheduler's
/// size and work must stay flat however long they are held).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Leases the scheduler keeps now: held ones (a lease let go leaves
    /// it at once; one lost leaves when the scheduler next looks at it).
    pub leases_kept: u64,
    /// Entries in the scheduler: one per kept lease, never more.
    pub scheduled_entries: u64,
    /// Renews sent since the client connected.
    pub renews_sent: u64,
    /// Of those, renews that failed or found the lease taken.
    pub renews_failed: u64,
    /// Times the scheduler looked at a lease (one come due, a new one, a
    /// renew's outcome): its work, about two per renew whatever the time held.
    pub scheduler_steps: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_counts_each_latency_in_its_bucket_and_cumulates_for_prometheus() {
        let mut h = LatencyHistogram::default();
        h.observe(Duration::from_micros(800));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(9));
        let c = h.cumulative();
        assert_eq!(c[0], (0.001, 1));
        assert_eq!(c[2], (0.005, 2));
        assert_eq!(c.last(), Some(&(f64::INFINITY, 3)));
        assert_eq!(h.count, 3);
        assert!((h.sum_seconds - 9.0038).abs() < 1e-9);
    }
}
