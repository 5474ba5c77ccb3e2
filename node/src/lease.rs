//! A held lease as JavaScript holds it: the host's `Lease` (renewing
//! itself on its client's scheduler), its fields read without waiting, and
//! its loss told to a callback (the JavaScript's `lost` Promise and
//! `AbortSignal`) without holding the process open.

use crate::convert;
use crate::errors::{self, OrReject};
use crate::slots::ClientSlot;
use napi::bindgen_prelude::{Buffer, Status};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use s3_lease_host::{FenceOptions, Lease, LeaseRecord, LeaseStatus, LostReason};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

/// Called once, with why the lease ended. Weak: a held lease does not keep
/// the process alive (at its end, `exit` releases it).
pub type LostCallback = ThreadsafeFunction<Value, (), Value, Status, false, true>;

#[napi]
pub struct NativeLease {
    /// `None` once released: a call after it is refused.
    lease: Mutex<Option<Arc<Lease>>>,
    /// The record as last seen, for the fields once the lease is let go.
    last: Mutex<LeaseRecord>,
    /// Keeps the client (and so its release at exit) as long as a lease of
    /// it is referenced.
    _client: Arc<ClientSlot>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl NativeLease {
    pub fn new(lease: Lease, client: Arc<ClientSlot>) -> Self {
        let record = lease.record();
        NativeLease {
            lease: Mutex::new(Some(Arc::new(lease))),
            last: Mutex::new(record),
            _client: client,
        }
    }

    fn held(&self) -> Option<Arc<Lease>> {
        lock(&self.lease).clone()
    }

    /// The lease, for a call that needs it held.
    fn for_call(&self) -> napi::Result<Arc<Lease>> {
        self.held().ok_or_else(|| {
            errors::plain("lost", &format!("the lease on {} was released", self.key()))
        })
    }

    fn key(&self) -> String {
        lock(&self.last).key.clone()
    }
}

/// Why a lease ended, for JavaScript.
pub fn lost_json(reason: &LostReason) -> Value {
    match reason {
        LostReason::Taken(holder) => json!({
            "reason": "taken",
            "message": match holder.as_ref().and_then(|h| h.holder_id.as_deref()) {
                Some(who) => format!("taken by {who}"),
                None => "taken over (or its lock object is gone)".to_string(),
            },
            "holder": holder.as_ref().map(convert::lock_state_json),
        }),
        LostReason::Expired(last_error) => json!({
            "reason": "expired",
            "message": match last_error {
                Some(e) => format!("no renew succeeded before its safe margin ran out (last error: {e})"),
                None => "no renew succeeded before its safe margin ran out".to_string(),
            },
        }),
        LostReason::Failed(e) => json!({
            "reason": "failed",
            "message": format!("a renew failed with an error that retrying cannot fix: {e}"),
        }),
        LostReason::Released => json!({ "reason": "released", "message": "released" }),
        _ => json!({ "reason": "lost", "message": format!("{reason:?}") }),
    }
}

/// An instant of this process's monotonic clock as wall-clock
/// milliseconds since the epoch (for a `Date`).
fn wall_ms(at: Instant) -> u64 {
    let now = SystemTime::now();
    let wall = match at.checked_duration_since(Instant::now()) {
        Some(ahead) => now.checked_add(ahead),
        None => now.checked_sub(Instant::now().saturating_duration_since(at)),
    };
    wall.and_then(|w| w.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, convert::ms)
}

#[napi]
impl NativeLease {
    /// The lease's record as last renewed (JSON: `key`, `token`, `holder`,
    /// `expiresAt`, ...).
    #[napi]
    pub fn record(&self) -> Value {
        if let Some(lease) = self.held() {
            *lock(&self.last) = lease.record();
        }
        convert::record_json(&lock(&self.last))
    }

    /// Whether it is surely still held, judged now.
    #[napi]
    pub fn is_held(&self) -> bool {
        self.held().is_some_and(|l| l.is_held())
    }

    /// While held: until when (ms since the epoch), unless a renew
    /// succeeds first.
    #[napi]
    pub fn held_until(&self) -> Option<f64> {
        let until = self.held()?.held_until()?;
        Some(wall_ms(until) as f64)
    }

    /// The token while the lease is surely held; a `lost` error otherwise.
    #[napi]
    pub fn held_token(&self) -> napi::Result<f64> {
        let token = self.for_call()?.held_token().or_reject()?;
        Ok(token as f64)
    }

    /// Why it ended, if it did.
    #[napi]
    pub fn lost_reason(&self) -> Option<Value> {
        match self.held() {
            Some(lease) => lease.lost_reason().as_ref().map(lost_json),
            None => Some(lost_json(&LostReason::Released)),
        }
    }

    /// Calls `callback` once, with why the lease ended (taken, expired,
    /// failed, released), at the instant it ends: at its safe margin even
    /// while a renew hangs.
    #[napi]
    pub fn on_end(&self, callback: LostCallback) {
        let Some(lease) = self.held() else {
            callback.call(
                lost_json(&LostReason::Released),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
            return;
        };
        let mut status = lease.watch();
        // Not the lease itself: a release waits for every call's hold on it.
        let weak = Arc::downgrade(&lease);
        drop(lease);
        let reason_now = move || weak.upgrade().and_then(|l| l.lost_reason());
        napi::bindgen_prelude::spawn(async move {
            let reason = loop {
                let now = status.borrow_and_update().clone();
                match now {
                    LeaseStatus::Lost(reason) => break reason,
                    LeaseStatus::Held { until, .. } => {
                        // A millisecond past: the guard counts whole ones.
                        let at = tokio::time::Instant::from_std(until) + Duration::from_millis(1);
                        tokio::select! {
                            changed = status.changed() => if changed.is_err() {
                                break reason_now().unwrap_or(LostReason::Released);
                            },
                            _ = tokio::time::sleep_until(at) => if let Some(reason) = reason_now() {
                                break reason;
                            },
                        }
                    }
                    _ => break LostReason::Released,
                }
            };
            callback.call(lost_json(&reason), ThreadsafeFunctionCallMode::NonBlocking);
        });
    }

    /// Stops renewing and releases (after a renew under way); a lease no
    /// longer held is not released, and it resolves without a request.
    #[napi]
    pub async fn release(&self) -> napi::Result<()> {
        let Some(mut lease) = lock(&self.lease).take() else {
            return Ok(());
        };
        *lock(&self.last) = lease.record();
        // A fenced write under way holds the lease for its request (at
        // most the request timeout): released once it is done.
        loop {
            match Arc::try_unwrap(lease) {
                Ok(lease) => return lease.release().await.or_reject(),
                Err(shared) => {
                    lease = shared;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    }

    /// A fenced write under the lease's current token; refused without a
    /// request once the lease is no longer surely held.
    #[napi]
    pub async fn fenced_put(
        &self,
        object_key: String,
        body: Buffer,
        content_type: String,
        reject_equal_token: bool,
    ) -> napi::Result<Value> {
        let lease = self.for_call()?;
        let body: Vec<u8> = body.into();
        let options = FenceOptions::default().reject_equal_token(reject_equal_token);
        let written = lease
            .fenced_put_with(&object_key, body, &content_type, options)
            .await
            .or_reject()?;
        Ok(convert::fenced_write_json(&written))
    }

    #[napi]
    pub async fn fenced_delete(&self, object_key: String) -> napi::Result<()> {
        let lease = self.for_call()?;
        lease.fenced_delete(&object_key).await.or_reject()
    }
}
