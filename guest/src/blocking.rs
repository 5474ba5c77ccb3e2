//! The WASI 0.2 build's calls: `s3-lease:lease/lease`'s, which block until
//! done.

use crate::client::{Client, Held};
use crate::convert;
use crate::error::Error;
use crate::types::{FencedObject, FencedWrite, LockState, Options};
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
