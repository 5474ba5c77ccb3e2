//! A store that honours every condition one request at a time and lets
//! racing writers all win: an HTTP server on loopback in front of SeaweedFS
//! that evaluates a PUT's `If-None-Match` and `If-Match` itself (a HEAD),
//! waits a while, then writes without them. Whoever checked during the
//! window wins too: the check-then-write race that SeaweedFS itself had
//! before its fix, that MinIO had when a read quorum failed, and
//! versitygw's posix backend has. The store preflight must refuse it.
//!
//! Every request is re-signed with the endpoint's own keys (the client's
//! signature covers the conditions it strips). It is served by the fakes'
//! loopback HTTP server (`aws_fakes::http`), a thread per connection, and
//! runs until the process ends.

use crate::admin::Admin;
use crate::aws_fakes::http::{self, Request, Response};
use crate::server::Endpoint;
use anyhow::Result;
use s3_lease::stores::s3::{Method, S3Request, S3Response};
use s3_lease::testing::uri::{percent_decode, query_pairs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A running racing store.
pub struct RacingStore {
    url: String,
    upstream: Endpoint,
    /// Conditional PUTs whose check passed and that were then written.
    pub written_after_check: Arc<AtomicU64>,
}

impl RacingStore {
    /// In front of `upstream`, waiting `window` between check and write.
    pub fn start(upstream: &Endpoint, window: Duration) -> Result<RacingStore> {
        let written = Arc::new(AtomicU64::new(0));
        let (count, endpoint) = (written.clone(), upstream.clone());
        let url = http::serve(Arc::new(move |request: Request| {
            let head = request.method == "HEAD";
            // The store's own failure: a gateway's reply, not a hang.
            let reply = endpoint
                .admin()
                .and_then(|admin| answer(&admin, &endpoint.bucket, request, window, &count));
            match reply {
                Ok(reply) => Response {
                    status: reply.status,
                    headers: reply.headers,
                    body: reply.body,
                    head,
                },
                Err(e) => Response::new(502, "text/plain", format!("{e:#}")),
            }
        }))?;
        Ok(RacingStore {
            url,
            upstream: upstream.clone(),
            written_after_check: written,
        })
    }

    /// The upstream's bucket and keys, at this store's address.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            url: self.url.clone(),
            ..self.upstream.clone()
        }
    }
}

fn precondition_failed() -> S3Response {
    S3Response {
        status: 412,
        headers: vec![("content-type".into(), "application/xml".into())],
        body: b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>PreconditionFailed</Code>\
                <Message>At least one of the pre-conditions you specified did not hold</Message></Error>"
            .to_vec(),
        body_too_large: None,
    }
}

fn answer(
    admin: &Admin,
    bucket: &str,
    r: Request,
    window: Duration,
    count: &AtomicU64,
) -> Result<S3Response> {
    let mut forward = forwarded(&r, bucket);
    let (method, key) = (forward.method, forward.object_key.clone());
    let (if_match, if_none_match) = (r.header("if-match"), r.header("if-none-match"));
    if method != Method::Put || (if_match.is_none() && if_none_match.is_none()) {
        return admin.send(forward);
    }
    // Check...
    let current = admin.send(S3Request::new(Method::Head, &key, usize::MAX))?;
    let exists = current.status == 200;
    let bare = |e: &str| e.trim().trim_matches('"').to_string();
    let etag = current.etag().map(bare);
    let refused = match (if_none_match, if_match) {
        (Some("*"), _) if exists => true,
        (_, Some(wanted)) => !exists || etag != Some(bare(wanted)),
        _ => false,
    };
    if refused {
        return Ok(precondition_failed());
    }
    // ...then, a while later, write whatever happened meanwhile.
    std::thread::sleep(window);
    forward
        .headers
        .retain(|(k, _)| k != "if-match" && k != "if-none-match");
    count.fetch_add(1, Ordering::Relaxed);
    admin.send(forward)
}

/// The S3 request a front on loopback passes on to the real endpoint for
/// `r`, a request for an object of `bucket` made in path style: its method,
/// key, query, body and the headers S3 reads (metadata, content type,
/// conditions, payload hash), to be signed again with the endpoint's keys
/// (the client's signature covers what it sent, not what the front sends).
pub fn forwarded(r: &Request, bucket: &str) -> S3Request {
    let method = match r.method.as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        _ => Method::Post,
    };
    let path = r.path();
    let key = percent_decode(
        path.strip_prefix(&format!("/{bucket}"))
            .unwrap_or(path)
            .trim_start_matches('/'),
    );
    let mut forward = S3Request::new(method, &key, usize::MAX);
    forward.query = query_pairs(r.query());
    forward.body = r.body.clone();
    for (k, v) in &r.headers {
        let kept = k.starts_with("x-amz-meta-")
            || matches!(
                k.as_str(),
                "content-type" | "if-match" | "if-none-match" | "x-amz-content-sha256"
            );
        if kept {
            forward.headers.push((k.clone(), v.clone()));
        }
    }
    forward
}
