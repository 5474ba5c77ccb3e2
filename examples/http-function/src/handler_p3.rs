//! The WASI 0.3 glue: `wasi:http/handler` in, s3-lease's async calls out
//! (`s3-lease-guest` with `wasip3`): `handler`'s increment, each call
//! awaited. A 0.3 host may run many requests through one instance at once
//! (`wasmtime serve` sends up to 16): each makes its own client, so their
//! lock calls run at the same time instead of taking turns.

use crate::bindings::exports::wasi::http::handler::Guest;
use crate::bindings::wasi::http::types::{ErrorCode, Fields, Method, Request, Response};
use crate::bindings::{wit_future, wit_stream};
use crate::counter::{self, Counter};
use crate::increment::{self, Settings};
use crate::reply::{counter_name, Reply};
use crate::route::route;
use s3_lease_guest::{Client, Held};

struct Function;

crate::bindings::export!(Function with_types_in crate::bindings::generated);

impl Guest for Function {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let path = request.get_path_with_query().unwrap_or_default();
        let reply = match counter_name(route(matches!(request.get_method(), Method::Post), &path)) {
            Ok(name) => try_increment(&name).await.unwrap_or_else(|refused| refused),
            Err(refused) => refused,
        };
        Ok(response(reply))
    }
}

async fn try_increment(name: &str) -> Result<Reply, Reply> {
    let settings = increment::settings()?;
    let refused = |e| increment::refused(name, &e);
    let client = Client::new(&settings.config).map_err(refused)?;
    let (key, options) = increment::lock(&settings, name);
    let held = client
        .acquire_with(&key, &options, settings.lock_timeout)
        .await
        .map_err(refused)?;
    let written = write_next(&client, &held, &settings, name).await;
    // Released before replying, whatever happened (see `handler`).
    let _ = held.release().await;
    written.map(increment::written)
}

/// Reads the counter and writes it plus one, fenced by `held`.
async fn write_next(
    client: &Client,
    held: &Held,
    settings: &Settings,
    name: &str,
) -> Result<Counter, Reply> {
    let refused = |e| increment::refused(name, &e);
    let object_key = increment::object_key(settings, name);
    let current = client.fenced_get(&object_key).await.map_err(refused)?;
    let next = increment::next(current, held.token())?;
    held.fenced_put(&object_key, &counter::to_json(next), "application/json")
        .await
        .map_err(refused)?;
    Ok(next)
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
