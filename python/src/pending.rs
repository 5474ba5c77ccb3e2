//! A call under way on s3-lease's threads, as Python waits for it: blocking
//! (the GIL released, Ctrl-C seen within a tenth of a second) or from an
//! event loop (a callback when it is done). Cancelling it drops the call's
//! future, which the host crate makes safe: a grant nobody waits for any
//! more is released, a release cut short is sent in the background. A
//! result nobody took (a lease, say) is dropped with the call, and so
//! released.

use crate::process::{self, Here, Owner};
use pyo3::prelude::*;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Makes the call's Python result, with the GIL.
pub(crate) type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// How often a blocked call looks for a signal (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(100);

enum Slot {
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
}

impl Inner {
    fn slot(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn callback(&self) -> MutexGuard<'_, Option<Py<PyAny>>> {
        self.callback.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pyclass(module = "s3_lease._native", frozen)]
pub(crate) struct Pending {
    inner: Here<Arc<Inner>>,
    abort: Here<tokio::task::AbortHandle>,
    owner: Owner,
}

/// Runs `call` on s3-lease's threads.
pub(crate) fn spawn<F>(call: F) -> PyResult<Pending>
where
    F: Future<Output = Convert> + Send + 'static,
{
    let process = process::current()?;
    let inner = Arc::new(Inner {
        slot: Mutex::new(Slot::Running),
        done: Condvar::new(),
        callback: Mutex::new(None),
    });
    let task = {
        let inner = inner.clone();
        process.tokio.spawn(async move {
            let convert = call.await;
            {
                let mut slot = inner.slot();
                if matches!(*slot, Slot::Running) {
                    *slot = Slot::Done(convert);
                }
            }
            inner.done.notify_all();
            let callback = inner.callback().take();
            if let Some(callback) = callback {
                // Not during the interpreter's shutdown: nobody waits then.
                Python::try_attach(|py| {
                    if let Err(e) = callback.call0(py) {
                        e.write_unraisable(py, None);
                    }
                    drop(callback);
                });
            }
        })
    };
    Ok(Pending {
        inner: Here::new(inner),
        abort: Here::new(task.abort_handle()),
        owner: Owner::here(),
    })
}

impl Pending {
    fn is_done(&self) -> bool {
        !matches!(*self.inner.slot(), Slot::Running)
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
            Some(t) => Some(Instant::now() + crate::client::seconds("timeout", t.min(1e9))?),
            None => None,
        };
        loop {
            let inner = Arc::clone(&self.inner);
            let done = py.detach(move || {
                let slot = inner.slot();
                let (slot, _) = inner
                    .done
                    .wait_timeout_while(slot, SIGNAL_POLL, |s| matches!(s, Slot::Running))
                    .unwrap_or_else(|p| p.into_inner());
                !matches!(*slot, Slot::Running)
            });
            if done {
                return self.result(py);
            }
            if let Err(e) = py.check_signals() {
                self.cancel();
                return Err(e);
            }
            if until.is_some_and(|until| Instant::now() >= until) {
                self.cancel();
                return Err(pyo3::exceptions::PyTimeoutError::new_err(
                    "s3-lease: the wait ran out",
                ));
            }
        }
    }

    /// The result of a call that is done; raises its error.
    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.owner.check("call")?;
        let taken = std::mem::replace(&mut *self.inner.slot(), Slot::Over);
        match taken {
            Slot::Done(convert) => convert(py),
            Slot::Running => {
                *self.inner.slot() = Slot::Running;
                Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "s3-lease: the call is not done yet",
                ))
            }
            Slot::Over => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "s3-lease: the call's result was taken already, or the call was cancelled",
            )),
        }
    }

    fn done(&self) -> bool {
        self.is_done()
    }

    /// Calls `callback()` once the call is done: at once if it is, else on
    /// one of s3-lease's threads (for `loop.call_soon_threadsafe`).
    fn add_done_callback(&self, py: Python<'_>, callback: Py<PyAny>) -> PyResult<()> {
        self.owner.check("call")?;
        {
            let slot = self.inner.slot();
            if matches!(*slot, Slot::Running) {
                *self.inner.callback() = Some(callback);
                return Ok(());
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
        self.abort.abort();
        let taken = std::mem::replace(&mut *self.inner.slot(), Slot::Over);
        drop(taken);
        self.inner.callback().take();
    }
}

impl Drop for Pending {
    /// A call nobody can take the result of any more is cancelled (the
    /// future dropped, a grant released), as `cancel` does.
    fn drop(&mut self) {
        if self.owner.is_here() {
            self.abort.abort();
        }
    }
}
