//! The end of a JavaScript environment (the process, or a worker thread):
//! the clients it connected release what they still hold, waiting up to
//! each client's `exitTimeout` (the JavaScript's `process.on('exit')` calls
//! `releaseAtExit`; an environment cleanup hook calls it again for an end
//! that runs no JavaScript, a worker's `terminate()`: the second call finds
//! nothing left). Electors resign. A process killed by a signal it does not
//! handle releases nothing: its leases run out at their ttl, as a crash's
//! do, and no one else holds them before that.
//!
//! The lists are per thread: a worker's end releases the worker's leases,
//! not the main thread's.

use crate::slots::{ClientSlot, ElectorSlot};
use napi::Env;
use napi_derive::napi;
use s3_lease_host::CloseReport;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::sync::{Arc, Weak};
use std::time::Duration;

#[derive(Default)]
struct Open {
    hooked: bool,
    clients: Vec<Weak<ClientSlot>>,
    electors: Vec<Weak<ElectorSlot>>,
}

thread_local! {
    static OPEN: RefCell<Open> = RefCell::default();
}

/// Lists `client` for its thread's end (the caller runs on the
/// environment's JavaScript thread).
pub fn watch_client(env: &Env, client: &Arc<ClientSlot>) -> napi::Result<()> {
    hook(env)?;
    OPEN.with(|open| {
        let mut open = open.borrow_mut();
        open.clients.retain(|c| c.strong_count() > 0);
        open.clients.push(Arc::downgrade(client));
    });
    Ok(())
}

pub fn watch_elector(env: &Env, elector: &Arc<ElectorSlot>) -> napi::Result<()> {
    hook(env)?;
    OPEN.with(|open| {
        let mut open = open.borrow_mut();
        open.electors.retain(|e| e.strong_count() > 0);
        open.electors.push(Arc::downgrade(elector));
    });
    Ok(())
}

fn hook(env: &Env) -> napi::Result<()> {
    let hooked = OPEN.with(|open| std::mem::replace(&mut open.borrow_mut().hooked, true));
    if !hooked {
        env.add_env_cleanup_hook((), |()| release_at_exit())?;
    }
    Ok(())
}

/// Resigns this thread's electors and closes its clients (each waiting up
/// to its `exitTimeout`), blocking the thread until they are done: it runs
/// as the environment ends, when no JavaScript runs any more. Calls after
/// the first find nothing to do.
#[napi]
pub fn release_at_exit() {
    let (clients, electors) = OPEN.with(|open| {
        let mut open = open.borrow_mut();
        (
            std::mem::take(&mut open.clients),
            std::mem::take(&mut open.electors),
        )
    });
    let clients: Vec<_> = clients.iter().filter_map(Weak::upgrade).collect();
    let electors: Vec<_> = electors.iter().filter_map(Weak::upgrade).collect();
    if clients.is_empty() && electors.is_empty() {
        return;
    }
    // A runtime of its own: the addon's may be ending too, and this
    // thread is the JavaScript one (never inside a runtime).
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    else {
        return;
    };
    let longest = clients
        .iter()
        .map(|c| c.exit_timeout)
        .max()
        .unwrap_or(Duration::from_secs(2));
    runtime.block_on(async {
        let mut ending = tokio::task::JoinSet::new();
        for elector in electors {
            ending.spawn(async move { elector.resign_within(longest).await });
        }
        for client in clients {
            ending.spawn(async move {
                client.client.close(client.exit_timeout).await;
            });
        }
        // Each close is bounded by its own timeout; this bounds them all.
        let _ = tokio::time::timeout(longest + Duration::from_millis(100), async {
            while ending.join_next().await.is_some() {}
        })
        .await;
    });
}

/// What a close did, for JavaScript.
pub fn close_report_json(report: &CloseReport) -> Value {
    json!({
        "released": report.released,
        "alreadyOver": report.already_over,
        "failed": report.failed.iter().map(|(key, e)| json!({
            "key": key,
            "code": e.kind().name(),
            "message": e.to_string(),
        })).collect::<Vec<_>>(),
        "unfinished": report.unfinished,
        "allReleased": report.all_released(),
    })
}
