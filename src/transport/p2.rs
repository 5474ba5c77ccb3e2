//! WASI 0.2: `wasi:http/outgoing-handler`, with blocking waits on
//! `wasi:io` pollables. Nothing here suspends, so the 0.2 exports finish
//! each call in one poll.

use crate::prelude::*;

use super::{
    epoch_ms, error_code_text, header_entries, http_method, http_scheme, reply_head, transport,
    transport_error, with_body,
};
use crate::bindings::wasi::clocks::{monotonic_clock, wall_clock};
use crate::bindings::wasi::http::outgoing_handler;
use crate::bindings::wasi::http::types::{
    Fields, FutureIncomingResponse, HeaderError, IncomingBody, OutgoingBody, OutgoingRequest,
    RequestOptions,
};
use crate::bindings::wasi::io::streams::StreamError;
use crate::bindings::wasi::random::random;
use crate::error::Error;
use crate::stores::s3::{HttpRequest, S3Response};

/// WASI streams take at most this much per blocking write.
const WRITE_CHUNK: usize = 4096;
const READ_CHUNK: u64 = 64 * 1024;

pub fn now_ms() -> u64 {
    let t = wall_clock::now();
    epoch_ms(t.seconds, t.nanoseconds)
}

pub fn monotonic_ns() -> u64 {
    monotonic_clock::now()
}

pub async fn sleep_ns(ns: u64) {
    monotonic_clock::subscribe_duration(ns).block();
}

pub fn random_u64() -> u64 {
    random::get_random_u64()
}

pub async fn send(req: &HttpRequest) -> Result<S3Response, Error> {
    let pending = start(req)?;
    finish(req, pending)
}

/// Every request handed to the host first (it sends each as it gets it),
/// then each reply read: they race at the store.
pub async fn send_all(reqs: &[HttpRequest]) -> Vec<Result<S3Response, Error>> {
    let pending: Vec<_> = reqs.iter().map(start).collect();
    reqs.iter()
        .zip(pending)
        .map(|(req, pending)| pending.and_then(|p| finish(req, p)))
        .collect()
}

/// Hands `req` to the host, body written: its reply is on the way.
fn start(req: &HttpRequest) -> Result<FutureIncomingResponse, Error> {
    let headers = Fields::from_list(&header_entries(req)).map_err(|e| {
        let why = match e {
            HeaderError::InvalidSyntax => "invalid syntax",
            HeaderError::Forbidden => "forbidden",
            HeaderError::Immutable => "immutable",
        };
        transport("header refused by the host", why)
    })?;
    let outgoing = OutgoingRequest::new(headers);
    address_request!(outgoing, req);

    let options = request_options!(RequestOptions, req);

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
    Ok(future)
}

/// Waits for the reply to a started request, and reads it.
fn finish(req: &HttpRequest, future: FutureIncomingResponse) -> Result<S3Response, Error> {
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(transport_error(code)),
        Some(Err(())) | None => return Err(transport("response", "already taken or not ready")),
    };
    let (reply, limit) = reply_head(req, response.status(), response.headers().entries());
    let Some(limit) = limit else {
        return Ok(reply);
    };
    let incoming = response
        .consume()
        .map_err(|()| transport("response body", "already taken"))?;
    let (body, overflow) = read_body(&incoming, limit)?;
    Ok(with_body(reply, body, overflow))
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
