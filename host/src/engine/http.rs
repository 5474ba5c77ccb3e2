//! How the component's outgoing requests leave the host.
//!
//! wasmtime's default sender opens a TCP connection (and on https a TLS
//! handshake) per request. [`HttpSender::pooled`] keeps connections alive
//! across requests and calls. A connection is driven by the runtime that
//! opened it, so each runtime sending through a sender gets a pool of its
//! own: for an instance's calls, that of the thread running them
//! (`engine::local`), whose exchanges then never leave that thread.

use crate::engine::request_counts::{self, RequestCounts};
use crate::engine::trace as observe;
use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Keep-alive connections for http and https (rustls, webpki roots), a
/// pool per runtime that sends through it.
#[derive(Clone)]
pub struct PooledHttp {
    connector: Connector,
    /// Tells this sender's pools (and its clones') from other senders'.
    id: u64,
}

type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
type PoolClient = Client<Connector, Full<Bytes>>;

/// The connection pools of the runtimes this thread has sent on, by runtime and
/// sender. A thread runs one runtime for its calls; a few more are kept
/// for threads that drive others in turn (tests, the bench).
struct RuntimeConnections {
    runtime: tokio::runtime::Id,
    sender: u64,
    client: PoolClient,
}

const POOLS_PER_THREAD: usize = 8;

thread_local! {
    static POOLS: RefCell<Vec<RuntimeConnections>> = const { RefCell::new(Vec::new()) };
}

impl PooledHttp {
    pub fn new() -> Result<Self> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
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
        Ok(PooledHttp {
            connector,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The pool of the runtime this runs on, made on its first request.
    fn client(&self) -> PoolClient {
        let runtime = tokio::runtime::Handle::current().id();
        let make = || {
            Client::builder(TokioExecutor::new())
                .pool_idle_timeout(POOL_IDLE_TIMEOUT)
                .build(self.connector.clone())
        };
        POOLS
            .try_with(|pools| {
                let mut pools = pools.borrow_mut();
                if let Some(found) = pools
                    .iter()
                    .find(|p| p.runtime == runtime && p.sender == self.id)
                {
                    return found.client.clone();
                }
                if pools.len() == POOLS_PER_THREAD {
                    pools.remove(0);
                }
                let client = make();
                pools.push(RuntimeConnections {
                    runtime,
                    sender: self.id,
                    client: client.clone(),
                });
                client
            })
            // The thread is exiting: a pool for this request alone.
            .unwrap_or_else(|_| make())
    }

    fn send(
        &self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
    ) -> ResponseFuture {
        let pool = self.clone();
        // Runs where wasi:http polls it: on the instance's thread, inside
        // its call, on the connection that thread keeps.
        Box::new(async move {
            let client = pool.client();
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
            let done: IoFuture = Box::new(async { Ok(()) });
            Ok((http::Response::from_parts(parts, full(body)), done))
        })
    }
}

/// Connection failures as wasi:http error codes, so the guest can tell a
/// refused connection (nothing sent) from a cut one (maybe applied).
fn from_client_error(error: hyper_util::client::legacy::Error) -> HttpError {
    // The socket's error sits a few causes down (the client's, the TLS
    // connector's, the TCP connector's): the first I/O error in the chain.
    let io = std::iter::successors(std::error::Error::source(&error), |e| e.source())
        .find_map(|source| source.downcast_ref::<std::io::Error>())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A port nobody listens on: the guest hears "connection refused"
    /// (nothing was sent), not "destination unavailable". The refusal is
    /// a few causes down the client's error.
    #[test]
    fn a_closed_port_is_connection_refused() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/bucket/key", closed.local_addr().unwrap());
        drop(closed);
        let sender = HttpSender::pooled().unwrap();
        let request = http::Request::get(url).body(full(Bytes::new())).unwrap();
        let sent = crate::engine::local::block_on(Box::into_pin(sender.send(request, None)));
        match sent {
            Err(HttpError::ConnectionRefused) => {}
            Err(other) => panic!("expected ConnectionRefused, got {other:?}"),
            Ok(_) => panic!("a closed port answered"),
        }
    }
}
