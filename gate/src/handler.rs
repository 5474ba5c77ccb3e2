//! The WASI 0.2 gate. A 0.2 guest cannot make an `incoming-request` nor a
//! `response-outparam`, so it passes the ones it was given to the
//! downstream unchanged: no stamped headers (the downstream cannot make
//! fenced writes under the gate's grant), and no way to strip headers a
//! client sent, so a request carrying any of the gate's `s3-lease-*`
//! headers is refused (400) instead. It acquires the key's lease, calls the downstream's
//! `handle`, and releases when that returns: a 0.2 handler has written
//! its body (or handed the outparam back unset) by then. The 400, 502 and
//! 503 are the gate's own answers; the request is not forwarded.

use crate::answer::Answer;
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::clocks::wall_clock;
use crate::bindings::wasi::http::incoming_handler as downstream;
use crate::bindings::wasi::http::types::{
    Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use s3_lease_guest::{Client, Config, Error, Held, Options};
use std::time::Duration;

struct Gate;

crate::bindings::export!(Gate with_types_in crate::bindings);

impl crate::bindings::exports::wasi::http::incoming_handler::Guest for Gate {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        match gate(&request) {
            Ok(held) => {
                downstream::handle(request, response_out);
                // A failed release changes nothing sent: the lease lapses.
                let _ = held.release();
            }
            Err(answer) => send(answer, response_out),
        }
    }
}

fn gate(request: &IncomingRequest) -> Result<Held, Answer> {
    let env = get_environment();
    let settings = crate::settings::settings(&env).map_err(|why| Answer::not_configured(&why))?;
    let config = Config::from_vars(|name| crate::settings::var(&env, name))
        .map_err(|e| Answer::not_configured(&e.to_string()))?;
    let path = request.path_with_query().unwrap_or_default();
    let headers = request.headers();
    if let Some((name, _)) = headers
        .entries()
        .into_iter()
        .find(|(name, _)| crate::answer::is_stamped(name))
    {
        return Err(Answer::stamped_header(&name));
    }
    let key = settings
        .key
        .key(&path, |name| headers.get(name).into_iter().next())
        .map_err(|why| Answer::no_key(&why))?;
    drop(headers);
    let client = Client::new(&config).map_err(|e| store_error(&e))?;
    let mut options =
        Options::ttl(Duration::from_millis(settings.ttl_ms)).with_metadata("s3-lease-gate");
    if let Some(holder) = &settings.holder {
        options = options.with_holder_id(holder.clone());
    }
    match client.acquire_with(&key, &options, Duration::from_millis(settings.wait_ms)) {
        Ok(held) => Ok(held),
        Err(Error::Timeout { holder, .. }) => {
            let now = wall_clock::now();
            let now_ms = now
                .seconds
                .saturating_mul(1_000)
                .saturating_add(u64::from(now.nanoseconds / 1_000_000));
            let holder = holder.as_deref();
            Err(Answer::held(
                &key,
                holder.map(|h| h.holder_id.as_str()),
                holder.map(|h| h.expires_at_ms.saturating_sub(now_ms)),
            ))
        }
        Err(e) => Err(store_error(&e)),
    }
}

fn store_error(e: &Error) -> Answer {
    Answer::store_error(e.code(), &e.to_string())
}

/// Sends the gate's own answer. Failures here mean the client is gone.
fn send(answer: Answer, response_out: ResponseOutparam) {
    let Ok(headers) = Fields::from_list(&answer.headers) else {
        return;
    };
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(answer.status);
    let Ok(body) = response.body() else {
        return;
    };
    ResponseOutparam::set(response_out, Ok(response));
    if let Ok(stream) = body.write() {
        for chunk in answer.body.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                return;
            }
        }
    }
    let _ = OutgoingBody::finish(body, None);
}
