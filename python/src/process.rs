//! What the extension keeps per process: the tokio runtime its calls,
//! renewals and electors run on, and the component, loaded once. A child
//! made by `os.fork()` has none of the parent's threads: what the parent
//! made is left alone there (never used, never dropped: its locks may have
//! been held by a thread the child does not have), and the child's first
//! client makes its own.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

pub(crate) struct Process {
    pub pid: u32,
    pub tokio: tokio::runtime::Runtime,
    component: OnceLock<Result<s3_lease_host::Runtime, String>>,
}

/// This process's; null before the first, or another process's after a fork.
static CURRENT: AtomicPtr<Process> = AtomicPtr::new(std::ptr::null_mut());

/// This process's runtime, made on first use (also in a forked child).
pub(crate) fn current() -> PyResult<&'static Process> {
    let pid = std::process::id();
    let found = CURRENT.load(Ordering::Acquire);
    // SAFETY: every pointer stored in CURRENT comes from Box::leak and is
    // never freed, so it stays valid for the life of the process.
    if let Some(process) = unsafe { found.as_ref() } {
        if process.pid == pid {
            return Ok(process);
        }
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("s3-lease")
        .enable_all()
        .build()
        .map_err(|e| crate::errors::host_error(format!("starting s3-lease's threads: {e}")))?;
    let made: &'static mut Process = Box::leak(Box::new(Process {
        pid,
        tokio,
        component: OnceLock::new(),
    }));
    match CURRENT.compare_exchange(found, made, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(made),
        // Another thread made one first: use it (ours stays unused).
        // SAFETY: as above.
        Err(other) => Ok(unsafe { &*other }),
    }
}

impl Process {
    /// The component, loaded (precompiled, cached or compiled) on first use.
    pub fn component(&self) -> Result<s3_lease_host::Runtime, String> {
        self.component
            .get_or_init(|| s3_lease_host::Runtime::new().map_err(|e| format!("{e:#}")))
            .clone()
    }
}

/// Which process made an object, so that a forked child refuses to use
/// the parent's (and never drops it).
#[derive(Clone, Copy)]
pub(crate) struct Owner(u32);

impl Owner {
    pub fn here() -> Owner {
        Owner(std::process::id())
    }

    /// Whether this is the process that made it.
    pub fn is_here(self) -> bool {
        self.0 == std::process::id()
    }

    /// `ForkedError` in a child, naming `what`.
    pub fn check(self, what: &str) -> PyResult<()> {
        if self.is_here() {
            return Ok(());
        }
        Err(crate::errors::forked(format!(
            "this {what} was made in process {} before os.fork(); this is process {}, which \
             has none of its threads or leases: make a new s3_lease.Client here",
            self.0,
            std::process::id()
        )))
    }
}

/// A value the process that made it drops; in a forked child it is never
/// dropped (its destructor could wait on a lock a parent's thread held at
/// the fork, or on a thread the child does not have).
pub(crate) struct Here<T> {
    value: std::mem::ManuallyDrop<T>,
    owner: Owner,
}

impl<T> Here<T> {
    pub fn new(value: T) -> Self {
        Here {
            value: std::mem::ManuallyDrop::new(value),
            owner: Owner::here(),
        }
    }
}

impl<T> std::ops::Deref for Here<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> Drop for Here<T> {
    fn drop(&mut self) {
        if self.owner.is_here() {
            // SAFETY: dropped once, here; the value is not used after.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.value) }
        }
    }
}
