//! An HTTP function written outside the s3-lease repository:
//! `POST /counters/{name}` adds one to a counter object under the counter's
//! lease, with a fenced write, and answers the new value and the lease's
//! fencing token. It calls s3-lease through the guest crate (fetched by
//! name from a cargo registry); `wac plug` fills the crate's import with
//! the s3-lease component (fetched by name with wkg).

wit_bindgen::generate!({
    world: "my:function/counter",
    // `wit/deps/` comes from `wkg fetch`: no path into the repository.
    path: "wit",
    generate_all,
});

use exports::wasi::http::incoming_handler::Guest;
use s3_lease_guest::{Client, Config, Error};
use std::time::Duration;
use wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

struct Counter;

impl Guest for Counter {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let path = request.path_with_query().unwrap_or_default();
        let name = path.strip_prefix("/counters/").filter(|name| {
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        let (status, body) = match (request.method(), name) {
            (Method::Post, Some(name)) => match increment(name) {
                Ok((value, token)) => (200, format!("{{\"value\":{value},\"token\":{token}}}")),
                // Escaped: the error's text may quote what the store sent.
                Err(e) => (503, format!("{{\"error\":\"{}\",\"message\":{:?}}}", e.code(), e.to_string())),
            },
            _ => (404, "{\"error\":\"POST /counters/{name}\"}".to_string()),
        };
        respond(response_out, status, body);
    }
}

/// Adds one to `counters/{name}` under its lease: S3 refuses the write
/// once a newer holder's token has written there.
fn increment(name: &str) -> Result<(u64, u64), Error> {
    let client = Client::new(&Config::from_env()?)?;
    let held = client.acquire(
        &format!("counters/{name}"),
        Duration::from_secs(10),
        Duration::from_secs(5),
    )?;
    let object_key = format!("counters/{name}.json");
    let value = match client.fenced_get(&object_key)? {
        Some(object) => value_of(&object.body) + 1,
        None => 1,
    };
    let token = held.token();
    let body = format!("{{\"value\":{value},\"token\":{token}}}");
    held.fenced_put(&object_key, body.as_bytes(), "application/json")?;
    held.release()?;
    Ok((value, token))
}

/// The `value` of a body this function wrote.
fn value_of(body: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(body);
    let digits = text.split("\"value\":").nth(1).unwrap_or("");
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or(0)
}

fn respond(response_out: ResponseOutparam, status: u16, body: String) {
    let headers = Fields::from_list(&[("content-type".into(), b"application/json".to_vec())])
        .expect("a valid header");
    let response = OutgoingResponse::new(headers);
    response.set_status_code(status).expect("a valid status");
    let outgoing = response.body().expect("the body, once");
    ResponseOutparam::set(response_out, Ok(response));
    let stream = outgoing.write().expect("the body's stream, once");
    // Short bodies: one write (at most 4096 bytes) and flush.
    let _ = stream.blocking_write_and_flush(body.as_bytes());
    drop(stream);
    let _ = OutgoingBody::finish(outgoing, None);
}

export!(Counter);
