//! The WIT exports: converts between the generated types and the crate's own,
//! and runs protocol operations over `WasiIo`. No protocol logic lives here.

use crate::bindings::exports::s3_lease::lease::lease::{Guest, GuestClient};
use crate::bindings::exports::s3_lease::lease::types as wit;
use crate::config::{Addressing, ClientConfig, RawConfig, Strategy};
use crate::driver;
use crate::error::{Error, S3Error};
use crate::lock_object::LockState;
use crate::protocol::{object_key, AcquireOutcome, Grant, Inspect, Lease, RewriteOwn, TryAcquire};
use crate::sigv4::Credentials;
use crate::transport::{random_hex_id, WasiIo};

struct Component;

impl Guest for Component {
    type Client = Client;
}

pub struct Client {
    config: ClientConfig,
}

impl Client {
    fn io(&self) -> WasiIo<'_> {
        WasiIo {
            config: &self.config,
        }
    }

    fn object_key(&self, key: &str) -> Result<String, Error> {
        object_key(&self.config.key_prefix, key)
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
        Ok(Client { config })
    }

    fn try_acquire(
        &self,
        key: String,
        options: wit::Options,
    ) -> Result<Option<wit::Lease>, wit::Error> {
        let object_key = self.object_key(&key).map_err(to_wit_error)?;
        let grant = grant(options).map_err(to_wit_error)?;
        match driver::run(&mut self.io(), TryAcquire::new(key, object_key, grant)) {
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
        driver::acquire(&mut self.io(), &key, &object_key, &grant, timeout_ms)
            .map(to_wit_lease)
            .map_err(to_wit_error)
    }

    fn renew(&self, lease: wit::Lease) -> Result<wit::Lease, wit::Error> {
        let object_key = self.object_key(&lease.key).map_err(to_wit_error)?;
        driver::run(
            &mut self.io(),
            RewriteOwn::renew(from_wit_lease(lease), object_key),
        )
        .map(to_wit_lease)
        .map_err(to_wit_error)
    }

    fn release(&self, lease: wit::Lease) -> Result<(), wit::Error> {
        let object_key = self.object_key(&lease.key).map_err(to_wit_error)?;
        driver::run(
            &mut self.io(),
            RewriteOwn::release(from_wit_lease(lease), object_key),
        )
        .map(|_| ())
        .map_err(to_wit_error)
    }

    fn inspect(&self, key: String) -> Result<Option<wit::LockState>, wit::Error> {
        let object_key = self.object_key(&key).map_err(to_wit_error)?;
        driver::run(&mut self.io(), Inspect::new(key, object_key))
            .map(|state| state.map(to_wit_state))
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
