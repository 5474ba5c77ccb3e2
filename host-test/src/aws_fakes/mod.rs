//! Fakes of AWS's own credential endpoints, on loopback, behaving as AWS
//! documents them, and a gate that checks what they hand out as S3 would.
//!
//! - [`gate::TokenGate`]: issues temporary credentials and checks them on
//!   every S3 request (SeaweedFS itself refuses session tokens it did not
//!   issue), expiring each at its `Expiration`.
//! - [`CredentialEndpoints`]: one loopback server with the EC2 instance
//!   metadata service (IMDSv2: a token PUT, then the role's credentials),
//!   the ECS / EKS Pod Identity container endpoint (with its authorization
//!   token), STS (`AssumeRoleWithWebIdentity`, `AssumeRole`), and a
//!   `credential_process` JSON. All hand out the gate's current credentials,
//!   rotated as AWS rotates them: new ones once half the lifetime is gone.

pub mod gate;
pub mod http;

use gate::{Issued, TokenGate};
use http::{Request, Response};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub const ROLE: &str = "s3-lease-test-role";
pub const CONTAINER_TOKEN: &str = "container-auth-token-for-tests";
pub const WEB_IDENTITY_TOKEN: &str = "eyJ-web-identity-token-for-tests";

pub struct CredentialEndpoints {
    pub url: String,
    shared: Arc<Shared>,
}

struct Shared {
    gate: Arc<TokenGate>,
    lifetime: Duration,
    current: Mutex<Option<Issued>>,
    /// Requests answered with credentials, per endpoint.
    imds: AtomicUsize,
    container: AtomicUsize,
    sts: AtomicUsize,
    process: AtomicUsize,
    imds_tokens: Mutex<Vec<String>>,
}

impl CredentialEndpoints {
    pub fn start(gate: Arc<TokenGate>, lifetime: Duration) -> anyhow::Result<Self> {
        let shared = Arc::new(Shared {
            gate,
            lifetime,
            current: Mutex::default(),
            imds: AtomicUsize::new(0),
            container: AtomicUsize::new(0),
            sts: AtomicUsize::new(0),
            process: AtomicUsize::new(0),
            imds_tokens: Mutex::default(),
        });
        let handler = shared.clone();
        let url = http::serve(Arc::new(move |r| handler.handle(r)))?;
        Ok(CredentialEndpoints { url, shared })
    }

    /// Credential answers so far: (imds, container, sts, process).
    pub fn served(&self) -> (usize, usize, usize, usize) {
        let s = &self.shared;
        (
            s.imds.load(Ordering::SeqCst),
            s.container.load(Ordering::SeqCst),
            s.sts.load(Ordering::SeqCst),
            s.process.load(Ordering::SeqCst),
        )
    }

    /// The IMDS session tokens handed out (secrets too).
    pub fn imds_tokens(&self) -> Vec<String> {
        self.shared.imds_tokens.lock().unwrap().clone()
    }
}

impl Shared {
    /// The credentials handed out now: the same until half their lifetime
    /// is gone, then new ones (the old stay valid until they expire).
    fn credentials(&self) -> Issued {
        let mut current = self.current.lock().unwrap();
        let fresh = current.as_ref().is_some_and(|c| {
            c.expires
                .duration_since(SystemTime::now())
                .is_ok_and(|left| left > self.lifetime / 2)
        });
        if !fresh {
            *current = Some(self.gate.issue(self.lifetime));
        }
        current.clone().unwrap()
    }

    fn handle(&self, r: Request) -> Response {
        let path = r.path().to_string();
        match (r.method.as_str(), path.as_str()) {
            // IMDSv2: a session token first, then calls that carry it.
            ("PUT", "/latest/api/token") => {
                if r.header("x-aws-ec2-metadata-token-ttl-seconds").is_none() {
                    return Response::new(400, "text/plain", "missing ttl");
                }
                let ttl = r
                    .header("x-aws-ec2-metadata-token-ttl-seconds")
                    .unwrap_or("21600")
                    .to_string();
                let token = format!("imds-session-{}", self.imds_tokens.lock().unwrap().len());
                self.imds_tokens.lock().unwrap().push(token.clone());
                let mut response = Response::new(200, "text/plain", token);
                response
                    .headers
                    .push(("x-aws-ec2-metadata-token-ttl-seconds".into(), ttl));
                response
            }
            ("GET", p) if p.starts_with("/latest/") => {
                let known = r
                    .header("x-aws-ec2-metadata-token")
                    .is_some_and(|t| self.imds_tokens.lock().unwrap().iter().any(|k| k == t));
                if !known {
                    return Response::new(401, "text/plain", "");
                }
                match p {
                    "/latest/meta-data/iam/security-credentials/" => {
                        Response::new(200, "text/plain", ROLE)
                    }
                    _ if p == format!("/latest/meta-data/iam/security-credentials/{ROLE}") => {
                        self.imds.fetch_add(1, Ordering::SeqCst);
                        let c = self.credentials();
                        let body = serde_json::json!({
                            "Code": "Success",
                            "LastUpdated": gate::iso8601(SystemTime::now()),
                            "Type": "AWS-HMAC",
                            "AccessKeyId": c.access_key_id,
                            "SecretAccessKey": c.secret_access_key,
                            "Token": c.session_token,
                            "Expiration": c.expiration(),
                        });
                        Response::new(200, "text/plain", body.to_string())
                    }
                    "/latest/meta-data/placement/region" => {
                        Response::new(200, "text/plain", "eu-north-1")
                    }
                    _ => Response::new(404, "text/plain", ""),
                }
            }
            // ECS / EKS Pod Identity: the authorization token must match.
            ("GET", "/container/credentials") => {
                if r.header("authorization") != Some(CONTAINER_TOKEN) {
                    return Response::new(403, "application/json", "{\"Message\":\"denied\"}");
                }
                self.container.fetch_add(1, Ordering::SeqCst);
                let c = self.credentials();
                let body = serde_json::json!({
                    "AccessKeyId": c.access_key_id,
                    "SecretAccessKey": c.secret_access_key,
                    "Token": c.session_token,
                    "Expiration": c.expiration(),
                    "RoleArn": format!("arn:aws:iam::123456789012:role/{ROLE}"),
                });
                Response::new(200, "application/json", body.to_string())
            }
            // What a `credential_process` prints (Version 1).
            ("GET", "/process") => {
                self.process.fetch_add(1, Ordering::SeqCst);
                let c = self.credentials();
                let body = serde_json::json!({
                    "Version": 1,
                    "AccessKeyId": c.access_key_id,
                    "SecretAccessKey": c.secret_access_key,
                    "SessionToken": c.session_token,
                    "Expiration": c.expiration(),
                });
                Response::new(200, "application/json", body.to_string())
            }
            ("POST", "/") => self.sts(&r),
            _ => Response::new(404, "text/plain", ""),
        }
    }

    /// STS's query protocol: a form body, an XML answer.
    fn sts(&self, r: &Request) -> Response {
        let form = String::from_utf8_lossy(&r.body).into_owned();
        let param = |name: &str| {
            form.split('&').find_map(|p| {
                p.strip_prefix(name)
                    .and_then(|v| v.strip_prefix('='))
                    .map(|v| v.replace("%2F", "/").replace("%3A", ":"))
            })
        };
        let action = param("Action").unwrap_or_default();
        let sts_error = |code: &str| {
            Response::new(
                400,
                "text/xml",
                format!("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type><Code>{code}</Code><Message>{code}</Message></Error><RequestId>STS</RequestId></ErrorResponse>"),
            )
        };
        match action.as_str() {
            "AssumeRoleWithWebIdentity" => {
                if param("WebIdentityToken").as_deref() != Some(WEB_IDENTITY_TOKEN) {
                    return sts_error("InvalidIdentityToken");
                }
            }
            // Signed by the source profile's keys: that it is signed is
            // all this fake checks.
            "AssumeRole" => {
                if r.header("authorization").is_none() {
                    return sts_error("MissingAuthenticationToken");
                }
            }
            _ => return sts_error("InvalidAction"),
        }
        if param("RoleArn").is_none() {
            return sts_error("ValidationError");
        }
        self.sts.fetch_add(1, Ordering::SeqCst);
        let c = self.credentials();
        Response::new(
            200,
            "text/xml",
            format!(
                "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{action}Result>\
                 <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/{ROLE}/s3-lease</Arn><AssumedRoleId>AROATEST:s3-lease</AssumedRoleId></AssumedRoleUser>\
                 <Credentials><AccessKeyId>{}</AccessKeyId><SecretAccessKey>{}</SecretAccessKey><SessionToken>{}</SessionToken><Expiration>{}</Expiration></Credentials>\
                 </{action}Result><ResponseMetadata><RequestId>STS-1</RequestId></ResponseMetadata></{action}Response>",
                c.access_key_id,
                c.secret_access_key,
                c.session_token,
                c.expiration()
            ),
        )
    }
}
