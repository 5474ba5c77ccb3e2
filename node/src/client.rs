//! A connected client: the host's `Client` (its instances of the
//! component, its scheduler of renewals, its credentials), and the calls
//! on it that are not a lease's or an elector's.

use crate::config::{duration_ms, store_config, ConnectOptions};
use crate::convert;
use crate::credentials::{JsProvider, ProviderFn};
use crate::errors::{self, OrReject};
use crate::exit;
use crate::lease::NativeLease;
use crate::slots::ClientSlot;
use napi::bindgen_prelude::{Buffer, PromiseRaw};
use napi::Env;
use napi_derive::napi;
use s3_lease_host::{AcquireOptions, Client, ClientOptions, SharedSource, SlotOptions};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Notify;

#[napi]
pub struct NativeClient {
    slot: Arc<ClientSlot>,
}

/// Connects: loads the component (once per process), checks the
/// configuration, fetches the first credentials, all off the JavaScript
/// thread. The client is then listed for its thread's end (`exit`).
// Called only by napi-derive's generated glue, which rustc's dead-code
// pass does not see through for a function with a lifetime parameter.
#[allow(dead_code)]
#[napi]
pub fn connect<'env>(
    env: &'env Env,
    options: ConnectOptions,
    provider: Option<ProviderFn>,
    exit_timeout_ms: f64,
) -> napi::Result<PromiseRaw<'env, NativeClient>> {
    let exit_timeout = duration_ms("exitTimeout", exit_timeout_ms)?;
    let connecting = async move {
        let instances = options.instances;
        // Blocking: the AWS chain and a provider are called synchronously.
        let (config, runtime) = tokio::task::spawn_blocking(move || {
            let provider = provider.map(|call| SharedSource::new(JsProvider::new(call)));
            Ok::<_, napi::Error>((store_config(&options, provider)?, crate::runtime()?))
        })
        .await
        .map_err(|e| errors::plain("host", &format!("connecting stopped: {e}")))??;
        let mut client_options = ClientOptions::default();
        if let Some(n) = instances {
            client_options = client_options.instances(n as usize);
        }
        Client::connect_with(&runtime, &config, client_options)
            .await
            .or_reject()
    };
    env.spawn_future_with_callback(connecting, move |env, client| {
        let slot = Arc::new(ClientSlot {
            client,
            exit_timeout,
        });
        exit::watch_client(env, &slot)?;
        Ok(NativeClient { slot })
    })
}

/// Cancels a wait (an acquire) from JavaScript: its `AbortSignal`.
#[napi]
#[derive(Default)]
pub struct Canceller {
    cancelled: Arc<Notify>,
}

#[napi]
impl Canceller {
    #[napi(constructor)]
    pub fn new() -> Self {
        Canceller::default()
    }

    #[napi]
    pub fn cancel(&self) {
        // notify_one keeps the permit for a wait not yet begun.
        self.cancelled.notify_one();
    }
}

/// `client.acquire`'s options, as the JavaScript passes them on.
#[napi(object)]
pub struct AcquireArgs {
    pub ttl_ms: f64,
    pub wait_ms: f64,
    pub holder: Option<String>,
    pub metadata: Option<String>,
    pub limit: Option<u32>,
    pub fair: Option<bool>,
    pub deadline_ms: Option<f64>,
}

#[napi]
impl NativeClient {
    /// Waits up to `waitMs` for the key (one of its `limit` slots), then
    /// holds it, renewing itself: a `timeout` error naming the holder when
    /// the wait runs out. `canceller` gives the wait up.
    #[napi]
    pub async fn acquire(
        &self,
        key: String,
        args: AcquireArgs,
        canceller: Option<&Canceller>,
    ) -> napi::Result<NativeLease> {
        let mut options = AcquireOptions::new(duration_ms("ttl", args.ttl_ms)?);
        options.holder_id = args.holder.filter(|h| !h.is_empty());
        options.metadata = args.metadata;
        options.deadline = args
            .deadline_ms
            .map(|d| duration_ms("deadline", d))
            .transpose()?;
        let wait = duration_ms("wait", args.wait_ms)?;
        let client = &self.slot.client;
        let acquiring = async {
            match args.limit {
                Some(limit) if limit != 1 || args.fair == Some(true) => {
                    let slot = SlotOptions::new(limit).fair(args.fair.unwrap_or(false));
                    client.acquire_slot(&key, &options, slot, wait).await
                }
                _ => client.acquire(&key, &options, wait).await,
            }
        };
        let cancelled = canceller.map(|c| c.cancelled.clone());
        let lease = match cancelled {
            // Dropping the wait leaves nothing held (the host's acquire is
            // cancel-safe; a fair waiter leaves its queue).
            Some(cancelled) => tokio::select! {
                lease = acquiring => lease,
                _ = cancelled.notified() => return Err(errors::aborted()),
            },
            None => acquiring.await,
        }
        .or_reject()?;
        Ok(NativeLease::new(lease, self.slot.clone()))
    }

    /// The key's lock as read now; `null` if it was never locked.
    #[napi]
    pub async fn status(&self, key: String) -> napi::Result<Option<Value>> {
        let state = self.slot.client.inspect(&key).await.or_reject()?;
        Ok(state.as_ref().map(convert::lock_state_json))
    }

    /// A semaphore's holders and queue; `null` for a plain lock.
    #[napi]
    pub async fn slots(&self, key: String) -> napi::Result<Option<Value>> {
        let state = self.slot.client.inspect_slots(&key).await.or_reject()?;
        Ok(state.as_ref().map(convert::semaphore_json))
    }

    /// A fenced object's body and what it says (its token); `null` if absent.
    #[napi]
    pub async fn fenced_get(&self, object_key: String) -> napi::Result<Option<FencedRead>> {
        let object = self.slot.client.fenced_get(&object_key).await.or_reject()?;
        Ok(object.map(|o| FencedRead {
            info: convert::fenced_object_json(&o),
            body: o.body.into(),
        }))
    }

    /// The key's grant log, oldest first: from the first grant at or
    /// after `sinceMs` (the store's clock).
    #[napi]
    pub async fn audit(&self, key: String, since_ms: Option<f64>) -> napi::Result<Vec<Value>> {
        let since_ms = since_ms.map(|ms| ms.max(0.0) as u64);
        let entries = self.slot.client.audit(&key, since_ms).await.or_reject()?;
        Ok(entries.iter().map(convert::audit_entry_json).collect())
    }

    /// Probes the store (real requests under a scratch prefix).
    #[napi]
    pub async fn preflight(&self) -> napi::Result<Value> {
        let report = self.slot.client.preflight().await.or_reject()?;
        Ok(convert::preflight_json(&report))
    }

    /// Releases every lease the client holds, waiting up to `timeoutMs`;
    /// after it, the client grants no more leases.
    #[napi]
    pub async fn close(&self, timeout_ms: f64) -> napi::Result<Value> {
        let timeout = duration_ms("timeout", timeout_ms)?;
        let report = self.slot.client.close(timeout).await;
        Ok(exit::close_report_json(&report))
    }

    /// The store's name (`S3`, `DynamoDB`, ...).
    #[napi(getter)]
    pub fn store_name(&self) -> &'static str {
        self.slot.client.store_name()
    }

    /// What the client's scheduler holds and has done (JSON).
    #[napi]
    pub fn stats(&self) -> Value {
        let stats = self.slot.client.stats();
        serde_json::json!({
            "leasesKept": stats.leases_kept,
            "renewsSent": stats.renews_sent,
            "renewsFailed": stats.renews_failed,
            "credentialsRefreshes": self.slot.client.credentials_refreshes(),
            "credentialsError": self.slot.client.credentials_error(),
        })
    }

    pub(crate) fn slot(&self) -> &Arc<ClientSlot> {
        &self.slot
    }
}

/// A fenced object as read: what it says, and its body.
#[napi(object)]
pub struct FencedRead {
    pub info: Value,
    pub body: Buffer,
}
