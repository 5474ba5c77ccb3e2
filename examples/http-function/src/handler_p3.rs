//! The WASI 0.3 glue: `wasi:http/handler` in, `s3-lease:lease/async-lease`'s
//! async calls out. The increment itself is in `increment`, shared with the
//! 0.2 build. A 0.3 host may run many requests through one instance at
//! once (`wasmtime serve` sends up to 16): each makes its own client, so
//! their lock calls run at the same time instead of taking turns.

use crate::bindings::exports::wasi::http::handler::Guest;
use crate::bindings::s3_lease::lease::async_lease::Client;
use crate::bindings::s3_lease::lease::types::{Error, FencedObject, FencedWrite, Lease, Options};
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::http::types::{ErrorCode, Fields, Method, Request, Response};
use crate::bindings::{wit_future, wit_stream};
use crate::increment::{increment, s3_lease_error, LeaseCalls};
use crate::reply::{counter_name, Reply};
use crate::route::route;

struct Function;

crate::bindings::export!(Function with_types_in crate::bindings::generated);

impl Guest for Function {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let path = request.get_path_with_query().unwrap_or_default();
        let reply = match counter_name(route(matches!(request.get_method(), Method::Post), &path)) {
            Ok(name) => try_increment(&name).await,
            Err(refused) => refused,
        };
        Ok(response(reply))
    }
}

async fn try_increment(name: &str) -> Reply {
    let settings = match crate::settings::settings(&get_environment()) {
        Ok(settings) => settings,
        Err(reply) => return reply,
    };
    match Client::new(&settings.config) {
        Ok(client) => increment(&client, &settings, name).await,
        Err(e) => s3_lease_error(&e),
    }
}

impl LeaseCalls for Client {
    async fn acquire(
        &self,
        key: String,
        options: Options,
        timeout_ms: u64,
    ) -> Result<Lease, Error> {
        Client::acquire(self, key, options, timeout_ms).await
    }
    async fn fenced_get(&self, object_key: String) -> Result<Option<FencedObject>, Error> {
        Client::fenced_get(self, object_key).await
    }
    async fn fenced_put(
        &self,
        lease: Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<FencedWrite, Error> {
        Client::fenced_put(self, lease, object_key, body, content_type).await
    }
    async fn release(&self, lease: Lease) -> Result<(), Error> {
        Client::release(self, lease).await
    }
}

/// The reply as a 0.3 response. Its body is written by a task of its own:
/// the host reads the stream only once `handle` has returned the response.
/// A failed write means the client is gone; there is nobody left to tell.
fn response(reply: Reply) -> Response {
    let headers = Fields::from_list(&reply.headers).unwrap_or_else(|_| Fields::new());
    let (mut body_writer, body) = wit_stream::new();
    // No trailers: the writer is dropped, and the host reads the default.
    let (_, trailers) = wit_future::new(|| Ok(None));
    let (response, _sent) = Response::new(headers, Some(body), trailers);
    let _ = response.set_status_code(reply.status);
    wit_bindgen::spawn_local(async move {
        let _ = body_writer.write_all(reply.body).await;
    });
    response
}
