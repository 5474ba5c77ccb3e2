//! The one typed seam into the component: each call of the contract on an
//! instance, taking and giving the crate's own types, and the conversions
//! between them and the generated bindings. The only module that speaks
//! the bindings (the engine below it runs them, typed as generated): the
//! client, the scheduler, the elector, acquiring and closing call these,
//! so a change of the contract is a change here. The contract's names meet
//! their generated twins case for case (`same_cases!`); records are
//! converted field by field.

use crate::audit::{
    AuditEnd, AuditEntry, AuditFinding, AuditFindingKind, AuditPruned, AuditReport,
};
use crate::config::{Store, StoreConfig};
use crate::engine::bindings as wit;
use crate::engine::bindings::exports::s3_lease::lease::types as witt;
use crate::engine::raw::RawInstance;
use crate::error::{Detail, Error, ErrorKind, ErrorStore, Reply};
use crate::types::*;
use s3_lease_keep::leadership::{self, Step};
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
    answer(raw.acquire(key, &options(o), 0), from_lease)
}

pub(crate) fn try_acquire_slot(
    raw: &mut RawInstance,
    key: &str,
    o: &AcquireOptions,
    slot: SlotOptions,
) -> Answer<SlotAnswer> {
    let attempt = raw.try_acquire_slot(key, &options(o), slot_options(slot));
    answer(attempt, |attempt| match attempt {
        wit::SlotAttempt::Granted(lease) => SlotAnswer::Granted(from_lease(lease)),
        wit::SlotAttempt::Queued(place) => SlotAnswer::Queued(place),
        wit::SlotAttempt::Full(seen) => SlotAnswer::Full(seen.map(from_lock_state)),
    })
}

pub(crate) fn renew(raw: &mut RawInstance, record: &LeaseRecord) -> Answer<LeaseRecord> {
    answer(raw.renew(&lease(record)), from_lease)
}

pub(crate) fn release(raw: &mut RawInstance, record: &LeaseRecord) -> Answer<()> {
    answer(raw.release(&lease(record)), |()| ())
}

pub(crate) fn inspect(raw: &mut RawInstance, key: &str) -> Answer<Option<LockState>> {
    answer(raw.inspect(key), |s| s.map(from_lock_state))
}

pub(crate) fn inspect_slots(raw: &mut RawInstance, key: &str) -> Answer<Option<SemaphoreState>> {
    answer(raw.inspect_slots(key), |s| s.map(from_semaphore_state))
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
    let written = raw.fenced_put_with(
        &lease(record),
        object_key,
        body,
        content_type,
        fence_options(o),
    );
    answer(written, from_fenced_write)
}

pub(crate) fn fenced_delete(
    raw: &mut RawInstance,
    record: &LeaseRecord,
    object_key: &str,
) -> Answer<()> {
    answer(raw.fenced_delete(&lease(record), object_key), |()| ())
}

pub(crate) fn fenced_get(raw: &mut RawInstance, object_key: &str) -> Answer<Option<FencedObject>> {
    answer(raw.fenced_get(object_key), |o| o.map(from_fenced_object))
}

pub(crate) fn preflight(raw: &mut RawInstance) -> Answer<PreflightReport> {
    answer(raw.preflight(), from_preflight_report)
}

pub(crate) fn audit(
    raw: &mut RawInstance,
    key: &str,
    since_ms: Option<u64>,
) -> Answer<Vec<AuditEntry>> {
    answer(raw.audit(key, since_ms), |entries| {
        entries.into_iter().map(from_audit_entry).collect()
    })
}

pub(crate) fn audit_verify(
    raw: &mut RawInstance,
    key: &str,
    fenced_prefix: Option<&str>,
) -> Answer<AuditReport> {
    answer(raw.audit_verify(key, fenced_prefix), from_audit_report)
}

pub(crate) fn audit_prune(raw: &mut RawInstance, key: &str, before_ms: u64) -> Answer<AuditPruned> {
    answer(raw.audit_prune(key, before_ms), |p| AuditPruned {
        first_token: p.first_token,
        below_token: p.below_token,
    })
}

pub(crate) fn elector(raw: &mut RawInstance, config: &ElectorConfig) -> Answer<ElectorHandle> {
    answer(raw.elector(&elector_config(config)), ElectorHandle)
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

s3_lease_keep::same_cases! {
    Strategy = wit::Strategy { SingleObject, EpochObjects }
    ExpiryClock = wit::ExpiryClock { Holder, Server, Observed }
    Addressing = wit::AddressingStyle { Path, VirtualHosted }
    Verdict = wit::Verdict { Pass, Fail, Unknown }
    StopReason = wit::StopReason { RenewDeadline, Lost, Resigned }
    Capability = wit::Capability {
        IfNoneMatchExisting,
        IfMatchPut,
        IfMatchMissingKey,
        IfMatchDelete,
        ServerDates,
        ListStartAfter,
        ConditionalGet,
        PayloadHash,
        ClockOffset,
        TableKeySchema,
        TtlAttribute,
        ConcurrentCreate,
        ConcurrentUpdate,
    }
    AuditFindingKind = witt::AuditFindingKind {
        TokenRepeated,
        MissedGrant,
        TakenWhileLive,
        OverLimit,
        UnexplainedGap,
        NotOnStoreClock,
        Unreadable,
        FencedUnknownToken,
        FencedTokenFell,
    }
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
            credentials: aws_credentials(&s3.aws.credentials),
        }),
        Store::DynamoDb(table) => wit::Store::Dynamodb(wit::DynamodbStore {
            endpoint: table.aws.endpoint.clone(),
            region: table.aws.region.clone(),
            table: table.table.clone(),
            credentials: aws_credentials(&table.aws.credentials),
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
        Credential::Aws(c) => wit::Credential::Aws(aws_credentials(c)),
        Credential::Azure(c) => wit::Credential::Azure(azure_credential(c)),
        Credential::Gcs(c) => wit::Credential::Gcs(gcs_credential(c)),
    }
}

fn aws_credentials(c: &Credentials) -> wit::AwsCredentials {
    wit::AwsCredentials {
        access_key_id: c.access_key_id.clone(),
        secret_access_key: c.secret_access_key.clone(),
        session_token: c.session_token.clone(),
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

fn options(o: &AcquireOptions) -> wit::Options {
    wit::Options {
        ttl_ms: o.ttl_ms(),
        holder_id: o.holder_id.clone(),
        metadata: o.metadata.clone(),
    }
}

fn slot_options(o: SlotOptions) -> wit::SlotOptions {
    wit::SlotOptions {
        limit: o.limit,
        fair: o.fair,
    }
}

fn fence_options(o: FenceOptions) -> wit::FenceOptions {
    wit::FenceOptions {
        reject_equal_token: o.reject_equal_token,
    }
}

fn lease(l: &LeaseRecord) -> wit::Lease {
    wit::Lease {
        key: l.key.clone(),
        token: l.token,
        holder_id: l.holder_id.clone(),
        etag: l.etag.clone(),
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl_ms: l.ttl_ms(),
        metadata: l.metadata.clone(),
        seal: l.seal.clone(),
    }
}

fn from_lease(l: wit::Lease) -> LeaseRecord {
    LeaseRecord {
        key: l.key,
        token: l.token,
        holder_id: l.holder_id,
        etag: l.etag,
        expires_at_ms: l.expires_at_ms,
        acquired_at_ms: l.acquired_at_ms,
        ttl: Duration::from_millis(l.ttl_ms),
        metadata: l.metadata,
        seal: l.seal,
    }
}

fn from_lock_state(s: wit::LockState) -> LockState {
    LockState {
        key: s.key,
        holder_id: nonempty(s.holder_id),
        token: nonzero(s.token),
        expires_at_ms: s.expires_at_ms,
        acquired_at_ms: nonzero(s.acquired_at_ms),
        metadata: s.metadata,
        etag: s.etag,
        live: s.live,
        expires_in: Duration::from_millis(s.expires_in_ms),
    }
}

fn from_slot(s: wit::Slot) -> SlotEntry {
    SlotEntry {
        holder_id: s.holder_id,
        token: nonzero(s.token),
        expires_at_ms: s.expires_at_ms,
        acquired_at_ms: s.acquired_at_ms,
        metadata: s.metadata,
        live: s.live,
        expires_in: Duration::from_millis(s.expires_in_ms),
    }
}

fn from_semaphore_state(s: wit::SemaphoreState) -> SemaphoreState {
    SemaphoreState {
        lock: from_lock_state(s.lock),
        limit: s.limit,
        holders: s.holders.into_iter().map(from_slot).collect(),
        queue: s.queue.into_iter().map(from_slot).collect(),
    }
}

fn from_fenced_write(w: wit::FencedWrite) -> FencedWrite {
    FencedWrite {
        object_key: w.object_key,
        etag: w.etag,
        token: w.token,
        previous_token: w.previous_token,
    }
}

fn from_fenced_object(o: wit::FencedObject) -> FencedObject {
    FencedObject {
        object_key: o.object_key,
        body: o.body,
        etag: o.etag,
        content_type: o.content_type,
        token: nonzero(o.token),
    }
}

fn elector_config(c: &ElectorConfig) -> wit::ElectorConfig {
    wit::ElectorConfig {
        key: c.key.clone(),
        lease_duration_ms: millis(c.lease_duration),
        renew_deadline_ms: millis(c.renew_deadline),
        retry_period_ms: millis(c.retry_period),
        holder_id: c.holder_id.clone(),
        metadata: c.metadata.clone(),
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
            wit::Role::Leader(l) => leadership::Role::Leader(from_lease(l)),
            wit::Role::Follower(seen) => leadership::Role::Follower(seen.map(from_lock_state)),
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
            leadership::Event::BecameLeader(from_lease(lease))
        }
        wit::ElectorEvent::StoppedLeading(reason) => {
            leadership::Event::StoppedLeading(reason.into())
        }
        wit::ElectorEvent::LeaderChanged(seen) => {
            leadership::Event::LeaderChanged(seen.map(from_lock_state))
        }
    }
}

fn from_capability_result(r: wit::CapabilityResult) -> CapabilityResult {
    CapabilityResult {
        capability: r.capability.into(),
        verdict: r.verdict.into(),
        status: r.status,
        code: r.code,
        detail: r.detail,
        silent: r.silent,
    }
}

fn from_preflight_report(r: wit::PreflightReport) -> PreflightReport {
    PreflightReport {
        results: r.results.into_iter().map(from_capability_result).collect(),
        clock_offset: r.clock_offset.map(|c| ClockOffset {
            offset_ms: c.offset_ms,
            uncertainty_ms: c.uncertainty_ms,
        }),
        safe_strategies: r.safe_strategies.into_iter().map(Into::into).collect(),
        safe_expiry_clocks: r.safe_expiry_clocks.into_iter().map(Into::into).collect(),
        recommended_strategy: r.recommended_strategy.map(Into::into),
        config_safe: r.config_safe,
        notes: r.notes,
        requests: r.requests,
    }
}

fn reply(e: witt::S3Error) -> Detail {
    Detail::Reply(Reply {
        status: e.status,
        code: e.code,
        message: e.message,
        request_id: e.request_id,
    })
}

/// The component's error as ours, naming the store in use.
fn from_error(e: wit::Error, store: &std::sync::Arc<crate::error::ErrorStore>) -> Error {
    let (kind, detail) = match e {
        wit::Error::Lost(l) => (
            ErrorKind::Lost,
            Detail::Lost {
                key: l.key,
                token: l.token,
                current: l.current.map(from_lock_state),
            },
        ),
        wit::Error::Conflict(e) => (ErrorKind::Conflict, reply(e)),
        wit::Error::ClockSkewed(e) => (ErrorKind::ClockSkewed, reply(e)),
        wit::Error::AccessDenied(e) => (ErrorKind::AccessDenied, reply(e)),
        wit::Error::NoSuchBucket(e) => (ErrorKind::NoSuchStore, reply(e)),
        wit::Error::CorruptLockObject(c) => (
            ErrorKind::CorruptLockObject,
            Detail::Corrupt {
                object_key: c.object_key,
                reason: c.reason,
            },
        ),
        wit::Error::S3(e) => (ErrorKind::Store, reply(e)),
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
                holder: t.holder.map(from_lock_state),
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
        wit::Error::StoreUnsafe(r) => (
            ErrorKind::StoreUnsafe,
            Detail::Unsafe(Box::new(from_capability_result(r))),
        ),
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

fn from_audit_entry(e: witt::AuditEntry) -> AuditEntry {
    AuditEntry {
        token: e.token,
        holder_id: e.holder_id,
        ttl_ms: e.ttl_ms,
        granted_at_ms: e.granted_at_ms,
        ended: match e.ended {
            witt::AuditEnd::Released => AuditEnd::Released,
            witt::AuditEnd::Expired => AuditEnd::Expired,
            witt::AuditEnd::TakenOver => AuditEnd::TakenOver,
            witt::AuditEnd::Held => AuditEnd::Held,
            witt::AuditEnd::Unknown => AuditEnd::Unknown,
        },
        ended_at_ms: e.ended_at_ms,
        held_ms: e.held_ms,
        written_by: e.written_by,
        backfilled: e.backfilled,
    }
}

fn from_audit_report(r: witt::AuditReport) -> AuditReport {
    AuditReport {
        key: r.key,
        first_token: r.first_token,
        last_token: r.last_token,
        grants: r.grants,
        backfilled: r.backfilled,
        overlapped: r.overlapped,
        findings: r.findings.into_iter().map(from_audit_finding).collect(),
    }
}

fn from_audit_finding(f: witt::AuditFinding) -> AuditFinding {
    AuditFinding {
        kind: f.kind.into(),
        token: f.token,
        detail: f.detail,
        evidence: f.evidence,
    }
}
