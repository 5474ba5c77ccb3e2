//! The engine's side of tracing (see `crate::observe` for the calls'
//! spans): a call's tally of requests, carried with its span from the
//! caller's task to the worker that runs it, and an event per request the
//! HTTP hooks send.
//!
//! The hooks are called on the instance's worker, inside the component's
//! call: the span and tally the worker entered are current there. Header
//! values, queries (a shared access signature is one) and bodies are never read:
//! an event names a request by its method, operation, scheme and host.

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tracing::Span;

/// The target of the calls' spans and the requests' events.
pub(crate) const TARGET: &str = "s3_lease";

/// The requests one call sent (all its component calls, on any instance),
/// and how many of them failed.
#[derive(Default)]
pub(crate) struct Tally {
    requests: AtomicU64,
    failed: AtomicU64,
}

impl Tally {
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    pub(crate) fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
}

tokio::task_local! {
    /// The tally of the traced call this task runs, while it runs.
    static CALL: Arc<Tally>;
}

thread_local! {
    /// On a worker, the tally of the call it runs.
    static WORKER: RefCell<Option<Arc<Tally>>> = const { RefCell::new(None) };
}

/// Runs `call` with `tally` as its tally: the jobs it queues count on it.
pub(crate) async fn counted<F: Future>(tally: Arc<Tally>, call: F) -> F::Output {
    CALL.scope(tally, call).await
}

/// What a job queued for a worker carries from where it was queued: the
/// current span and the tally of the traced call, if any.
pub(crate) struct Carried {
    span: Span,
    tally: Option<Arc<Tally>>,
}

impl Carried {
    pub(crate) fn capture() -> Self {
        Carried {
            span: Span::current(),
            tally: CALL.try_with(Arc::clone).ok(),
        }
    }

    /// Runs `job` in the span, its requests counted on the tally.
    pub(crate) fn run<T>(self, job: impl FnOnce() -> T) -> T {
        let _entered = self.span.enter();
        let before = WORKER.with(|w| w.replace(self.tally));
        let out = job();
        WORKER.with(|w| *w.borrow_mut() = before);
        out
    }
}

/// The tally of the call the worker runs, counting a request it sends.
pub(crate) fn counting() -> Option<Arc<Tally>> {
    let tally = WORKER.with(|w| w.borrow().clone());
    if let Some(t) = &tally {
        t.requests.fetch_add(1, Ordering::Relaxed);
    }
    tally
}

/// What an event says of a request, taken before it is sent (nothing if
/// no subscriber wants request events).
pub(crate) struct Request {
    span: Span,
    tally: Option<Arc<Tally>>,
    method: http::Method,
    operation: &'static str,
    endpoint: String,
    sent: Instant,
}

impl Request {
    /// `None` when no subscriber listens at any level that reports a
    /// request: nothing is copied then.
    pub(crate) fn start(
        method: &http::Method,
        uri: &http::Uri,
        operation: &'static str,
        tally: Option<Arc<Tally>>,
    ) -> Option<Request> {
        if !tracing::level_enabled!(tracing::Level::WARN) {
            return None;
        }
        Some(Request {
            span: Span::current(),
            tally,
            method: method.clone(),
            operation,
            endpoint: endpoint(uri),
            sent: Instant::now(),
        })
    }

    /// One event for the request's outcome: DEBUG when it was answered,
    /// WARN when no answer came or the store failed it (a 5xx but 501, a
    /// 429), the answers a caller retries.
    pub(crate) fn done(self, outcome: Result<http::StatusCode, String>) {
        let elapsed_ms = self.sent.elapsed().as_millis() as u64;
        let (method, operation, endpoint) = (self.method.as_str(), self.operation, &self.endpoint);
        let failed = failed(&outcome);
        if failed {
            if let Some(tally) = &self.tally {
                tally.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        match outcome {
            Ok(status) if failed => tracing::warn!(
                name: "s3lease.request",
                target: TARGET,
                parent: &self.span,
                method,
                operation,
                endpoint,
                status = status.as_u16(),
                elapsed_ms,
                "{operation} to {endpoint} failed: HTTP {} after {elapsed_ms} ms",
                status.as_u16()
            ),
            Ok(status) => tracing::debug!(
                name: "s3lease.request",
                target: TARGET,
                parent: &self.span,
                method,
                operation,
                endpoint,
                status = status.as_u16(),
                elapsed_ms,
                "{operation} to {endpoint}: HTTP {} in {elapsed_ms} ms",
                status.as_u16()
            ),
            Err(error) => tracing::warn!(
                name: "s3lease.request",
                target: TARGET,
                parent: &self.span,
                method,
                operation,
                endpoint,
                error,
                elapsed_ms,
                "{operation} to {endpoint} failed: {error} after {elapsed_ms} ms"
            ),
        }
    }
}

/// Whether a request failed as callers retry it: no answer, a 5xx, a 429.
/// A 501 is an answer (the store does not do this; a preflight probes for
/// it), not a failure to try again.
fn failed(outcome: &Result<http::StatusCode, String>) -> bool {
    match outcome {
        Ok(status) => {
            (status.is_server_error() && *status != http::StatusCode::NOT_IMPLEMENTED)
                || *status == http::StatusCode::TOO_MANY_REQUESTS
        }
        Err(_) => true,
    }
}

/// `scheme://host[:port]` of a request: no user info, path or query.
fn endpoint(uri: &http::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("https");
    let host = uri.host().unwrap_or("");
    match uri.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    }
}

/// A wasi-http error code as the component's errors name it
/// (`destination-unavailable`): the variant only, never its payload.
pub(crate) fn error_name(debug: &str) -> String {
    let variant = debug.split(['(', ' ', '{']).next().unwrap_or(debug);
    let mut out = String::with_capacity(variant.len() + 4);
    for (i, c) in variant.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_scheme_host_and_port_only() {
        let uri: http::Uri = "https://user:pw@acct.blob.core.windows.net/c/k?sv=1&sig=SECRET"
            .parse()
            .unwrap();
        assert_eq!(endpoint(&uri), "https://acct.blob.core.windows.net");
        let uri: http::Uri = "http://127.0.0.1:9/b/k?x-id=1".parse().unwrap();
        assert_eq!(endpoint(&uri), "http://127.0.0.1:9");
        let uri: http::Uri = "http://[::1]:8333/b".parse().unwrap();
        assert_eq!(endpoint(&uri), "http://[::1]:8333");
    }

    #[test]
    fn failed_requests_are_those_callers_retry() {
        let status = |code: u16| Ok(http::StatusCode::from_u16(code).unwrap());
        for code in [500, 502, 503, 504, 429] {
            assert!(failed(&status(code)), "{code}");
        }
        for code in [200, 204, 304, 403, 404, 409, 412, 501] {
            assert!(!failed(&status(code)), "{code}");
        }
        assert!(failed(&Err("connection-refused".into())));
    }

    #[test]
    fn error_codes_are_named_without_their_payload() {
        assert_eq!(
            error_name("DestinationUnavailable"),
            "destination-unavailable"
        );
        assert_eq!(error_name("ConnectionRefused"), "connection-refused");
        assert_eq!(
            error_name("InternalError(Some(\"secret detail\"))"),
            "internal-error"
        );
        assert_eq!(
            error_name("DnsError(DnsErrorPayload { rcode: None })"),
            "dns-error"
        );
    }
}
