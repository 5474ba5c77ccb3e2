//! A client's graceful close: stop renewing, release every held lease, and
//! wait (bounded) for the releases, so that the next instance of a service
//! takes its keys at once instead of a whole ttl later.

use crate::calls::{release_in_background, Calls};
use crate::client::Client;
use crate::component;
use crate::error::Error;
use crate::held::Held;
use crate::observe::traced;
use std::sync::Arc;
use std::time::Duration;

/// What [`Client::close`] did with the leases the client held.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct CloseReport {
    /// Leases released: their keys are free for others now.
    pub released: usize,
    /// Leases already over (lost, run out or let go): nothing to release.
    pub already_over: usize,
    /// Releases that failed, by key, with why: each of those leases runs
    /// out at the end of its ttl instead.
    pub failed: Vec<(String, Error)>,
    /// Leases whose release had not finished when the timeout came: each is
    /// released in the background (or runs out at the end of its ttl).
    pub unfinished: usize,
}

impl CloseReport {
    /// Every lease held was released, or was already over.
    pub fn all_released(&self) -> bool {
        self.failed.is_empty() && self.unfinished == 0
    }
}

/// What became of one lease at the close.
enum Outcome {
    Released,
    Over,
    Failed(String, Error),
}

impl Client {
    /// Closes the client for a service shutting down: stops renewing every
    /// lease it holds (through any clone or [`crate::Lease`] handle), then
    /// releases each (waiting first for a renew under way, whose record is
    /// the one to release), and waits up to `timeout` for the releases.
    /// Releases not finished by then go on in the background, on the
    /// client's own threads: they need no runtime, so they land even as the
    /// caller's runtime shuts down, unless the process exits first.
    ///
    /// After a close the client grants no more leases: an attempt that
    /// wins the key releases it and fails (`ErrorKind::Host`, "closed").
    /// Its other calls (inspect, record calls, fenced writes) still work.
    /// Handles of the leases it held say `Lost(Released)`. Electors are
    /// not touched: resign them first. Closing twice does nothing more.
    pub async fn close(&self, timeout: Duration) -> CloseReport {
        let held = self.inner.keeper.close();
        let mut releases = tokio::task::JoinSet::new();
        for lease in &held {
            let (lease, calls) = (lease.clone(), self.inner.calls.clone());
            releases.spawn(async move { release(&calls, &lease).await });
        }
        let clock = self.clock();
        let deadline = clock.now().saturating_add(timeout);
        let mut report = CloseReport::default();
        loop {
            let next = tokio::select! {
                next = releases.join_next() => next,
                _ = clock.sleep_until(deadline) => break,
            };
            match next {
                Some(Ok(Outcome::Released)) => report.released += 1,
                Some(Ok(Outcome::Over)) => report.already_over += 1,
                Some(Ok(Outcome::Failed(key, e))) => report.failed.push((key, e)),
                // Its task panicked: the fallback below sends the release.
                Some(Err(_)) => report.unfinished += 1,
                None => break,
            }
        }
        report.unfinished += releases.len();
        releases.abort_all();
        // A release whose wait for a renew was cut short is sent now, from
        // the client's own threads (at worst it is refused as spent, and
        // the lease runs out). One already let go is not sent twice.
        for lease in held {
            if let Some(record) = lease.let_go() {
                let index = lease.index;
                release_in_background(&Arc::downgrade(&self.inner.calls), index, record);
            }
        }
        report
    }
}

/// Lets go of `lease` and releases it, after the renew under way if any.
async fn release(calls: &Arc<Calls>, lease: &Held) -> Outcome {
    lease.settle().await;
    let Some(record) = lease.let_go() else {
        return Outcome::Over;
    };
    let key = record.key.clone();
    let released = calls.call(lease.index, move |raw| component::release(raw, &record));
    match traced("release", &key, calls.error_store(), released).await {
        Ok(()) => Outcome::Released,
        Err(e) => Outcome::Failed(key, e),
    }
}
