//! The instances a client's calls run in, each on a thread of its own.
//!
//! A call of the WASI 0.2 component blocks its thread for as long as its
//! requests take, so one instance serves one call at a time. A client keeps
//! a few instances, each with a worker thread that runs the calls sent to
//! it in turn, and sends each key's calls to the same one (by a hash of the
//! key): what an instance remembers of a key (its last read, for
//! conditional GETs and the `observed` clock; the leases it wrote, renewed
//! without a read) is found again, and calls on one key take turns while
//! calls on other keys run beside them. A call holds its instance only while
//! it runs: waiting happens between calls. So a client's threads are its
//! instances' workers, however many leases it holds or calls it makes.
//!
//! The workers belong to no caller's tokio runtime (a caller's runtime shut
//! down while a call is under way must not cancel the call's I/O from
//! under it): each runs its calls, their requests and its keep-alive
//! connections on a runtime of its own (`engine::local`), and waits for
//! its next call inside it, so a renew crosses from the caller to the
//! worker and back, and nothing else.
//!
//! A trap discards the instance: wasmtime refuses to enter it again, and a
//! half-run call may have broken its state. The key's next call makes a new
//! one. A panic is taken as a trap.

use crate::component::{self, Answer};
use crate::config::Credential;
use crate::config::StoreConfig;
use crate::engine::clock::Clock;
use crate::engine::local;
use crate::engine::raw::RawInstance;
use crate::engine::runtime::Runtime;
use crate::engine::state::InstanceOptions;
use crate::engine::trace::Carried;
use crate::error::{Error, ErrorStore};
use std::hash::{Hash, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};

/// Makes the per-instance options (test hooks, clocks) of each new instance.
pub type MakeOptions = Box<dyn Fn() -> InstanceOptions + Send + Sync>;

/// A call sent to a worker: it runs with the worker's instance.
type Job = Box<dyn FnOnce(&Opener, &mut Option<RawInstance>) + Send>;

pub(crate) struct Pool {
    opener: Arc<Opener>,
    workers: Mutex<Workers>,
    size: usize,
}

/// What a worker needs to make its instance.
pub(crate) struct Opener {
    runtime: Runtime,
    /// The config new instances open with.
    config: StoreConfig,
    /// The credential they open with: the config's until one is set.
    credential: Mutex<Option<Credential>>,
    make_options: MakeOptions,
    /// The client's clock, the instances' monotonic clock.
    clock: Clock,
    /// Where the store's errors happen: its kind, endpoint and bucket.
    store: Arc<ErrorStore>,
}

type Sender = tokio::sync::mpsc::UnboundedSender<Job>;

/// The workers started so far, and the instance opened to check the
/// config until a worker takes it. One lock, so a change of credentials
/// sees every worker that has (or will get) an instance made before it.
struct Workers {
    /// By index; `None` until the instance's first call.
    senders: Vec<Option<Sender>>,
    /// For the first worker to start, whichever key's it is.
    spare: Option<RawInstance>,
}

/// Starts instance `index`'s worker, with `instance` if one is ready: a
/// thread that runs the calls sent to it in turn. `None` if the thread
/// could not start.
fn start_worker(
    opener: Arc<Opener>,
    index: usize,
    instance: Option<RawInstance>,
) -> Option<Sender> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
    std::thread::Builder::new()
        .name(format!("s3-lease-{index}"))
        .spawn(move || {
            let mut instance = instance;
            // Waits inside the thread's runtime, which keeps its idle
            // connections' ends driven; ends once the pool is gone and
            // every call sent ran.
            while let Some(job) = local::block_on(rx.recv()) {
                job(&opener, &mut instance);
            }
            // The instance's resources first, then the runtime their
            // tasks ran on.
            drop(instance);
            local::end_thread();
        })
        .ok()
        .map(|_| tx)
}

impl Pool {
    /// A pool of `size` instances (at least one), each made, with its
    /// worker, on its first call; one is opened now, so a config the
    /// component refuses is an error here, and handed to the first worker
    /// that starts.
    pub fn new(
        runtime: Runtime,
        config: StoreConfig,
        credential: Option<Credential>,
        store: Arc<ErrorStore>,
        size: usize,
        make_options: MakeOptions,
        clock: Clock,
    ) -> Result<Self, Error> {
        let opener = Arc::new(Opener {
            runtime,
            config,
            credential: Mutex::new(credential),
            make_options,
            clock,
            store,
        });
        // Each worker starts with its first call: a process that takes one
        // lock (the command line) starts one thread and one runtime.
        let size = size.max(1);
        let workers = Mutex::new(Workers {
            senders: (0..size).map(|_| None).collect(),
            spare: None,
        });
        let pool = Pool {
            opener,
            workers,
            size,
        };
        // Opened on a thread of its own, which ends with its runtime: no
        // worker is started for it, and no runtime is left on the caller's
        // thread.
        let opener = pool.opener.clone();
        let opened = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("s3-lease-open".into())
                .spawn_scoped(scope, || {
                    let mut instance = None;
                    let opened = opener.run(&mut instance, |_| Ok(Ok(())));
                    local::end_thread();
                    opened.map(|()| instance)
                })
                .map_err(Error::host)?
                .join()
                .unwrap_or_else(|_| Err(Error::trap("the host panicked opening an instance")))
        })?;
        lock(&pool.workers).spare = opened;
        Ok(pool)
    }

    /// The workers started so far, once the config changed (called after
    /// changing it): the instance opened to check it is dropped, so a
    /// worker started later opens one with the new config; those listed
    /// have their instances told.
    fn started_since_config_changed(&self) -> Vec<usize> {
        let mut workers = lock(&self.workers);
        workers.spare = None;
        (0..self.size)
            .filter(|&index| workers.senders[index].is_some())
            .collect()
    }

    pub fn store(&self) -> &Arc<ErrorStore> {
        &self.opener.store
    }

    /// Which instance serves `key`.
    pub fn index_of(&self, key: &str) -> usize {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        (hasher.finish() % self.size as u64) as usize
    }

    /// Sends `f` to instance `index`'s worker; `done` gets its result.
    pub fn send<T: Send + 'static>(
        &self,
        index: usize,
        f: impl FnOnce(&mut RawInstance) -> Answer<T> + Send + 'static,
        done: impl FnOnce(Result<T, Error>) + Send + 'static,
    ) {
        self.send_job(index, move |opener, instance| done(opener.run(instance, f)));
    }

    /// Runs `f` on instance `index`, awaiting it.
    pub async fn call_async<T: Send + 'static>(
        &self,
        index: usize,
        f: impl FnOnce(&mut RawInstance) -> Answer<T> + Send + 'static,
    ) -> Result<T, Error> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(index, f, move |result| {
            let _ = tx.send(result);
        });
        rx.await
            .unwrap_or_else(|_| Err(Error::host("the instance's worker stopped")))
    }

    /// Runs `job` on instance `index`'s worker with the instance itself
    /// (none until its first call made it), waiting for it.
    pub fn with_instance<T: Send + 'static>(
        &self,
        index: usize,
        job: impl FnOnce(&Opener, &mut Option<RawInstance>) -> T + Send + 'static,
    ) -> Option<T> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send_job(index, move |opener, instance| {
            let _ = tx.send(job(opener, instance));
        });
        rx.recv().ok()
    }

    /// Sends `job` to instance `index`'s worker, not waiting for it.
    pub fn send_job(
        &self,
        index: usize,
        job: impl FnOnce(&Opener, &mut Option<RawInstance>) + Send + 'static,
    ) {
        // The caller's span and call, entered on the worker while the job
        // runs: its requests are the call's (see `observe`).
        let carried = Carried::capture();
        let job = move |opener: &Opener, instance: &mut Option<RawInstance>| {
            carried.run(|| job(opener, instance))
        };
        // A worker lives as long as its sender, which the pool holds. A job
        // that cannot be sent is dropped: its caller hears that the worker
        // stopped (its channel closes).
        let index = index % self.size;
        let sender = {
            let mut workers = lock(&self.workers);
            let workers = &mut *workers;
            if workers.senders[index].is_none() {
                let spare = workers.spare.take();
                workers.senders[index] = start_worker(self.opener.clone(), index, spare);
            }
            workers.senders[index].clone()
        };
        if let Some(sender) = sender {
            let _ = sender.send(Box::new(job));
        }
    }

    /// Replaces the credential of the live instances and of those made
    /// later. A credential the component refuses (of another kind than the
    /// store's, say) changes nothing.
    pub fn set_credential(&self, credential: &Credential) -> Result<(), Error> {
        let old = lock(&self.opener.credential).replace(credential.clone());
        for index in self.started_since_config_changed() {
            let c = credential.clone();
            let result = self
                .with_instance(index, move |opener, instance| match instance {
                    Some(_) => opener.run(instance, |raw| component::set_credential(raw, &c)),
                    None => Ok(()),
                })
                .unwrap_or_else(|| Err(Error::host("the instance's worker stopped")));
            if let Err(e) = result {
                *lock(&self.opener.credential) = old;
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Opener {
    /// Runs `f` on the worker's instance, making it first if needed.
    pub fn run<T>(
        &self,
        instance: &mut Option<RawInstance>,
        f: impl FnOnce(&mut RawInstance) -> Answer<T>,
    ) -> Result<T, Error> {
        if instance.is_none() {
            *instance = Some(self.open()?);
        }
        let Some(raw) = instance.as_mut() else {
            return Err(Error::trap("no instance"));
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(raw))) {
            Ok(Ok(result)) => result.map_err(|e| e.into_error(&self.store)),
            Ok(Err(trap)) => {
                *instance = None;
                Err(Error::trap(format!("{trap:#}")))
            }
            Err(_) => {
                *instance = None;
                Err(Error::trap("the host panicked during the call"))
            }
        }
    }

    fn open(&self) -> Result<RawInstance, Error> {
        let mut raw = self
            .runtime
            .instance((self.make_options)(), &self.clock)
            .map_err(Error::host)?;
        let credential = lock(&self.credential).clone();
        match component::open(&mut raw, &self.config, credential.as_ref()) {
            Ok(Ok(())) => Ok(raw),
            Ok(Err(e)) => Err(e.into_error(&self.store)),
            Err(trap) => Err(Error::trap(format!("{trap:#}"))),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
