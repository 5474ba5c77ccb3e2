//! `wasi:http/outgoing-handler.handle` for the WASI 0.2 build, with the
//! request options it is handed dropped once the request is sent.
//!
//! The guest gives `handle` its `request-options` (the WIT passes them
//! owned), and wasmtime-wasi-http's `handle` copies them out of the
//! resource table but never deletes them: every request left one entry
//! (about 100 bytes) in the instance's table for the instance's life, so
//! a client renewing leases grew without bound. This `handle` shadows it:
//! it calls the same implementation, then deletes the options, whatever
//! the outcome (the guest cannot touch a handle it gave away).

use crate::engine::state::State;
use anyhow::Result;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi_http::p2::bindings::http::outgoing_handler::Host as OutgoingHandler;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::p2::types::{HostFutureIncomingResponse, HostOutgoingRequest};
use wasmtime_wasi_http::{RequestOptions, WasiHttpView};

/// The interface as wasmtime-wasi-http defines it in the linker (its WIT's
/// version, which components importing any 0.2 version are linked to).
const OUTGOING_HANDLER: &str = "wasi:http/outgoing-handler@0.2.12";

/// Replaces `handle` in a linker that already has wasi:http 0.2 in it.
pub(crate) fn drop_request_options_after_handle(linker: &mut Linker<State>) -> Result<()> {
    linker.allow_shadowing(true);
    let defined = linker.instance(OUTGOING_HANDLER)?.func_wrap(
        "handle",
        |mut store,
         (request, options): (
            Resource<HostOutgoingRequest>,
            Option<Resource<RequestOptions>>,
        )| {
            let state: &mut State = store.data_mut();
            let given = options.as_ref().map(|o| Resource::new_own(o.rep()));
            let sent = OutgoingHandler::handle(&mut state.http(), request, options);
            if let Some(given) = given {
                // Already gone only if a future wasmtime deletes it itself.
                let _ = state.http().table.delete::<RequestOptions>(given);
            }
            let sent: Result<Resource<HostFutureIncomingResponse>, ErrorCode> = match sent {
                Ok(future) => Ok(future),
                Err(e) => Err(e.downcast()?),
            };
            Ok((sent,))
        },
    );
    linker.allow_shadowing(false);
    Ok(defined?)
}
