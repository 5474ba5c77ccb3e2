//! A store that honours every condition one request at a time and lets
//! racing writers all win: an HTTP server on loopback in front of SeaweedFS
//! that evaluates a PUT's `If-None-Match` and `If-Match` itself (a HEAD),
//! waits a while, then writes without them. Whoever checked during the
//! window wins too: the check-then-write race that SeaweedFS itself had
//! before its fix, that MinIO had when a read quorum failed, and
//! versitygw's posix backend has. The store preflight must refuse it.
//!
//! Every request is re-signed with the endpoint's own keys (the client's
//! signature covers the conditions it strips). Plain threads: one
//! accepting, one per connection; HTTP/1.1 with `Content-Length` bodies,
//! as the component's requests are.

use crate::admin::Admin;
use crate::server::Endpoint;
use anyhow::{Context, Result};
use s3_lease::s3::{Method, S3Request, S3Response};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running racing store; stopped when dropped.
pub struct RacingStore {
    addr: SocketAddr,
    upstream: Endpoint,
    stop: Arc<AtomicBool>,
    /// Conditional PUTs whose check passed and that were then written.
    pub written_after_check: Arc<AtomicU64>,
    acceptor: Option<JoinHandle<()>>,
}

impl RacingStore {
    /// In front of `upstream`, waiting `window` between check and write.
    pub fn start(upstream: &Endpoint, window: Duration) -> Result<RacingStore> {
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let (flag, count, endpoint) = (stop.clone(), written.clone(), upstream.clone());
        let acceptor = std::thread::Builder::new()
            .name("racing-store".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (endpoint, count) = (endpoint.clone(), count.clone());
                            std::thread::spawn(move || {
                                let _ = serve(stream, &endpoint, window, &count);
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
            .context("starting the racing store")?;
        Ok(RacingStore {
            addr,
            upstream: upstream.clone(),
            stop,
            written_after_check: written,
            acceptor: Some(acceptor),
        })
    }

    /// The upstream's bucket and keys, at this store's address.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            url: format!("http://{}", self.addr),
            ..self.upstream.clone()
        }
    }
}

impl Drop for RacingStore {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
    }
}

/// One request as it came.
struct Incoming {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn serve(
    stream: TcpStream,
    upstream: &Endpoint,
    window: Duration,
    count: &AtomicU64,
) -> Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let admin = upstream.admin()?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let Some(request) = read_request(&mut reader)? else {
            return Ok(());
        };
        let head = request.method == "HEAD";
        let reply = answer(&admin, &upstream.bucket, request, window, count)?;
        write_reply(&mut writer, &reply, head)?;
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Result<Option<Incoming>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or("/").to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    Ok(Some(Incoming {
        method,
        path: path.to_string(),
        query,
        headers,
        body,
    }))
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn header<'a>(r: &'a Incoming, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
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
    r: Incoming,
    window: Duration,
    count: &AtomicU64,
) -> Result<S3Response> {
    let method = match r.method.as_str() {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        _ => Method::Post,
    };
    let key = decode(
        r.path
            .strip_prefix(&format!("/{bucket}"))
            .unwrap_or(&r.path)
            .trim_start_matches('/'),
    );
    let mut forward = S3Request::new(method, &key, usize::MAX);
    forward.query = r.query.clone();
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
    let (if_match, if_none_match) = (header(&r, "if-match"), header(&r, "if-none-match"));
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

fn write_reply(w: &mut TcpStream, r: &S3Response, head: bool) -> Result<()> {
    let mut out = format!("HTTP/1.1 {} X\r\n", r.status);
    let mut length = None;
    for (k, v) in &r.headers {
        match k.to_ascii_lowercase().as_str() {
            "content-length" => length = Some(v.clone()),
            "transfer-encoding" | "connection" | "keep-alive" => {}
            name => out.push_str(&format!("{name}: {v}\r\n")),
        }
    }
    let length = if head {
        length.unwrap_or_else(|| "0".into())
    } else {
        r.body.len().to_string()
    };
    out.push_str(&format!("content-length: {length}\r\n\r\n"));
    w.write_all(out.as_bytes())?;
    if !head {
        w.write_all(&r.body)?;
    }
    w.flush()?;
    Ok(())
}
