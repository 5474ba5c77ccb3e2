//! What AWS does with temporary credentials, in front of SeaweedFS (which
//! refuses session tokens it did not issue): a loopback S3 endpoint that
//! checks each request's SigV4 signature against the credentials it
//! issued, answers as S3 does when they are unknown (403
//! `InvalidAccessKeyId`), carry the wrong token (400 `InvalidToken`) or have
//! expired (400 `ExpiredToken`), and otherwise passes the request on to
//! SeaweedFS signed with SeaweedFS's own key. The fakes of STS, instance
//! metadata and container credentials hand out what it issues.

use super::http::{self, Request, Response};
use crate::server::Endpoint;
use anyhow::Result;
use bytes::Bytes;
use s3_lease::sigv4::{self, Credentials, Scope, SigningRequest};
use s3_lease::testing::uri::query_pairs;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Temporary credentials as AWS hands them out.
#[derive(Clone)]
pub struct Issued {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
    pub expires: SystemTime,
}

impl Issued {
    /// `Expiration` as AWS writes it (ISO 8601, UTC).
    pub fn expiration(&self) -> String {
        iso8601(self.expires)
    }
}

pub struct TokenGate {
    pub url: String,
    shared: Arc<Shared>,
}

struct Shared {
    upstream: Endpoint,
    issued: Mutex<HashMap<String, Issued>>,
    /// Revoked credentials, kept for leak checks.
    revoked: Mutex<Vec<Issued>>,
    /// Access keys that signed a request the gate passed on, in order.
    used: Mutex<Vec<String>>,
    refusals: Mutex<Vec<String>>,
    passed: AtomicUsize,
    /// Set: the next PUT is passed on, then answered 500 and every key
    /// issued so far revoked (`fail_next_put_and_revoke`).
    fail_next_put: std::sync::atomic::AtomicBool,
    serial: AtomicU64,
    runtime: tokio::runtime::Runtime,
}

impl TokenGate {
    pub fn start(upstream: &Endpoint) -> Result<TokenGate> {
        let shared = Arc::new(Shared {
            upstream: upstream.clone(),
            issued: Mutex::default(),
            revoked: Mutex::default(),
            used: Mutex::default(),
            refusals: Mutex::default(),
            passed: AtomicUsize::new(0),
            fail_next_put: std::sync::atomic::AtomicBool::new(false),
            serial: AtomicU64::new(0),
            runtime: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?,
        });
        let handler = shared.clone();
        let url = http::serve(Arc::new(move |r| handler.handle(r)))?;
        Ok(TokenGate { url, shared })
    }

    /// New temporary credentials, valid for `lifetime` from now.
    pub fn issue(&self, lifetime: Duration) -> Issued {
        let n = self.shared.serial.fetch_add(1, Ordering::SeqCst);
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let issued = Issued {
            access_key_id: format!("ASIAFAKE{n:04}{}", stamp % 100_000),
            secret_access_key: format!("gate-secret/{n}+{stamp}"),
            session_token: format!("IQoJgate-token/{n}+{stamp}=="),
            expires: SystemTime::now() + lifetime,
        };
        self.shared
            .issued
            .lock()
            .unwrap()
            .insert(issued.access_key_id.clone(), issued.clone());
        issued
    }

    /// Revokes credentials before their expiry (a role's session revoked):
    /// the gate refuses them as unknown from now on.
    pub fn revoke(&self, access_key_id: &str) {
        if let Some(gone) = self.shared.issued.lock().unwrap().remove(access_key_id) {
            self.shared.revoked.lock().unwrap().push(gone);
        }
    }

    /// Every secret and token it issued (to check none leaks into output).
    pub fn secrets(&self) -> Vec<String> {
        let issued = self.shared.issued.lock().unwrap();
        let revoked = self.shared.revoked.lock().unwrap();
        issued
            .values()
            .chain(revoked.iter())
            .flat_map(|i| [i.secret_access_key.clone(), i.session_token.clone()])
            .collect()
    }

    /// The distinct access keys of the requests passed on, in first use order.
    pub fn keys_used(&self) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for k in self.shared.used.lock().unwrap().iter() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        keys
    }

    /// Each refused request: `CODE access-key`.
    pub fn refusals(&self) -> Vec<String> {
        self.shared.refusals.lock().unwrap().clone()
    }

    pub fn passed(&self) -> usize {
        self.shared.passed.load(Ordering::SeqCst)
    }

    /// One outage as a call sees it: the next PUT reaches SeaweedFS and is
    /// applied, its reply is a 500, and every key issued so far is revoked
    /// (the read-back after it is refused), so the caller fetches new keys
    /// and runs its call again.
    pub fn fail_next_put_and_revoke(&self) {
        self.shared.fail_next_put.store(true, Ordering::SeqCst);
    }
}

fn s3_error(status: u16, code: &str, message: &str) -> Response {
    Response::new(
        status,
        "application/xml",
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}</Message><RequestId>GATE</RequestId></Error>"
        ),
    )
}

impl Shared {
    fn handle(&self, request: Request) -> Response {
        match self.check(&request) {
            Ok(()) => {}
            Err((status, code, message, key)) => {
                self.refusals.lock().unwrap().push(format!("{code} {key}"));
                return s3_error(status, code, message);
            }
        }
        let failing = request.method == "PUT" && self.fail_next_put.swap(false, Ordering::SeqCst);
        match self.forward(request) {
            Ok(_) if failing => {
                let mut issued = self.issued.lock().unwrap();
                self.revoked
                    .lock()
                    .unwrap()
                    .extend(issued.drain().map(|(_, i)| i));
                s3_error(500, "InternalError", "We encountered an internal error.")
            }
            Ok(r) => r,
            Err(e) => s3_error(502, "GateUpstream", &format!("{e:#}")),
        }
    }

    /// As S3 checks temporary credentials.
    #[allow(clippy::type_complexity)]
    fn check(&self, r: &Request) -> Result<(), (u16, &'static str, &'static str, String)> {
        let auth = r.header("authorization").unwrap_or("");
        let field = |name: &str| {
            auth.split([' ', ','])
                .find_map(|p| p.strip_prefix(name))
                .unwrap_or("")
                .to_string()
        };
        let credential = field("Credential=");
        let mut scope = credential.split('/');
        let key = scope.next().unwrap_or("").to_string();
        let _date = scope.next();
        let region = scope.next().unwrap_or("").to_string();
        let refuse = |status, code, message| Err((status, code, message, key.clone()));
        let Some(issued) = self.issued.lock().unwrap().get(&key).cloned() else {
            return refuse(
                403,
                "InvalidAccessKeyId",
                "The AWS Access Key Id you provided does not exist in our records.",
            );
        };
        if r.header("x-amz-security-token") != Some(issued.session_token.as_str()) {
            return refuse(
                400,
                "InvalidToken",
                "The provided token is malformed or otherwise invalid.",
            );
        }
        if SystemTime::now() >= issued.expires {
            return refuse(400, "ExpiredToken", "The provided token has expired.");
        }
        // Sign what was signed, with the issued secret, and compare.
        let signed = field("SignedHeaders=");
        let headers: Vec<(String, String)> = signed
            .split(';')
            .filter(|n| !matches!(*n, "host" | "x-amz-date" | "x-amz-security-token"))
            .map(|n| (n.to_string(), r.header(n).unwrap_or("").to_string()))
            .collect();
        let query = query_pairs(r.query());
        let payload = r
            .header("x-amz-content-sha256")
            .unwrap_or("UNSIGNED-PAYLOAD");
        let Some(seconds) = r.header("x-amz-date").and_then(parse_amz_date) else {
            return refuse(403, "AccessDenied", "No or bad x-amz-date.");
        };
        let expected = sigv4::sign(
            &SigningRequest {
                method: &r.method,
                host: r.header("host").unwrap_or(""),
                path: r.path(),
                query: &query,
                headers: &headers,
                payload_sha256_hex: payload,
            },
            &Credentials {
                access_key_id: issued.access_key_id.clone(),
                secret_access_key: issued.secret_access_key.clone(),
                session_token: Some(issued.session_token.clone()),
            },
            Scope {
                region: &region,
                service: "s3",
                unix_seconds: seconds,
            },
        );
        let ours = expected
            .iter()
            .find(|(n, _)| n == "authorization")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        if ours != auth {
            return refuse(
                403,
                "SignatureDoesNotMatch",
                "The request signature we calculated does not match the signature you provided.",
            );
        }
        self.used.lock().unwrap().push(key.clone());
        Ok(())
    }

    /// Passes the request on to SeaweedFS, signed with its own key.
    fn forward(&self, r: Request) -> Result<Response> {
        self.passed.fetch_add(1, Ordering::SeqCst);
        let up = &self.upstream;
        let authority = up.url.trim_start_matches("http://").to_string();
        let keep: Vec<(String, String)> = r
            .headers
            .iter()
            .filter(|(n, _)| {
                !matches!(
                    n.as_str(),
                    "authorization"
                        | "x-amz-date"
                        | "x-amz-security-token"
                        | "host"
                        | "content-length"
                        | "connection"
                        | "transfer-encoding"
                )
            })
            .cloned()
            .collect();
        let query = query_pairs(r.query());
        let payload = r
            .header("x-amz-content-sha256")
            .unwrap_or("UNSIGNED-PAYLOAD")
            .to_string();
        let seconds = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let auth = sigv4::sign(
            &SigningRequest {
                method: &r.method,
                host: &authority,
                path: r.path(),
                query: &query,
                headers: &keep,
                payload_sha256_hex: &payload,
            },
            &Credentials {
                access_key_id: up.access_key_id.clone(),
                secret_access_key: up.secret_access_key.clone(),
                session_token: None,
            },
            Scope {
                region: &up.region,
                service: "s3",
                unix_seconds: seconds,
            },
        );
        let mut builder = ::http::Request::builder()
            .method(r.method.as_str())
            .uri(format!("{}{}", up.url, r.target))
            .header("host", &authority);
        for (n, v) in keep.iter().chain(auth.iter()) {
            builder = builder.header(n, v);
        }
        let request = builder.body(s3_lease_host::http::full(Bytes::from(r.body)))?;
        let head = r.method == "HEAD";
        let r = crate::admin::send_http(&self.runtime, request)?;
        Ok(Response {
            status: r.status,
            headers: r.headers,
            body: r.body,
            head,
        })
    }
}

/// `20261123T160000Z` to Unix seconds.
fn parse_amz_date(d: &str) -> Option<u64> {
    let n = |r: std::ops::Range<usize>| d.get(r)?.parse::<i64>().ok();
    let (y, m, day) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (h, min, s) = (n(9..11)?, n(11..13)?, n(13..15)?);
    let days = days_from_civil(y, m, day);
    u64::try_from(days * 86_400 + h * 3600 + min * 60 + s).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// ISO 8601 UTC, as AWS writes `Expiration` (the S3 model's writer).
pub fn iso8601(t: SystemTime) -> String {
    let ms = t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis();
    s3_lease::stores::s3::model::dates::iso8601(u64::try_from(ms).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_449_600 + 3_723);
        let iso = iso8601(t);
        let amz: String = iso.replace(['-', ':'], "").replace(".000", "");
        assert_eq!(parse_amz_date(&amz), Some(1_795_449_600 + 3_723));
    }
}
