//! The wasm glue: `wasi:http/incoming-handler` in, s3-lease calls out.
//!
//! One increment: acquire the counter's lease (waiting at most the lock
//! timeout), `fenced-get` the counter, `fenced-put` it plus one with the
//! lease's token in the body, release. Only a write S3 accepted answers 200;
//! every other answer left the counter as it was.

use crate::bindings::exports::wasi::http::incoming_handler::Guest;
use crate::bindings::s3_lease::lease::lease::Client;
use crate::bindings::s3_lease::lease::types::{
    AddressingStyle, Config, Credentials, Error, Lease, Options,
};
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use crate::counter::{self, Counter};
use crate::route::{route, Route};
use serde_json::json;

struct Function;

crate::bindings::export!(Function with_types_in crate::bindings);

impl Guest for Function {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let path = request.path_with_query().unwrap_or_default();
        let reply = match route(matches!(request.method(), Method::Post), &path) {
            Route::Increment { name } => increment(&name),
            Route::BadName(why) => Reply::error(400, "bad-counter-name", why),
            Route::MethodNotAllowed => {
                Reply::error(405, "method-not-allowed", "POST only").header("allow", "POST")
            }
            Route::NotFound => Reply::error(
                404,
                "not-found",
                "the only route is POST /counters/{name}/increment",
            ),
        };
        reply.send(response_out);
    }
}

/// What the function read from its environment.
struct Settings {
    config: Config,
    lock_timeout_ms: u64,
    lease_ttl_ms: u64,
}

fn settings() -> Result<Settings, Reply> {
    let env = get_environment();
    let var = |name: &str| {
        env.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    let required = |name: &str| {
        var(name).ok_or_else(|| Reply::error(500, "not-configured", &format!("set {name}")))
    };
    let number = |name: &str, default: u64| match var(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| Reply::error(500, "not-configured", &format!("{name} is not a number"))),
    };
    // The host crate's and the command line's rule: an endpoint of your
    // own (`AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`) is addressed by
    // path, AWS's own by virtual host; `S3LEASE_ADDRESSING` overrides.
    let custom_endpoint = var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL"));
    let region = var("AWS_REGION").unwrap_or_else(|| "us-east-1".into());
    let addressing = match var("S3LEASE_ADDRESSING").as_deref() {
        Some("path") => AddressingStyle::Path,
        Some("virtual-hosted") => AddressingStyle::VirtualHosted,
        Some(_) => {
            return Err(Reply::error(
                500,
                "not-configured",
                "S3LEASE_ADDRESSING is path or virtual-hosted",
            ))
        }
        None if custom_endpoint.is_some() => AddressingStyle::Path,
        None => AddressingStyle::VirtualHosted,
    };
    let endpoint = custom_endpoint.unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"));
    Ok(Settings {
        config: Config {
            endpoint,
            region,
            bucket: required("S3LEASE_BUCKET")?,
            addressing,
            credentials: Credentials {
                access_key_id: required("AWS_ACCESS_KEY_ID")?,
                secret_access_key: required("AWS_SECRET_ACCESS_KEY")?,
                session_token: var("AWS_SESSION_TOKEN"),
            },
            key_prefix: var("S3LEASE_KEY_PREFIX"),
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: var("S3LEASE_SEAL_KEY"),
            store: None,
        },
        lock_timeout_ms: number("COUNTER_LOCK_TIMEOUT_MS", 5_000)?,
        lease_ttl_ms: number("COUNTER_LEASE_TTL_MS", 10_000)?,
    })
}

fn increment(name: &str) -> Reply {
    match try_increment(name) {
        Ok(reply) | Err(reply) => reply,
    }
}

fn try_increment(name: &str) -> Result<Reply, Reply> {
    let settings = settings()?;
    let client = Client::new(&settings.config).map_err(|e| s3_lease_error(&e))?;
    let options = Options {
        ttl_ms: settings.lease_ttl_ms,
        holder_id: None,
        metadata: Some(format!("http-function: counter {name}")),
    };
    let lease = match client.acquire(
        &format!("counters/{name}"),
        &options,
        settings.lock_timeout_ms,
    ) {
        Ok(lease) => lease,
        Err(Error::Timeout(t)) => {
            let holder = t.holder.map(|h| h.holder_id);
            let body = json!({
                "error": "lock-timeout",
                "message": format!("counter {name} stayed locked for {} ms; not incremented", t.waited_ms),
                "holder": holder,
            });
            return Err(Reply::json(503, &body).header("retry-after", "1"));
        }
        Err(e) => return Err(s3_lease_error(&e)),
    };
    let written = write_next(&client, &lease, &settings, name);
    // Release whatever happened: the next caller need not wait out the ttl.
    // A failed release after a written value changes nothing the caller
    // asked for (the lease lapses by itself), so it does not turn a 200
    // into an error.
    let _ = client.release(&lease);
    written.map(|c| Reply::json(200, &json!({ "value": c.value, "token": c.token })))
}

/// Reads the counter and writes it plus one, fenced by `lease`.
fn write_next(
    client: &Client,
    lease: &Lease,
    settings: &Settings,
    name: &str,
) -> Result<Counter, Reply> {
    let object_key = format!(
        "{}counters/{name}.json",
        settings.config.key_prefix.as_deref().unwrap_or("")
    );
    let current = match client.fenced_get(&object_key) {
        Ok(None) => 0,
        Ok(Some(object)) => {
            counter::parse(&object.body)
                .map_err(|why| Reply::error(500, "corrupt-counter", &why))?
                .value
        }
        Err(e) => return Err(s3_lease_error(&e)),
    };
    let Some(value) = current.checked_add(1) else {
        return Err(Reply::error(
            409,
            "counter-full",
            "the counter is at its maximum",
        ));
    };
    let next = Counter {
        value,
        token: lease.token,
    };
    client
        .fenced_put(
            lease,
            &object_key,
            &counter::to_json(next),
            "application/json",
        )
        .map_err(|e| s3_lease_error(&e))?;
    Ok(next)
}

/// Any s3-lease error other than a lock timeout: the counter was not
/// incremented. `fenced` (a newer holder wrote first) is a conflict; the
/// rest are the storage's or the configuration's fault. The library's
/// errors carry no secrets, so their details are passed on.
fn s3_lease_error(e: &Error) -> Reply {
    let (status, code) = match e {
        Error::Fenced(_) => (409, "fenced"),
        Error::Lost(_) => (409, "lost"),
        Error::InvalidConfig(_) => (500, "invalid-config"),
        Error::InvalidArgument(_) => (500, "invalid-argument"),
        Error::AccessDenied(_) => (502, "access-denied"),
        Error::NoSuchBucket(_) => (502, "no-such-bucket"),
        Error::ClockSkewed(_) => (502, "clock-skewed"),
        Error::CorruptLockObject(_) => (502, "corrupt-lock-object"),
        Error::Conflict(_) => (502, "conflict"),
        Error::S3(_) => (502, "s3"),
        Error::Transport(_) => (502, "transport"),
        Error::StoreUnsafe(_) => (502, "store-unsafe"),
        // The counter key is a plain lock; a semaphore of the same name
        // is a deployment mistake.
        Error::LimitMismatch(_) => (500, "limit-mismatch"),
        Error::Timeout(_) => (503, "lock-timeout"),
    };
    Reply::error(status, code, &format!("{e:?}"))
}

/// An HTTP reply with a JSON body.
struct Reply {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Reply {
    fn json(status: u16, body: &serde_json::Value) -> Reply {
        let body = body.to_string().into_bytes();
        Reply {
            status,
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("content-length".into(), body.len().to_string().into_bytes()),
            ],
            body,
        }
    }

    fn error(status: u16, code: &str, message: &str) -> Reply {
        Reply::json(status, &json!({ "error": code, "message": message }))
    }

    fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.as_bytes().to_vec()));
        self
    }

    /// Sends the reply. Failures here mean the client is gone; there is
    /// nobody left to tell.
    fn send(self, response_out: ResponseOutparam) {
        let Ok(headers) = Fields::from_list(&self.headers) else {
            return;
        };
        let response = OutgoingResponse::new(headers);
        let _ = response.set_status_code(self.status);
        let Ok(body) = response.body() else {
            return;
        };
        ResponseOutparam::set(response_out, Ok(response));
        if let Ok(stream) = body.write() {
            // blocking-write-and-flush takes at most 4096 bytes per call.
            for chunk in self.body.chunks(4096) {
                if stream.blocking_write_and_flush(chunk).is_err() {
                    return;
                }
            }
        }
        let _ = OutgoingBody::finish(body, None);
    }
}
