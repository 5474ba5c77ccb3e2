//! The WIT exports: converts between the generated types and the crate's own,
//! and runs protocol operations over `WasiIo`. No protocol logic lives here.

use crate::bindings::exports::s3_lease::lease::lease::{Guest, GuestClient};
use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::config::{Addressing, ClientConfig, RawConfig, Strategy};
use crate::driver;
use crate::epoch::{self, Cleanup, EpochInspect, EpochRewrite, EpochTryAcquire};
use crate::error::{Error, S3Error};
use crate::fenced::{self, Change, Fence, FencedGet, FencedWrite};
use crate::lock_object::LockState;
use crate::protocol::{object_key, AcquireOutcome, Grant, Inspect, Lease, RewriteOwn, TryAcquire};
use crate::seal::{LockSeal, Sealer};
use crate::sigv4::Credentials;
use crate::transport::{random_hex_id, random_u64, WasiIo};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;

struct Component;

impl Guest for Component {
    type Client = Client;
}

pub struct Client {
    config: ClientConfig,
    sealer: Sealer,
    /// Added to the wall clock when signing, once a server refused our time
    /// as skewed (see `driver::run`).
    signing_offset_ms: Cell<i64>,
    /// epoch-objects: the highest epoch seen per key, so LISTs can start
    /// just below it. Only an optimisation: the protocol is safe without it.
    epoch_hints: RefCell<HashMap<String, u64>>,
}

/// Keys whose epoch hints are kept; past this the map starts over.
const MAX_EPOCH_HINTS: usize = 4096;

impl Client {
    fn hint(&self, key: &str) -> u64 {
        self.epoch_hints.borrow().get(key).copied().unwrap_or(0)
    }

    fn note_epoch(&self, key: &str, epoch: u64) {
        let mut hints = self.epoch_hints.borrow_mut();
        if hints.len() >= MAX_EPOCH_HINTS && !hints.contains_key(key) {
            hints.clear();
        }
        let seen = hints.entry(key.to_string()).or_insert(0);
        *seen = (*seen).max(epoch);
    }

    /// One try-acquire with the configured strategy.
    fn try_once(
        &self,
        io: &mut WasiIo<'_>,
        key: &str,
        object_key: &str,
        grant: &Grant,
    ) -> Result<AcquireOutcome, Error> {
        let seal = self.lock_seal(object_key);
        if self.config.strategy == Strategy::SingleObject {
            let op = TryAcquire::new(key.to_string(), object_key.to_string(), grant.clone(), seal);
            return driver::run(io, op);
        }
        let dir = epoch::epoch_dir(object_key);
        let op = EpochTryAcquire::new(key.to_string(), dir, grant.clone(), seal, self.hint(key));
        let (outcome, cleanup) = driver::run(io, op)?;
        match &outcome {
            AcquireOutcome::Granted(lease) => self.note_epoch(key, lease.token),
            AcquireOutcome::Held(Some(state)) => self.note_epoch(key, state.record.token),
            AcquireOutcome::Held(None) => {}
        }
        if !cleanup.is_empty() {
            // Best effort: a failed delete only leaves a longer listing.
            let _ = driver::run(io, Cleanup::new(cleanup));
        }
        Ok(outcome)
    }

    /// Renews or releases with the configured strategy.
    fn rewrite(&self, lease: wit::Lease, release: bool) -> Result<Lease, Error> {
        let object_key = self.object_key(&lease.key)?;
        let seal = self.lock_seal(&object_key);
        let lease = from_wit_lease(lease);
        let io = &mut self.io();
        match (self.config.strategy, release) {
            (Strategy::SingleObject, false) => {
                driver::run(io, RewriteOwn::renew(lease, object_key, seal))
            }
            (Strategy::SingleObject, true) => {
                driver::run(io, RewriteOwn::release(lease, object_key, seal))
            }
            (Strategy::EpochObjects, false) => driver::run(
                io,
                EpochRewrite::renew(lease, epoch::epoch_dir(&object_key), seal),
            ),
            (Strategy::EpochObjects, true) => driver::run(
                io,
                EpochRewrite::release(lease, epoch::epoch_dir(&object_key), seal),
            ),
        }
    }

    /// Seals and checks the leases of the lock at `object_key`.
    fn lock_seal(&self, object_key: &str) -> LockSeal {
        self.sealer
            .for_lock(format!("{}:{object_key}", self.config.strategy.name()))
    }

    fn io(&self) -> WasiIo<'_> {
        WasiIo {
            config: &self.config,
            signing_offset_ms: &self.signing_offset_ms,
        }
    }

    fn object_key(&self, key: &str) -> Result<String, Error> {
        object_key(&self.config.key_prefix, key)
    }

    /// Runs a fenced write of `change` with the lease's lock and token.
    fn fenced_write(
        &self,
        lease: &wit::Lease,
        object_key: String,
        change: Change,
        reject_equal: bool,
    ) -> Result<fenced::Written, Error> {
        let lock_object_key = self.object_key(&lease.key)?;
        let lock = fenced::lock_identity(self.config.strategy.name(), &lock_object_key);
        let fence = Fence::for_lease(
            &from_wit_lease(lease.clone()),
            &self.lock_seal(&lock_object_key),
            lock,
            reject_equal,
        )?;
        let object_key = fenced::fenced_object_key(&object_key)?;
        driver::run(&mut self.io(), FencedWrite::new(object_key, fence, change)?)
    }
}

impl GuestClient for Client {
    fn new(config: wit::Config) -> Result<Self, wit::Error> {
        let raw = RawConfig {
            endpoint: config.endpoint,
            region: config.region,
            bucket: config.bucket,
            addressing: match config.addressing {
                wit::AddressingStyle::Path => Addressing::Path,
                wit::AddressingStyle::VirtualHosted => Addressing::VirtualHosted,
            },
            credentials: Credentials {
                access_key_id: config.credentials.access_key_id,
                secret_access_key: config.credentials.secret_access_key,
                session_token: config.credentials.session_token,
            },
            key_prefix: config.key_prefix,
            request_timeout_ms: config.request_timeout_ms,
            strategy: config.strategy.map(|s| match s {
                wit::Strategy::SingleObject => Strategy::SingleObject,
                wit::Strategy::EpochObjects => Strategy::EpochObjects,
            }),
        };
        let config = ClientConfig::validate(raw).map_err(to_wit_error)?;
        Ok(Client {
            sealer: Sealer::new(&config.credentials.secret_access_key, &config.bucket),
            signing_offset_ms: Cell::new(0),
            config,
            epoch_hints: RefCell::new(HashMap::new()),
        })
    }

    fn try_acquire(
        &self,
        key: String,
        options: wit::Options,
    ) -> Result<Option<wit::Lease>, wit::Error> {
        let object_key = self.object_key(&key).map_err(to_wit_error)?;
        let grant = grant(options).map_err(to_wit_error)?;
        match self.try_once(&mut self.io(), &key, &object_key, &grant) {
            Ok(AcquireOutcome::Granted(lease)) => Ok(Some(to_wit_lease(lease))),
            Ok(AcquireOutcome::Held(_)) => Ok(None),
            Err(e) => Err(to_wit_error(e)),
        }
    }

    fn acquire(
        &self,
        key: String,
        options: wit::Options,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        let object_key = self.object_key(&key).map_err(to_wit_error)?;
        let grant = grant(options).map_err(to_wit_error)?;
        driver::acquire(&mut self.io(), &key, timeout_ms, |io| {
            self.try_once(io, &key, &object_key, &grant)
        })
        .map(to_wit_lease)
        .map_err(to_wit_error)
    }

    fn renew(&self, lease: wit::Lease) -> Result<wit::Lease, wit::Error> {
        self.rewrite(lease, false)
            .map(to_wit_lease)
            .map_err(to_wit_error)
    }

    fn release(&self, lease: wit::Lease) -> Result<(), wit::Error> {
        self.rewrite(lease, true).map(|_| ()).map_err(to_wit_error)
    }

    fn inspect(&self, key: String) -> Result<Option<wit::LockState>, wit::Error> {
        let object_key = self.object_key(&key).map_err(to_wit_error)?;
        let state = match self.config.strategy {
            Strategy::SingleObject => driver::run(&mut self.io(), Inspect::new(key, object_key)),
            Strategy::EpochObjects => {
                let (dir, hint) = (epoch::epoch_dir(&object_key), self.hint(&key));
                let state = driver::run(&mut self.io(), EpochInspect::new(key.clone(), dir, hint));
                if let Ok(Some(s)) = &state {
                    self.note_epoch(&key, s.record.token);
                }
                state
            }
        };
        state.map(|s| s.map(to_wit_state)).map_err(to_wit_error)
    }

    fn fenced_put(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<wit::FencedWrite, wit::Error> {
        let options = wit::FenceOptions {
            reject_equal_token: false,
        };
        self.fenced_put_with(lease, object_key, body, content_type, options)
    }

    fn fenced_put_with(
        &self,
        lease: wit::Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
        options: wit::FenceOptions,
    ) -> Result<wit::FencedWrite, wit::Error> {
        let change = Change::Put { body, content_type };
        self.fenced_write(&lease, object_key, change, options.reject_equal_token)
            .map(|w| wit::FencedWrite {
                object_key: w.object_key,
                etag: w.etag,
                token: w.token,
                previous_token: w.previous_token,
            })
            .map_err(to_wit_error)
    }

    fn fenced_delete(&self, lease: wit::Lease, object_key: String) -> Result<(), wit::Error> {
        let change = Change::Delete {
            nonce: random_u64(),
        };
        self.fenced_write(&lease, object_key, change, false)
            .map(|_| ())
            .map_err(to_wit_error)
    }

    fn fenced_get(&self, object_key: String) -> Result<Option<wit::FencedObject>, wit::Error> {
        let object_key = fenced::fenced_object_key(&object_key).map_err(to_wit_error)?;
        driver::run(&mut self.io(), FencedGet::new(object_key))
            .map(|found| {
                found.map(|o| wit::FencedObject {
                    object_key: o.object_key,
                    body: o.body,
                    content_type: o.content_type,
                    etag: o.etag,
                    token: o.token,
                })
            })
            .map_err(to_wit_error)
    }
}

fn grant(options: wit::Options) -> Result<Grant, Error> {
    let holder_id = options
        .holder_id
        .unwrap_or_else(|| format!("holder-{}", random_hex_id()));
    Grant::new(
        options.ttl_ms,
        holder_id,
        options.metadata.unwrap_or_default(),
    )
}

fn to_wit_lease(l: Lease) -> wit::Lease {
    wit::Lease {
        key: l.key,
        token: l.token,
        holder_id: l.holder_id,
        etag: l.etag,
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms,
        metadata: l.metadata,
        seal: l.seal,
    }
}

fn from_wit_lease(l: wit::Lease) -> Lease {
    Lease {
        key: l.key,
        token: l.token,
        holder_id: l.holder_id,
        etag: l.etag,
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms,
        metadata: l.metadata,
        seal: l.seal,
    }
}

fn to_wit_state(s: LockState) -> wit::LockState {
    wit::LockState {
        key: s.key,
        holder_id: s.record.holder_id,
        token: s.record.token,
        expires_at_ms: s.record.expires_at_ms,
        acquired_at_ms: s.record.acquired_at_ms,
        metadata: s.record.metadata,
        etag: s.etag,
        live: s.live,
        expires_in_ms: s.expires_in_ms,
    }
}

fn to_wit_s3(e: S3Error) -> wit::S3Error {
    wit::S3Error {
        status: e.status,
        code: e.code,
        message: e.message,
        request_id: e.request_id,
    }
}

fn to_wit_error(e: Error) -> wit::Error {
    match e {
        Error::Lost {
            key,
            token,
            current,
        } => wit::Error::Lost(wit::Lost {
            key,
            token,
            current: current.map(|c| to_wit_state(*c)),
        }),
        Error::Conflict(e) => wit::Error::Conflict(to_wit_s3(e)),
        Error::ClockSkewed(e) => wit::Error::ClockSkewed(to_wit_s3(e)),
        Error::AccessDenied(e) => wit::Error::AccessDenied(to_wit_s3(e)),
        Error::NoSuchBucket(e) => wit::Error::NoSuchBucket(to_wit_s3(e)),
        Error::CorruptLockObject { object_key, reason } => {
            wit::Error::CorruptLockObject(wit::CorruptLockObject { object_key, reason })
        }
        Error::S3(e) => wit::Error::S3(to_wit_s3(e)),
        Error::Transport(reason) => wit::Error::Transport(reason),
        Error::InvalidConfig { field, reason } => {
            wit::Error::InvalidConfig(wit::InvalidConfig { field, reason })
        }
        Error::InvalidArgument(reason) => wit::Error::InvalidArgument(reason),
        Error::Timeout {
            key,
            waited_ms,
            holder,
        } => wit::Error::Timeout(wit::Timeout {
            key,
            waited_ms,
            holder: holder.map(|h| to_wit_state(*h)),
        }),
        Error::Fenced {
            object_key,
            our_token,
            stored_token,
        } => wit::Error::Fenced(wit::Fenced {
            object_key,
            our_token,
            stored_token,
        }),
    }
}

crate::bindings::export!(Component with_types_in crate::bindings);
