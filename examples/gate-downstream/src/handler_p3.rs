//! The WASI 0.3 glue.

use crate::bindings::wasi::clocks::{monotonic_clock, system_clock};
use crate::bindings::wasi::http::types::{ErrorCode, Fields, Request, Response};
use crate::bindings::{wit_future, wit_stream};

struct Downstream;

crate::bindings::export!(Downstream with_types_in crate::bindings::generated);

fn now_ns() -> u128 {
    let t = system_clock::now();
    u128::try_from(t.seconds).unwrap_or(0) * 1_000_000_000 + u128::from(t.nanoseconds)
}

impl crate::bindings::exports::wasi::http::handler::Guest for Downstream {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let enter = now_ns();
        let path = request.get_path_with_query().unwrap_or_default();
        crate::note_entry(&path);
        if crate::told_to_fail(&path) {
            return Err(ErrorCode::InternalError(Some(crate::FAILURE.into())));
        }
        let headers: Vec<(String, String)> = request
            .get_headers()
            .copy_all()
            .into_iter()
            .map(|(n, v)| {
                (
                    n.to_ascii_lowercase(),
                    String::from_utf8_lossy(&v).into_owned(),
                )
            })
            .collect();
        let text = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let (token, holder) = (
            text("s3-lease-token").map(str::to_string),
            text("s3-lease-holder").map(str::to_string),
        );
        let sleep_ms = crate::query_ms(&path, "sleep_ms").unwrap_or(30);
        monotonic_clock::wait_for(sleep_ms.saturating_mul(1_000_000)).await;
        let write = match crate::query_ms(&path, "write") {
            Some(1) => Some(write_fenced(text).await),
            _ => None,
        };
        let (status, body) = crate::record(&path, enter, now_ns(), token, holder, write);
        let body_ms = crate::query_ms(&path, "body_ms");
        let headers = Fields::from_list(&[("content-type".into(), b"application/json".to_vec())])
            .unwrap_or_else(|_| Fields::new());
        let (mut writer, contents) = wit_stream::new();
        let (_, trailers) = wit_future::new(|| Ok(None));
        let (response, _sent) = Response::new(headers, Some(contents), trailers);
        let _ = response.set_status_code(status);
        wit_bindgen::spawn_local(async move {
            let rest = writer.write_all(body).await;
            if let (true, Some(ms)) = (rest.is_empty(), body_ms) {
                monotonic_clock::wait_for(ms.saturating_mul(1_000_000)).await;
                let _ = writer.write_all(b"\n".to_vec()).await;
            }
        });
        Ok(response)
    }
}

/// Writes `gate/<key>.json` (under the key prefix) fenced by the lease the
/// gate forwarded: `ok`, or the error's case.
async fn write_fenced<'a>(header: impl Fn(&str) -> Option<&'a str>) -> &'static str {
    use s3_lease_guest::{Client, Config, Held, Lease};
    let written = async {
        let lease = Lease::from_headers(header)?;
        let config = Config::from_env()?;
        let client = Client::new(&config)?;
        let held = Held::from_forwarded(&client, lease);
        let object = format!("{}gate/{}.json", config.key_prefix(), held.key());
        let body = format!("{{\"token\":{}}}", held.token());
        held.fenced_put(&object, body.as_bytes(), "application/json")
            .await
            .map(|_| ())
    };
    match written.await {
        Ok(()) => "ok",
        Err(e) => e.code(),
    }
}
