//! The WIT exports: converts between the generated types and the crate's own,
//! and runs protocol operations over `WasiIo`. No protocol logic lives here.

use crate::prelude::*;

use crate::bindings::exports::s3_lease::lease::lease::{
    self as wit_lease, Guest, GuestClient, GuestElector,
};
use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::client::ClientCore;
use crate::config::{Addressing, ClientConfig, RawConfig, Store, Strategy};
use crate::elector::{Elector, ElectorConfig, Event, Role, StopReason};
use crate::error::{Error, S3Error};
use crate::expiry::ExpiryClock;
use crate::fenced::Change;
use crate::lease::{Grant, Lease};
use crate::lock_object::semaphore::{Entry, Judged};
use crate::lock_object::LockState;
use crate::preflight::{Capability, CapabilityResult, Report, Verdict};
use crate::protocol::AcquireOutcome;
use crate::seal::SealKey;
use crate::sigv4::Credentials;
use crate::strategy::single_object::semaphore::SlotOutcome;
use crate::transport::{random_hex_id, random_u64, WasiIo};
use alloc::rc::Rc;
use core::cell::{Cell, RefCell};

struct Component;

impl Guest for Component {
    type Client = Client;
    type Elector = ElectorResource;
}

/// The WIT `client`: the core client behind a `RefCell` (resource methods
/// take `&self`; calls never nest, so borrows never overlap).
pub struct Client {
    core: RefCell<ClientCore>,
    /// Added to the wall clock when signing, once a server refused our time
    /// as skewed (see `driver::run`).
    signing_offset_ms: Cell<i64>,
    /// The credentials of the latest `set-credentials`, shared with the
    /// electors made from this client: they sign with them too.
    credentials: Rc<RefCell<Credentials>>,
}

impl Client {
    fn run<T>(
        &self,
        f: impl FnOnce(&mut ClientCore, &mut WasiIo<'_>) -> Result<T, Error>,
    ) -> Result<T, wit::Error> {
        let mut core = self.core.borrow_mut();
        let config = core.config.clone();
        let mut io = WasiIo {
            config: &config,
            signing_offset_ms: &self.signing_offset_ms,
        };
        f(&mut core, &mut io).map_err(to_wit_error)
    }

    fn from_config(config: ClientConfig) -> Self {
        Client {
            credentials: Rc::new(RefCell::new(config.credentials.clone())),
            core: RefCell::new(ClientCore::new(config)),
            signing_offset_ms: Cell::new(0),
        }
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
            expiry_clock: config.expiry_clock.map(|c| match c {
                wit::ExpiryClock::Holder => ExpiryClock::Holder,
                wit::ExpiryClock::Server => ExpiryClock::Server,
                wit::ExpiryClock::Observed => ExpiryClock::Observed,
            }),
            preflight: config.preflight,
            seal_key: config.seal_key.map(SealKey::new),
            store: config.store.map(|s| match s {
                wit::Store::S3 => Store::S3,
                wit::Store::Dynamodb(table) => Store::DynamoDb { table },
            }),
        };
        ClientConfig::validate(raw)
            .map(Client::from_config)
            .map_err(to_wit_error)
    }

    fn set_credentials(&self, credentials: wit::Credentials) -> Result<(), wit::Error> {
        let credentials = Credentials {
            access_key_id: credentials.access_key_id,
            secret_access_key: credentials.secret_access_key,
            session_token: credentials.session_token,
        };
        let mut core = self.core.borrow_mut();
        core.set_credentials(credentials).map_err(to_wit_error)?;
        *self.credentials.borrow_mut() = core.config.credentials.clone();
        Ok(())
    }

    fn try_acquire(
        &self,
        key: String,
        options: wit::Options,
    ) -> Result<Option<wit::Lease>, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(|core, io| core.try_acquire(io, &key, &grant))
            .map(|outcome| match outcome {
                AcquireOutcome::Granted(lease) => Some(to_wit_lease(lease)),
                AcquireOutcome::Held(_) => None,
            })
    }

    fn acquire(
        &self,
        key: String,
        options: wit::Options,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(|core, io| core.acquire(io, &key, &grant, timeout_ms))
            .map(to_wit_lease)
    }

    fn try_acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
    ) -> Result<wit::SlotAttempt, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(|core, io| core.try_acquire_slot(io, &key, &grant, slot.limit, slot.fair))
            .map(|outcome| match outcome {
                SlotOutcome::Granted(lease) => wit::SlotAttempt::Granted(to_wit_lease(lease)),
                SlotOutcome::Queued { place, .. } => wit::SlotAttempt::Queued(place),
                SlotOutcome::Full(seen) => wit::SlotAttempt::Full(seen.map(|s| to_wit_state(*s))),
                SlotOutcome::Rewritten(_) | SlotOutcome::Left => wit::SlotAttempt::Full(None),
            })
    }

    fn acquire_slot(
        &self,
        key: String,
        options: wit::Options,
        slot: wit::SlotOptions,
        timeout_ms: u64,
    ) -> Result<wit::Lease, wit::Error> {
        let grant = grant(options).map_err(to_wit_error)?;
        self.run(|core, io| core.acquire_slot(io, &key, &grant, slot.limit, slot.fair, timeout_ms))
            .map(to_wit_lease)
    }

    fn inspect_slots(&self, key: String) -> Result<Option<wit::SemaphoreState>, wit::Error> {
        self.run(|core, io| core.inspect(io, &key))
            .map(|s| s.and_then(to_wit_semaphore))
    }

    fn leave_queue(&self, key: String, holder_id: String) -> Result<(), wit::Error> {
        self.run(|core, io| core.leave_queue(io, &key, &holder_id))
    }

    fn renew(&self, lease: wit::Lease) -> Result<wit::Lease, wit::Error> {
        self.run(|core, io| core.rewrite(io, from_wit_lease(lease), false))
            .map(to_wit_lease)
    }

    fn release(&self, lease: wit::Lease) -> Result<(), wit::Error> {
        self.run(|core, io| core.rewrite(io, from_wit_lease(lease), true))
            .map(|_| ())
    }

    fn inspect(&self, key: String) -> Result<Option<wit::LockState>, wit::Error> {
        self.run(|core, io| core.inspect(io, &key))
            .map(|s| s.map(to_wit_state))
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
        let lease = from_wit_lease(lease);
        self.run(|core, io| {
            core.fenced_write(io, &lease, &object_key, change, options.reject_equal_token)
        })
        .map(|w| wit::FencedWrite {
            object_key: w.object_key,
            etag: w.etag,
            token: w.token,
            previous_token: w.previous_token,
        })
    }

    fn fenced_delete(&self, lease: wit::Lease, object_key: String) -> Result<(), wit::Error> {
        let change = Change::Delete {
            nonce: random_u64(),
        };
        let lease = from_wit_lease(lease);
        self.run(|core, io| core.fenced_write(io, &lease, &object_key, change, false))
            .map(|_| ())
    }

    fn fenced_get(&self, object_key: String) -> Result<Option<wit::FencedObject>, wit::Error> {
        self.run(|core, io| core.fenced_get(io, &object_key))
            .map(|found| {
                found.map(|o| wit::FencedObject {
                    object_key: o.object_key,
                    body: o.body,
                    content_type: o.content_type,
                    etag: o.etag,
                    token: o.token,
                })
            })
    }

    fn preflight(&self) -> Result<wit::PreflightReport, wit::Error> {
        self.run(|core, io| core.preflight(io)).map(to_wit_report)
    }

    fn elector(&self, config: wit::ElectorConfig) -> Result<wit_lease::Elector, wit::Error> {
        let config = ElectorConfig {
            key: config.key,
            lease_duration_ms: config.lease_duration_ms,
            renew_deadline_ms: config.renew_deadline_ms,
            retry_period_ms: config.retry_period_ms,
            holder_id: config
                .holder_id
                .unwrap_or_else(|| format!("elector-{}", random_hex_id())),
            metadata: config.metadata.unwrap_or_default(),
        };
        // The elector has a client of its own (same config and memory so
        // far): a resource cannot keep a borrow of another.
        let core = self.core.borrow().clone();
        let elector = Elector::new(core, config).map_err(to_wit_error)?;
        Ok(wit_lease::Elector::new(ElectorResource {
            elector: RefCell::new(elector),
            signing_offset_ms: Cell::new(self.signing_offset_ms.get()),
            credentials: Rc::clone(&self.credentials),
        }))
    }
}

/// The WIT `elector`.
pub struct ElectorResource {
    elector: RefCell<Elector>,
    signing_offset_ms: Cell<i64>,
    /// Its client's credentials, as `set-credentials` last set them.
    credentials: Rc<RefCell<Credentials>>,
}

impl ElectorResource {
    fn run<T>(&self, f: impl FnOnce(&mut Elector, &mut WasiIo<'_>) -> T) -> T {
        let mut elector = self.elector.borrow_mut();
        let mut config = elector.client_config().clone();
        // Requests sign with its client's latest credentials; nothing else
        // in the elector's copy of the config depends on them.
        config.credentials = self.credentials.borrow().clone();
        let mut io = WasiIo {
            config: &config,
            signing_offset_ms: &self.signing_offset_ms,
        };
        f(&mut elector, &mut io)
    }
}

impl GuestElector for ElectorResource {
    fn step(&self) -> wit::StepResult {
        let status = self.run(|e, io| e.step(io));
        wit::StepResult {
            role: to_wit_role(status.role),
            events: status.events.into_iter().map(to_wit_event).collect(),
            next_step_in_ms: status.next_step_in_ms,
            leading_until_ms: status.leading_until_ms,
            last_error: status.last_error.map(to_wit_error),
        }
    }

    fn resign(&self) -> Result<(), wit::Error> {
        self.run(|e, io| e.resign(io)).map_err(to_wit_error)
    }
}

fn to_wit_role(role: Role) -> wit::Role {
    match role {
        Role::Leader(lease) => wit::Role::Leader(to_wit_lease(lease)),
        Role::Follower(state) => wit::Role::Follower(state.map(to_wit_state)),
        Role::Candidate => wit::Role::Candidate,
    }
}

fn to_wit_event(event: Event) -> wit::ElectorEvent {
    match event {
        Event::BecameLeader(lease) => wit::ElectorEvent::BecameLeader(to_wit_lease(lease)),
        Event::StoppedLeading(reason) => wit::ElectorEvent::StoppedLeading(match reason {
            StopReason::RenewDeadline => wit::StopReason::RenewDeadline,
            StopReason::Lost => wit::StopReason::Lost,
            StopReason::Resigned => wit::StopReason::Resigned,
        }),
        Event::LeaderChanged(state) => wit::ElectorEvent::LeaderChanged(state.map(to_wit_state)),
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

fn to_wit_semaphore(mut s: LockState) -> Option<wit::SemaphoreState> {
    let sem = *s.semaphore.take()?;
    let slots = |entries: Vec<Entry>, judged: &[Judged]| -> Vec<wit::Slot> {
        entries
            .into_iter()
            .zip(judged)
            .map(|(e, j)| wit::Slot {
                holder_id: e.holder_id,
                token: e.token,
                expires_at_ms: e.expires_at_ms,
                acquired_at_ms: e.acquired_at_ms,
                metadata: e.metadata,
                live: j.live,
                expires_in_ms: j.expires_in_ms,
            })
            .collect()
    };
    Some(wit::SemaphoreState {
        lock: to_wit_state(s),
        limit: sem.record.limit,
        holders: slots(sem.record.holders, &sem.holders),
        queue: slots(sem.record.queue, &sem.queue),
    })
}

fn to_wit_strategy(s: Strategy) -> wit::Strategy {
    match s {
        Strategy::SingleObject => wit::Strategy::SingleObject,
        Strategy::EpochObjects => wit::Strategy::EpochObjects,
    }
}

fn to_wit_clock(c: ExpiryClock) -> wit::ExpiryClock {
    match c {
        ExpiryClock::Holder => wit::ExpiryClock::Holder,
        ExpiryClock::Server => wit::ExpiryClock::Server,
        ExpiryClock::Observed => wit::ExpiryClock::Observed,
    }
}

fn to_wit_result(r: CapabilityResult) -> wit::CapabilityResult {
    wit::CapabilityResult {
        capability: match r.capability {
            Capability::IfNoneMatchExisting => wit::Capability::IfNoneMatchExisting,
            Capability::IfMatchPut => wit::Capability::IfMatchPut,
            Capability::IfMatchMissingKey => wit::Capability::IfMatchMissingKey,
            Capability::IfMatchDelete => wit::Capability::IfMatchDelete,
            Capability::ServerDates => wit::Capability::ServerDates,
            Capability::ListStartAfter => wit::Capability::ListStartAfter,
            Capability::ConditionalGet => wit::Capability::ConditionalGet,
            Capability::PayloadHash => wit::Capability::PayloadHash,
            Capability::ClockOffset => wit::Capability::ClockOffset,
            Capability::TableKeySchema => wit::Capability::TableKeySchema,
            Capability::TtlAttribute => wit::Capability::TtlAttribute,
        },
        verdict: match r.verdict {
            Verdict::Pass => wit::Verdict::Pass,
            Verdict::Fail => wit::Verdict::Fail,
            Verdict::Unknown => wit::Verdict::Unknown,
        },
        status: r.status,
        code: r.code,
        detail: r.detail,
        silent: r.silent,
    }
}

fn to_wit_report(r: Report) -> wit::PreflightReport {
    wit::PreflightReport {
        results: r.results.into_iter().map(to_wit_result).collect(),
        clock_offset: r.clock_offset.map(|o| wit::ClockOffset {
            offset_ms: o.offset_ms,
            uncertainty_ms: o.uncertainty_ms,
        }),
        safe_strategies: r.safe_strategies.into_iter().map(to_wit_strategy).collect(),
        safe_expiry_clocks: r.safe_expiry_clocks.into_iter().map(to_wit_clock).collect(),
        recommended_strategy: r.recommended_strategy.map(to_wit_strategy),
        config_safe: r.config_safe,
        notes: r.notes,
        requests: r.requests,
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
        Error::StoreUnsafe(r) => wit::Error::StoreUnsafe(to_wit_result(*r)),
        Error::LimitMismatch {
            key,
            stored,
            requested,
        } => wit::Error::LimitMismatch(wit::LimitMismatch {
            key,
            stored,
            requested,
        }),
    }
}

crate::bindings::export!(Component with_types_in crate::bindings);
