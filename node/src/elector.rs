//! Leader election: the host's `Elector` on a task of its own that passes
//! each event to JavaScript (the package's `Elector` is an EventEmitter
//! and an async iterator of them) until it is resigned. The role is read
//! without waiting, judged at the instant it is asked (leadership ends at
//! its deadline even while a step hangs).

use crate::client::NativeClient;
use crate::config::duration_ms;
use crate::convert;
use crate::errors::OrReject;
use crate::exit;
use crate::slots::{ElectorSlot, Resign};
use napi::bindgen_prelude::{Buffer, PromiseRaw};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::Env;
use napi_derive::napi;
use s3_lease_host::{ElectionEvent, ElectorConfig, FenceOptions, Role, StopReason};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

fn role_json(role: &Role) -> Value {
    match role {
        Role::Leader(record) => json!({ "role": "leader", "lease": convert::record_json(record) }),
        Role::Follower(seen) => json!({
            "role": "follower",
            "leader": seen.as_ref().map(convert::lock_state_json),
        }),
        _ => json!({ "role": "candidate" }),
    }
}

fn event_json(event: &ElectionEvent) -> Value {
    match event {
        ElectionEvent::BecameLeader(record) => {
            json!({ "type": "elected", "lease": convert::record_json(record) })
        }
        ElectionEvent::StoppedLeading(reason) => json!({
            "type": "stopped",
            "reason": match reason {
                StopReason::RenewDeadline => "renew-deadline",
                StopReason::Lost => "lost",
                StopReason::Resigned => "resigned",
            },
        }),
        ElectionEvent::LeaderChanged(seen) => json!({
            "type": "leader",
            "leader": seen.as_ref().map(convert::lock_state_json),
        }),
        ElectionEvent::Failed(message) => json!({ "type": "failed", "message": message }),
        _ => json!({ "type": "unknown" }),
    }
}

/// `client.elect`'s options, as the JavaScript passes them on.
#[napi(object)]
pub struct ElectArgs {
    pub lease_duration_ms: Option<f64>,
    pub renew_deadline_ms: Option<f64>,
    pub retry_period_ms: Option<f64>,
    pub holder: Option<String>,
    pub metadata: Option<String>,
}

#[napi]
pub struct NativeElector {
    slot: Arc<ElectorSlot>,
}

#[napi]
impl NativeClient {
    /// Campaigns for `key`; every event goes to `onEvent` (and a last
    /// `{ type: "end" }` once it stops). The campaign keeps the process
    /// alive until it is resigned, as a listening server does.
    #[napi]
    pub fn elect<'env>(
        &self,
        env: &'env Env,
        key: String,
        args: ElectArgs,
        on_event: napi::threadsafe_function::ThreadsafeFunction<
            Value,
            (),
            Value,
            napi::Status,
            false,
        >,
    ) -> napi::Result<PromiseRaw<'env, NativeElector>> {
        let mut config = ElectorConfig::new(&key);
        if let Some(ms) = args.lease_duration_ms {
            config = config.lease_duration(duration_ms("leaseDuration", ms)?);
        }
        if let Some(ms) = args.renew_deadline_ms {
            config = config.renew_deadline(duration_ms("renewDeadline", ms)?);
        }
        if let Some(ms) = args.retry_period_ms {
            config = config.retry_period(duration_ms("retryPeriod", ms)?);
        }
        config.holder_id = args.holder.filter(|h| !h.is_empty());
        config.metadata = args.metadata;
        let client = self.slot().clone();
        let starting = {
            let client = client.clone();
            async move { client.client.elect(&config).await.or_reject() }
        };
        env.spawn_future_with_callback(starting, move |env, mut elector| {
            let (resign_tx, mut resign_rx) = oneshot::channel::<Resign>();
            let slot = Arc::new(ElectorSlot {
                key,
                watcher: elector.watcher(),
                resign: Mutex::new(Some(resign_tx)),
                client,
            });
            exit::watch_elector(env, &slot)?;
            let watcher = slot.watcher.clone();
            napi::bindgen_prelude::spawn(async move {
                let send = |event: Value| {
                    on_event.call(event, ThreadsafeFunctionCallMode::NonBlocking);
                };
                loop {
                    tokio::select! {
                        event = elector.next_event() => match event {
                            Some(event) => send(event_json(&event)),
                            None => break,
                        },
                        asked = &mut resign_rx => {
                            let was_leading = matches!(watcher.role(), Role::Leader(_));
                            let resigned = elector.resign().await;
                            // The elector's own last event goes with it.
                            if was_leading {
                                send(event_json(&ElectionEvent::StoppedLeading(StopReason::Resigned)));
                            }
                            if let Ok(reply) = asked {
                                let _ = reply.send(resigned);
                            }
                            send(json!({ "type": "end" }));
                            return;
                        }
                    }
                }
                send(json!({ "type": "end" }));
            });
            Ok(NativeElector { slot })
        })
    }
}

#[napi]
impl NativeElector {
    /// The role now (JSON: `role`, and the lease while leading or the
    /// leader seen while following).
    #[napi]
    pub fn role(&self) -> Value {
        role_json(&self.slot.watcher.role())
    }

    /// Why the last step failed, if it did (the elector keeps trying).
    #[napi]
    pub fn last_error(&self) -> Option<String> {
        self.slot.watcher.last_error()
    }

    /// Releases the lease if leading and stops campaigning.
    #[napi]
    pub async fn resign(&self) -> napi::Result<()> {
        self.slot.resign().await.or_reject()
    }

    /// A fenced write under the leader's lease; refused when not leading.
    #[napi]
    pub async fn fenced_put(
        &self,
        object_key: String,
        body: Buffer,
        content_type: String,
        reject_equal_token: bool,
    ) -> napi::Result<Value> {
        let lease = self.slot.leader_lease()?;
        let options = FenceOptions::default().reject_equal_token(reject_equal_token);
        let written = self
            .slot
            .client
            .client
            .fenced_put_with(&lease, &object_key, body.into(), &content_type, options)
            .await
            .or_reject()?;
        Ok(convert::fenced_write_json(&written))
    }
}
