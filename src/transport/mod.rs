//! The one module that does I/O: signed requests go out through the
//! imported `wasi:http` client; clocks, sleeps and randomness come from
//! WASI. `p2` is the WASI 0.2 build's (it blocks), `p3` the WASI 0.3
//! build's (it suspends the calling task); the `Io` here and everything
//! the two share do not know which one runs.

use crate::prelude::*;

use crate::bindings::wasi::http::types::{ErrorCode, Method as HttpMethod, Scheme as HttpScheme};
use crate::config::{ClientConfig, Credential, Scheme};
use crate::driver::Io;
use crate::error::Error;
use crate::stores::s3::{Endpoint, HttpRequest, Method, S3Request, S3Response};
use core::cell::{Cell, RefCell};

pub struct WasiIo<'a> {
    pub config: &'a ClientConfig,
    /// Signs with this rather than `config`'s: the latest `set-credential`'s
    /// (checked then, against the store's kind).
    pub credential: &'a RefCell<Credential>,
    /// Server clock minus ours, for signing only (kept by the client).
    pub signing_offset_ms: &'a Cell<i64>,
}

impl WasiIo<'_> {
    /// `request` signed with the latest credentials, at the signing clock.
    fn prepare(&mut self, request: &S3Request) -> crate::stores::s3::HttpRequest {
        let signing_ms = self
            .now_ms()
            .saturating_add_signed(self.signing_offset_ms.get());
        let mut config = self.config.clone();
        // Checked when it was set: the same check passes again.
        let _ = config
            .store
            .set_credential(self.credential.borrow().clone());
        config.prepare(request, signing_ms / 1000)
    }
}

impl Io for WasiIo<'_> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        let reply = wasi::send(&self.prepare(request)).await?;
        Ok(self.config.read_reply(request, reply))
    }

    /// All of them on the wire before any reply is awaited.
    async fn send_all(&mut self, requests: &[S3Request]) -> Vec<Result<S3Response, Error>> {
        let prepared: Vec<_> = requests.iter().map(|r| self.prepare(r)).collect();
        let replies = wasi::send_all(&prepared).await;
        replies
            .into_iter()
            .zip(requests)
            .map(|(reply, request)| reply.map(|r| self.config.read_reply(request, r)))
            .collect()
    }

    fn correct_signing_clock(&mut self, server_ms: u64) {
        let offset = i128::from(server_ms) - i128::from(self.now_ms());
        let offset = offset.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        self.signing_offset_ms.set(offset);
    }

    fn now_ms(&mut self) -> u64 {
        wasi::now_ms()
    }

    fn monotonic_ms(&mut self) -> u64 {
        wasi::monotonic_ns() / 1_000_000
    }

    async fn sleep_ms(&mut self, ms: u64) {
        wasi::sleep_ns(ms.saturating_mul(1_000_000)).await;
    }

    fn random_u64(&mut self) -> u64 {
        wasi::random_u64()
    }

    fn endpoint(&self) -> Option<Endpoint> {
        let scheme = match self.config.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        Some(Endpoint {
            store: self.config.store.profile(),
            url: format!("{scheme}://{}", self.config.endpoint_authority),
        })
    }
}

pub fn random_hex_id() -> String {
    format!("{:016x}", random_u64())
}

pub fn random_u64() -> u64 {
    wasi::random_u64()
}

/// Milliseconds since the Unix epoch from a WASI wall-clock reading
/// (before 1970 reads as 0).
fn epoch_ms(seconds: u64, nanoseconds: u32) -> u64 {
    seconds
        .saturating_mul(1000)
        .saturating_add(u64::from(nanoseconds / 1_000_000))
}

fn transport(what: &str, detail: &str) -> Error {
    Error::Transport(format!("{what}: {detail}"))
}

fn http_method(method: Method) -> HttpMethod {
    match method {
        Method::Get => HttpMethod::Get,
        Method::Head => HttpMethod::Head,
        Method::Put => HttpMethod::Put,
        Method::Delete => HttpMethod::Delete,
        Method::Post => HttpMethod::Post,
    }
}

fn http_scheme(scheme: Scheme) -> HttpScheme {
    match scheme {
        Scheme::Http => HttpScheme::Http,
        Scheme::Https => HttpScheme::Https,
    }
}

/// Sets `$request`'s method, scheme, authority and path from `$req`: the
/// same calls on either WASI version's request type.
macro_rules! address_request {
    ($request:expr, $req:expr) => {{
        let request = &$request;
        let req: &HttpRequest = $req;
        let set = |ok: Result<(), ()>, what: &str| {
            ok.map_err(|()| transport("the host refused the request's", what))
        };
        set(request.set_method(&http_method(req.method)), "method")?;
        set(request.set_scheme(Some(&http_scheme(req.scheme))), "scheme")?;
        set(request.set_authority(Some(&req.authority)), "authority")?;
        set(
            request.set_path_with_query(Some(&req.path_and_query)),
            "path",
        )?;
    }};
}

/// The request's timeout as each of `$options`' three; a host that does
/// not support one refuses it, and the request still goes.
macro_rules! request_options {
    ($options:ty, $req:expr) => {{
        let options = <$options>::new();
        let timeout_ns = Some(u64::from($req.timeout_ms) * 1_000_000);
        let _ = options.set_connect_timeout(timeout_ns);
        let _ = options.set_first_byte_timeout(timeout_ns);
        let _ = options.set_between_bytes_timeout(timeout_ns);
        options
    }};
}

// After the macros above, which they use.
#[cfg(not(feature = "wasip3"))]
mod p2;
#[cfg(not(feature = "wasip3"))]
use p2 as wasi;
#[cfg(feature = "wasip3")]
mod p3;
#[cfg(feature = "wasip3")]
use p3 as wasi;

fn header_entries(req: &HttpRequest) -> Vec<(String, Vec<u8>)> {
    req.headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect()
}

/// The reply's status and headers, and how much of its body to read:
/// `None` when nothing is (a HEAD, or a body announced larger than the
/// request allows: `body_too_large` then says so, and dropping the
/// response lets the host close the connection).
fn reply_head(
    req: &HttpRequest,
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
) -> (S3Response, Option<u64>) {
    let headers = headers
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect();
    let mut reply = S3Response {
        status,
        headers,
        body: Vec::new(),
        body_too_large: None,
    };
    if req.method == Method::Head {
        return (reply, None);
    }
    let limit = req.max_response_bytes as u64;
    let announced = reply
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(len) = announced.filter(|&len| len > limit) {
        reply.body_too_large = Some(len);
        return (reply, None);
    }
    (reply, Some(limit))
}

/// Keeps a body read up to its limit; `overflow` means it went on past it.
fn with_body(mut reply: S3Response, body: Vec<u8>, overflow: bool) -> S3Response {
    if overflow {
        reply.body_too_large = Some(body.len() as u64);
    } else {
        reply.body = body;
    }
    reply
}

fn transport_error(code: ErrorCode) -> Error {
    Error::Transport(error_code_text(&code))
}

/// The WIT case's name, with its text where it carries one. By hand:
/// wit-bindgen's `Debug` for `error-code` and its payload records cost
/// about 7 KB of component; the sizes some cases carry are dropped.
fn error_code_text(code: &ErrorCode) -> String {
    use ErrorCode as C;
    let detail = |name: &str, text: &Option<String>| match text {
        Some(t) => format!("{name}: {t}"),
        None => name.to_string(),
    };
    let name = match code {
        C::ConnectionRefused => "connection refused",
        C::ConnectionTimeout => "connection timed out",
        C::ConnectionReadTimeout => "timed out waiting for the reply",
        C::TlsCertificateError => "TLS certificate refused",
        C::DnsError(e) => return detail("DNS error", &e.rcode),
        C::TlsAlertReceived(e) => return detail("TLS alert received", &e.alert_message),
        C::HttpResponseTransferCoding(t) => return detail("HTTP-response-transfer-coding", t),
        C::HttpResponseContentCoding(t) => return detail("HTTP-response-content-coding", t),
        C::InternalError(t) => return detail("internal-error", t),
        C::DnsTimeout => "DNS-timeout",
        C::DestinationNotFound => "destination-not-found",
        C::DestinationUnavailable => "destination-unavailable",
        C::DestinationIpProhibited => "destination-IP-prohibited",
        C::DestinationIpUnroutable => "destination-IP-unroutable",
        C::ConnectionTerminated => "connection-terminated",
        C::ConnectionWriteTimeout => "connection-write-timeout",
        C::ConnectionLimitReached => "connection-limit-reached",
        C::TlsProtocolError => "TLS-protocol-error",
        C::HttpRequestDenied => "HTTP-request-denied",
        C::HttpRequestLengthRequired => "HTTP-request-length-required",
        C::HttpRequestBodySize(_) => "HTTP-request-body-size",
        C::HttpRequestMethodInvalid => "HTTP-request-method-invalid",
        C::HttpRequestUriInvalid => "HTTP-request-URI-invalid",
        C::HttpRequestUriTooLong => "HTTP-request-URI-too-long",
        C::HttpRequestHeaderSectionSize(_) => "HTTP-request-header-section-size",
        C::HttpRequestHeaderSize(_) => "HTTP-request-header-size",
        C::HttpRequestTrailerSectionSize(_) => "HTTP-request-trailer-section-size",
        C::HttpRequestTrailerSize(_) => "HTTP-request-trailer-size",
        C::HttpResponseIncomplete => "HTTP-response-incomplete",
        C::HttpResponseHeaderSectionSize(_) => "HTTP-response-header-section-size",
        C::HttpResponseHeaderSize(_) => "HTTP-response-header-size",
        C::HttpResponseBodySize(_) => "HTTP-response-body-size",
        C::HttpResponseTrailerSectionSize(_) => "HTTP-response-trailer-section-size",
        C::HttpResponseTrailerSize(_) => "HTTP-response-trailer-size",
        C::HttpResponseTimeout => "HTTP-response-timeout",
        C::HttpUpgradeFailed => "HTTP-upgrade-failed",
        C::HttpProtocolError => "HTTP-protocol-error",
        C::LoopDetected => "loop-detected",
        C::ConfigurationError => "configuration-error",
    };
    name.to_string()
}
