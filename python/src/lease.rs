//! `s3_lease._native.Lease`: a held lease, renewing itself on the host's
//! scheduler (no thread of its own). Its fields are read without waiting;
//! its calls are `Pending`. Released when released, detached or dropped
//! (the host's `Lease` does that).

use crate::convert;
use crate::errors;
use crate::pending::converted;
use crate::pending::{self, Convert, Pending};
use crate::process::{Here, Owner};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::{FenceOptions, LeaseStatus, LostReason};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// What the handle and its watchers (`wait_lost`, `on_lost`) share.
struct Shared {
    /// `None` once released or detached.
    lease: Mutex<Option<s3_lease_host::Lease>>,
    /// The token it had when it was let go (it stays the lease's token).
    last_token: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn lease(&self) -> MutexGuard<'_, Option<s3_lease_host::Lease>> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the lease out to let it go, keeping its token.
    fn take(&self) -> Option<s3_lease_host::Lease> {
        let lease = self.lease().take();
        if let Some(lease) = &lease {
            self.last_token
                .store(lease.token(), std::sync::atomic::Ordering::Relaxed);
        }
        lease
    }

    /// Why it is no longer held, judged now (`Released` once let go).
    fn lost(&self) -> Option<LostReason> {
        match &*self.lease() {
            Some(lease) => lease.lost_reason(),
            None => Some(LostReason::Released),
        }
    }
}

/// Resolves when the lease is no longer held: lost (at its safe margin
/// even while a renew hangs), released, detached, or dropped. Holds the
/// lease only while looking, so a lease dropped while watched is released.
async fn lost_wait(shared: Weak<Shared>) -> LostReason {
    loop {
        let mut changes = {
            let Some(shared) = shared.upgrade() else {
                return LostReason::Released;
            };
            let lease = shared.lease();
            match &*lease {
                None => return LostReason::Released,
                Some(lease) => match lease.lost_reason() {
                    Some(reason) => return reason,
                    None => lease.watch(),
                },
            }
        };
        let status = changes.borrow_and_update().clone();
        if let LeaseStatus::Held { until, .. } = status {
            let deadline = tokio::time::Instant::from_std(until);
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        // Its status went with it: let go.
                        return shared
                            .upgrade()
                            .and_then(|s| s.lost())
                            .unwrap_or(LostReason::Released);
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {}
            }
        }
    }
}

#[pyclass(module = "s3_lease._native", frozen)]
pub(crate) struct Lease {
    shared: Here<Arc<Shared>>,
    /// As granted (they do not change).
    key: String,
    holder: String,
    owner: Owner,
}

impl Lease {
    pub fn new(lease: s3_lease_host::Lease) -> Lease {
        let record = lease.record();
        Lease {
            shared: Here::new(Arc::new(Shared {
                last_token: std::sync::atomic::AtomicU64::new(lease.token()),
                lease: Mutex::new(Some(lease)),
            })),
            key: record.key,
            holder: record.holder_id,
            owner: Owner::here(),
        }
    }

    fn check(&self) -> PyResult<()> {
        self.owner.check("lease")
    }

    /// The lease, or the error a call on a lease let go gets.
    fn with<T>(&self, f: impl FnOnce(&s3_lease_host::Lease) -> T) -> PyResult<T> {
        self.check()?;
        match &*self.shared.lease() {
            Some(lease) => Ok(f(lease)),
            None => Err(errors::invalid_argument(format!(
                "the lease on {} was released or handed over (detach): it is not ours to use",
                self.key
            ))),
        }
    }
}

#[pymethods]
impl Lease {
    #[getter]
    fn key(&self) -> &str {
        &self.key
    }

    #[getter]
    fn holder(&self) -> &str {
        &self.holder
    }

    /// The fencing token as last renewed (kept once let go).
    #[getter]
    fn token(&self) -> PyResult<u64> {
        self.check()?;
        Ok(match &*self.shared.lease() {
            Some(lease) => lease.token(),
            None => self
                .shared
                .last_token
                .load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The lease as last renewed, as the command line prints it; `None`
    /// once released or detached.
    fn record<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.check()?;
        let record = self.shared.lease().as_ref().map(|l| l.record());
        record.map(|r| convert::lease_record(py, &r)).transpose()
    }

    /// Whether it is surely held, judged now.
    #[getter]
    fn held(&self) -> PyResult<bool> {
        self.check()?;
        Ok(self.shared.lease().as_ref().is_some_and(|l| l.is_held()))
    }

    /// Seconds it is surely held for from now, unless a renew comes first;
    /// `None` when it is not held.
    fn held_for(&self) -> PyResult<Option<f64>> {
        self.check()?;
        let until = self.shared.lease().as_ref().and_then(|l| l.held_until());
        Ok(until.map(|u| {
            u.saturating_duration_since(std::time::Instant::now())
                .as_secs_f64()
        }))
    }

    /// Why it is no longer held, if it is not.
    fn lost<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.check()?;
        self.shared
            .lost()
            .map(|r| convert::lost_reason(py, &r))
            .transpose()
    }

    /// Resolves with why, once the lease is no longer held.
    fn wait_lost(&self) -> PyResult<Pending> {
        self.check()?;
        let shared = Arc::downgrade(&self.shared);
        pending::spawn(async move {
            let reason = lost_wait(shared).await;
            Box::new(move |py: Python<'_>| {
                Ok(convert::lost_reason(py, &reason)?.into_any().unbind())
            }) as Convert
        })
    }

    /// Calls `callback(reason)` (on one of s3-lease's threads) if the lease
    /// is lost: taken, run out or failed, not released by its holder. A
    /// task waits for it, not a thread.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<()> {
        self.check()?;
        let shared = Arc::downgrade(&self.shared);
        let process = crate::process::current()?;
        process.tokio.spawn(async move {
            let reason = lost_wait(shared).await;
            if reason == LostReason::Released {
                return;
            }
            Python::try_attach(|py| {
                let called =
                    convert::lost_reason(py, &reason).and_then(|r| callback.call1(py, (r,)));
                if let Err(e) = called {
                    e.write_unraisable(py, None);
                }
                drop(callback);
            });
        });
        Ok(())
    }

    /// A fenced write under the lease's current token; refused without a
    /// request (`LostError`) once the lease is not surely held.
    #[pyo3(signature = (object_key, data, content_type, reject_equal_token=false))]
    fn fenced_put(
        &self,
        object_key: String,
        data: Vec<u8>,
        content_type: String,
        reject_equal_token: bool,
    ) -> PyResult<Pending> {
        let held = self.with(|lease| {
            lease
                .held_token()
                .map(|_| (lease.record(), lease.client().clone()))
        })?;
        let (record, client) = held.map_err(|e| errors::to_py(&e))?;
        let options = FenceOptions::default().reject_equal_token(reject_equal_token);
        pending::spawn(async move {
            let written = client
                .fenced_put_with(&record, &object_key, data, &content_type, options)
                .await;
            converted(written, |py, w| {
                Ok(convert::fenced_write(py, &w)?.into_any().unbind())
            })
        })
    }

    fn fenced_delete(&self, object_key: String) -> PyResult<Pending> {
        let held = self.with(|lease| {
            lease
                .held_token()
                .map(|_| (lease.record(), lease.client().clone()))
        })?;
        let (record, client) = held.map_err(|e| errors::to_py(&e))?;
        pending::spawn(async move {
            let deleted = client.fenced_delete(&record, &object_key).await;
            converted(deleted, |py, ()| Ok(py.None()))
        })
    }

    fn fenced_get(&self, object_key: String) -> PyResult<Pending> {
        let client = self.with(|lease| lease.client().clone())?;
        pending::spawn(async move {
            let object = client.fenced_get(&object_key).await;
            converted(object, |py, object| match object {
                Some(o) => Ok(convert::fenced_object(py, &o)?.into_any().unbind()),
                None => Ok(py.None()),
            })
        })
    }

    /// Stops renewing and releases it (after a renew under way). Nothing
    /// to do once released or detached.
    fn release(&self) -> PyResult<Pending> {
        self.check()?;
        let lease = self.shared.take();
        pending::spawn(async move {
            let released = match lease {
                Some(lease) => lease.release().await,
                None => Ok(()),
            };
            converted(released, |py, ()| Ok(py.None()))
        })
    }

    /// Stops renewing and hands the lease over as a record, still held on
    /// the store until its ttl runs out, for another process to adopt.
    fn detach(&self) -> PyResult<Pending> {
        self.with(|_| ())?;
        let lease = self.shared.take();
        pending::spawn(async move {
            let record = match lease {
                Some(lease) => Some(lease.detach().await),
                None => None,
            };
            Box::new(move |py: Python<'_>| match record {
                Some(r) => Ok(convert::lease_record(py, &r)?.into_any().unbind()),
                None => Ok(py.None()),
            }) as Convert
        })
    }
}
