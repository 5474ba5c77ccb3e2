//! The HTTP hooks of one instance: every request the component sends passes
//! here, is recorded (so tests count requests per operation), has its payload
//! hash checked (SeaweedFS does not check it, so we do), and may be faulted.

use bytes::Bytes;
use http_body_util::BodyExt;
use s3_lease_host::http::{full, HttpSender, IoFuture, ResponseFuture};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// One request as the component sent it, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    pub method: String,
    pub path_and_query: String,
    /// `if-match` / `if-none-match` values, when sent.
    pub if_match: Option<String>,
    pub if_none_match: Option<String>,
    /// `x-amz-content-sha256` equals the SHA-256 of the body actually sent.
    pub payload_hash_ok: bool,
    /// A DynamoDB call's operation (`x-amz-target` after the API version:
    /// `GetItem`, `PutItem`…); `None` for S3 requests.
    pub target: Option<String>,
    /// The HTTP status, or `None` when the request failed (or was faulted) in transport.
    pub status: Option<u16>,
}

/// What the host does instead of (or before) sending a request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Fail as if the server refused the connection.
    Refuse,
    /// Answer without contacting the server.
    Respond {
        status: u16,
        content_type: &'static str,
        body: String,
    },
    /// Wait, then send normally.
    Delay(Duration),
    /// Send normally, so the server applies the request, then drop the
    /// reply: the guest sees a timeout, as after a connection cut mid-reply.
    LoseReply,
    /// Hold the request back: the guest waits out its request timeout
    /// (`first-byte-timeout`) and sees a timeout, while the request still
    /// reaches the server `arrives_after` after it was sent (a late
    /// arrival, which the server applies), or never (`None`).
    TimeOut { arrives_after: Option<Duration> },
}

/// A standing rule, applied to every request no one-shot fault took: it
/// may rewrite the request (strip a header, say) or answer it with a fault.
/// The simulated stores of `crate::simulated` are rules.
pub type Rule = Arc<dyn Fn(&mut http::request::Parts) -> Option<Fault> + Send + Sync>;

/// Decides the fault of each request that no queued fault (and no cut)
/// decided: a seeded schedule, say. It sees the request as recorded, before
/// any reply.
pub type FaultPolicy = Box<dyn FnMut(&RequestRecord) -> Option<Fault> + Send>;

/// The hooks of one instance; requests that are not faulted go on to `next`
/// (the runtime's pooled sender).
#[derive(Clone)]
pub struct Hooks {
    pub log: Arc<Mutex<Vec<RequestRecord>>>,
    /// Applied to the next requests, one fault each, in order.
    pub faults: Arc<Mutex<VecDeque<Fault>>>,
    /// Applied to every request, in order, after the one-shot faults.
    pub rules: Arc<Mutex<Vec<Rule>>>,
    /// While set, every request is refused before it leaves: a network cut.
    pub cut: Arc<std::sync::atomic::AtomicBool>,
    /// Consulted for every request the queue and the cut leave alone.
    pub policy: Arc<Mutex<Option<FaultPolicy>>>,
    next: HttpSender,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Hooks {
    pub fn new(next: HttpSender) -> Self {
        Hooks {
            log: Arc::default(),
            faults: Arc::default(),
            rules: Arc::default(),
            cut: Arc::default(),
            policy: Arc::default(),
            next,
        }
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.log).clone()
    }

    /// Takes the log: the requests since the last call.
    pub fn take_requests(&self) -> Vec<RequestRecord> {
        std::mem::take(&mut *lock(&self.log))
    }

    pub fn inject(&self, fault: Fault) {
        lock(&self.faults).push_back(fault);
    }

    /// Adds a standing rule (see [`Rule`]).
    pub fn add_rule(
        &self,
        rule: impl Fn(&mut http::request::Parts) -> Option<Fault> + Send + Sync + 'static,
    ) {
        lock(&self.rules).push(Arc::new(rule));
    }

    /// Faults every later request as `policy` decides (after the queue).
    pub fn set_policy(&self, policy: FaultPolicy) {
        *lock(&self.policy) = Some(policy);
    }

    /// Cuts (or restores) this instance's network.
    pub fn set_cut(&self, cut: bool) {
        self.cut.store(cut, std::sync::atomic::Ordering::SeqCst);
    }
}

impl WasiHttpHooks for Hooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> ResponseFuture {
        let log = self.log.clone();
        let next = self.next.clone();
        let rules = lock(&self.rules).clone();
        let policy = self.policy.clone();
        let fault = if self.cut.load(std::sync::atomic::Ordering::SeqCst) {
            Some(Fault::Refuse)
        } else {
            lock(&self.faults).pop_front()
        };
        Box::new(async move {
            let (parts, body) = request.into_parts();
            let body = body.collect().await?.to_bytes();
            let header = |name: &str| {
                parts
                    .headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            // DynamoDB calls carry no such header: their signature covers
            // the body's hash.
            let payload_hash_ok = match header("x-amz-content-sha256") {
                Some(declared) => declared == s3_lease::sigv4::sha256_hex(&body),
                None => header("x-amz-target").is_some(),
            };
            let record = RequestRecord {
                method: parts.method.to_string(),
                path_and_query: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                if_match: header("if-match"),
                if_none_match: header("if-none-match"),
                payload_hash_ok,
                target: header("x-amz-target").map(|t| {
                    t.strip_prefix(s3_lease::stores::dynamodb::TARGET_PREFIX)
                        .unwrap_or(&t)
                        .to_string()
                }),
                status: None,
            };
            let fault = fault.or_else(|| lock(&policy).as_mut().and_then(|p| p(&record)));
            let index = {
                let mut log = lock(&log);
                log.push(record);
                log.len() - 1
            };
            // Recorded as the component sent it; the rules act after.
            let mut parts = parts;
            let mut fault = fault;
            for rule in &rules {
                if fault.is_some() {
                    break;
                }
                fault = rule(&mut parts);
            }
            let set_status = |status: u16| {
                if let Some(r) = lock(&log).get_mut(index) {
                    r.status = Some(status);
                }
            };

            match fault {
                Some(Fault::Refuse) => return Err(HttpError::ConnectionRefused),
                Some(Fault::Respond {
                    status,
                    content_type,
                    body,
                }) => {
                    set_status(status);
                    let response = http::Response::builder()
                        .status(status)
                        .header("content-type", content_type)
                        .body(full(Bytes::from(body)))
                        .map_err(|e| HttpError::InternalError(Some(e.to_string())))?;
                    let io: IoFuture = Box::new(async { Ok(()) });
                    return Ok((response, io));
                }
                Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
                Some(Fault::TimeOut { arrives_after }) => {
                    if let Some(after) = arrives_after {
                        let late = http::Request::from_parts(parts, full(body));
                        late_arrivals().spawn(arrive_late(next, late, after));
                    }
                    let timeout = options
                        .and_then(|o| o.first_byte_timeout)
                        .unwrap_or(Duration::from_secs(600));
                    tokio::time::sleep(timeout).await;
                    return Err(HttpError::ConnectionReadTimeout);
                }
                Some(Fault::LoseReply) | None => {}
            }

            let request = http::Request::from_parts(parts, full(body));
            let (response, io) = Box::into_pin(next.send(request, options)).await?;
            set_status(response.status().as_u16());
            if matches!(fault, Some(Fault::LoseReply)) {
                // Applied by the server; read to the end so the write is
                // done, then lost on the way back.
                let _ = response.into_body().collect().await;
                return Err(HttpError::ConnectionReadTimeout);
            }
            Ok((response, io))
        })
    }
}

/// Where late requests are sent from: a runtime that is always driven. The
/// instance's own (its thread's) runs only while that thread is in a call,
/// which a test holding a bare instance may not make again.
fn late_arrivals() -> &'static tokio::runtime::Runtime {
    static LATE: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    LATE.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("late-arrivals")
            .enable_all()
            .build()
            .expect("the late arrivals' runtime")
    })
}

/// Sends `request` after `after`, for nobody: the guest gave up on it.
async fn arrive_late(next: HttpSender, request: http::Request<WasiBody>, after: Duration) {
    tokio::time::sleep(after).await;
    if let Ok((response, _io)) = Box::into_pin(next.send(request, None)).await {
        let _ = response.into_body().collect().await;
    }
}

/// The errors injected request faults make an elector step report (and
/// retry): anything else under faults is a surprise worth failing on.
pub fn is_fault_error(e: &crate::bindings::Error) -> bool {
    use crate::bindings::Error as E;
    matches!(
        e,
        E::Transport(_) | E::Conflict(_) | E::S3(_) | E::Timeout(_)
    )
}

/// The same, for an error of the host crate's API.
pub fn is_fault(e: &s3_lease_host::Error) -> bool {
    use s3_lease_host::ErrorKind as K;
    matches!(e.kind(), K::Transport | K::Conflict | K::Store | K::Timeout)
}
