//! WASI 0.3: `wasi:http/client.send`, an `async func`, and `wait-for` on
//! the monotonic clock. Each await suspends the calling task, so other
//! calls into the instance run while a request is in flight or `acquire`
//! waits.

use crate::prelude::*;

use super::{
    epoch_ms, header_entries, http_method, http_scheme, reply_head, transport, transport_error,
    with_body,
};
use crate::bindings::generated::{wit_future, wit_stream};
use crate::bindings::wasi::clocks::{monotonic_clock, system_clock};
use crate::bindings::wasi::http::client;
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, HeaderError, Request, RequestOptions, Response, Trailers,
};
use crate::bindings::wasi::random::random;
use crate::error::Error;
use crate::stores::s3::{HttpRequest, S3Response};
use core::future::{poll_fn, Future};
use core::pin::{pin, Pin};
use core::task::Poll;

/// Read at most this much per stream read.
const READ_CHUNK: usize = 64 * 1024;

pub fn now_ms() -> u64 {
    let t = system_clock::now();
    epoch_ms(u64::try_from(t.seconds).unwrap_or(0), t.nanoseconds)
}

pub fn monotonic_ns() -> u64 {
    monotonic_clock::now()
}

pub async fn sleep_ns(ns: u64) {
    monotonic_clock::wait_for(ns).await;
}

pub fn random_u64() -> u64 {
    random::get_random_u64()
}

pub async fn send(req: &HttpRequest) -> Result<S3Response, Error> {
    let headers = Fields::from_list(&header_entries(req)).map_err(|e| {
        let why = match e {
            HeaderError::InvalidSyntax => "invalid syntax",
            HeaderError::Forbidden => "forbidden",
            HeaderError::Immutable => "immutable",
            HeaderError::SizeExceeded => "size exceeded",
            HeaderError::Other(_) => "other",
        };
        transport("header refused by the host", why)
    })?;
    let (body_writer, body) = if req.body.is_empty() {
        (None, None)
    } else {
        let (writer, reader) = wit_stream::new::<u8>();
        (Some(writer), Some(reader))
    };
    // No trailers: the writer, dropped once the body is written, sends the
    // default (`ok(none)`), and that ends the request (a host may read the
    // whole request before it sends it).
    let (no_trailers, trailers) =
        wit_future::new::<Result<Option<Trailers>, ErrorCode>>(|| Ok(None));
    let options = request_options!(RequestOptions, req);
    let (outgoing, _transmitted) = Request::new(headers, body, trailers, Some(options));
    address_request!(outgoing, req);

    // The host reads the body while it sends: write it beside the call.
    let write_body = async move {
        if let Some(mut writer) = body_writer {
            writer.write_all(req.body.clone()).await;
        }
        drop(no_trailers);
    };
    let (response, ()) = join(client::send(outgoing), write_body).await;
    let response = response.map_err(transport_error)?;

    let (reply, limit) = reply_head(
        req,
        response.get_status_code(),
        response.get_headers().copy_all(),
    );
    let Some(limit) = limit else {
        return Ok(reply);
    };
    let (_handled, handled) = wit_future::new::<Result<(), ErrorCode>>(|| Ok(()));
    let (mut stream, _trailers) = Response::consume_body(response, handled);
    let mut body = Vec::new();
    loop {
        if body.len() as u64 > limit {
            return Ok(with_body(reply, body, true));
        }
        body.reserve(READ_CHUNK);
        let (result, read) = stream.read(body).await;
        body = read;
        match result {
            wit_bindgen::StreamResult::Complete(_) => {}
            wit_bindgen::StreamResult::Dropped => break,
            wit_bindgen::StreamResult::Cancelled => {
                return Err(transport("reading response body", "cancelled"))
            }
        }
    }
    Ok(with_body(reply, body, false))
}

/// A request in flight.
type Pending<'a> = Pin<Box<dyn Future<Output = Result<S3Response, Error>> + 'a>>;

/// Every request at once: their futures polled together, so they race at
/// the store.
pub async fn send_all(reqs: &[HttpRequest]) -> Vec<Result<S3Response, Error>> {
    let mut pending: Vec<Pending<'_>> = reqs
        .iter()
        .map(|r| Box::pin(send(r)) as Pin<Box<dyn Future<Output = _>>>)
        .collect();
    let mut done: Vec<Option<Result<S3Response, Error>>> = reqs.iter().map(|_| None).collect();
    poll_fn(|cx| {
        for (future, out) in pending.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                if let Poll::Ready(reply) = future.as_mut().poll(cx) {
                    *out = Some(reply);
                }
            }
        }
        if done.iter().all(Option::is_some) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    done.into_iter()
        .map(|d| d.unwrap_or_else(|| Err(transport("response", "not ready"))))
        .collect()
}

/// Polls both until both are done: the request and its body's writer.
async fn join<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let mut a = pin!(a);
    let mut b = pin!(b);
    let (mut a_out, mut b_out) = (None, None);
    poll_fn(|cx| {
        if a_out.is_none() {
            if let Poll::Ready(out) = a.as_mut().poll(cx) {
                a_out = Some(out);
            }
        }
        if b_out.is_none() {
            if let Poll::Ready(out) = b.as_mut().poll(cx) {
                b_out = Some(out);
            }
        }
        match (a_out.take(), b_out.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                a_out = a;
                b_out = b;
                Poll::Pending
            }
        }
    })
    .await
}
