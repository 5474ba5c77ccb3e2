//! Raw S3 calls from the host, outside the component: creating the test
//! bucket, planting foreign or corrupt lock objects, reading what the
//! component wrote. Signed by the crate's own `wire::prepare` (the same code
//! the component runs: S3's, or DynamoDB's for a config whose store is a
//! table) and sent with wasmtime-wasi-http's client.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::BodyExt;
use s3_lease::config::{ClientConfig, Scheme};
use s3_lease::stores::s3::{Method, S3Request, S3Response};
use s3_lease_host::http::full;
use std::time::{SystemTime, UNIX_EPOCH};

pub struct Admin {
    config: ClientConfig,
    runtime: tokio::runtime::Runtime,
}

impl Admin {
    pub fn new(config: ClientConfig) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Admin { config, runtime })
    }

    pub fn send(&self, request: S3Request) -> Result<S3Response> {
        let unix_seconds = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let http = to_http(self.config.prepare(&request, unix_seconds))?.map(full);
        let reply = send_http(&self.runtime, http)?;
        Ok(self.config.read_reply(&request, reply))
    }

    /// Creates the bucket; an existing one (ours) is fine.
    pub fn create_bucket(&self) -> Result<()> {
        let r = self.send(S3Request::new(Method::Put, "", usize::MAX))?;
        match r.status {
            200 => Ok(()),
            409 if r.s3_error().code == "BucketAlreadyOwnedByYou" => Ok(()),
            _ => bail!(
                "creating bucket {}: {}",
                self.config.seal_scope(),
                r.s3_error()
            ),
        }
    }

    pub fn put(&self, key: &str, body: &[u8]) -> Result<String> {
        let r = self.send(
            S3Request::new(Method::Put, key, usize::MAX)
                .body("application/octet-stream", body.to_vec()),
        )?;
        if r.status != 200 {
            bail!("PUT {key}: {}", r.s3_error());
        }
        r.etag()
            .map(str::to_string)
            .context("PUT reply without ETag")
    }

    /// The object's body and ETag, `None` when absent.
    pub fn get(&self, key: &str) -> Result<Option<(Vec<u8>, String)>> {
        let r = self.send(S3Request::new(Method::Get, key, usize::MAX))?;
        match r.status {
            404 => Ok(None),
            200 => {
                let etag = r.etag().unwrap_or_default().to_string();
                Ok(Some((r.body, etag)))
            }
            _ => bail!("GET {key}: {}", r.s3_error()),
        }
    }

    pub fn delete(&self, key: &str) -> Result<()> {
        let r = self.send(S3Request::new(Method::Delete, key, usize::MAX))?;
        if !matches!(r.status, 200 | 204 | 404) {
            bail!("DELETE {key}: {}", r.s3_error());
        }
        Ok(())
    }
}

/// A request `s3::prepare` signed, as an `http::Request` any client sends.
pub fn to_http(prepared: s3_lease::stores::s3::HttpRequest) -> Result<http::Request<Bytes>> {
    let scheme = match prepared.scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let mut builder = http::Request::builder()
        .method(prepared.method.as_str())
        .uri(format!(
            "{scheme}://{}{}",
            prepared.authority, prepared.path_and_query
        ))
        .header("host", &prepared.authority);
    for (name, value) in &prepared.headers {
        builder = builder.header(name, value);
    }
    Ok(builder.body(Bytes::from(prepared.body))?)
}

/// How long an admin request may take: a server that holds one open
/// fails the test that sent it instead of hanging it.
const ADMIN_REQUEST_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Sends `request` with wasmtime-wasi-http's client on `runtime`, and
/// reads the whole reply, within `ADMIN_REQUEST_LIMIT`.
pub fn send_http(
    runtime: &tokio::runtime::Runtime,
    request: http::Request<s3_lease_host::http::WasiBody>,
) -> Result<S3Response> {
    let exchange = async {
        let (response, io) = wasmtime_wasi_http::default_send_request(request, None)
            .await
            .map_err(|e| anyhow::anyhow!("sending to S3: {e:?}"))?;
        let driver = tokio::spawn(io);
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| anyhow::anyhow!("reading S3 reply: {e:?}"))?
            .to_bytes();
        driver.abort();
        let headers = parts.headers.iter().map(|(k, v)| {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (k.as_str().to_string(), v)
        });
        Ok(S3Response {
            status: parts.status.as_u16(),
            headers: headers.collect(),
            body: body.to_vec(),
            body_too_large: None,
        })
    };
    runtime.block_on(async {
        tokio::time::timeout(ADMIN_REQUEST_LIMIT, exchange)
            .await
            .unwrap_or_else(|_| bail!("no reply from S3 within {ADMIN_REQUEST_LIMIT:?}"))
    })
}
