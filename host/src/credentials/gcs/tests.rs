//! Application Default Credentials against loopback fakes that behave as
//! Google documents: a token endpoint that checks the assertion's RS256
//! signature with the test key's public half, and a metadata server that
//! answers only with `Metadata-Flavor: Google`.

use super::test_key::{OTHER_PUBLIC_KEY, TEST_PRIVATE_KEY, TEST_PUBLIC_KEY};
use super::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Mutex;

/// One request as a fake saw it.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    target: String,
    headers: HashMap<String, String>,
    body: String,
}

/// A reply: status, extra headers, body.
type Answer = (u16, Vec<(&'static str, String)>, String);

/// A loopback HTTP/1.1 server answering each request with `handler`
/// (one request per connection, then `Connection: close`), recording
/// what it got.
fn fake(handler: impl Fn(&Seen) -> Answer + Send + 'static) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            let head_end = loop {
                if let Some(i) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i;
                }
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break request.len(),
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            };
            let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
            let mut lines = head.lines();
            let first: Vec<String> = lines
                .next()
                .unwrap_or_default()
                .split(' ')
                .map(str::to_string)
                .collect();
            let headers: HashMap<String, String> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let length: usize = headers
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            let mut body = request.get(head_end + 4..).unwrap_or_default().to_vec();
            while body.len() < length {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => body.extend_from_slice(&buf[..n]),
                }
            }
            let seen = Seen {
                method: first.first().cloned().unwrap_or_default(),
                target: first.get(1).cloned().unwrap_or_default(),
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            let (status, extra, body) = handler(&seen);
            log.lock().unwrap().push(seen);
            let mut reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in extra {
                reply.push_str(&format!("{name}: {value}\r\n"));
            }
            reply.push_str("\r\n");
            reply.push_str(&body);
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (format!("http://{address}"), seen)
}

fn form(body: &str) -> HashMap<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_string(), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

const NOW: u64 = 1_800_000_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

/// Google's token endpoint for service accounts and users: a JWT bearer
/// grant is checked as Google checks it (RS256 signature by `public_key`,
/// audience the endpoint itself, issuer the account, the scope, an hour
/// from issue); a refresh_token grant must carry the user's client and
/// token. Tokens `ya29.TEST-<n>`, an hour long.
fn token_endpoint(public_key: &'static str) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let issued = Arc::new(Mutex::new(0u32));
    let audience = Arc::new(Mutex::new(String::new()));
    let aud = audience.clone();
    let (root, seen) = fake(move |req| {
        let refuse = |error: &str, description: &str| {
            (
                400,
                vec![],
                serde_json::json!({"error": error, "error_description": description}).to_string(),
            )
        };
        if req.method != "POST"
            || req.headers.get("content-type").map(String::as_str)
                != Some("application/x-www-form-urlencoded")
        {
            return refuse("invalid_request", "not a form POST");
        }
        let form = form(&req.body);
        match form.get("grant_type").map(String::as_str) {
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
                let assertion = form.get("assertion").cloned().unwrap_or_default();
                let key = jsonwebtoken::DecodingKey::from_rsa_pem(public_key.as_bytes()).unwrap();
                let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
                // Checked against the test's fixed clock below.
                validation.validate_exp = false;
                validation.set_audience(&[aud.lock().unwrap().clone()]);
                validation.set_issuer(&["locks@test-project.iam.gserviceaccount.com"]);
                let Ok(data) =
                    jsonwebtoken::decode::<serde_json::Value>(&assertion, &key, &validation)
                else {
                    return refuse("invalid_grant", "Invalid JWT Signature.");
                };
                let c = &data.claims;
                if data.header.kid.as_deref() != Some("test-key-id")
                    || c["scope"] != STORAGE_SCOPE
                    || c["iat"] != NOW
                    || c["exp"] != NOW + 3600
                {
                    return refuse("invalid_grant", "Invalid JWT: bad claims.");
                }
            }
            Some("refresh_token") => {
                if form.get("client_id").map(String::as_str) != Some("client-1.apps")
                    || form.get("client_secret").map(String::as_str) != Some("CLIENT-SECRET")
                    || form.get("refresh_token").map(String::as_str) != Some("1//REFRESH-TOKEN")
                {
                    return refuse("invalid_grant", "Bad Request");
                }
            }
            _ => return refuse("unsupported_grant_type", "Invalid grant_type"),
        }
        let mut n = issued.lock().unwrap();
        *n += 1;
        let body = serde_json::json!({
            "access_token": format!("ya29.TEST-{n}"),
            "expires_in": 3599,
            "token_type": "Bearer",
        });
        (200, vec![], body.to_string())
    });
    *audience.lock().unwrap() = format!("{root}/token");
    (root, seen)
}

fn service_account_json(token_uri: &str) -> String {
    serde_json::json!({
        "type": "service_account",
        "project_id": "test-project",
        "private_key_id": "test-key-id",
        "private_key": TEST_PRIVATE_KEY,
        "client_email": "locks@test-project.iam.gserviceaccount.com",
        "client_id": "1234",
        "token_uri": token_uri,
    })
    .to_string()
}

/// A file of its own under the temporary folder.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "s3-lease-google-{}-{}",
        std::process::id(),
        name.replace('/', "-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name.rsplit('/').next().unwrap());
    std::fs::write(&path, text).unwrap();
    path
}

use crate::credentials::vars;

#[test]
fn a_service_account_key_signs_a_jwt_the_token_endpoint_verifies() {
    let (root, seen) = token_endpoint(TEST_PUBLIC_KEY);
    let path = temp_file(
        "sa/key.json",
        &service_account_json(&format!("{root}/token")),
    );
    let adc = GoogleCredentials::from_vars(&vars(&[(
        "GOOGLE_APPLICATION_CREDENTIALS",
        path.to_str().unwrap(),
    )]))
    .unwrap();
    let token = adc.token_at(now()).unwrap();
    assert_eq!(token.token, "ya29.TEST-1");
    assert_eq!(token.expires, Some(now() + Duration::from_secs(3599)));
    let request = seen.lock().unwrap()[0].clone();
    assert_eq!(
        (request.method.as_str(), request.target.as_str()),
        ("POST", "/token")
    );
    // Nothing secret shows: not the key, not the token.
    let shown = format!("{adc:?} {token:?}");
    assert!(
        shown.contains("locks@test-project.iam.gserviceaccount.com"),
        "{shown}"
    );
    for secret in ["PRIVATE KEY", &TEST_PRIVATE_KEY[40..80], "ya29"] {
        assert!(!shown.contains(secret), "{shown}");
    }
}

#[test]
fn a_signature_the_endpoint_cannot_verify_is_its_error_without_the_assertion() {
    let (root, seen) = token_endpoint(OTHER_PUBLIC_KEY);
    let adc =
        GoogleCredentials::from_json(&service_account_json(&format!("{root}/token"))).unwrap();
    let e = adc.token_at(now()).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::InvalidConfig);
    let text = e.to_string();
    assert!(
        text.contains("HTTP 400") && text.contains("Invalid JWT Signature."),
        "{text}"
    );
    let assertion = form(&seen.lock().unwrap()[0].body)["assertion"].clone();
    assert!(assertion.len() > 100);
    assert!(
        !text.contains(&assertion[..40]) && !text.contains("PRIVATE"),
        "{text}"
    );
}

#[test]
fn gclouds_user_credentials_exchange_their_refresh_token() {
    let (root, seen) = token_endpoint(TEST_PUBLIC_KEY);
    let user = |secret: &str| {
        serde_json::json!({
            "type": "authorized_user",
            "client_id": "client-1.apps",
            "client_secret": secret,
            "refresh_token": "1//REFRESH-TOKEN",
            "token_uri": format!("{root}/token"),
        })
        .to_string()
    };
    // gcloud's ADC file, found through CLOUDSDK_CONFIG.
    let path = temp_file(
        "gcloud/application_default_credentials.json",
        &user("CLIENT-SECRET"),
    );
    let dir = path.parent().unwrap().to_str().unwrap().to_string();
    let adc = GoogleCredentials::from_vars(&vars(&[("CLOUDSDK_CONFIG", &dir)])).unwrap();
    assert!(
        adc.describe().contains("user credentials"),
        "{}",
        adc.describe()
    );
    assert_eq!(adc.token_at(now()).unwrap().token, "ya29.TEST-1");
    let request = form(&seen.lock().unwrap()[0].body);
    assert_eq!(request["grant_type"], "refresh_token");
    // Refused: the endpoint's words, none of what was sent.
    let wrong = GoogleCredentials::from_json(&user("WRONG-SECRET")).unwrap();
    let text = wrong.token_at(now()).unwrap_err().to_string();
    assert!(text.contains("invalid_grant"), "{text}");
    for secret in ["WRONG-SECRET", "REFRESH-TOKEN"] {
        assert!(
            !text.contains(secret) && !format!("{wrong:?}").contains(secret),
            "{text}"
        );
    }
}

#[test]
fn an_endpoint_that_echoes_a_secret_has_it_redacted() {
    let (root, _) = fake(|req| {
        let echoed = form(&req.body)["refresh_token"].clone();
        let body = serde_json::json!({"error": "invalid_grant", "error_description": format!("bad token {echoed}")});
        (400, vec![], body.to_string())
    });
    let user = serde_json::json!({
        "type": "authorized_user", "client_id": "c", "client_secret": "s3cr3t-value",
        "refresh_token": "1//ECHOED-TOKEN", "token_uri": format!("{root}/token"),
    });
    let adc = GoogleCredentials::from_json(&user.to_string()).unwrap();
    let text = adc.token_at(now()).unwrap_err().to_string();
    assert!(
        text.contains("bad token <redacted>") && !text.contains("ECHOED"),
        "{text}"
    );
}

/// The metadata server: tokens only to requests with `Metadata-Flavor:
/// Google`, its replies marked the same way.
fn metadata_server(flavor_in_reply: bool) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let count = Arc::new(Mutex::new(0u32));
    fake(move |req| {
        let flavor = match flavor_in_reply {
            true => vec![("Metadata-Flavor", "Google".to_string())],
            false => vec![],
        };
        if req.headers.get("metadata-flavor").map(String::as_str) != Some("Google") {
            return (403, flavor, "Missing Metadata-Flavor:Google header.".into());
        }
        if !req
            .target
            .starts_with("/computeMetadata/v1/instance/service-accounts/default/token")
        {
            return (404, flavor, "Not Found".into());
        }
        let mut n = count.lock().unwrap();
        *n += 1;
        let body = serde_json::json!({"access_token": format!("ya29.META-{n}"), "expires_in": 2, "token_type": "Bearer"});
        (200, flavor, body.to_string())
    })
}

#[test]
fn the_metadata_server_with_its_flavor_header_and_the_storage_scope() {
    let (root, seen) = metadata_server(true);
    let host = root.trim_start_matches("http://").to_string();
    // Nothing else configured: ADC ends at the metadata server, found at
    // GCE_METADATA_HOST.
    let adc = GoogleCredentials::from_vars(&vars(&[
        ("GCE_METADATA_HOST", &host),
        ("HOME", "/nonexistent-home"),
    ]))
    .unwrap();
    let token = adc.token_at(now()).unwrap();
    assert_eq!(token.token, "ya29.META-1");
    assert_eq!(token.expires, Some(now() + Duration::from_secs(2)));
    let request = seen.lock().unwrap()[0].clone();
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.target,
        "/computeMetadata/v1/instance/service-accounts/default/token?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fdevstorage.read_write"
    );
    assert_eq!(request.headers["metadata-flavor"], "Google");
}

#[test]
fn a_reply_without_googles_flavor_is_no_metadata_server() {
    let (root, _) = metadata_server(false);
    let adc = GoogleCredentials::metadata_server(root.trim_start_matches("http://"));
    let text = adc.token_at(now()).unwrap_err().to_string();
    assert!(text.contains("not a metadata server"), "{text}");
}

#[test]
fn with_no_credentials_anywhere_the_error_says_where_it_looked() {
    // A port nothing listens on: the metadata server is not there.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let adc = GoogleCredentials::from_vars(&vars(&[
        ("GCE_METADATA_HOST", &closed.to_string()),
        ("HOME", "/nonexistent-home"),
    ]))
    .unwrap()
    .with_timeout(Duration::from_secs(2));
    let text = adc.token_at(now()).unwrap_err().to_string();
    for part in [
        "no Google credentials found",
        "GOOGLE_APPLICATION_CREDENTIALS: not set",
        "/nonexistent-home/.config/gcloud/application_default_credentials.json: no such file",
        &closed.to_string(),
    ] {
        assert!(text.contains(part), "{part:?} not in {text}");
    }
}

#[test]
fn a_named_file_must_be_there_and_usable() {
    let e = GoogleCredentials::from_vars(&vars(&[(
        "GOOGLE_APPLICATION_CREDENTIALS",
        "/nonexistent/key.json",
    )]))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("/nonexistent/key.json") && e.contains("GOOGLE_APPLICATION_CREDENTIALS"),
        "{e}"
    );
    let bad_key = serde_json::json!({
        "type": "service_account", "client_email": "a@b", "private_key": "-----BEGIN PRIVATE KEY-----\nNOT-A-KEY-SECRET\n-----END PRIVATE KEY-----\n",
    });
    let e = GoogleCredentials::from_json(&bad_key.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not an RSA key") && !e.contains("NOT-A-KEY-SECRET"),
        "{e}"
    );
    let external = serde_json::json!({"type": "external_account", "audience": "x"});
    let e = GoogleCredentials::from_json(&external.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"external_account\"") && e.contains("not supported"),
        "{e}"
    );
    let e = GoogleCredentials::from_json("{\"type\": \"service_account\", SECRET")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not JSON") && !e.contains("SECRET"), "{e}");
}

/// The token lasts 2 s: the refresher fetches the next one ahead of its
/// expiry (a quarter of its life ahead) and installs it.
#[test]
fn a_short_lived_token_is_refreshed_ahead_of_expiry_and_installed() {
    use crate::credentials::refresh::Refresher;
    use crate::credentials::SharedTokenSource;
    let (root, seen) = metadata_server(true);
    let source = SharedTokenSource::new(GoogleCredentials::metadata_server(
        root.trim_start_matches("http://"),
    ));
    assert_eq!(source.last_source(), None);
    let first = source.latest().unwrap();
    assert_eq!(first.token, "ya29.META-1");
    // Where it came from, for logs: the server, no token.
    assert_eq!(
        source.last_source(),
        Some((format!("the metadata server at {root}"), first.expires))
    );
    let installed = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = installed.clone();
    let refresher = Refresher::start(
        source,
        first.token,
        first.expires,
        Box::new(move |t: &String| {
            sink.lock().unwrap().push(t.clone());
            Ok(())
        }),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(2_500));
    drop(refresher);
    let installed = installed.lock().unwrap().clone();
    assert!(
        installed.first().map(String::as_str) == Some("ya29.META-2"),
        "{installed:?}"
    );
    assert!(seen.lock().unwrap().len() >= 2);
}

/// A metadata server that keeps a connection open after its reply (no
/// `Connection: close`) and closes it a moment later, as servers close
/// idle connections: the next fetch, later, still gets its token.
#[test]
fn a_connection_the_server_closed_between_fetches_is_not_reused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let host = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let body = format!(r#"{{"access_token":"ya29.KEPT-{n}","expires_in":3599}}"#);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nMetadata-Flavor: Google\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes());
            std::thread::sleep(Duration::from_millis(100));
            drop(stream);
        }
    });
    let adc = GoogleCredentials::metadata_server(host);
    assert_eq!(adc.token_at(now()).unwrap().token, "ya29.KEPT-0");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(adc.token_at(now()).unwrap().token, "ya29.KEPT-1");
}

#[test]
fn another_scope_is_asked_for_when_given() {
    let (root, seen) = metadata_server(true);
    let adc = GoogleCredentials::metadata_server(root.trim_start_matches("http://"))
        .with_scope("https://www.googleapis.com/auth/cloud-platform");
    adc.token_at(now()).unwrap();
    let target = seen.lock().unwrap()[0].target.clone();
    assert!(
        target.ends_with("?scopes=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform"),
        "{target}"
    );
}
