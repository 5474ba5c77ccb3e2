//! The one module that does I/O: signed requests go out through the imported
//! `wasi:http/outgoing-handler`; clocks, sleeps and randomness come from WASI.

use crate::prelude::*;

use crate::bindings::wasi::clocks::{monotonic_clock, wall_clock};
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, HeaderError, IncomingBody, Method as HttpMethod, OutgoingBody,
    OutgoingRequest, RequestOptions, Scheme as HttpScheme,
};
use crate::bindings::wasi::io::streams::StreamError;
use crate::bindings::wasi::random::random;
use crate::config::{ClientConfig, Scheme};
use crate::driver::Io;
use crate::error::Error;
use crate::s3::{HttpRequest, Method, S3Request, S3Response};
use crate::sigv4::Credentials;
use crate::wire;
use core::cell::{Cell, RefCell};

/// WASI streams take at most this much per blocking write.
const WRITE_CHUNK: usize = 4096;
const READ_CHUNK: u64 = 64 * 1024;

pub struct WasiIo<'a> {
    pub config: &'a ClientConfig,
    /// Signs with these rather than `config`'s: the latest `set-credentials`.
    pub credentials: &'a RefCell<Credentials>,
    /// Server clock minus ours, for signing only (kept by the client).
    pub signing_offset_ms: &'a Cell<i64>,
}

impl Io for WasiIo<'_> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        let signing_ms = self
            .now_ms()
            .saturating_add_signed(self.signing_offset_ms.get());
        let mut config = self.config.clone();
        config.credentials = self.credentials.borrow().clone();
        let reply = send(&wire::prepare(&config, request, signing_ms / 1000))?;
        Ok(wire::read_reply(self.config, request, reply))
    }

    fn correct_signing_clock(&mut self, server_ms: u64) {
        let offset = i128::from(server_ms) - i128::from(self.now_ms());
        let offset = offset.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        self.signing_offset_ms.set(offset);
    }

    fn now_ms(&mut self) -> u64 {
        now_ms()
    }

    fn monotonic_ms(&mut self) -> u64 {
        monotonic_clock::now() / 1_000_000
    }

    async fn sleep_ms(&mut self, ms: u64) {
        monotonic_clock::subscribe_duration(ms.saturating_mul(1_000_000)).block();
    }

    fn random_u64(&mut self) -> u64 {
        random::get_random_u64()
    }
}

pub fn now_ms() -> u64 {
    let t = wall_clock::now();
    t.seconds
        .saturating_mul(1000)
        .saturating_add(u64::from(t.nanoseconds / 1_000_000))
}

pub fn random_hex_id() -> String {
    format!("{:016x}", random_u64())
}

pub fn random_u64() -> u64 {
    random::get_random_u64()
}

fn transport(what: &str, detail: &str) -> Error {
    Error::Transport(format!("{what}: {detail}"))
}

fn send(req: &HttpRequest) -> Result<S3Response, Error> {
    let entries: Vec<(String, Vec<u8>)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
        .collect();
    let headers = Fields::from_list(&entries).map_err(|e| {
        let why = match e {
            HeaderError::InvalidSyntax => "invalid syntax",
            HeaderError::Forbidden => "forbidden",
            HeaderError::Immutable => "immutable",
        };
        transport("header refused by the host", why)
    })?;
    let outgoing = OutgoingRequest::new(headers);
    let method = match req.method {
        Method::Get => HttpMethod::Get,
        Method::Head => HttpMethod::Head,
        Method::Put => HttpMethod::Put,
        Method::Delete => HttpMethod::Delete,
        Method::Post => HttpMethod::Post,
    };
    let scheme = match req.scheme {
        Scheme::Http => HttpScheme::Http,
        Scheme::Https => HttpScheme::Https,
    };
    let set = |ok: Result<(), ()>, what: &str| {
        ok.map_err(|()| transport("the host refused the request's", what))
    };
    set(outgoing.set_method(&method), "method")?;
    set(outgoing.set_scheme(Some(&scheme)), "scheme")?;
    set(outgoing.set_authority(Some(&req.authority)), "authority")?;
    set(
        outgoing.set_path_with_query(Some(&req.path_and_query)),
        "path",
    )?;

    let options = RequestOptions::new();
    let timeout_ns = Some(u64::from(req.timeout_ms) * 1_000_000);
    // A host that does not support a timeout refuses it; the request still goes.
    let _ = options.set_connect_timeout(timeout_ns);
    let _ = options.set_first_byte_timeout(timeout_ns);
    let _ = options.set_between_bytes_timeout(timeout_ns);

    let body = outgoing
        .body()
        .map_err(|()| transport("request body", "already taken"))?;
    // Hand the request to the host before writing the body, so a body larger
    // than the host's buffer streams instead of blocking.
    let future = outgoing_handler::handle(outgoing, Some(options))
        .map_err(|e| transport("request not sent", &error_code_text(&e)))?;
    write_body(&body, &req.body)?;
    OutgoingBody::finish(body, None)
        .map_err(|e| transport("request body", &error_code_text(&e)))?;

    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(transport_error(code)),
        Some(Err(())) | None => return Err(transport("response", "already taken or not ready")),
    };

    let status = response.status();
    let headers: Vec<(String, String)> = response
        .headers()
        .entries()
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
    let announced = reply
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let limit = req.max_response_bytes as u64;
    if req.method == Method::Head {
        return Ok(reply);
    }
    if let Some(len) = announced.filter(|&len| len > limit) {
        // Not read: dropping the response lets the host close the connection.
        reply.body_too_large = Some(len);
        return Ok(reply);
    }
    let incoming = response
        .consume()
        .map_err(|()| transport("response body", "already taken"))?;
    let (body, overflow) = read_body(&incoming, limit)?;
    if overflow {
        reply.body_too_large = Some(body.len() as u64);
    } else {
        reply.body = body;
    }
    Ok(reply)
}

fn write_body(body: &OutgoingBody, bytes: &[u8]) -> Result<(), Error> {
    if bytes.is_empty() {
        return Ok(());
    }
    let stream = body
        .write()
        .map_err(|()| transport("request body", "stream already taken"))?;
    for chunk in bytes.chunks(WRITE_CHUNK) {
        stream
            .blocking_write_and_flush(chunk)
            .map_err(|e| transport("writing request body", &stream_error(e)))?;
    }
    Ok(())
}

/// Reads up to `limit` bytes; `true` means the body went on past it.
fn read_body(incoming: &IncomingBody, limit: u64) -> Result<(Vec<u8>, bool), Error> {
    let stream = incoming
        .stream()
        .map_err(|()| transport("response body", "stream already taken"))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(READ_CHUNK) {
            Ok(chunk) => {
                body.extend_from_slice(&chunk);
                if body.len() as u64 > limit {
                    return Ok((body, true));
                }
            }
            Err(StreamError::Closed) => return Ok((body, false)),
            Err(e) => return Err(transport("reading response body", &stream_error(e))),
        }
    }
}

fn stream_error(e: StreamError) -> String {
    match e {
        StreamError::Closed => "closed".into(),
        StreamError::LastOperationFailed(err) => err.to_debug_string(),
    }
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
