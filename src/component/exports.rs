//! The world's exports, from one source for both builds: the WASI 0.2
//! world's `lease` (each call runs its async body to the end in one poll,
//! since the 0.2 transport blocks inside `send` and `sleep_ms` and so never
//! suspends) and the WASI 0.3 world's `async-lease` (each call awaits its
//! body, suspending its task whenever the transport waits).

use crate::prelude::*;

use super::{Client, ElectorResource};
#[cfg(feature = "wasip3")]
use crate::bindings::exports::s3_lease::lease::async_lease::{
    self as wit_lease, Guest, GuestClient, GuestElector,
};
#[cfg(not(feature = "wasip3"))]
use crate::bindings::exports::s3_lease::lease::lease::{
    self as wit_lease, Guest, GuestClient, GuestElector,
};
use crate::bindings::exports::s3_lease::lease::types as wit;

struct Component;

impl Guest for Component {
    type Client = Client;
    type Elector = ElectorResource;
}

/// Each call the contract makes `async` in the 0.3 world: there an `async
/// fn` awaiting the resource's own; in the 0.2 world a plain `fn` that
/// finishes it in one poll.
macro_rules! calls {
    ($type:ident { $($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)* }) => {$(
        #[cfg(not(feature = "wasip3"))]
        fn $name(&self, $($arg: $ty),*) -> $ret {
            finish($type::$name(self, $($arg),*))
        }
        #[cfg(feature = "wasip3")]
        async fn $name(&self, $($arg: $ty),*) -> $ret {
            $type::$name(self, $($arg),*).await
        }
    )*};
}

impl GuestClient for Client {
    fn new(config: wit::Config) -> Result<Self, wit::Error> {
        Client::new(config)
    }
    fn set_credential(&self, credential: wit::Credential) -> Result<(), wit::Error> {
        Client::set_credential(self, credential)
    }
    fn elector(&self, config: wit::ElectorConfig) -> Result<wit_lease::Elector, wit::Error> {
        Client::elector(self, config).map(wit_lease::Elector::new)
    }
    calls!(Client {
        try_acquire(key: String, options: wit::Options) -> Result<Option<wit::Lease>, wit::Error>;
        acquire(key: String, options: wit::Options, timeout_ms: u64) -> Result<wit::Lease, wit::Error>;
        try_acquire_slot(key: String, options: wit::Options, slot: wit::SlotOptions)
            -> Result<wit::SlotAttempt, wit::Error>;
        acquire_slot(key: String, options: wit::Options, slot: wit::SlotOptions, timeout_ms: u64)
            -> Result<wit::Lease, wit::Error>;
        inspect_slots(key: String) -> Result<Option<wit::SemaphoreState>, wit::Error>;
        leave_queue(key: String, holder_id: String) -> Result<(), wit::Error>;
        renew(lease: wit::Lease) -> Result<wit::Lease, wit::Error>;
        release(lease: wit::Lease) -> Result<(), wit::Error>;
        inspect(key: String) -> Result<Option<wit::LockState>, wit::Error>;
        fenced_put(lease: wit::Lease, object_key: String, body: Vec<u8>, content_type: String)
            -> Result<wit::FencedWrite, wit::Error>;
        fenced_put_with(
            lease: wit::Lease,
            object_key: String,
            body: Vec<u8>,
            content_type: String,
            options: wit::FenceOptions
        ) -> Result<wit::FencedWrite, wit::Error>;
        fenced_delete(lease: wit::Lease, object_key: String) -> Result<(), wit::Error>;
        fenced_get(object_key: String) -> Result<Option<wit::FencedObject>, wit::Error>;
        preflight() -> Result<wit::PreflightReport, wit::Error>;
        audit(key: String, since_ms: Option<u64>) -> Result<Vec<wit::AuditEntry>, wit::Error>;
        audit_verify(key: String, fenced_prefix: Option<String>)
            -> Result<wit::AuditReport, wit::Error>;
        audit_prune(key: String, before_ms: u64) -> Result<wit::AuditPruned, wit::Error>;
    });
}

impl GuestElector for ElectorResource {
    calls!(ElectorResource {
        step() -> wit::StepResult;
        resign() -> Result<(), wit::Error>;
    });
}

/// Finishes a call of the 0.2 world in one poll: never suspended over the
/// 0.2 transport; if it were, a typed error beats a trap.
#[cfg(not(feature = "wasip3"))]
fn finish<T: Suspended>(call: impl core::future::Future<Output = T>) -> T {
    crate::ready::now_or_never(call).unwrap_or_else(T::suspended)
}

/// What a 0.2 call answers if its body suspended.
#[cfg(not(feature = "wasip3"))]
trait Suspended {
    fn suspended() -> Self;
}

#[cfg(not(feature = "wasip3"))]
fn suspended() -> wit::Error {
    super::convert::to_wit_error(crate::error::Error::Transport(
        "a call suspended in the WASI 0.2 build, which cannot resume it".into(),
    ))
}

#[cfg(not(feature = "wasip3"))]
impl<T> Suspended for Result<T, wit::Error> {
    fn suspended() -> Self {
        Err(suspended())
    }
}

#[cfg(not(feature = "wasip3"))]
impl Suspended for wit::StepResult {
    fn suspended() -> Self {
        wit::StepResult {
            role: wit::Role::Candidate,
            events: Vec::new(),
            next_step_in_ms: 0,
            leading_until_ms: None,
            last_error: Some(suspended()),
        }
    }
}

#[cfg(not(feature = "wasip3"))]
crate::bindings::export!(Component with_types_in crate::bindings);
#[cfg(feature = "wasip3")]
crate::bindings::export!(Component with_types_in crate::bindings::generated);
