//! A call, as Python waits for it. Nothing runs until Python asks:
//!
//! - blocking (`block`): the call's future is driven on the calling thread,
//!   the GIL released, inside s3-lease's runtime (its timers and tasks),
//!   looking for a signal (Ctrl-C) every tenth of a second. The call's
//!   request goes from here to its instance's thread and back: no other
//!   thread in between (each hop is a thread's wake-up, most of a call's
//!   CPU: docs/measured.md);
//! - from an event loop (`add_done_callback`): the future runs as a task on
//!   s3-lease's runtime, and the callback comes from there when it is done.
//!
//! Cancelling a call (or dropping it unwaited) drops its future, which the
//! host crate makes safe: a grant nobody waits for any more is released, a
//! release cut short is sent in the background. A result nobody took (a
//! lease, say) is dropped with the call, and so released.

use crate::process::{self, Here, Owner};
use pyo3::prelude::*;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

/// Makes the call's Python result, with the GIL.
pub(crate) type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

type Call = Pin<Box<dyn Future<Output = Convert> + Send>>;

/// How often a blocked call looks for a signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

enum Slot {
    /// Not started: nobody asked yet.
    Idle(Call),
    /// Driven by a blocked caller, or a task on s3-lease's runtime.
    Running,
    Done(Convert),
    /// Taken, or cancelled.
    Over,
}

struct Inner {
    slot: Mutex<Slot>,
    done: Condvar,
    /// Called (with the GIL) once the call is done.
    callback: Mutex<Option<Py<PyAny>>>,
    /// The task running the call, once it runs as one.
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[pyclass(module = "s3_lease._native", frozen)]
pub(crate) struct Pending {
    inner: Here<Arc<Inner>>,
    owner: Owner,
}

/// A call of `call`, run when Python waits for it.
pub(crate) fn spawn<F>(call: F) -> PyResult<Pending>
where
    F: Future<Output = Convert> + Send + 'static,
{
    Ok(Pending {
        inner: Here::new(Arc::new(Inner {
            slot: Mutex::new(Slot::Idle(Box::pin(call))),
            done: Condvar::new(),
            callback: Mutex::new(None),
            task: Mutex::new(None),
        })),
        owner: Owner::here(),
    })
}

/// Wakes the thread that drives a call.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `call` on this thread, in `runtime`'s context, for up to `slice`.
fn drive(call: &mut Call, runtime: &tokio::runtime::Handle, slice: Duration) -> Option<Convert> {
    let _entered = runtime.enter();
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let until = Instant::now() + slice;
    loop {
        if let Poll::Ready(convert) = call.as_mut().poll(&mut cx) {
            return Some(convert);
        }
        let now = Instant::now();
        if now >= until {
            return None;
        }
        // A wake before this parks makes it return at once.
        std::thread::park_timeout(until - now);
    }
}

impl Pending {
    /// Starts the call as a task on s3-lease's runtime, if it is idle.
    fn start(&self) -> PyResult<()> {
        let call = {
            let mut slot = lock(&self.inner.slot);
            match std::mem::replace(&mut *slot, Slot::Running) {
                Slot::Idle(call) => call,
                other => {
                    *slot = other;
                    return Ok(());
                }
            }
        };
        let process = process::current()?;
        let inner = Arc::clone(&self.inner);
        let task = process.tokio.spawn(async move {
            let convert = call.await;
            inner.finish(convert);
        });
        *lock(&self.inner.task) = Some(task.abort_handle());
        Ok(())
    }
}

impl Inner {
    /// The call is done: its result in, the waiters woken, the callback called.
    fn finish(&self, convert: Convert) {
        {
            let mut slot = lock(&self.slot);
            if matches!(*slot, Slot::Running) {
                *slot = Slot::Done(convert);
            }
        }
        self.done.notify_all();
        let callback = lock(&self.callback).take();
        if let Some(callback) = callback {
            // Not during the interpreter's shutdown: nobody waits then.
            Python::try_attach(|py| {
                if let Err(e) = callback.call0(py) {
                    e.write_unraisable(py, None);
                }
                drop(callback);
            });
        }
    }
}

#[pymethods]
impl Pending {
    /// Waits for the call and returns its result (or raises its error),
    /// the GIL released meanwhile. A signal's exception (KeyboardInterrupt)
    /// cancels the call and is raised; so is `TimeoutError` after
    /// `timeout` seconds, if given.
    #[pyo3(signature = (timeout=None))]
    fn block(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        self.owner.check("call")?;
        let until = match timeout {
            Some(t) => Some(Instant::now() + crate::args::seconds("timeout", t.min(1e9))?),
            None => None,
        };
        let idle = {
            let mut slot = lock(&self.inner.slot);
            match std::mem::replace(&mut *slot, Slot::Running) {
                Slot::Idle(call) => Some(call),
                other => {
                    *slot = other;
                    None
                }
            }
        };
        // A thread of s3-lease's own (a callback calling back) cannot drive
        // it here: the call runs as a task, waited for below.
        let mut idle = match idle {
            Some(call) if tokio::runtime::Handle::try_current().is_ok() => {
                *lock(&self.inner.slot) = Slot::Idle(call);
                self.start()?;
                None
            }
            idle => idle,
        };
        let runtime = process::current()?.tokio.handle().clone();
        loop {
            let done = match idle.as_mut() {
                Some(call) => match py.detach(|| drive(call, &runtime, SIGNAL_POLL)) {
                    Some(convert) => {
                        *lock(&self.inner.slot) = Slot::Over;
                        return convert(py);
                    }
                    None => false,
                },
                None => {
                    let inner = Arc::clone(&self.inner);
                    py.detach(move || {
                        let slot = lock(&inner.slot);
                        let (slot, _) = inner
                            .done
                            .wait_timeout_while(slot, SIGNAL_POLL, |s| matches!(s, Slot::Running))
                            .unwrap_or_else(|p| p.into_inner());
                        !matches!(*slot, Slot::Running)
                    })
                }
            };
            if done {
                return self.result(py);
            }
            let stop = match py.check_signals() {
                Err(e) => Some(e),
                Ok(()) if until.is_some_and(|until| Instant::now() >= until) => Some(
                    pyo3::exceptions::PyTimeoutError::new_err("s3-lease: the wait ran out"),
                ),
                Ok(()) => None,
            };
            if let Some(e) = stop {
                // Dropping the future cancels the call.
                drop(idle.take());
                self.cancel();
                return Err(e);
            }
        }
    }

    /// The result of a call that is done; raises its error.
    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.owner.check("call")?;
        let taken = std::mem::replace(&mut *lock(&self.inner.slot), Slot::Over);
        match taken {
            Slot::Done(convert) => convert(py),
            other => {
                let cancelled = matches!(other, Slot::Over);
                *lock(&self.inner.slot) = other;
                Err(pyo3::exceptions::PyRuntimeError::new_err(if cancelled {
                    "s3-lease: the call's result was taken already, or the call was cancelled"
                } else {
                    "s3-lease: the call is not done yet"
                }))
            }
        }
    }

    fn done(&self) -> bool {
        matches!(*lock(&self.inner.slot), Slot::Done(_) | Slot::Over)
    }

    /// Starts the call on s3-lease's runtime and calls `callback()` once it
    /// is done: at once if it is, else on one of s3-lease's threads (for
    /// `loop.call_soon_threadsafe`).
    fn add_done_callback(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.owner.check("call")?;
        {
            let slot = lock(&self.inner.slot);
            if matches!(*slot, Slot::Idle(_) | Slot::Running) {
                *lock(&self.inner.callback) = Some(callback);
                drop(slot);
                return self.start();
            }
        }
        callback.call0(py).map(drop)
    }

    /// Cancels the call: its future is dropped (a grant it got is
    /// released), and a result nobody took is dropped (a lease in it is
    /// released).
    fn cancel(&self) {
        if !self.owner.is_here() {
            return;
        }
        if let Some(task) = lock(&self.inner.task).take() {
            task.abort();
        }
        let taken = std::mem::replace(&mut *lock(&self.inner.slot), Slot::Over);
        drop(taken);
        lock(&self.inner.callback).take();
    }
}

impl Drop for Pending {
    /// A call nobody can take the result of any more is cancelled.
    fn drop(&mut self) {
        if self.owner.is_here() {
            if let Some(task) = lock(&self.inner.task).take() {
                task.abort();
            }
        }
    }
}

/// A host result made into a Python value by `f` (with the GIL).
pub(crate) fn converted<T: Send + 'static>(
    result: Result<T, s3_lease_host::Error>,
    f: impl FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
) -> Convert {
    Box::new(move |py| match result {
        Ok(value) => f(py, value),
        Err(e) => Err(crate::errors::to_py(&e)),
    })
}
