//! What a client's and an elector's JavaScript objects share with their
//! leases and their thread's list of what to release at exit (`exit`).

use crate::errors;
use s3_lease_host::{Client, ElectorWatcher, Error, LeaseRecord, Role};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// A client, shared by its JavaScript object, its leases and electors, and
/// its thread's list of what to release at exit.
pub struct ClientSlot {
    pub client: Client,
    /// How long the end of its thread waits for its releases (zero: they
    /// are sent, not waited for).
    pub exit_timeout: Duration,
}

/// A resign asked of the elector's task, and where its outcome goes.
pub(crate) type Resign = oneshot::Sender<Result<(), Error>>;

/// An elector, shared by its JavaScript object and its thread's list of
/// what to resign at exit.
pub struct ElectorSlot {
    pub(crate) key: String,
    pub(crate) watcher: ElectorWatcher,
    pub(crate) resign: Mutex<Option<oneshot::Sender<Resign>>>,
    pub(crate) client: Arc<ClientSlot>,
}

impl ElectorSlot {
    /// Resigns (once): releases the lease if leading, stops campaigning.
    pub(crate) async fn resign(&self) -> Result<(), Error> {
        let ask = self.resign.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(ask) = ask else { return Ok(()) };
        let (tx, rx) = oneshot::channel();
        if ask.send(tx).is_err() {
            return Ok(()); // its task already ended (a failed elector)
        }
        rx.await.unwrap_or(Ok(()))
    }

    pub async fn resign_within(&self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.resign()).await;
    }

    pub(crate) fn leader_lease(&self) -> napi::Result<LeaseRecord> {
        match self.watcher.role() {
            Role::Leader(record) => Ok(record),
            _ => Err(errors::plain(
                "lost",
                &format!(
                    "not leading {}: a fenced write needs the leader's lease",
                    self.key
                ),
            )),
        }
    }
}
