//! The WASI 0.3 gate. For each request: derive its key, acquire the key's
//! lease (waiting at most `S3LEASE_GATE_WAIT_MS`), forward a new request
//! (the incoming method, path, headers and body, with the client's own
//! `s3-lease-*` headers stripped and the gate's stamped), and relay the
//! downstream's response through a body stream of the gate's own, which
//! releases the lease once the body (and trailers) have been written to
//! the client, or once writing it failed. Nothing is forwarded without
//! the lease.

use crate::answer::{self, Answer};
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::clocks::{monotonic_clock, system_clock};
use crate::bindings::wasi::http::handler as downstream;
use crate::bindings::wasi::http::types::{ErrorCode, Fields, Request, Response};
use crate::bindings::{wit_future, wit_stream};
use crate::settings::Settings;
use s3_lease_guest::{Client, Config, Error, Held, Options};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

struct Gate;

crate::bindings::export!(Gate with_types_in crate::bindings::generated);

impl crate::bindings::exports::wasi::http::handler::Guest for Gate {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let env = get_environment();
        let settings = match crate::settings::settings(&env) {
            Ok(s) => s,
            Err(why) => return Ok(response(Answer::not_configured(&why))),
        };
        let config = match Config::from_vars(|name| crate::settings::var(&env, name)) {
            Ok(c) => c,
            Err(e) => return Ok(response(Answer::not_configured(&e.to_string()))),
        };
        let headers = request.get_headers();
        let path = request.get_path_with_query().unwrap_or_default();
        let key = match settings
            .key
            .key(&path, |name| headers.get(name).into_iter().next())
        {
            Ok(key) => key,
            Err(why) => return Ok(response(Answer::no_key(&why))),
        };
        drop(headers);
        // A client per request: calls on one client take turns, and
        // requests for different keys must not.
        let client = match Client::new(&config) {
            Ok(c) => c,
            Err(e) => return Ok(response(store_error(&e))),
        };
        let held = match acquire(&client, &settings, &key).await {
            Ok(held) => held,
            Err(answer) => return Ok(response(answer)),
        };
        let forwarded = match forward(request, &held) {
            Ok(r) => r,
            Err(code) => {
                let _ = held.release().await;
                return Err(code);
            }
        };
        match downstream::handle(forwarded).await {
            Ok(reply) => Ok(relay(reply, held, settings.ttl_ms)),
            Err(code) => {
                let _ = held.release().await;
                Ok(response(Answer::downstream_failed(&format!("{code:?}"))))
            }
        }
    }
}

async fn acquire(client: &Client, settings: &Settings, key: &str) -> Result<Held, Answer> {
    let mut options =
        Options::ttl(Duration::from_millis(settings.ttl_ms)).with_metadata("s3-lease-gate");
    if let Some(holder) = &settings.holder {
        options = options.with_holder_id(holder.clone());
    }
    let wait = Duration::from_millis(settings.wait_ms);
    match client.acquire_with(key, &options, wait).await {
        Ok(held) => Ok(held),
        Err(Error::Timeout { holder, .. }) => {
            let now = now_ms();
            let holder = holder.as_deref();
            Err(Answer::held(
                key,
                holder.map(|h| h.holder_id.as_str()),
                holder.map(|h| h.expires_at_ms.saturating_sub(now)),
            ))
        }
        Err(e) => Err(store_error(&e)),
    }
}

fn now_ms() -> u64 {
    let now = system_clock::now();
    u64::try_from(now.seconds)
        .unwrap_or(0)
        .saturating_mul(1_000)
        .saturating_add(u64::from(now.nanoseconds / 1_000_000))
}

/// The request the downstream gets: the incoming one's method, path,
/// scheme, authority, headers (less any `s3-lease-*` the client sent)
/// plus the gate's, and its body and trailers, passed through as streams.
fn forward(incoming: Request, held: &Held) -> Result<Request, ErrorCode> {
    let mut headers: Vec<(String, Vec<u8>)> = incoming
        .get_headers()
        .copy_all()
        .into_iter()
        .filter(|(name, _)| !answer::is_stamped(name))
        .collect();
    headers.extend(
        held.lease()
            .header_values()
            .map(|(name, value)| (name.to_string(), value.into_bytes())),
    );
    let fields = Fields::from_list(&headers)
        .map_err(|e| ErrorCode::InternalError(Some(format!("forwarded headers: {e:?}"))))?;
    let (method, path, scheme, authority) = (
        incoming.get_method(),
        incoming.get_path_with_query(),
        incoming.get_scheme(),
        incoming.get_authority(),
    );
    let (consumed_tx, consumed_rx) = wit_future::new(|| Ok(()));
    let (body, trailers) = Request::consume_body(incoming, consumed_rx);
    let (request, transmitted) = Request::new(fields, Some(body), trailers, None);
    let refused = |what: &str| ErrorCode::InternalError(Some(format!("forwarded {what}")));
    request
        .set_method(&method)
        .map_err(|()| refused("method"))?;
    request
        .set_path_with_query(path.as_deref())
        .map_err(|()| refused("path"))?;
    request
        .set_scheme(scheme.as_ref())
        .map_err(|()| refused("scheme"))?;
    request
        .set_authority(authority.as_deref())
        .map_err(|()| refused("authority"))?;
    // Whether the downstream read the body to its end is what the host
    // asked of the incoming request's.
    wit_bindgen::spawn_local(async move {
        let _ = consumed_tx.write(transmitted.await).await;
    });
    Ok(request)
}

/// The downstream's response, relayed: its status and headers now, its
/// body and trailers by a task that forwards them chunk by chunk and then
/// releases the lease. While they stream, another task renews the lease
/// every ttl/3, so a body that takes longer than the ttl keeps the key.
fn relay(reply: Response, held: Held, ttl_ms: u64) -> Response {
    let status = reply.get_status_code();
    // A copy, not the response's own (a child of it): the response is
    // consumed next.
    let headers =
        Fields::from_list(&reply.get_headers().copy_all()).unwrap_or_else(|_| Fields::new());
    let (done_tx, done_rx) = wit_future::new(|| Ok(()));
    let (mut from, trailers_in) = Response::consume_body(reply, done_rx);
    let (mut to, body) = wit_stream::new();
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    let (relayed, sent) = Response::new(headers, Some(body), trailers);
    let _ = relayed.set_status_code(status);

    let hold = Rc::new(Hold {
        held: RefCell::new(Some(held)),
        streaming: Cell::new(true),
    });
    wit_bindgen::spawn_local(renew_while_streaming(hold.clone(), ttl_ms));
    wit_bindgen::spawn_local(async move {
        let mut delivered = true;
        loop {
            let (result, chunk) = from.read(Vec::with_capacity(16 * 1024)).await;
            if chunk.is_empty() {
                if matches!(result, wit_bindgen::StreamResult::Complete(_)) {
                    continue;
                }
                break;
            }
            if !to.write_all(chunk).await.is_empty() {
                // The client is gone: stop reading the downstream's body.
                delivered = false;
                break;
            }
        }
        drop(from);
        drop(to);
        if delivered {
            let _ = trailers_tx.write(trailers_in.await).await;
            let outcome = sent.await;
            let _ = done_tx.write(outcome).await;
        }
        hold.streaming.set(false);
        // A renewal under way has the lease, and releases it when it
        // returns (releasing the one from before it would be refused).
        hold.release().await;
    });
    relayed
}

/// A lease while the response streams, shared by the relay and renewer
/// tasks (one thread: no check and set of these cells interleaves). The
/// renewer takes the lease out while its renewal is under way.
struct Hold {
    held: RefCell<Option<Held>>,
    streaming: Cell<bool>,
}

impl Hold {
    /// Releases the lease unless a renewal has it out. A failed release
    /// changes nothing already sent: the lease lapses after its ttl.
    async fn release(&self) {
        let held = self.held.borrow_mut().take();
        if let Some(held) = held {
            let _ = held.release().await;
        }
    }
}

/// Renews the lease every ttl/3 while the body streams. A renewal that
/// fails leaves the lease to lapse at its expiry.
async fn renew_while_streaming(hold: Rc<Hold>, ttl_ms: u64) {
    // Saturating: a ttl of any size in the environment is a long wait,
    // not an overflow.
    let every_ns = (ttl_ms / 3).saturating_mul(1_000_000);
    loop {
        monotonic_clock::wait_for(every_ns).await;
        let Some(mut held) = hold.held.borrow_mut().take() else {
            return;
        };
        if !hold.streaming.get() {
            // Not ours to keep: back for the relay's release.
            *hold.held.borrow_mut() = Some(held);
            return;
        }
        let renewed = held.renew().await;
        *hold.held.borrow_mut() = Some(held);
        if !hold.streaming.get() {
            hold.release().await;
            return;
        }
        if renewed.is_err() {
            return;
        }
    }
}

fn store_error(e: &Error) -> Answer {
    Answer::store_error(e.code(), &e.to_string())
}

/// The gate's own answer as a 0.3 response; its body is written by a task,
/// as the host reads the stream only after `handle` has returned.
fn response(answer: Answer) -> Response {
    let headers = Fields::from_list(&answer.headers).unwrap_or_else(|_| Fields::new());
    let (mut body_writer, body) = wit_stream::new();
    let (_, trailers) = wit_future::new(|| Ok(None));
    let (response, _sent) = Response::new(headers, Some(body), trailers);
    let _ = response.set_status_code(answer.status);
    wit_bindgen::spawn_local(async move {
        let _ = body_writer.write_all(answer.body).await;
    });
    response
}
