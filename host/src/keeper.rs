//! A client's scheduler of renewals: one task for all its held leases.
//!
//! Each lease's guard (`s3_lease_keep::guard`) says when it is due; the
//! task sleeps until the earliest instant any guard names, then asks each
//! due guard what to do: renew (a task of its own runs the call on the
//! client's instances and reports back), wake again later, or stop (the
//! lease is lost or let go). A hung renew never holds the others back, and
//! a guard is asked again at its claim's end, so a lease is reported lost
//! on time while its renew still hangs.

use crate::client::Inner;
use crate::convert;
use crate::lease::Held;
use s3_lease_keep::guard::Next;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Instant;
use tokio::sync::mpsc;

/// The handle leases register with.
pub(crate) struct Keeper {
    tx: Option<mpsc::UnboundedSender<Arc<Held>>>,
}

impl Keeper {
    /// Starts the task on the current tokio runtime.
    pub fn start(client: Weak<Inner>) -> Keeper {
        let (tx, rx) = mpsc::unbounded_channel();
        let renewals = tx.downgrade();
        tokio::spawn(run(client, rx, renewals));
        Keeper { tx: Some(tx) }
    }

    /// Asks the scheduler to look at `held` now.
    pub fn keep(&self, held: Arc<Held>) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(held);
        }
    }
}

async fn run(
    client: Weak<Inner>,
    mut rx: mpsc::UnboundedReceiver<Arc<Held>>,
    renewals: mpsc::WeakUnboundedSender<Arc<Held>>,
) {
    // When each lease is due, earliest first; a lease is looked at when
    // its entry comes due (entries of a lease already looked at since are
    // harmless: looking again only asks its guard).
    let mut due: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut leases: HashMap<u64, Weak<Held>> = HashMap::new();
    loop {
        let wake = due.peek().map(|Reverse((at, _))| *at);
        let now_due = tokio::select! {
            message = rx.recv() => match message {
                Some(held) => {
                    leases.insert(held.id, Arc::downgrade(&held));
                    vec![held.id]
                }
                // The client is gone, and every lease with it.
                None => return,
            },
            _ = sleep_until(wake) => {
                let now = Instant::now();
                let mut ready = Vec::new();
                while let Some(Reverse((at, id))) = due.peek().copied() {
                    if at > now {
                        break;
                    }
                    due.pop();
                    ready.push(id);
                }
                ready
            }
        };
        for id in now_due {
            let Some(held) = leases.get(&id).and_then(Weak::upgrade) else {
                leases.remove(&id);
                continue;
            };
            let next = {
                let mut state = held.lock();
                if state.stopped {
                    None
                } else {
                    let next = state.guard.poll(held.now_ms());
                    held.publish(&mut state);
                    Some((next, state.record.clone()))
                }
            };
            match next {
                None | Some((Next::Ended(_), _)) => {
                    leases.remove(&id);
                }
                Some((Next::WakeAt(at), _)) => due.push(Reverse((held.instant(at), id))),
                Some((Next::Renew, record)) => {
                    // A hung renew must not keep the loss from being seen:
                    // look again at the claim's end.
                    if let Some(until) = held.lock().guard.held_until(held.now_ms()) {
                        due.push(Reverse((held.instant(until), id)));
                    }
                    let (client, renewals) = (client.clone(), renewals.clone());
                    tokio::spawn(async move {
                        let result = renew(&client, &held, record).await;
                        held.renewed(result, held.now_ms());
                        if let Some(tx) = renewals.upgrade() {
                            let _ = tx.send(held);
                        }
                    });
                }
            }
        }
    }
}

async fn renew(
    client: &Weak<Inner>,
    held: &Held,
    record: crate::types::LeaseRecord,
) -> Result<crate::types::LeaseRecord, crate::Error> {
    let Some(inner) = client.upgrade() else {
        return Err(crate::Error::host("the client is gone"));
    };
    let index = held.index;
    let lease = convert::lease(&record);
    inner
        .call(index, move |raw| raw.renew(&lease))
        .await
        .map(convert::from_lease)
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}
