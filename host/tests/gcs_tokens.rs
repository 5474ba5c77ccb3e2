//! A GCS client's access tokens reach the store: the first one a source
//! hands out goes in `Authorization: Bearer`, and the next one, fetched
//! ahead of the first's expiry, is installed in the live instances
//! (`set-gcs-credential`) and sent from then on; a token GCS refuses (401)
//! is replaced at once and the call sent again. Counted on a loopback
//! server that answers every media GET as GCS does for a missing object,
//! or for a refused token.

use s3_lease_host::blocking::Client;
use s3_lease_host::credentials::{AccessToken, SharedTokenSource, TokenSource};
use s3_lease_host::{
    CompileCache, ComponentSource, Error, GcsBuilder, GcsCredential, Runtime, RuntimeOptions,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Each request's `Authorization` header (`None`: it had none).
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// A keep-alive HTTP/1.1 server: GCS's plain-text 404 to every request.
fn serve() -> (String, Seen) {
    serve_refusing(None)
}

/// [`serve`], but GCS's 401 to a request that carries `refused`.
fn serve_refusing(refused: Option<&'static str>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Seen::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let log = log.clone();
            std::thread::spawn(move || answer_all(stream, &log, refused));
        }
    });
    (url, seen)
}

fn answer_all(stream: TcpStream, seen: &Seen, refused: Option<&str>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let (mut length, mut authorization) = (0usize, None);
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
                if name.eq_ignore_ascii_case("authorization") {
                    authorization = Some(value.trim().to_string());
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let refuse = refused.is_some() && authorization.as_deref() == refused;
        seen.lock().unwrap().push(authorization);
        let reply = if refuse {
            let text = r#"{"error":{"code":401,"message":"Invalid Credentials","errors":[{"message":"Invalid Credentials","domain":"global","reason":"authError"}]}}"#;
            format!(
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json; charset=UTF-8\r\nDate: Sun, 22 Nov 2026 12:00:00 GMT\r\nContent-Length: {}\r\n\r\n{text}",
                text.len()
            )
        } else {
            let text = "No such object: locks/key";
            format!(
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nDate: Sun, 22 Nov 2026 12:00:00 GMT\r\nContent-Length: {}\r\n\r\n{text}",
                text.len()
            )
        };
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Tokens `ya29.T-<n>`, each good for 2 s: due for a refresh half a
/// second before it expires.
struct ShortTokens(AtomicU32);

impl TokenSource for ShortTokens {
    fn fetch(&self) -> Result<AccessToken, Error> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(AccessToken::new(
            format!("ya29.T-{n}"),
            Some(SystemTime::now() + Duration::from_secs(2)),
        ))
    }
}

/// Tokens `ya29.L-<n>`, each good for an hour: no refresh comes due.
struct LongTokens(AtomicU32);

impl TokenSource for LongTokens {
    fn fetch(&self) -> Result<AccessToken, Error> {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(AccessToken::new(
            format!("ya29.L-{n}"),
            Some(SystemTime::now() + Duration::from_secs(3600)),
        ))
    }
}

#[test]
fn a_token_gcs_refuses_is_replaced_and_the_call_sent_again() {
    let (url, seen) = serve_refusing(Some("Bearer ya29.L-1"));
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env()),
    )
    .unwrap();
    let config = GcsBuilder::new("locks", GcsCredential::Anonymous)
        .endpoint(&url)
        .token_source(SharedTokenSource::new(LongTokens(AtomicU32::new(0))))
        .unwrap()
        .build();
    let client = Client::connect(&runtime, &config).unwrap();
    // Revoked before it expired: the 401 fetches the next token, and the
    // call goes again with it, once.
    assert_eq!(client.inspect("k").unwrap(), None);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        &[
            Some("Bearer ya29.L-1".to_string()),
            Some("Bearer ya29.L-2".to_string())
        ]
    );
}

#[test]
fn a_gcs_clients_token_is_sent_and_replaced_ahead_of_its_expiry() {
    let (url, seen) = serve();
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env()),
    )
    .unwrap();
    let config = GcsBuilder::new("locks", GcsCredential::Anonymous)
        .endpoint(&url)
        .token_source(SharedTokenSource::new(ShortTokens(AtomicU32::new(0))))
        .unwrap()
        .build();
    let client = Client::connect(&runtime, &config).unwrap();
    assert_eq!(client.inspect("first").unwrap(), None);
    assert_eq!(
        seen.lock().unwrap().last().cloned().flatten().as_deref(),
        Some("Bearer ya29.T-1")
    );
    // The refresher installs the next token about 1.5 s in.
    let started = Instant::now();
    while client.credentials_refreshes() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no token installed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(client.inspect("second").unwrap(), None);
    let last = seen.lock().unwrap().last().cloned().flatten();
    assert!(
        last.as_deref()
            .is_some_and(|a| a.starts_with("Bearer ya29.T-") && a != "Bearer ya29.T-1"),
        "{last:?}"
    );
}

#[test]
fn an_anonymous_gcs_client_sends_no_authorization_until_given_a_token() {
    let (url, seen) = serve();
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env()),
    )
    .unwrap();
    let config = GcsBuilder::new("locks", GcsCredential::Anonymous)
        .endpoint(&url)
        .build();
    let client = Client::connect(&runtime, &config).unwrap();
    assert_eq!(client.inspect("k").unwrap(), None);
    assert_eq!(seen.lock().unwrap().as_slice(), &[None]);
    // A host's own token, set on the live client, goes out from then on.
    client
        .set_credential(&GcsCredential::BearerToken("ya29.set".into()).into())
        .unwrap();
    assert_eq!(client.inspect("k2").unwrap(), None);
    assert_eq!(
        seen.lock().unwrap().last().cloned().flatten().as_deref(),
        Some("Bearer ya29.set")
    );
    // An Azure credential is refused on it, and changes nothing.
    let refused = client.set_credential(&s3_lease_host::AzureCredential::Sas("sv=1".into()).into());
    assert_eq!(
        refused.unwrap_err().kind(),
        s3_lease_host::ErrorKind::InvalidConfig
    );
}
