//! The instances a client's calls run in.
//!
//! A call of the WASI 0.2 component blocks its thread for as long as its
//! requests take, so one instance serves one call at a time. A client keeps
//! a few instances, made as they are first needed, and sends each key's
//! calls to the same one (by a hash of the key): what an instance remembers
//! of a key (its last read, for conditional GETs and the `observed` clock;
//! the leases it wrote, renewed without a read) is found again, and calls
//! on one key take turns, while calls on other keys run beside them. A call
//! holds its instance only while it runs: waiting happens between calls.
//!
//! A trap discards the instance: wasmtime refuses to enter it again, and a
//! half-run call may have broken its state. The key's next call makes a new
//! one.

use crate::bindings::{self as wit, Config};
use crate::convert;
use crate::raw::RawInstance;
use crate::{Error, InstanceOptions, Runtime};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

/// Makes the per-instance options (test hooks, clocks) of each new instance.
pub type MakeOptions = Box<dyn Fn() -> InstanceOptions + Send + Sync>;

pub(crate) struct Pool {
    runtime: Runtime,
    /// The config new instances open with (credentials kept current).
    config: Mutex<Config>,
    instances: Vec<Mutex<Slot>>,
    make_options: MakeOptions,
    /// The store's name, for its errors.
    store: &'static str,
}

enum Slot {
    Empty,
    Live(Box<RawInstance>),
}

impl Pool {
    /// A pool of up to `size` instances (at least one); opens the first
    /// now, so a config the component refuses is an error here.
    pub fn new(
        runtime: Runtime,
        config: Config,
        size: usize,
        make_options: MakeOptions,
    ) -> Result<Self, Error> {
        let store = match &config.store {
            Some(wit::Store::Dynamodb(_)) => "DynamoDB",
            _ => "S3",
        };
        let pool = Pool {
            runtime,
            config: Mutex::new(config),
            instances: (0..size.max(1)).map(|_| Mutex::new(Slot::Empty)).collect(),
            make_options,
            store,
        };
        pool.call(0, |_| Ok(Ok(())))?;
        Ok(pool)
    }

    pub fn store(&self) -> &'static str {
        self.store
    }

    /// Which instance serves `key`.
    pub fn index_of(&self, key: &str) -> usize {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        (hasher.finish() % self.instances.len() as u64) as usize
    }

    /// Runs `f` on instance `index`, making it first if needed; blocks
    /// until it is free and for as long as the call takes.
    pub fn call<T>(
        &self,
        index: usize,
        f: impl FnOnce(&mut RawInstance) -> anyhow::Result<Result<T, wit::Error>>,
    ) -> Result<T, Error> {
        let mut slot = lock(&self.instances[index % self.instances.len()]);
        if matches!(*slot, Slot::Empty) {
            *slot = Slot::Live(Box::new(self.open()?));
        }
        let Slot::Live(raw) = &mut *slot else {
            return Err(Error::trap("no instance"));
        };
        match f(raw) {
            Ok(result) => result.map_err(|e| convert::from_error(e, self.store)),
            Err(trap) => {
                *slot = Slot::Empty;
                Err(Error::trap(format!("{trap:#}")))
            }
        }
    }

    fn open(&self) -> Result<RawInstance, Error> {
        let mut raw = self
            .runtime
            .instance((self.make_options)())
            .map_err(Error::host)?;
        let config = lock(&self.config).clone();
        match raw.open(&config) {
            Ok(Ok(())) => Ok(raw),
            Ok(Err(e)) => Err(convert::from_error(e, self.store)),
            Err(trap) => Err(Error::trap(format!("{trap:#}"))),
        }
    }

    /// Replaces the credentials of every live instance and of those made
    /// later. Refused ones (the component validates them) change nothing.
    pub fn set_credentials(&self, credentials: &wit::Credentials) -> Result<(), Error> {
        for index in 0..self.instances.len() {
            let slot = lock(&self.instances[index]);
            if let Slot::Live(_) = &*slot {
                drop(slot);
                self.call(index, |raw| raw.set_credentials(credentials))?;
            }
        }
        lock(&self.config).credentials = credentials.clone();
        Ok(())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
