//! Azure Blob Storage credentials, taken as the Azure SDKs take them:
//!
//! - a connection string (`AZURE_STORAGE_CONNECTION_STRING`): `AccountName`,
//!   `AccountKey` or `SharedAccessSignature`, `BlobEndpoint` or
//!   `DefaultEndpointsProtocol` and `EndpointSuffix`, or
//!   `UseDevelopmentStorage=true` (Azurite's well-known account);
//! - else `AZURE_STORAGE_ACCOUNT` with `AZURE_STORAGE_KEY` or
//!   `AZURE_STORAGE_SAS_TOKEN`;
//! - else a managed identity: a bearer token for `https://storage.azure.com/`
//!   from the instance metadata endpoint (IMDS, `169.254.169.254`), or from
//!   App Service's and Container Apps' `IDENTITY_ENDPOINT` with
//!   `IDENTITY_HEADER`; `AZURE_CLIENT_ID` picks a user-assigned identity.
//!   [`ManagedIdentity`] is a [`CredentialsSource`], refreshed like the AWS
//!   chain's credentials.

use super::{CredentialsSource, FetchedCredentials};
use crate::bindings::{AzureCredential, Credentials};
use crate::Error;
use std::fmt;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Azurite's well-known development account and key (public, in
/// Microsoft's documentation).
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
pub const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The audience of a token for Azure Storage.
pub const STORAGE_RESOURCE: &str = "https://storage.azure.com/";

/// What `FetchedCredentials.credentials.access_key_id` says when its
/// `secret_access_key` is an Azure bearer token (the credential refresher
/// hands both kinds the same way).
pub const BEARER_MARKER: &str = "azure-bearer-token";

/// Where an Azure container is and how to authorize requests to it.
/// `Debug` never shows the key, the SAS or a token.
#[derive(Clone, PartialEq, Eq)]
pub struct AzureStore {
    /// `https://<account>.blob.core.windows.net`, or an emulator's root.
    pub endpoint: String,
    /// The account goes first in every path (emulators: Azurite).
    pub path_style: bool,
    pub account: String,
    pub container: String,
    pub credential: AzureAuth,
}

/// How requests are authorized.
#[derive(Clone, PartialEq, Eq)]
pub enum AzureAuth {
    SharedKey(String),
    Sas(String),
    /// A managed identity's token, fetched at connect time and refreshed.
    ManagedIdentity(ManagedIdentity),
}

impl AzureStore {
    /// The WIT credential for the component; a managed identity's token
    /// comes from `token` (the first one fetched).
    pub fn wit_credential(&self, token: Option<&str>) -> AzureCredential {
        match &self.credential {
            AzureAuth::SharedKey(key) => AzureCredential::SharedKey(key.clone()),
            AzureAuth::Sas(sas) => AzureCredential::Sas(sas.clone()),
            AzureAuth::ManagedIdentity(_) => {
                AzureCredential::Bearer(token.unwrap_or_default().to_string())
            }
        }
    }
}

impl fmt::Debug for AzureAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AzureAuth::SharedKey(_) => f.write_str("SharedKey(<redacted>)"),
            AzureAuth::Sas(_) => f.write_str("Sas(<redacted>)"),
            AzureAuth::ManagedIdentity(m) => write!(f, "{m:?}"),
        }
    }
}

impl fmt::Debug for AzureStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureStore")
            .field("endpoint", &self.endpoint)
            .field("path_style", &self.path_style)
            .field("account", &self.account)
            .field("container", &self.container)
            .field("credential", &self.credential)
            .finish()
    }
}

fn invalid(field: &str, reason: impl Into<String>) -> Error {
    Error::invalid_config(field, reason.into())
}

/// The container's store from the usual Azure variables (see the module).
pub fn from_vars(
    container: &str,
    var: &impl Fn(&str) -> Option<String>,
) -> Result<AzureStore, Error> {
    if let Some(connection) = var("AZURE_STORAGE_CONNECTION_STRING") {
        return from_connection_string(container, &connection);
    }
    let account = var("AZURE_STORAGE_ACCOUNT").ok_or_else(|| {
        invalid(
            "AZURE_STORAGE_ACCOUNT",
            "is not set, nor AZURE_STORAGE_CONNECTION_STRING: an azure-blob store needs its account",
        )
    })?;
    let credential = if let Some(key) = var("AZURE_STORAGE_KEY") {
        AzureAuth::SharedKey(key)
    } else if let Some(sas) = var("AZURE_STORAGE_SAS_TOKEN") {
        AzureAuth::Sas(sas)
    } else {
        AzureAuth::ManagedIdentity(ManagedIdentity::from_vars(var))
    };
    Ok(AzureStore {
        endpoint: format!("https://{account}.blob.core.windows.net"),
        path_style: false,
        account,
        container: container.to_string(),
        credential,
    })
}

/// A connection string's settings (`Name=value;…`; values may hold `=`).
pub fn from_connection_string(container: &str, text: &str) -> Result<AzureStore, Error> {
    const FIELD: &str = "AZURE_STORAGE_CONNECTION_STRING";
    let mut get = std::collections::HashMap::new();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((name, value)) = part.split_once('=') else {
            // Never echo the part: it may be a secret.
            return Err(invalid(FIELD, "a part is not Name=value"));
        };
        get.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let dev = get
        .get("usedevelopmentstorage")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let account = match (get.get("accountname"), dev) {
        (Some(a), _) => a.clone(),
        (None, true) => DEV_ACCOUNT.to_string(),
        (None, false) => return Err(invalid(FIELD, "has no AccountName")),
    };
    let credential = match (get.get("accountkey"), get.get("sharedaccesssignature"), dev) {
        (Some(key), _, _) => AzureAuth::SharedKey(key.clone()),
        (None, Some(sas), _) => AzureAuth::Sas(sas.clone()),
        (None, None, true) => AzureAuth::SharedKey(DEV_KEY.to_string()),
        (None, None, false) => {
            return Err(invalid(
                FIELD,
                "has neither AccountKey nor SharedAccessSignature",
            ))
        }
    };
    let blob_endpoint = match (get.get("blobendpoint"), dev) {
        (Some(e), _) => e.trim_end_matches('/').to_string(),
        (None, true) => format!("http://127.0.0.1:10000/{DEV_ACCOUNT}"),
        (None, false) => {
            let protocol = get
                .get("defaultendpointsprotocol")
                .map_or("https", String::as_str);
            let suffix = get
                .get("endpointsuffix")
                .map_or("core.windows.net", String::as_str);
            format!("{protocol}://{account}.blob.{suffix}")
        }
    };
    let (endpoint, path_style) = split_endpoint(&blob_endpoint, &account)?;
    Ok(AzureStore {
        endpoint,
        path_style,
        account,
        container: container.to_string(),
        credential,
    })
}

/// A blob endpoint with a path (an emulator's: `http://host:port/account`)
/// is the root with the account in every path; without one, the account's
/// own host.
fn split_endpoint(blob_endpoint: &str, account: &str) -> Result<(String, bool), Error> {
    let (scheme, rest) = blob_endpoint.split_once("://").ok_or_else(|| {
        invalid(
            "AZURE_STORAGE_CONNECTION_STRING",
            format!("BlobEndpoint {blob_endpoint:?} has no scheme"),
        )
    })?;
    match rest.split_once('/') {
        None => Ok((blob_endpoint.to_string(), false)),
        Some((host, path)) if path == account => Ok((format!("{scheme}://{host}"), true)),
        Some(_) => Err(invalid(
            "AZURE_STORAGE_CONNECTION_STRING",
            format!(
                "BlobEndpoint {blob_endpoint:?}: a path must be the account ({account:?}) alone"
            ),
        )),
    }
}

/// Bearer tokens from a managed identity: the instance metadata endpoint,
/// or an App Service identity endpoint. Blocking, plain HTTP on a local
/// address (both endpoints are), with a short timeout.
#[derive(Clone, PartialEq, Eq)]
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

/// A token and when it expires. `Debug` never shows the token.
#[derive(Clone)]
pub struct AzureToken {
    pub token: String,
    pub expires: Option<SystemTime>,
}

impl fmt::Debug for AzureToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureToken")
            .field("token", &"<redacted>")
            .field("expires", &self.expires)
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

    /// One token for Azure Storage.
    pub fn token(&self) -> Result<AzureToken, Error> {
        let url = Url::parse(&self.endpoint)?;
        let api = if self.identity_header.is_some() {
            "2019-08-01"
        } else {
            "2018-02-01"
        };
        let mut query = format!("api-version={api}&resource={}", encode(STORAGE_RESOURCE));
        if let Some(id) = &self.client_id {
            query.push_str(&format!("&client_id={}", encode(id)));
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
fn parse_token(status: u16, body: &[u8], endpoint: &str) -> Result<AzureToken, Error> {
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
    Ok(AzureToken {
        token: token.to_string(),
        expires: expires_on.map(|s| UNIX_EPOCH + Duration::from_secs(s)),
    })
}

impl CredentialsSource for ManagedIdentity {
    /// The token as the refresher carries credentials: `BEARER_MARKER` as
    /// the key id, the token as the secret (see `Client::connect`).
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        let token = self.token()?;
        Ok(FetchedCredentials {
            credentials: Credentials {
                access_key_id: BEARER_MARKER.into(),
                secret_access_key: token.token,
                session_token: None,
            },
            expires: token.expires,
            source: "AzureManagedIdentity".into(),
        })
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

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
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
    use std::collections::HashMap;
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn connection_strings_as_the_sdks_read_them() {
        let s = from_connection_string("locks", "UseDevelopmentStorage=true").unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.path_style, s.account.as_str()),
            ("http://127.0.0.1:10000", true, DEV_ACCOUNT)
        );
        assert_eq!(s.credential, AzureAuth::SharedKey(DEV_KEY.into()));
        let s = from_connection_string(
            "locks",
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5==;\
             BlobEndpoint=http://127.0.0.1:41000/devstoreaccount1;",
        )
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.path_style),
            ("http://127.0.0.1:41000", true)
        );
        assert_eq!(s.credential, AzureAuth::SharedKey("a2V5==".into()));
        let s = from_connection_string(
            "c1",
            "AccountName=acct;SharedAccessSignature=sv=2024-11-04&sig=a%2Bb%3D;EndpointSuffix=core.chinacloudapi.cn",
        )
        .unwrap();
        assert_eq!(
            (s.endpoint.as_str(), s.path_style),
            ("https://acct.blob.core.chinacloudapi.cn", false)
        );
        assert_eq!(
            s.credential,
            AzureAuth::Sas("sv=2024-11-04&sig=a%2Bb%3D".into())
        );
        for bad in [
            "AccountKey=secret-key-value",
            "AccountName=a",
            "AccountName=a;AccountKey=secret-key-value;BlobEndpoint=http://h/other",
            "just-a-secret-key-value",
        ] {
            let e = from_connection_string("c", bad).unwrap_err().to_string();
            assert!(!e.contains("secret-key-value"), "{e}");
        }
        let shown = format!(
            "{:?}",
            from_connection_string("c", "UseDevelopmentStorage=true").unwrap()
        );
        assert!(!shown.contains(&DEV_KEY[..16]), "{shown}");
    }

    #[test]
    fn the_usual_variables() {
        let s = from_vars(
            "locks",
            &vars(&[
                ("AZURE_STORAGE_ACCOUNT", "acct"),
                ("AZURE_STORAGE_KEY", "a2V5"),
            ]),
        )
        .unwrap();
        assert_eq!(s.endpoint, "https://acct.blob.core.windows.net");
        assert_eq!(s.credential, AzureAuth::SharedKey("a2V5".into()));
        let s = from_vars(
            "locks",
            &vars(&[
                ("AZURE_STORAGE_ACCOUNT", "acct"),
                ("AZURE_STORAGE_SAS_TOKEN", "?sig=x"),
            ]),
        )
        .unwrap();
        assert_eq!(s.credential, AzureAuth::Sas("?sig=x".into()));
        let s = from_vars(
            "locks",
            &vars(&[
                ("AZURE_STORAGE_ACCOUNT", "acct"),
                ("AZURE_CLIENT_ID", "id-1"),
            ]),
        )
        .unwrap();
        let AzureAuth::ManagedIdentity(m) = s.credential else {
            panic!("no managed identity")
        };
        assert_eq!(
            (m.endpoint.as_str(), m.client_id.as_deref()),
            (IMDS_ENDPOINT, Some("id-1"))
        );
        let e = from_vars("locks", &vars(&[])).unwrap_err();
        assert!(e.to_string().contains("AZURE_STORAGE_ACCOUNT"), "{e}");
    }

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
        assert_eq!(fetched.credentials.access_key_id, BEARER_MARKER);
        assert_eq!(fetched.credentials.secret_access_key, "eyJ0.TOKEN-ONE");
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
