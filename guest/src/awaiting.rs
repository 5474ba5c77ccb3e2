//! The WASI 0.3 build's calls: `s3-lease:lease/async-lease`'s, awaited.
//! The same signatures as `blocking`'s, each an `async fn`.

use crate::azure::AzureCredential;
use crate::client::{Client, Elector, Held, SlotAttempt};
use crate::config::Credentials;
use crate::convert;
use crate::elector::{ElectorConfig, Step};
use crate::error::Error;
use crate::gcs::GcsCredential;
use crate::preflight::PreflightReport;
use crate::slots::{SemaphoreState, SlotOptions};
use crate::types::{FenceOptions, FencedObject, FencedWrite, LockState, Options};
use std::time::Duration;

impl Client {
    /// One attempt, never waits: `None` while someone else holds `key`.
    pub async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Held>, Error> {
        self.try_acquire_with(key, &Options::ttl(ttl)).await
    }

    /// `try_acquire` with a holder id or metadata.
    pub async fn try_acquire_with(
        &self,
        key: &str,
        options: &Options,
    ) -> Result<Option<Held>, Error> {
        let lease = self
            .raw
            .try_acquire(key.to_string(), convert::options(options))
            .await;
        Ok(lease.map_err(convert::error)?.map(|l| self.held(l)))
    }

    /// Tries until granted or `wait` has passed: then `Error::Timeout`
    /// naming the holder seen last.
    pub async fn acquire(&self, key: &str, ttl: Duration, wait: Duration) -> Result<Held, Error> {
        self.acquire_with(key, &Options::ttl(ttl), wait).await
    }

    /// `acquire` with a holder id or metadata.
    pub async fn acquire_with(
        &self,
        key: &str,
        options: &Options,
        wait: Duration,
    ) -> Result<Held, Error> {
        let wait_ms = crate::types::millis(wait);
        let lease = self
            .raw
            .acquire(key.to_string(), convert::options(options), wait_ms)
            .await;
        Ok(self.held(lease.map_err(convert::error)?))
    }

    /// The key's lock state; `None` if it was never locked.
    pub async fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
        let state = self.raw.inspect(key.to_string()).await;
        Ok(state.map_err(convert::error)?.map(convert::lock_state))
    }

    /// An object with the token that wrote it; `None` when absent or
    /// deleted by a fenced delete.
    pub async fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
        let object = self.raw.fenced_get(object_key.to_string()).await;
        Ok(object.map_err(convert::error)?.map(convert::fenced_object))
    }

    /// One attempt at one of `key`'s `slot.limit` slots, never waits. A
    /// fair caller that is `Queued` keeps its place by attempting again
    /// within its ttl, and gives it up with `leave_queue`.
    pub async fn try_acquire_slot(
        &self,
        key: &str,
        options: &Options,
        slot: &SlotOptions,
    ) -> Result<SlotAttempt, Error> {
        let attempt = self
            .raw
            .try_acquire_slot(
                key.to_string(),
                convert::options(options),
                convert::slot_options(slot),
            )
            .await;
        Ok(self.slot_attempt(attempt.map_err(convert::error)?))
    }

    /// Attempts until a slot is granted or `wait` has passed: then
    /// `Error::Timeout` (a fair waiter leaves the queue first).
    pub async fn acquire_slot(
        &self,
        key: &str,
        options: &Options,
        slot: &SlotOptions,
        wait: Duration,
    ) -> Result<Held, Error> {
        let lease = self
            .raw
            .acquire_slot(
                key.to_string(),
                convert::options(options),
                convert::slot_options(slot),
                crate::types::millis(wait),
            )
            .await;
        Ok(self.held(lease.map_err(convert::error)?))
    }

    /// A semaphore key's holders and queue; `None` when the key is
    /// missing or a plain lock (see `inspect`).
    pub async fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
        let state = self.raw.inspect_slots(key.to_string()).await;
        Ok(state.map_err(convert::error)?.map(convert::semaphore_state))
    }

    /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
    pub async fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
        let left = self
            .raw
            .leave_queue(key.to_string(), holder_id.to_string())
            .await;
        left.map_err(convert::error)
    }

    /// Replaces the credentials (refreshed temporary ones): the next
    /// request, and this client's electors, sign with them; leases stay
    /// valid. No request is sent (so not async); a refused one leaves the
    /// old in place.
    pub fn set_credentials(&self, credentials: &Credentials) -> Result<(), Error> {
        self.raw
            .set_credentials(&convert::credentials(credentials))
            .map_err(convert::error)
    }

    /// Replaces an Azure Blob store's credential (a refreshed bearer
    /// token, a rotated key or SAS), as `set_credentials` does AWS keys.
    /// `Error::InvalidConfig` on a client of another store.
    pub fn set_azure_credential(&self, credential: &AzureCredential) -> Result<(), Error> {
        self.raw
            .set_azure_credential(&convert::azure_credential(credential))
            .map_err(convert::error)
    }

    /// Replaces a GCS store's credential (a refreshed access token), as
    /// `set_credentials` does AWS keys.
    /// `Error::InvalidConfig` on a client of another store.
    pub fn set_gcs_credential(&self, credential: &GcsCredential) -> Result<(), Error> {
        self.raw
            .set_gcs_credential(&convert::gcs_credential(credential))
            .map_err(convert::error)
    }

    /// Probes the store with real requests (about 71) and says which
    /// strategies and expiry clocks are safe on it; also sets the verdict
    /// the `preflight` config option checks.
    pub async fn preflight(&self) -> Result<PreflightReport, Error> {
        let report = self.raw.preflight().await.map_err(convert::error)?;
        Ok(convert::preflight_report(report))
    }

    /// An elector campaigning for `config.key` with this client's
    /// configuration; `Error::InvalidArgument` for durations out of order.
    /// No request is sent (so not async).
    pub fn elector(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        let raw = self
            .raw
            .elector(&convert::elector_config(config))
            .map_err(convert::error)?;
        Ok(Elector { raw })
    }

    fn slot_attempt(&self, attempt: crate::bindings::types::SlotAttempt) -> SlotAttempt {
        use crate::bindings::types::SlotAttempt as Raw;
        match attempt {
            Raw::Granted(lease) => SlotAttempt::Granted(self.held(lease)),
            Raw::Queued(place) => SlotAttempt::Queued(place),
            Raw::Full(state) => SlotAttempt::Full(state.map(convert::lock_state)),
        }
    }

    fn held(&self, lease: crate::bindings::types::Lease) -> Held {
        Held {
            client: self.clone(),
            lease: convert::lease(lease),
            release_on_drop: true,
        }
    }
}

impl Held {
    /// Extends the lease by its ttl, same token; `Error::Lost` once it is
    /// no longer ours. The ttl runs from when the write was *sent*.
    pub async fn renew(&mut self) -> Result<(), Error> {
        let raw = convert::raw_lease(&self.lease);
        let renewed = self.client.raw.renew(raw).await.map_err(convert::error)?;
        self.lease = convert::lease(renewed);
        Ok(())
    }

    /// Writes `body` to `object_key` (a full key: the key prefix is not
    /// added) so that S3 refuses it once a newer token has written there:
    /// `Error::Fenced`. Give every write a body of its own (include the
    /// token): an S3 etag is the MD5 of the bytes.
    pub async fn fenced_put(
        &self,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        let raw = convert::raw_lease(&self.lease);
        let written = self
            .client
            .raw
            .fenced_put(
                raw,
                object_key.to_string(),
                body.to_vec(),
                content_type.to_string(),
            )
            .await;
        Ok(convert::fenced_write(written.map_err(convert::error)?))
    }

    /// `fenced_put` with options: `FenceOptions::reject_equal_token`
    /// refuses a second write of the object under this grant.
    pub async fn fenced_put_with(
        &self,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: &FenceOptions,
    ) -> Result<FencedWrite, Error> {
        let raw = convert::raw_lease(&self.lease);
        let written = self
            .client
            .raw
            .fenced_put_with(
                raw,
                object_key.to_string(),
                body.to_vec(),
                content_type.to_string(),
                convert::fence_options(options),
            )
            .await;
        Ok(convert::fenced_write(written.map_err(convert::error)?))
    }

    /// Deletes `object_key` under the same rule, leaving a tombstone that
    /// keeps older tokens from writing it again.
    pub async fn fenced_delete(&self, object_key: &str) -> Result<(), Error> {
        let raw = convert::raw_lease(&self.lease);
        let deleted = self
            .client
            .raw
            .fenced_delete(raw, object_key.to_string())
            .await;
        deleted.map_err(convert::error)
    }

    /// Ends the lease so others can take the key at once.
    pub async fn release(mut self) -> Result<(), Error> {
        self.release_on_drop = false;
        let raw = convert::raw_lease(&self.lease);
        self.client.raw.release(raw).await.map_err(convert::error)
    }
}

impl Elector {
    /// Does what is due now (one attempt, one renew or one look) and says
    /// where the elector stands. Never fails: an attempt's error is
    /// `Step::last_error`, and the elector keeps trying.
    pub async fn step(&self) -> Step {
        convert::step(self.raw.step().await)
    }

    /// Releases the lease if leading, and goes back to following.
    pub async fn resign(&self) -> Result<(), Error> {
        self.raw.resign().await.map_err(convert::error)
    }
}

/// Unreleased on drop: `drop` cannot await, so the release runs in a task
/// of its own (wit-bindgen's `spawn_local`), on the component-model task
/// that dropped the lease: it starts when that task next waits, or once
/// its export has returned, and the task ends only after it. Its error is
/// ignored; a lease whose release failed, or whose task the host cancelled,
/// lapses after its ttl. Drop a held lease only inside an async export (or
/// `wit_bindgen::block_on`): wit-bindgen has no task to spawn on elsewhere,
/// and panics.
impl Drop for Held {
    fn drop(&mut self) {
        if self.release_on_drop {
            let client = self.client.raw.clone();
            let lease = convert::raw_lease(&self.lease);
            // Detached: nobody awaits the outcome.
            drop(wit_bindgen::spawn_local(async move {
                let _ = client.release(lease).await;
            }));
        }
    }
}
