//! `s3_lease._native.Elector`: a campaign for one key on the host's
//! elector (a task, not a thread), its role read without waiting, and
//! its changes waited for through the role's watch.

use crate::convert;
use crate::pending::converted;

use crate::pending::{self, Convert, Pending};
use crate::process::{Here, Owner};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::{ElectorWatcher, Role};
use std::sync::Mutex;
use tokio::sync::watch;

#[pyclass(module = "s3_lease._native", frozen)]
pub(crate) struct Elector {
    /// `None` once resigned or abandoned.
    elector: Here<Mutex<Option<s3_lease_host::Elector>>>,
    watcher: Here<ElectorWatcher>,
    roles: Here<watch::Receiver<Role>>,
    owner: Owner,
}

impl Elector {
    pub fn new(elector: s3_lease_host::Elector) -> Elector {
        Elector {
            watcher: Here::new(elector.watcher()),
            roles: Here::new(elector.watch_role()),
            elector: Here::new(Mutex::new(Some(elector))),
            owner: Owner::here(),
        }
    }

    fn take(&self) -> Option<s3_lease_host::Elector> {
        self.elector
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// The next role that differs from `seen`; `None` once the elector is gone.
async fn next_role(mut roles: watch::Receiver<Role>, seen: Option<String>) -> Option<Role> {
    loop {
        let role = roles.borrow_and_update().clone();
        if seen.as_deref() != Some(role_name(&role)) {
            return Some(role);
        }
        roles.changed().await.ok()?;
    }
}

fn role_name(role: &Role) -> &'static str {
    match role {
        Role::Leader(_) => "leader",
        Role::Follower(_) => "follower",
        _ => "candidate",
    }
}

#[pymethods]
impl Elector {
    /// The role now (leadership ends at its deadline, whatever a step is
    /// doing): `{"role": "leader", "lease": ...}`, `follower` with the
    /// leader seen, or `candidate`.
    fn role<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.owner.check("elector")?;
        convert::role(py, &self.watcher.role())
    }

    /// Seconds leadership lasts from now unless renewed first; `None` when
    /// not leading.
    fn leading_for(&self) -> PyResult<Option<f64>> {
        self.owner.check("elector")?;
        let elector = self.elector.lock().unwrap_or_else(|p| p.into_inner());
        let until = elector.as_ref().and_then(|e| e.leading_until());
        Ok(until.map(|u| {
            u.saturating_duration_since(std::time::Instant::now())
                .as_secs_f64()
        }))
    }

    /// Why the last step failed, if it did (the elector keeps trying).
    fn last_error(&self) -> PyResult<Option<String>> {
        self.owner.check("elector")?;
        Ok(self.watcher.last_error())
    }

    /// Resolves with the first role whose name is not `seen` (the role now
    /// if it differs); `None` once the elector stopped.
    #[pyo3(signature = (seen=None))]
    fn next_role(&self, seen: Option<String>) -> PyResult<Pending> {
        self.owner.check("elector")?;
        let roles = (*self.roles).clone();
        pending::spawn(async move {
            let role = next_role(roles, seen).await;
            Box::new(move |py: Python<'_>| match role {
                Some(role) => Ok(convert::role(py, &role)?.into_any().unbind()),
                None => Ok(py.None()),
            }) as Convert
        })
    }

    /// Calls `callback(role)` (on one of s3-lease's threads) at each change
    /// of role, until the elector stops. A task, not a thread.
    fn on_change(&self, callback: Py<PyAny>) -> PyResult<()> {
        self.owner.check("elector")?;
        let mut roles = (*self.roles).clone();
        let process = crate::process::current()?;
        process.tokio.spawn(async move {
            let mut seen = Some(role_name(&roles.borrow_and_update()).to_string());
            while let Some(role) = next_role(roles.clone(), seen.clone()).await {
                seen = Some(role_name(&role).to_string());
                let called = Python::try_attach(|py| {
                    let called = convert::role(py, &role).and_then(|r| callback.call1(py, (r,)));
                    if let Err(e) = called {
                        e.write_unraisable(py, None);
                    }
                });
                if called.is_none() {
                    break;
                }
            }
            Python::try_attach(|_py| drop(callback));
        });
        Ok(())
    }

    /// Releases the lease if leading and stops campaigning.
    fn resign(&self) -> PyResult<Pending> {
        self.owner.check("elector")?;
        let elector = self.take();
        pending::spawn(async move {
            let resigned = match elector {
                Some(elector) => elector.resign().await,
                None => Ok(()),
            };
            converted(resigned, |py, ()| Ok(py.None()))
        })
    }

    /// Whether it still campaigns.
    #[getter]
    fn running(&self) -> PyResult<bool> {
        self.owner.check("elector")?;
        let elector = self.elector.lock().unwrap_or_else(|p| p.into_inner());
        Ok(elector.as_ref().is_some_and(|e| e.is_running()))
    }
}
