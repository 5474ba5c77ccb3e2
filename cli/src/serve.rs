//! `--serve ADDR`: a small HTTP endpoint beside `run` and `elect` for
//! orchestrators and monitoring, on a thread and runtime of its own, so a
//! slow scrape or a hung status read never delays a renew.
//!
//! - `GET /status`: the key as `s3-lease status --json` shows it (read from
//!   the store by a client of its own), plus this process's role and holder.
//! - `GET /healthz`: 200 while the elector's steps get answers; 503 once
//!   none has for longer than the renew deadline (the store is cut off, or
//!   the credentials are refused).
//! - `GET /metrics`: Prometheus text format (see `metrics`).
//!
//! What it may take (connections, descriptors, time) is bounded: see
//! `connections`.

mod connections;

use crate::metrics::{self, Sources};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use s3_lease_host::blocking::Client;
use s3_lease_host::Role;
use serde_json::json;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the endpoint needs to answer.
pub struct Endpoint {
    pub sources: Sources,
    /// A client of its own (its own instance): a status read never waits
    /// on the elector's instance, nor the elector on it.
    pub status_client: Client,
    pub holder: String,
    /// The elector's renew deadline: past it without an answer, 503.
    pub renew_deadline: Duration,
    /// Why the process is about to exit, once an error retrying cannot fix
    /// was found: 503 with it from then on.
    pub fatal: Arc<Mutex<Option<String>>>,
}

/// Binds `addr` and serves until the process ends; returns the bound
/// address (port 0 picks a free one).
pub fn start(addr: &str, endpoint: Endpoint) -> Result<SocketAddr, String> {
    let listener = std::net::TcpListener::bind(addr).map_err(|e| format!("--serve {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("--serve {addr}: {e}"))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("--serve {addr}: {e}"))?;
    let shared = Arc::new(Shared {
        registry: metrics::registry(endpoint.sources.clone()),
        status_client: Mutex::new(endpoint.status_client),
        started: Instant::now(),
        endpoint_sources: endpoint.sources,
        holder: endpoint.holder,
        renew_deadline: endpoint.renew_deadline,
        fatal: endpoint.fatal,
    });
    std::thread::Builder::new()
        .name("s3-lease-serve".into())
        .spawn(move || serve(listener, shared))
        .map_err(|e| format!("--serve: cannot start its thread: {e}"))?;
    Ok(bound)
}

struct Shared {
    registry: prometheus_client::registry::Registry,
    status_client: Mutex<Client>,
    started: Instant,
    endpoint_sources: Sources,
    holder: String,
    renew_deadline: Duration,
    fatal: Arc<Mutex<Option<String>>>,
}

/// Threads for `/status` reads (each a blocking call to the store):
/// beyond them, reads queue (they take one client's lock in turn anyway).
const STATUS_THREADS: usize = 2;

fn serve(listener: std::net::TcpListener, shared: Arc<Shared>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(STATUS_THREADS)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return crate::stderr_lines::line(format!(
                "s3-lease: --serve: cannot start its runtime: {e}"
            ))
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => return crate::stderr_lines::line(format!("s3-lease: --serve: {e}")),
        };
        let limits = connections::Limits::of_this_process();
        connections::accept_forever(listener, limits, |stream| {
            let shared = shared.clone();
            async move {
                let service = service_fn(move |request| answer(shared.clone(), request));
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(connections::HEADER_TIMEOUT)
                    // Requests are a line and a few headers.
                    .max_buf_size(16 * 1024)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            }
        })
        .await;
    });
}

async fn answer(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() != Method::GET {
        return Ok(text(StatusCode::METHOD_NOT_ALLOWED, "only GET\n".into()));
    }
    Ok(match request.uri().path() {
        "/metrics" => match metrics::render(&shared.registry) {
            Ok(body) => {
                let mut response = text(StatusCode::OK, body);
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    ),
                );
                response
            }
            Err(_) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "could not encode the metrics\n".into(),
            ),
        },
        "/healthz" => {
            let (status, body) = health(&shared);
            text(status, body)
        }
        "/status" => {
            let worker = shared.clone();
            match tokio::task::spawn_blocking(move || status(&worker)).await {
                Ok((code, body)) => json_response(code, body),
                Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "status failed\n".into()),
            }
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "try /status, /healthz or /metrics\n".into(),
        ),
    })
}

/// 200 while a step got an answer within the renew deadline (or the
/// process is younger than that); 503 with the reason otherwise.
fn health(shared: &Shared) -> (StatusCode, String) {
    if let Some(why) = shared
        .fatal
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {why}\n"),
        );
    }
    let stats = shared.endpoint_sources.elector.stats();
    let now = Instant::now();
    let since = stats.last_success.unwrap_or(shared.started);
    let quiet_for = now.saturating_duration_since(since);
    if quiet_for <= shared.renew_deadline {
        return (StatusCode::OK, "ok\n".into());
    }
    let why = shared
        .endpoint_sources
        .elector
        .last_error()
        .unwrap_or_else(|| "no answer".into());
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "unhealthy: no elector step got an answer for {:.1} s (renew deadline {:.1} s); last error: {why}\n",
            quiet_for.as_secs_f64(),
            shared.renew_deadline.as_secs_f64()
        ),
    )
}

/// `status --json`'s object for the key, with this process's role.
fn status(shared: &Shared) -> (StatusCode, serde_json::Value) {
    let key = &shared.endpoint_sources.key;
    let role = match shared.endpoint_sources.elector.role() {
        Role::Leader(_) => "leader",
        Role::Follower(_) => "follower",
        _ => "candidate",
    };
    let client = shared
        .status_client
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    match crate::commands::status_value(&client, key) {
        Ok(mut value) => {
            if let Some(object) = value.as_object_mut() {
                object.insert("role".into(), json!(role));
                object.insert("this_holder".into(), json!(shared.holder));
            }
            (StatusCode::OK, value)
        }
        Err(failure) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"key": key, "role": role, "this_holder": shared.holder, "error": failure.message}),
        ),
    }
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
}

fn json_response(status: StatusCode, value: serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = text(status, format!("{value}\n"));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
