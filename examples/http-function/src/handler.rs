//! The WASI 0.2 glue: `wasi:http/incoming-handler` in, s3-lease's blocking
//! calls out (`s3-lease-guest`). The increment's shared parts are in
//! `increment`.

use crate::bindings::exports::wasi::http::incoming_handler::Guest;
use crate::bindings::wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use crate::counter::{self, Counter};
use crate::increment::{self, Settings};
use crate::reply::{counter_name, Reply};
use crate::route::route;
use s3_lease_guest::{Client, Held};

struct Function;

crate::bindings::export!(Function with_types_in crate::bindings);

impl Guest for Function {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let path = request.path_with_query().unwrap_or_default();
        let reply = match counter_name(route(matches!(request.method(), Method::Post), &path)) {
            Ok(name) => try_increment(&name).unwrap_or_else(|refused| refused),
            Err(refused) => refused,
        };
        send(reply, response_out);
    }
}

fn try_increment(name: &str) -> Result<Reply, Reply> {
    let settings = increment::settings()?;
    let refused = |e| increment::refused(name, &e);
    let client = Client::new(&settings.config).map_err(refused)?;
    let (key, options) = increment::lock(&settings, name);
    let held = client
        .acquire_with(&key, &options, settings.lock_timeout)
        .map_err(refused)?;
    let written = write_next(&client, &held, &settings, name);
    // Release whatever happened: the next caller need not wait out the ttl.
    // A failed release after a written value changes nothing the caller
    // asked for (the lease lapses by itself), so it does not turn a 200
    // into an error.
    let _ = held.release();
    written.map(increment::written)
}

/// Reads the counter and writes it plus one, fenced by `held`.
fn write_next(
    client: &Client,
    held: &Held,
    settings: &Settings,
    name: &str,
) -> Result<Counter, Reply> {
    let refused = |e| increment::refused(name, &e);
    let object_key = increment::object_key(settings, name);
    let current = client.fenced_get(&object_key).map_err(refused)?;
    let next = increment::next(current, held.token())?;
    held.fenced_put(&object_key, &counter::to_json(next), "application/json")
        .map_err(refused)?;
    Ok(next)
}

/// Sends the reply. Failures here mean the client is gone; there is
/// nobody left to tell.
fn send(reply: Reply, response_out: ResponseOutparam) {
    let Ok(headers) = Fields::from_list(&reply.headers) else {
        return;
    };
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(reply.status);
    let Ok(body) = response.body() else {
        return;
    };
    ResponseOutparam::set(response_out, Ok(response));
    if let Ok(stream) = body.write() {
        // blocking-write-and-flush takes at most 4096 bytes per call.
        for chunk in reply.body.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                return;
            }
        }
    }
    let _ = OutgoingBody::finish(body, None);
}
