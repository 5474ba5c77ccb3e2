//! The WASI 0.2 glue: `wasi:http/incoming-handler` in, `s3-lease:lease/lease`'s
//! blocking calls out. The increment itself is in `increment`.

use crate::bindings::exports::wasi::http::incoming_handler::Guest;
use crate::bindings::s3_lease::lease::lease::Client;
use crate::bindings::s3_lease::lease::types::{Error, FencedObject, FencedWrite, Lease, Options};
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use crate::increment::{increment, s3_lease_error, LeaseCalls};
use crate::reply::{counter_name, Reply};
use crate::route::route;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

struct Function;

crate::bindings::export!(Function with_types_in crate::bindings);

impl Guest for Function {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let path = request.path_with_query().unwrap_or_default();
        let reply = match counter_name(route(matches!(request.method(), Method::Post), &path)) {
            Ok(name) => try_increment(&name),
            Err(refused) => refused,
        };
        send(reply, response_out);
    }
}

fn try_increment(name: &str) -> Reply {
    let settings = match crate::settings::settings(&get_environment()) {
        Ok(settings) => settings,
        Err(reply) => return reply,
    };
    let client = match Client::new(&settings.config) {
        Ok(client) => client,
        Err(e) => return s3_lease_error(&e),
    };
    // `lease`'s calls block until they are done, so the shared async
    // increment is finished after its first poll.
    let mut increment = pin!(increment(&client, &settings, name));
    match increment
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(reply) => reply,
        Poll::Pending => Reply::error(500, "internal", "a blocking call suspended"),
    }
}

/// `lease`'s blocking calls, as the increment's async ones.
impl LeaseCalls for Client {
    async fn acquire(
        &self,
        key: String,
        options: Options,
        timeout_ms: u64,
    ) -> Result<Lease, Error> {
        Client::acquire(self, &key, &options, timeout_ms)
    }
    async fn fenced_get(&self, object_key: String) -> Result<Option<FencedObject>, Error> {
        Client::fenced_get(self, &object_key)
    }
    async fn fenced_put(
        &self,
        lease: Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<FencedWrite, Error> {
        Client::fenced_put(self, &lease, &object_key, &body, &content_type)
    }
    async fn release(&self, lease: Lease) -> Result<(), Error> {
        Client::release(self, &lease)
    }
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
