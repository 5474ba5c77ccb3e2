//! The WASI 0.2 glue.

use crate::bindings::exports::wasi::http::incoming_handler::Guest;
use crate::bindings::wasi::clocks::{monotonic_clock, wall_clock};
use crate::bindings::wasi::http::types::{
    ErrorCode, Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

struct Downstream;

crate::bindings::export!(Downstream with_types_in crate::bindings);

fn now_ns() -> u128 {
    let t = wall_clock::now();
    u128::from(t.seconds) * 1_000_000_000 + u128::from(t.nanoseconds)
}

fn sleep(ms: u64) {
    monotonic_clock::subscribe_duration(ms.saturating_mul(1_000_000)).block();
}

impl Guest for Downstream {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        let enter = now_ns();
        let path = request.path_with_query().unwrap_or_default();
        crate::note_entry(&path);
        if crate::told_to_fail(&path) {
            let failure = ErrorCode::InternalError(Some(crate::FAILURE.into()));
            ResponseOutparam::set(response_out, Err(failure));
            return;
        }
        let headers = request.headers();
        let text = |name: &str| {
            headers
                .get(name)
                .into_iter()
                .next()
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        };
        let (token, holder) = (text("s3-lease-token"), text("s3-lease-holder"));
        drop(headers);
        sleep(crate::query_ms(&path, "sleep_ms").unwrap_or(30));
        let (status, body) = crate::record(&path, enter, now_ns(), token, holder, None);
        let Ok(headers) =
            Fields::from_list(&[("content-type".into(), b"application/json".to_vec())])
        else {
            return;
        };
        let response = OutgoingResponse::new(headers);
        let _ = response.set_status_code(status);
        let Ok(out) = response.body() else {
            return;
        };
        ResponseOutparam::set(response_out, Ok(response));
        if let Ok(stream) = out.write() {
            for chunk in body.chunks(4096) {
                if stream.blocking_write_and_flush(chunk).is_err() {
                    return;
                }
            }
            if let Some(ms) = crate::query_ms(&path, "body_ms") {
                sleep(ms);
                if stream.blocking_write_and_flush(b"\n").is_err() {
                    return;
                }
            }
            drop(stream);
        }
        let _ = OutgoingBody::finish(out, None);
    }
}
