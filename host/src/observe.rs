//! What the host tells a `tracing` subscriber: a span per public call
//! (`s3lease.call`), an event per HTTP request the component sends
//! (`s3lease.request`), and an elector's steps and role changes.
//!
//! A call hops from the caller's task to an instance's worker thread
//! (`pool`): the span and the call's tally of requests are captured when
//! the job is queued and entered on the worker while it runs, so the HTTP
//! hooks, called on the worker inside the component's call, find both
//! (`engine::trace`).
//!
//! Without a subscriber (or one that wants none of it) this costs a few
//! atomic loads per call: `tracing`'s macros check the callsite's interest
//! before they evaluate any field, a disabled span is `Span::none()`, and
//! no tally is made for it.

use crate::engine::trace::{counted, Tally, TARGET};
use crate::error::{Error, ErrorStore};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument, Span};

/// A call's span at `$level` (tracing wants the level at the call site):
/// the fields every call's span has, those recorded at its end empty.
macro_rules! call_span {
    ($level:ident, $op:expr, $key:expr, $store:expr) => {
        tracing::$level!(
            target: TARGET,
            "s3lease.call",
            op = $op,
            key = $key,
            store = $store.name(),
            endpoint = $store.endpoint(),
            bucket = $store.bucket(),
            requests = Empty,
            retries = Empty,
            outcome = Empty,
            duration_ms = Empty,
        )
    };
}

/// Runs `call`, the public call `op` on `key`, in a span of its own
/// (INFO, target `s3_lease`, name `s3lease.call`), and records at its end
/// the requests it sent, the failed ones among them (`retries`), its
/// outcome (`ok` or the error's kind) and its duration. Without a
/// subscriber for the span, just runs `call`.
pub(crate) async fn traced<T>(
    op: &'static str,
    key: &str,
    store: &ErrorStore,
    call: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    run_in(call_span!(info_span, op, key, store), op, call).await
}

/// [`traced`] at DEBUG: for the calls an elector makes on its own, one
/// step every few seconds for as long as it campaigns.
pub(crate) async fn traced_quietly<T>(
    op: &'static str,
    key: &str,
    store: &ErrorStore,
    call: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    run_in(call_span!(debug_span, op, key, store), op, call).await
}

/// The span an elector campaigns in (INFO, `s3lease.campaign`, `op`
/// `campaign`): its steps' spans (DEBUG) and requests are its children,
/// so a subscriber at INFO still finds the key of a failed request.
pub(crate) fn campaign_span(key: &str, store: &ErrorStore) -> Span {
    tracing::info_span!(
        target: TARGET,
        "s3lease.campaign",
        op = "campaign",
        key,
        store = store.name(),
        endpoint = store.endpoint(),
        bucket = store.bucket(),
    )
}

async fn run_in<T>(
    span: Span,
    op: &'static str,
    call: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    if span.is_disabled() {
        return call.await;
    }
    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let result = counted(tally.clone(), call).instrument(span.clone()).await;
    let requests = tally.requests();
    let retries = tally.failed();
    let duration_ms = started.elapsed().as_millis() as u64;
    let outcome = match &result {
        Ok(_) => "ok",
        Err(e) => e.kind().name(),
    };
    span.record("requests", requests);
    span.record("retries", retries);
    span.record("outcome", outcome);
    span.record("duration_ms", duration_ms);
    // The fields again on an event, for subscribers that print events only.
    tracing::debug!(
        name: "s3lease.call.end",
        target: TARGET,
        parent: &span,
        requests,
        retries,
        outcome,
        duration_ms,
        "{op}: {outcome} after {requests} requests ({retries} failed) in {duration_ms} ms"
    );
    result
}
