//! The calls of the client, a held lease and an elector, from one source
//! for both builds: on WASI 0.2 (`s3-lease:lease/lease`) each blocks until
//! done; on WASI 0.3 (`async-lease`, feature `wasip3`) each is an `async
//! fn`. The same names, arguments and results; `calls!` writes each as the
//! build's kind of function, `done!` waits for a raw call as the build
//! does (returns on 0.2, awaits on 0.3), and `arg!` passes an argument as
//! the build's bindings take it (borrowed on 0.2, owned on 0.3).

use crate::bindings::types as raw;
use crate::client::{Client, Elector, Held, SlotAttempt};
use crate::config::Credential;
use crate::convert::{self, twin};
use crate::elector::{ElectorConfig, Step};
use crate::error::Error;
use crate::preflight::PreflightReport;
use crate::slots::{SemaphoreState, SlotOptions};
use crate::types::{millis, FenceOptions, FencedObject, FencedWrite, LockState, Options};
use s3_lease_keep::twins::IntoTwin;
use std::time::Duration;

#[cfg(not(feature = "wasip3"))]
macro_rules! calls {
    ($($(#[$meta:meta])* pub fn $name:ident($($params:tt)*) -> $ret:ty $body:block)*) => {$(
        $(#[$meta])* pub fn $name($($params)*) -> $ret $body
    )*};
}

#[cfg(feature = "wasip3")]
macro_rules! calls {
    ($($(#[$meta:meta])* pub fn $name:ident($($params:tt)*) -> $ret:ty $body:block)*) => {$(
        $(#[$meta])* pub async fn $name($($params)*) -> $ret $body
    )*};
}

#[cfg(not(feature = "wasip3"))]
macro_rules! done {
    ($call:expr) => {
        $call
    };
}

#[cfg(feature = "wasip3")]
macro_rules! done {
    ($call:expr) => {
        $call.await
    };
}

#[cfg(not(feature = "wasip3"))]
macro_rules! arg {
    ($value:expr) => {
        &$value
    };
}

#[cfg(feature = "wasip3")]
macro_rules! arg {
    ($value:expr) => {
        $value.to_owned()
    };
}

impl Client {
    calls! {
        /// One attempt, never waits: `None` while someone else holds `key`.
        pub fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Held>, Error> {
            done!(self.try_acquire_with(key, &Options::ttl(ttl)))
        }

        /// `try_acquire` with a holder id or metadata.
        pub fn try_acquire_with(&self, key: &str, options: &Options) -> Result<Option<Held>, Error> {
            let lease = done!(self.raw.try_acquire(arg!(key), arg!(twin::<_, raw::Options>(options))));
            Ok(lease.map_err(convert::error)?.map(|l| self.held(l)))
        }

        /// Tries until granted or `wait` has passed: then `Error::Timeout`
        /// naming the holder seen last.
        pub fn acquire(&self, key: &str, ttl: Duration, wait: Duration) -> Result<Held, Error> {
            done!(self.acquire_with(key, &Options::ttl(ttl), wait))
        }

        /// `acquire` with a holder id or metadata.
        pub fn acquire_with(
            &self,
            key: &str,
            options: &Options,
            wait: Duration,
        ) -> Result<Held, Error> {
            let options: raw::Options = twin(options);
            let lease = done!(self.raw.acquire(arg!(key), arg!(options), millis(wait)));
            Ok(self.held(lease.map_err(convert::error)?))
        }

        /// The key's lock state; `None` if it was never locked.
        pub fn inspect(&self, key: &str) -> Result<Option<LockState>, Error> {
            let state = done!(self.raw.inspect(arg!(key))).map_err(convert::error)?;
            Ok(state.into_twin())
        }

        /// An object with the token that wrote it; `None` when absent or
        /// deleted by a fenced delete.
        pub fn fenced_get(&self, object_key: &str) -> Result<Option<FencedObject>, Error> {
            let object = done!(self.raw.fenced_get(arg!(object_key))).map_err(convert::error)?;
            Ok(object.into_twin())
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
            let (options, slot): (raw::Options, raw::SlotOptions) = (twin(options), twin(slot));
            let attempt = done!(self.raw.try_acquire_slot(arg!(key), arg!(options), slot));
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
            let (options, slot): (raw::Options, raw::SlotOptions) = (twin(options), twin(slot));
            let lease =
                done!(self.raw.acquire_slot(arg!(key), arg!(options), slot, millis(wait)));
            Ok(self.held(lease.map_err(convert::error)?))
        }

        /// A semaphore key's holders and queue; `None` when the key is
        /// missing or a plain lock (see `inspect`).
        pub fn inspect_slots(&self, key: &str) -> Result<Option<SemaphoreState>, Error> {
            let state = done!(self.raw.inspect_slots(arg!(key))).map_err(convert::error)?;
            Ok(state.into_twin())
        }

        /// Gives up `holder_id`'s place in `key`'s queue, if it has one.
        pub fn leave_queue(&self, key: &str, holder_id: &str) -> Result<(), Error> {
            done!(self.raw.leave_queue(arg!(key), arg!(holder_id))).map_err(convert::error)
        }

        /// Probes the store with real requests (about 71) and says which
        /// strategies and expiry clocks are safe on it; also sets the verdict
        /// the `preflight` config option checks.
        pub fn preflight(&self) -> Result<PreflightReport, Error> {
            let report = done!(self.raw.preflight()).map_err(convert::error)?;
            Ok(report.into_twin())
        }
    }

    /// Replaces the store's credential (refreshed temporary keys, a
    /// refreshed bearer token, a rotated key or SAS): the next request, and
    /// this client's electors, sign with it; leases stay valid. No request
    /// is sent (so never async); one of another kind than the store's, or
    /// refused, leaves the old in place (`Error::InvalidConfig`).
    pub fn set_credential(&self, credential: &Credential) -> Result<(), Error> {
        self.raw
            .set_credential(&credential.to_contract())
            .map_err(convert::error)
    }

    /// An elector campaigning for `config.key` with this client's
    /// configuration; `Error::InvalidArgument` for durations out of order.
    /// No request is sent (so never async).
    pub fn elector(&self, config: &ElectorConfig) -> Result<Elector, Error> {
        let raw = self.raw.elector(&twin(config)).map_err(convert::error)?;
        Ok(Elector { raw })
    }

    fn slot_attempt(&self, attempt: crate::bindings::types::SlotAttempt) -> SlotAttempt {
        use crate::bindings::types::SlotAttempt as Raw;
        match attempt {
            Raw::Granted(lease) => SlotAttempt::Granted(self.held(lease)),
            Raw::Queued(place) => SlotAttempt::Queued(place),
            Raw::Full(state) => SlotAttempt::Full(state.into_twin()),
        }
    }

    fn held(&self, lease: crate::bindings::types::Lease) -> Held {
        Held {
            client: self.clone(),
            lease: lease.into_twin(),
            release_on_drop: true,
        }
    }
}

impl Held {
    calls! {
        /// Extends the lease by its ttl, same token; `Error::Lost` once it is
        /// no longer ours. The ttl runs from when the write was *sent*.
        pub fn renew(&mut self) -> Result<(), Error> {
            let lease: raw::Lease = twin(&self.lease);
            let renewed = done!(self.client.raw.renew(arg!(lease))).map_err(convert::error)?;
            self.lease = renewed.into_twin();
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
            done!(self.fenced_put_with(object_key, body, content_type, &FenceOptions::default()))
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
            let lease: raw::Lease = twin(&self.lease);
            let written = done!(self.client.raw.fenced_put_with(
                arg!(lease),
                arg!(object_key),
                arg!(body),
                arg!(content_type),
                twin::<_, raw::FenceOptions>(options),
            ));
            Ok(written.map_err(convert::error)?.into_twin())
        }

        /// Deletes `object_key` under the same rule, leaving a tombstone that
        /// keeps older tokens from writing it again.
        pub fn fenced_delete(&self, object_key: &str) -> Result<(), Error> {
            let lease: raw::Lease = twin(&self.lease);
            done!(self.client.raw.fenced_delete(arg!(lease), arg!(object_key)))
                .map_err(convert::error)
        }

        /// Ends the lease so others can take the key at once.
        pub fn release(mut self) -> Result<(), Error> {
            self.release_on_drop = false;
            let lease: raw::Lease = twin(&self.lease);
            done!(self.client.raw.release(arg!(lease))).map_err(convert::error)
        }
    }
}

impl Elector {
    calls! {
        /// Does what is due now (one attempt, one renew or one look) and says
        /// where the elector stands. Never fails: an attempt's error is
        /// `Step::last_error`, and the elector keeps trying.
        pub fn step(&self) -> Step {
            convert::step(done!(self.raw.step()))
        }

        /// Releases the lease if leading, and goes back to following.
        pub fn resign(&self) -> Result<(), Error> {
            done!(self.raw.resign()).map_err(convert::error)
        }
    }
}

/// Unreleased on drop: released now, by a blocking call whose error is
/// ignored (nobody is left to tell); a lease whose release failed lapses
/// after its ttl.
#[cfg(not(feature = "wasip3"))]
impl Drop for Held {
    fn drop(&mut self) {
        if self.release_on_drop {
            let _ = self.client.raw.release(&twin(&self.lease));
        }
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
#[cfg(feature = "wasip3")]
impl Drop for Held {
    fn drop(&mut self) {
        if self.release_on_drop {
            let client = self.client.raw.clone();
            let lease: raw::Lease = twin(&self.lease);
            // Detached: nobody awaits the outcome.
            drop(wit_bindgen::spawn_local(async move {
                let _ = client.release(lease).await;
            }));
        }
    }
}
