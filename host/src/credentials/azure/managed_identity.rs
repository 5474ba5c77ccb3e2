//! A managed identity's bearer tokens for Azure Storage: from the instance
//! metadata endpoint (IMDS, `169.254.169.254`), or from App Service's and
//! Container Apps' `IDENTITY_ENDPOINT` with `IDENTITY_HEADER`;
//! `AZURE_CLIENT_ID` picks a user-assigned identity. A [`TokenSource`],
//! refreshed on a live client like the AWS chain's credentials.

use crate::credentials::{percent_encode, AccessToken, TokenSource};
use crate::error::Error;
use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, UNIX_EPOCH};

/// The audience of a token for Azure Storage.
pub const STORAGE_RESOURCE: &str = "https://storage.azure.com/";

/// Bearer tokens from a managed identity: the instance metadata endpoint,
/// or an App Service identity endpoint. Blocking, plain HTTP on a local
/// address (both endpoints are), with a short timeout.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManagedIdentity {
    /// `http://169.254.169.254/metadata/identity/oauth2/token`, or
    /// `IDENTITY_ENDPOINT`.
    pub endpoint: String,
    /// App Service's `IDENTITY_HEADER`, sent as `X-IDENTITY-HEADER`; `None`
    /// for IMDS (which takes `Metadata: true`).
    pub identity_header: Option<String>,
    /// A user-assigned identity's client id.
    pub client_id: Option<String>,
    pub timeout: Duration,
}

/// IMDS's token endpoint.
pub const IMDS_ENDPOINT: &str = "http://169.254.169.254/metadata/identity/oauth2/token";

impl fmt::Debug for ManagedIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagedIdentity")
            .field("endpoint", &self.endpoint)
            .field(
                "identity_header",
                &self.identity_header.as_ref().map(|_| "<redacted>"),
            )
            .field("client_id", &self.client_id)
            .finish()
    }
}

impl ManagedIdentity {
    /// App Service's endpoint when `IDENTITY_ENDPOINT` and `IDENTITY_HEADER`
    /// are set, else IMDS; `AZURE_CLIENT_ID` for a user-assigned identity.
    pub fn from_vars(var: &impl Fn(&str) -> Option<String>) -> Self {
        let (endpoint, identity_header) = match (var("IDENTITY_ENDPOINT"), var("IDENTITY_HEADER")) {
            (Some(e), Some(h)) => (e, Some(h)),
            _ => (IMDS_ENDPOINT.to_string(), None),
        };
        ManagedIdentity {
            endpoint,
            identity_header,
            client_id: var("AZURE_CLIENT_ID"),
            timeout: Duration::from_secs(5),
        }
    }

    /// [`ManagedIdentity::from_vars`] on the process's environment.
    pub fn from_env() -> Self {
        Self::from_vars(&|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    /// One token for Azure Storage.
    pub fn token(&self) -> Result<AccessToken, Error> {
        let url = Url::parse(&self.endpoint)?;
        let api = if self.identity_header.is_some() {
            "2019-08-01"
        } else {
            "2018-02-01"
        };
        let mut query = format!(
            "api-version={api}&resource={}",
            percent_encode(STORAGE_RESOURCE)
        );
        if let Some(id) = &self.client_id {
            query.push_str(&format!("&client_id={}", percent_encode(id)));
        }
        let mut headers = vec![("Host".to_string(), url.authority.clone())];
        match &self.identity_header {
            Some(h) => headers.push(("X-IDENTITY-HEADER".into(), h.clone())),
            None => headers.push(("Metadata".into(), "true".into())),
        }
        let (status, body) = get(&url, &query, &headers, self.timeout)?;
        parse_token(status, &body, &self.endpoint)
    }
}

fn failed(what: impl Into<String>) -> Error {
    Error::invalid_config("credentials.azure-managed-identity", what.into())
}

/// The token endpoint's JSON: `access_token`, and `expires_on` (seconds
/// since 1970, a string from IMDS, a number from some endpoints).
fn parse_token(status: u16, body: &[u8], endpoint: &str) -> Result<AccessToken, Error> {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    if status != 200 {
        // The error's own words (never a token: a refusal carries none).
        let why = json
            .get("error_description")
            .or_else(|| json.get("error"))
            .and_then(|v| v.as_str())
            .unwrap_or("no reason given");
        return Err(failed(format!(
            "{endpoint} answered HTTP {status}: {}",
            why.chars().take(200).collect::<String>()
        )));
    }
    let token = json
        .get("access_token")
        .and_then(|v| v.as_str())
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_graphic()))
        .ok_or_else(|| failed(format!("{endpoint}'s reply has no usable access_token")))?;
    let expires_on = match json.get("expires_on") {
        Some(serde_json::Value::String(s)) => s.trim().parse::<u64>().ok(),
        Some(v) => v.as_u64(),
        None => None,
    };
    // An expiry past what the clock holds (a reply's digits, not ours to
    // trust) counts as none given, not as a panic.
    let expires = expires_on.and_then(|s| UNIX_EPOCH.checked_add(Duration::from_secs(s)));
    Ok(AccessToken::new(token, expires))
}

impl TokenSource for ManagedIdentity {
    fn fetch(&self) -> Result<AccessToken, Error> {
        self.token()
    }

    fn describe(&self) -> String {
        format!("the managed identity at {}", self.endpoint)
    }
}

/// `http://host[:port]/path`, the only URLs identity endpoints have.
struct Url {
    authority: String,
    path: String,
}

impl Url {
    fn parse(text: &str) -> Result<Url, Error> {
        let rest = text.strip_prefix("http://").ok_or_else(|| {
            failed(format!(
                "{text:?}: only http:// identity endpoints are supported"
            ))
        })?;
        let (authority, path) = match rest.split_once('/') {
            Some((a, p)) => (a.to_string(), format!("/{p}")),
            None => (rest.to_string(), "/".to_string()),
        };
        Ok(Url { authority, path })
    }
}

/// One HTTP/1.1 GET, `Connection: close`: the status and the body.
fn get(
    url: &Url,
    query: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<(u16, Vec<u8>), Error> {
    let unreachable = |e: std::io::Error| failed(format!("{}: {e}", url.authority));
    let address = url
        .authority
        .to_socket_addrs()
        .map_err(unreachable)?
        .next()
        .ok_or_else(|| failed(format!("{}: no address", url.authority)))?;
    let mut stream = TcpStream::connect_timeout(&address, timeout).map_err(unreachable)?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(unreachable)?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(unreachable)?;
    let mut request = format!("GET {}?{query} HTTP/1.1\r\n", url.path);
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(unreachable)?;
    let mut reply = Vec::new();
    stream
        .take(1 << 20)
        .read_to_end(&mut reply)
        .map_err(unreachable)?;
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| failed(format!("{}: not an HTTP reply", url.authority)))?;
    let head = String::from_utf8_lossy(&reply[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| failed(format!("{}: no HTTP status", url.authority)))?;
    let mut body = reply[split + 4..].to_vec();
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Ok((status, body))
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = body.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size = std::str::from_utf8(&body[..line_end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = line_end + 2;
        let end = (start + size).min(body.len());
        out.extend_from_slice(&body[start..end]);
        body = body.get(end + 2..).unwrap_or(&[]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    use crate::credentials::vars;

    /// A fake IMDS on loopback: answers what it is asked, records the
    /// request lines and headers it got.
    fn fake_imds(replies: Vec<(u16, String)>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for (status, body) in replies {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = stream.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                log.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&request).into_owned());
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(reply.as_bytes()).unwrap();
            }
        });
        (
            format!("http://{address}/metadata/identity/oauth2/token"),
            seen,
        )
    }

    #[test]
    fn a_token_from_a_fake_imds_with_its_expiry_and_no_secret_shown() {
        let (endpoint, seen) = fake_imds(vec![
            (
                200,
                r#"{"access_token":"eyJ0.TOKEN-ONE","expires_on":"1900000000","resource":"https://storage.azure.com/","token_type":"Bearer"}"#.into(),
            ),
            (
                400,
                r#"{"error":"invalid_request","error_description":"Identity not found"}"#.into(),
            ),
            (200, r#"{"expires_on":1900000000}"#.into()),
        ]);
        let identity = ManagedIdentity {
            endpoint: endpoint.clone(),
            identity_header: None,
            client_id: Some("client-1".into()),
            timeout: Duration::from_secs(5),
        };
        let fetched = identity.fetch().unwrap();
        assert_eq!(fetched.token, "eyJ0.TOKEN-ONE");
        assert_eq!(
            fetched.expires,
            Some(UNIX_EPOCH + Duration::from_secs(1_900_000_000))
        );
        assert!(!format!("{fetched:?} {identity:?}").contains("TOKEN-ONE"));
        let request = seen.lock().unwrap()[0].clone();
        assert!(
            request.starts_with(
                "GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F&client_id=client-1 HTTP/1.1"
            ),
            "{request}"
        );
        assert!(request.contains("\r\nMetadata: true\r\n"), "{request}");
        let e = identity.fetch().unwrap_err().to_string();
        assert!(
            e.contains("HTTP 400") && e.contains("Identity not found"),
            "{e}"
        );
        let e = identity.fetch().unwrap_err().to_string();
        assert!(e.contains("no usable access_token"), "{e}");
        // Nothing listens any more: an error, not a hang.
        let gone = ManagedIdentity {
            timeout: Duration::from_millis(500),
            ..identity
        };
        assert!(gone.fetch().is_err());
    }

    #[test]
    fn an_expiry_past_what_the_clock_holds_counts_as_none_given() {
        let body = br#"{"access_token":"T3","expires_on":"18446744073709551615"}"#;
        let token = parse_token(200, body, "imds").unwrap();
        assert_eq!((token.token.as_str(), token.expires), ("T3", None));
    }

    #[test]
    fn app_services_endpoint_takes_its_header() {
        let (endpoint, seen) = fake_imds(vec![(
            200,
            r#"{"access_token":"T2","expires_on":1900000000}"#.into(),
        )]);
        let identity = ManagedIdentity::from_vars(&vars(&[
            ("IDENTITY_ENDPOINT", &endpoint),
            ("IDENTITY_HEADER", "hdr-secret"),
        ]));
        assert!(!format!("{identity:?}").contains("hdr-secret"));
        assert_eq!(identity.token().unwrap().token, "T2");
        let request = seen.lock().unwrap()[0].clone();
        assert!(request.contains("api-version=2019-08-01"), "{request}");
        assert!(
            request.contains("\r\nX-IDENTITY-HEADER: hdr-secret\r\n"),
            "{request}"
        );
    }
}
