//! The WASI 0.2 build's calls: `s3-lease:lease/lease`'s, which block until
//! done.

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
    pub fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Held>, Error> {
        self.try_acquire_with(key, &Options::ttl(ttl))
    }

    /// `try_acquire` with a holder id or metadata.
    pub fn try_acquire_with(&self, key: &str, options: &Options) -> Result<Option<Held>, Error> {
        let lease = self.raw.try_acquire(key, &convert::options(options));
        Ok(lease.map_err(convert::error)?.map(|l| self.held(l)))
    }

    /// Tries until granted or `wait` has passed: then `Error::Timeout`
    /// naming the holder seen last.
    pub fn acquire(&self, key: &str, ttl: Duration, wait: Duration) -> Result<Held, Error> {
        self.acquire_with(key, &Options::ttl(ttl), wait)
    }

    /// `acquire` with a holder id or metadata.
    pub fn acquire_with(
        &self,
        key: &str,
        options: &Options,
        wait: Duration,
    ) -> Result<Held, Error> {
        let wait_ms = crate::types::millis(wait);
        let lease = self.raw.acquire(key, &convert::options(options), wait_ms);
        Ok(self.held(lease.map_err(convert::error)?))
    }

    /// The key's lock state; `None` if it was never locked.
    pub fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
        let state = self.raw.inspect(key).map_err(convert::error)?;
        Ok(state.map(convert::lock_state))
    }

    /// An object with the token that wrote it; `None` when absent or
    /// deleted by a fenced delete.
    pub fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
        let object = self.raw.fenced_get(object_key).map_err(convert::error)?;
        Ok(object.map(convert::fenced_object))
    }

    /// One attempt at one of `key`'s `slot.limit` slots, never waits. A
    /// fair caller that is `Queued` keeps its place by attempting again
    /// within its ttl, and gives it up with `leave_queue`.
    pub fn try_acquire_slot(
        &self,
        key: &str,
        options: &Options,
        slot: &SlotOptions,
    ) -> Result<SlotAttempt, Error> {
        let attempt =
            self.raw
                .try_acquire_slot(key, &convert::options(options), convert::slot_options(slot));
        Ok(self.slot_attempt(attempt.map_err(convert::error)?))
    }

    /// Attempts until a slot is granted or `wait` has passed: then
    /// `Error::Timeout` (a fair waiter leaves the queue first).
    pub fn acquire_slot(
        &self,
        key: &str,
        options: &Options,
        slot: &SlotOptions,
        wait: Duration,
    ) -> Result<Held, Error> {
        let lease = self.raw.acquire_slot(
            key,
            &convert::options(options),
            convert::slot_options(slot),
            crate::types::millis(wait),
        );
        Ok(self.held(lease.map_err(convert::error)?))
    }

    /// A semaphore key's holders and queue; `None` when the key is
    /// missing or a plain lock (see `inspect`).
    pub fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
        let state = self.raw.inspect_slots(key).map_err(convert::error)?;
        Ok(state.map(convert::semaphore_state))
    }

    /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
    pub fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
        self.raw.leave_queue(key, holder_id).map_err(convert::error)
    }

    /// Replaces the credentials (refreshed temporary ones): the next
    /// request, and this client's electors, sign with them; leases stay
    /// valid. No request is sent; a refused one leaves the old in place.
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
    pub fn preflight(&self) -> Result<PreflightReport, Error> {
        let report = self.raw.preflight().map_err(convert::error)?;
        Ok(convert::preflight_report(report))
    }

    /// An elector campaigning for `config.key` with this client's
    /// configuration; `Error::InvalidArgument` for durations out of order.
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
    pub fn renew(&mut self) -> Result<(), Error> {
        let raw = convert::raw_lease(&self.lease);
        let renewed = self.client.raw.renew(&raw).map_err(convert::error)?;
        self.lease = convert::lease(renewed);
        Ok(())
    }

    /// Writes `body` to `object_key` (a full key: the key prefix is not
    /// added) so that S3 refuses it once a newer token has written there:
    /// `Error::Fenced`. Give every write a body of its own (include the
    /// token): an S3 etag is the MD5 of the bytes.
    pub fn fenced_put(
        &self,
        object_key: &str,
        body: &[u8],
        content_type: &str,
    ) -> Result<FencedWrite, Error> {
        let raw = convert::raw_lease(&self.lease);
        let written = self
            .client
            .raw
            .fenced_put(&raw, object_key, body, content_type);
        Ok(convert::fenced_write(written.map_err(convert::error)?))
    }

    /// `fenced_put` with options: `FenceOptions::reject_equal_token`
    /// refuses a second write of the object under this grant.
    pub fn fenced_put_with(
        &self,
        object_key: &str,
        body: &[u8],
        content_type: &str,
        options: &FenceOptions,
    ) -> Result<FencedWrite, Error> {
        let raw = convert::raw_lease(&self.lease);
        let written = self.client.raw.fenced_put_with(
            &raw,
            object_key,
            body,
            content_type,
            convert::fence_options(options),
        );
        Ok(convert::fenced_write(written.map_err(convert::error)?))
    }

    /// Deletes `object_key` under the same rule, leaving a tombstone that
    /// keeps older tokens from writing it again.
    pub fn fenced_delete(&self, object_key: &str) -> Result<(), Error> {
        let raw = convert::raw_lease(&self.lease);
        self.client
            .raw
            .fenced_delete(&raw, object_key)
            .map_err(convert::error)
    }

    /// Ends the lease so others can take the key at once.
    pub fn release(mut self) -> Result<(), Error> {
        self.release_on_drop = false;
        let raw = convert::raw_lease(&self.lease);
        self.client.raw.release(&raw).map_err(convert::error)
    }
}

impl Elector {
    /// Does what is due now (one attempt, one renew or one look) and says
    /// where the elector stands. Never fails: an attempt's error is
    /// `Step::last_error`, and the elector keeps trying.
    pub fn step(&self) -> Step {
        convert::step(self.raw.step())
    }

    /// Releases the lease if leading, and goes back to following.
    pub fn resign(&self) -> Result<(), Error> {
        self.raw.resign().map_err(convert::error)
    }
}

/// Unreleased on drop: released now, by a blocking call whose error is
/// ignored (nobody is left to tell); a lease whose release failed lapses
/// after its ttl.
impl Drop for Held {
    fn drop(&mut self) {
        if self.release_on_drop {
            let _ = self.client.raw.release(&convert::raw_lease(&self.lease));
        }
    }
}
