//! The one typed seam into the component: each call of the contract on an
//! instance, taking and giving the crate's own types, and the conversions
//! between them and the generated bindings. The only module that speaks
//! the bindings (the engine below it runs them, typed as generated): the
//! client, the scheduler, the elector, acquiring and closing call these,
//! so a change of the contract is a change here. The contract's names meet
//! their generated twins case for case (`same_cases!`); records are
//! converted field by field, one line each (`same_fields!`).

use crate::audit::{AuditEnd, AuditEntry, AuditFinding, AuditPruned, AuditReport};
use crate::config::{AzureCredential, Credential, GcsCredential, Store, StoreConfig};
use crate::engine::bindings as wit;
use crate::engine::bindings::exports::s3_lease::lease::types as witt;
use crate::engine::raw::RawInstance;
use crate::error::{Detail, Error, ErrorKind, ErrorStore, Reply};
use crate::types::*;
use s3_lease_keep::leadership::{self, Step};
use s3_lease_keep::twins::{FromTwin, IntoTwin};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::component::ResourceAny;

/// A call's answer: its result, or the component's typed refusal (not yet
/// converted: that names the store, which the instance's opener knows);
/// the outer error is a trap.
pub(crate) type Answer<T> = anyhow::Result<Result<T, Refusal>>;

/// The component's typed error for one call, before it becomes the
/// crate's [`Error`] naming the store it happened on.
#[derive(Debug, Clone)]
pub(crate) struct Refusal(wit::Error);

impl Refusal {
    pub(crate) fn into_error(self, store: &Arc<ErrorStore>) -> Error {
        from_error(self.0, store)
    }
}

/// A call's generated result as an answer.
fn answer<T, U>(
    result: anyhow::Result<Result<T, wit::Error>>,
    f: impl FnOnce(T) -> U,
) -> Answer<U> {
    Ok(result?.map(f).map_err(Refusal))
}

/// An elector in an instance (the component's resource).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ElectorHandle(ResourceAny);

/// One step of an elector: what the leadership machine takes, and why the
/// step's attempt failed, if it did.
pub(crate) struct StepReport {
    pub step: Step<LeaseRecord, LockState>,
    pub last_error: Option<Refusal>,
}

/// What one attempt at a slot got.
pub(crate) enum SlotAnswer {
    Granted(LeaseRecord),
    Queued(u32),
    Full(Option<LockState>),
}

impl StoreConfig {
    /// The WIT record the component takes (with `unstable-raw`, for
    /// callers that drive an instance call by call).
    #[cfg(feature = "unstable-raw")]
    pub fn wit_config(&self) -> wit::Config {
        config(self, None)
    }
}

/// Opens the instance's client with `config`, and `credential` in place of
/// the config's own when given (a refreshed one).
pub(crate) fn open(
    raw: &mut RawInstance,
    config: &StoreConfig,
    credential: Option<&Credential>,
) -> Answer<()> {
    answer(raw.open(&self::config(config, credential)), |()| ())
}

pub(crate) fn set_credential(raw: &mut RawInstance, credential: &Credential) -> Answer<()> {
    answer(raw.set_credential(&self::credential(credential)), |()| ())
}

/// One attempt at `key` that names the holder when it is held (`acquire`
/// with no time to wait: a held key is a `timeout`).
pub(crate) fn attempt(raw: &mut RawInstance, key: &str, o: &AcquireOptions) -> Answer<LeaseRecord> {
    answer(raw.acquire(key, &twin(o), 0), LeaseRecord::from_twin)
}

pub(crate) fn try_acquire_slot(
    raw: &mut RawInstance,
    key: &str,
    o: &AcquireOptions,
    slot: SlotOptions,
) -> Answer<SlotAnswer> {
    let attempt = raw.try_acquire_slot(key, &twin(o), twin(&slot));
    answer(attempt, |attempt| match attempt {
        wit::SlotAttempt::Granted(lease) => SlotAnswer::Granted(LeaseRecord::from_twin(lease)),
        wit::SlotAttempt::Queued(place) => SlotAnswer::Queued(place),
        wit::SlotAttempt::Full(seen) => SlotAnswer::Full(seen.map(LockState::from_twin)),
    })
}

pub(crate) fn renew(raw: &mut RawInstance, record: &LeaseRecord) -> Answer<LeaseRecord> {
    answer(raw.renew(&twin(record)), LeaseRecord::from_twin)
}

pub(crate) fn release(raw: &mut RawInstance, record: &LeaseRecord) -> Answer<()> {
    answer(raw.release(&twin(record)), |()| ())
}

pub(crate) fn inspect(raw: &mut RawInstance, key: &str) -> Answer<Option<LockState>> {
    answer(raw.inspect(key), |s| s.map(LockState::from_twin))
}

pub(crate) fn inspect_slots(raw: &mut RawInstance, key: &str) -> Answer<Option<SemaphoreState>> {
    answer(raw.inspect_slots(key), |s| s.map(SemaphoreState::from_twin))
}

pub(crate) fn leave_queue(raw: &mut RawInstance, key: &str, holder_id: &str) -> Answer<()> {
    answer(raw.leave_queue(key, holder_id), |()| ())
}

pub(crate) fn fenced_put(
    raw: &mut RawInstance,
    record: &LeaseRecord,
    object_key: &str,
    body: &[u8],
    content_type: &str,
    o: FenceOptions,
) -> Answer<FencedWrite> {
    let written = raw.fenced_put_with(&twin(record), object_key, body, content_type, twin(&o));
    answer(written, FencedWrite::from_twin)
}

pub(crate) fn fenced_delete(
    raw: &mut RawInstance,
    record: &LeaseRecord,
    object_key: &str,
) -> Answer<()> {
    answer(raw.fenced_delete(&twin(record), object_key), |()| ())
}

pub(crate) fn fenced_get(raw: &mut RawInstance, object_key: &str) -> Answer<Option<FencedObject>> {
    answer(raw.fenced_get(object_key), Option::from_twin)
}

pub(crate) fn preflight(raw: &mut RawInstance) -> Answer<PreflightReport> {
    answer(raw.preflight(), PreflightReport::from_twin)
}

pub(crate) fn audit(
    raw: &mut RawInstance,
    key: &str,
    since_ms: Option<u64>,
) -> Answer<Vec<AuditEntry>> {
    answer(raw.audit(key, since_ms), Vec::from_twin)
}

pub(crate) fn audit_verify(
    raw: &mut RawInstance,
    key: &str,
    fenced_prefix: Option<&str>,
) -> Answer<AuditReport> {
    answer(raw.audit_verify(key, fenced_prefix), AuditReport::from_twin)
}

pub(crate) fn audit_prune(raw: &mut RawInstance, key: &str, before_ms: u64) -> Answer<AuditPruned> {
    answer(raw.audit_prune(key, before_ms), AuditPruned::from_twin)
}

pub(crate) fn elector(raw: &mut RawInstance, config: &ElectorConfig) -> Answer<ElectorHandle> {
    answer(raw.elector(&twin(config)), ElectorHandle)
}

/// One step of `elector`: it never fails but by a trap; its attempt's
/// error is in the report.
pub(crate) fn step(raw: &mut RawInstance, elector: ElectorHandle) -> Answer<StepReport> {
    let mut result = raw.step(elector.0)?;
    let last_error = result.last_error.take().map(Refusal);
    Ok(Ok(StepReport {
        step: step_of(result),
        last_error,
    }))
}

pub(crate) fn resign(raw: &mut RawInstance, elector: ElectorHandle) -> Answer<()> {
    answer(raw.resign(elector.0), |()| ())
}

/// Drops an elector without resigning (as a crash would leave it).
pub(crate) fn drop_elector(raw: &mut RawInstance, elector: ElectorHandle) -> Answer<()> {
    raw.drop_elector(elector.0)?;
    Ok(Ok(()))
}

s3_lease_keep::same_vocabulary!(witt);
s3_lease_keep::same_cases! {
    AuditEnd = witt::AuditEnd { Released, Expired, TakenOver, Held, Unknown }
}

// The records, field by field: what travels as it is, then what changes
// on the way (durations, and the contract's 0 and "" for "none").
s3_lease_keep::same_fields! {
    |c: Credentials| -> wit::AwsCredentials { access_key_id, secret_access_key, session_token }
    |o: AcquireOptions| -> wit::Options { holder_id, metadata; ttl_ms: o.ttl_ms() }
    |o: SlotOptions| -> wit::SlotOptions { limit, fair }
    |o: FenceOptions| -> wit::FenceOptions { reject_equal_token }
    |c: ElectorConfig| -> wit::ElectorConfig { key, holder_id, metadata;
        lease_duration_ms: millis(c.lease_duration),
        renew_deadline_ms: millis(c.renew_deadline),
        retry_period_ms: millis(c.retry_period) }
    |l: LeaseRecord| -> wit::Lease { key, token, holder_id, etag, expires_at_ms, acquired_at_ms, metadata, seal; ttl_ms: l.ttl_ms() }
    |l: wit::Lease| -> LeaseRecord { key, token, holder_id, etag, expires_at_ms, acquired_at_ms, metadata, seal;
        ttl: Duration::from_millis(l.ttl_ms) }
    |s: wit::LockState| -> LockState { key, expires_at_ms, metadata, etag, live;
        holder_id: nonempty(s.holder_id),
        token: nonzero(s.token),
        acquired_at_ms: nonzero(s.acquired_at_ms),
        expires_in: Duration::from_millis(s.expires_in_ms) }
    |s: wit::Slot| -> SlotEntry { holder_id, expires_at_ms, acquired_at_ms, metadata, live;
        token: nonzero(s.token),
        expires_in: Duration::from_millis(s.expires_in_ms) }
    |s: wit::SemaphoreState| -> SemaphoreState { lock, limit, holders, queue }
    |w: wit::FencedWrite| -> FencedWrite { object_key, etag, token, previous_token }
    |o: wit::FencedObject| -> FencedObject { object_key, body, etag, content_type; token: nonzero(o.token) }
    |r: wit::CapabilityResult| -> CapabilityResult { capability, verdict, status, code, detail, silent }
    |c: wit::ClockOffset| -> ClockOffset { offset_ms, uncertainty_ms }
    |r: wit::PreflightReport| -> PreflightReport { results, clock_offset, safe_strategies,
        safe_expiry_clocks, recommended_strategy, config_safe, notes, requests }
    |e: witt::AuditEntry| -> AuditEntry { token, holder_id, ttl_ms, granted_at_ms, ended,
        ended_at_ms, held_ms, written_by, backfilled }
    |r: witt::AuditReport| -> AuditReport { key, first_token, last_token, grants, backfilled,
        overlapped, findings }
    |f: witt::AuditFinding| -> AuditFinding { kind, token, detail, evidence }
    |p: witt::AuditPruned| -> AuditPruned { first_token, below_token }
    |e: witt::S3Error| -> Reply { status, code, message, request_id }
}

/// Ours as the bindings' (or the other way), from a borrow.
fn twin<T: Clone, U: FromTwin<T>>(value: &T) -> U {
    U::from_twin(value.clone())
}

fn nonzero(v: u64) -> Option<u64> {
    (v != 0).then_some(v)
}

fn nonempty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// The WIT record the component takes, with `credential` in place of the
/// one the config was built with (a refreshed one), if given.
pub(crate) fn config(config: &StoreConfig, credential: Option<&Credential>) -> wit::Config {
    let mut store = store(config.store());
    if let Some(credential) = credential {
        put_credential(&mut store, self::credential(credential));
    }
    wit::Config {
        store,
        key_prefix: config.key_prefix.clone(),
        request_timeout_ms: config
            .request_timeout
            .map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
        strategy: config.strategy.map(Into::into),
        expiry_clock: config.expiry_clock.map(Into::into),
        preflight: config.preflight,
        seal_key: config.seal_key.clone(),
        audit: config.audit,
    }
}

fn store(store: &Store) -> wit::Store {
    match store {
        Store::S3(s3) => wit::Store::S3(wit::S3Store {
            endpoint: s3.aws.endpoint.clone(),
            region: s3.aws.region.clone(),
            bucket: s3.bucket.clone(),
            addressing: s3.addressing.into(),
            credentials: twin(&s3.aws.credentials),
        }),
        Store::DynamoDb(table) => wit::Store::Dynamodb(wit::DynamodbStore {
            endpoint: table.aws.endpoint.clone(),
            region: table.aws.region.clone(),
            table: table.table.clone(),
            credentials: twin(&table.aws.credentials),
        }),
        Store::AzureBlob(azure) => wit::Store::AzureBlob(wit::AzureStore {
            endpoint: azure.endpoint.clone(),
            addressing: match azure.path_style {
                true => wit::AddressingStyle::Path,
                false => wit::AddressingStyle::VirtualHosted,
            },
            account: azure.account.clone(),
            container: azure.container.clone(),
            credential: azure_credential(&azure.credential),
        }),
        Store::Gcs(gcs) => wit::Store::Gcs(wit::GcsStore {
            endpoint: gcs.endpoint.clone(),
            bucket: gcs.bucket.clone(),
            credential: gcs_credential(&gcs.credential),
        }),
    }
}

/// Puts `credential` in `store` where it is of the store's kind; one of
/// another kind is left for the component to refuse, as it refuses it in
/// `set-credential`.
fn put_credential(store: &mut wit::Store, credential: wit::Credential) {
    match (store, credential) {
        (wit::Store::S3(s), wit::Credential::Aws(c)) => s.credentials = c,
        (wit::Store::Dynamodb(s), wit::Credential::Aws(c)) => s.credentials = c,
        (wit::Store::AzureBlob(s), wit::Credential::Azure(c)) => s.credential = c,
        (wit::Store::Gcs(s), wit::Credential::Gcs(c)) => s.credential = c,
        (wit::Store::S3(_), _)
        | (wit::Store::Dynamodb(_), _)
        | (wit::Store::AzureBlob(_), _)
        | (wit::Store::Gcs(_), _) => {}
    }
}

pub(crate) fn credential(c: &Credential) -> wit::Credential {
    match c {
        Credential::Aws(c) => wit::Credential::Aws(twin(c)),
        Credential::Azure(c) => wit::Credential::Azure(azure_credential(c)),
        Credential::Gcs(c) => wit::Credential::Gcs(gcs_credential(c)),
    }
}

fn azure_credential(c: &AzureCredential) -> wit::AzureCredential {
    match c {
        AzureCredential::AccountKey(key) => wit::AzureCredential::SharedKey(key.clone()),
        AzureCredential::Sas(sas) => wit::AzureCredential::Sas(sas.clone()),
        AzureCredential::BearerToken(token) => wit::AzureCredential::Bearer(token.clone()),
    }
}

fn gcs_credential(c: &GcsCredential) -> wit::GcsCredential {
    match c {
        GcsCredential::BearerToken(token) => wit::GcsCredential::Bearer(token.clone()),
        GcsCredential::Anonymous => wit::GcsCredential::Anonymous,
    }
}

/// The machine that judges leadership (`s3_lease_keep::leadership`)
/// takes a step of the component's elector as it is: its role and events,
/// converted once, here, into the machine's types over the crate's lease
/// record and lock state. What it reports becomes the public [`Role`] and
/// [`ElectionEvent`] by the `From` impls beside those types.
fn step_of(step: wit::StepResult) -> Step<LeaseRecord, LockState> {
    Step {
        role: match step.role {
            wit::Role::Leader(l) => leadership::Role::Leader(LeaseRecord::from_twin(l)),
            wit::Role::Follower(seen) => leadership::Role::Follower(seen.map(LockState::from_twin)),
            wit::Role::Candidate => leadership::Role::Candidate,
        },
        events: step.events.into_iter().map(elector_event).collect(),
        leading_until_ms: step.leading_until_ms,
        next_step_in_ms: step.next_step_in_ms,
    }
}

fn elector_event(event: wit::ElectorEvent) -> leadership::Event<LeaseRecord, LockState> {
    match event {
        wit::ElectorEvent::BecameLeader(lease) => {
            leadership::Event::BecameLeader(LeaseRecord::from_twin(lease))
        }
        wit::ElectorEvent::StoppedLeading(reason) => {
            leadership::Event::StoppedLeading(reason.into())
        }
        wit::ElectorEvent::LeaderChanged(seen) => {
            leadership::Event::LeaderChanged(seen.map(LockState::from_twin))
        }
    }
}

/// The component's error as ours, naming the store in use.
fn from_error(e: wit::Error, store: &std::sync::Arc<crate::error::ErrorStore>) -> Error {
    let (kind, detail) = match e {
        wit::Error::Lost(l) => (
            ErrorKind::Lost,
            Detail::Lost {
                key: l.key,
                token: l.token,
                current: l.current.map(LockState::from_twin),
            },
        ),
        wit::Error::Conflict(e) => (ErrorKind::Conflict, Detail::Reply(e.into_twin())),
        wit::Error::ClockSkewed(e) => (ErrorKind::ClockSkewed, Detail::Reply(e.into_twin())),
        wit::Error::AccessDenied(e) => (ErrorKind::AccessDenied, Detail::Reply(e.into_twin())),
        wit::Error::NoSuchBucket(e) => (ErrorKind::NoSuchStore, Detail::Reply(e.into_twin())),
        wit::Error::CorruptLockObject(c) => (
            ErrorKind::CorruptLockObject,
            Detail::Corrupt {
                object_key: c.object_key,
                reason: c.reason,
            },
        ),
        wit::Error::S3(e) => (ErrorKind::Store, Detail::Reply(e.into_twin())),
        wit::Error::Transport(m) => (ErrorKind::Transport, Detail::Message(m)),
        wit::Error::InvalidConfig(c) => (
            ErrorKind::InvalidConfig,
            Detail::Config {
                field: c.field,
                reason: c.reason,
            },
        ),
        wit::Error::InvalidArgument(m) => (ErrorKind::InvalidArgument, Detail::Message(m)),
        wit::Error::Timeout(t) => (
            ErrorKind::Timeout,
            Detail::Timeout {
                key: t.key,
                waited: Duration::from_millis(t.waited_ms),
                holder: t.holder.map(LockState::from_twin),
            },
        ),
        wit::Error::Fenced(x) => (
            ErrorKind::Fenced,
            Detail::Fenced {
                object_key: x.object_key,
                stored_token: x.stored_token,
                our_token: x.our_token,
            },
        ),
        wit::Error::StoreUnsafe(r) => (ErrorKind::StoreUnsafe, Detail::Unsafe(r.into_twin())),
        wit::Error::LimitMismatch(m) => (
            ErrorKind::LimitMismatch,
            Detail::Limit {
                key: m.key,
                stored: m.stored,
                requested: m.requested,
            },
        ),
    };
    Error::new(kind, Some(store.clone()), detail)
}

/// A `Timeout` error for a wait of the host's own.
pub(crate) fn timeout(key: &str, waited: Duration, holder: Option<LockState>) -> Error {
    Error::new(
        ErrorKind::Timeout,
        None,
        Detail::Timeout {
            key: key.to_string(),
            waited,
            holder,
        },
    )
}
