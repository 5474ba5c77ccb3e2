//! How the component's outgoing requests leave the host.
//!
//! wasmtime's default sender opens a TCP connection (and on https a TLS
//! handshake) per request. [`HttpSender::pooled`] keeps connections alive
//! across requests and instances, one pool per [`crate::Runtime`]; its
//! connections live on a small runtime of their own, so they survive whatever
//! runtime (or none) the caller happens to be on.

use crate::engine::own_runtime::OwnRuntime;
use crate::engine::request_counts::{self, RequestCounts};
use crate::engine::trace as observe;
use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use wasmtime_wasi_http::default_send_request;
/// The wasi-http types a host needs to write hooks of its own.
pub use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// What a send returns to wasi:http: the response, and a future that ends
/// when the connection's work for this request is done.
pub type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
pub type ResponseFuture =
    Box<dyn Future<Output = Result<(http::Response<WasiBody>, IoFuture), HttpError>> + Send>;

/// No request of ours waits longer than this when the guest set no timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Idle keep-alive connections are closed after this long (S3 closes its end after ~20 s).
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(15);

/// Sends requests: pooled keep-alive connections, or one connection per request.
#[derive(Clone)]
pub enum HttpSender {
    /// Boxed: hyper-util's client with the proxy support aws-config turns
    /// on is large.
    Pooled(Box<PooledHttp>),
    /// wasmtime's default: a new connection (and TLS handshake) per request.
    PerRequest,
}

impl HttpSender {
    pub fn pooled() -> Result<Self> {
        Ok(HttpSender::Pooled(Box::new(PooledHttp::new()?)))
    }

    pub fn send(
        &self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> ResponseFuture {
        match self {
            HttpSender::Pooled(pool) => pool.send(request, options),
            HttpSender::PerRequest => Box::new(async move {
                let (response, io) = default_send_request(request, options).await?;
                Ok((
                    response.map(BodyExt::boxed_unsync),
                    Box::new(io) as IoFuture,
                ))
            }),
        }
    }
}

/// A keep-alive connection pool for http and https (rustls, webpki roots).
#[derive(Clone)]
pub struct PooledHttp {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// Shut down without waiting when the last clone goes, wherever that
    /// is (async code among others).
    runtime: Arc<OwnRuntime>,
}

impl PooledHttp {
    pub fn new() -> Result<Self> {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("TLS settings")?
        .with_root_certificates(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        })
        .with_no_client_auth();
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .build(connector);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("s3-lease-http")
            .enable_all()
            .build()
            .context("starting the HTTP runtime")?;
        Ok(PooledHttp {
            client,
            runtime: Arc::new(OwnRuntime::new(runtime)),
        })
    }

    fn send(
        &self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> ResponseFuture {
        let client = self.client.clone();
        let task = self.runtime.spawn(async move {
            let timeout = |pick: fn(&RequestOptions) -> Option<Duration>| {
                options.as_ref().and_then(pick).unwrap_or(DEFAULT_TIMEOUT)
            };
            let (parts, body) = request.into_parts();
            // Our requests are small (a lock record, or a fenced body of at
            // most 16 MiB): collect them, so a retry on a stale pooled
            // connection can send them again.
            let body = body.collect().await?.to_bytes();
            let request = http::Request::from_parts(parts, Full::new(body));
            // The whole exchange up to the reply's headers within the larger
            // of the two, not their sum: the component sets each to what it
            // can wait in all (an elector's leader, the time left to its
            // renew deadline), and a pooled connection rarely connects.
            let headers_within =
                timeout(|o| o.connect_timeout).max(timeout(|o| o.first_byte_timeout));
            let response = match tokio::time::timeout(headers_within, client.request(request)).await
            {
                Ok(result) => result.map_err(from_client_error)?,
                Err(_) => return Err(HttpError::ConnectionReadTimeout),
            };
            let (parts, incoming) = response.into_parts();
            let body = match tokio::time::timeout(
                timeout(|o| o.between_bytes_timeout),
                incoming.collect(),
            )
            .await
            {
                Ok(result) => result.map_err(HttpError::from)?.to_bytes(),
                Err(_) => return Err(HttpError::ConnectionReadTimeout),
            };
            Ok(http::Response::from_parts(parts, body))
        });
        Box::new(async move {
            let response = task
                .await
                .map_err(|e| HttpError::InternalError(Some(e.to_string())))??;
            let done: IoFuture = Box::new(async { Ok(()) });
            Ok((response.map(full), done))
        })
    }
}

/// Connection failures as wasi:http error codes, so the guest can tell a
/// refused connection (nothing sent) from a cut one (maybe applied).
fn from_client_error(error: hyper_util::client::legacy::Error) -> HttpError {
    let io = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    match (error.is_connect(), io) {
        (true, Some(std::io::ErrorKind::ConnectionRefused)) => HttpError::ConnectionRefused,
        (true, Some(std::io::ErrorKind::TimedOut)) => HttpError::ConnectionTimeout,
        (true, _) => HttpError::DestinationUnavailable,
        _ => HttpError::ConnectionTerminated,
    }
}

/// A body that is already in memory.
pub fn full(bytes: Bytes) -> WasiBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The wasi-http hooks of a plain instance: every request goes to the
/// sender, and is counted by operation and outcome.
pub struct SendHooks {
    pub sender: HttpSender,
    pub counts: Arc<RequestCounts>,
}

impl WasiHttpHooks for SendHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: IoFuture,
    ) -> ResponseFuture {
        let op = request_counts::operation(request.method(), request.uri(), request.headers());
        let counts = self.counts.clone();
        // Called on the instance's worker, inside the call: its span and
        // tally are current here (not in the future, which runs elsewhere).
        let tally = observe::counting();
        let traced = observe::Request::start(request.method(), request.uri(), op, tally);
        let sent = self.sender.send(request, options);
        Box::new(async move {
            let result = Box::into_pin(sent).await;
            let outcome = match &result {
                Ok((response, _)) => response.status().as_u16().to_string(),
                Err(_) => "error".to_string(),
            };
            counts.record(op, outcome);
            if let Some(traced) = traced {
                traced.done(match &result {
                    Ok((response, _)) => Ok(response.status()),
                    Err(e) => Err(observe::error_name(&format!("{e:?}"))),
                });
            }
            result
        })
    }
}
