//! `s3_lease._native.Client`: the host's async client, its calls run on
//! s3-lease's threads and handed to Python as `Pending` calls.

use crate::args::{self, seconds};
use crate::convert;
use crate::elector::Elector;
use crate::errors;
use crate::lease::Lease;
use crate::pending::{self, converted, Convert, Pending};
use crate::process::{self, Here, Owner};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use s3_lease_host::{AcquireOptions, ElectorConfig, SlotGrant, SlotOptions};
use std::time::Instant;

#[pyclass(module = "s3_lease._native", frozen)]
pub(crate) struct Client {
    client: Here<s3_lease_host::Client>,
    owner: Owner,
}

fn none(py: Python<'_>) -> Py<PyAny> {
    py.None()
}

#[pymethods]
impl Client {
    /// Connects: the component loaded (once per process), one instance
    /// made to check the configuration; no request is sent.
    #[staticmethod]
    #[pyo3(signature = (settings, credentials=None, from_env=false, instances=None))]
    fn connect(
        settings: &Bound<'_, PyDict>,
        credentials: Option<Py<PyAny>>,
        from_env: bool,
        instances: Option<usize>,
    ) -> PyResult<Pending> {
        let config = crate::config::store_config(settings, credentials, from_env)?;
        let process = process::current()?;
        pending::spawn(async move {
            let runtime = match process.component() {
                Ok(runtime) => runtime,
                Err(e) => {
                    return Box::new(move |_py: Python<'_>| {
                        Err(errors::host_error(format!(
                            "loading the s3-lease component: {e}"
                        )))
                    }) as Convert
                }
            };
            let mut options = s3_lease_host::ClientOptions::default();
            if let Some(n) = instances {
                options = options.instances(n);
            }
            let connected = s3_lease_host::Client::connect_with(&runtime, &config, options).await;
            converted(connected, |py, client| {
                Ok(Py::new(
                    py,
                    Client {
                        client: Here::new(client),
                        owner: Owner::here(),
                    },
                )?
                .into_any())
            })
        })
    }

    /// The store's name, as errors name it.
    #[getter]
    fn store_name(&self) -> PyResult<&'static str> {
        self.owner.check("client")?;
        Ok(self.client.store_name())
    }

    /// Waits up to `wait` seconds for the lock (or one of `limit` slots),
    /// then holds it, renewing it in the background. `wait=0`: one attempt,
    /// `None` when someone else holds it.
    #[pyo3(signature = (key, ttl, wait, holder=None, metadata=None, limit=None, fair=false, deadline=None))]
    #[allow(clippy::too_many_arguments)]
    fn acquire(
        &self,
        key: String,
        ttl: f64,
        wait: Option<f64>,
        holder: Option<String>,
        metadata: Option<String>,
        limit: Option<u32>,
        fair: bool,
        deadline: Option<f64>,
    ) -> PyResult<Pending> {
        self.owner.check("client")?;
        let mut options = AcquireOptions::new(seconds("ttl", ttl)?);
        options.holder_id = holder;
        options.metadata = metadata;
        if let Some(d) = deadline {
            options.deadline = Some(seconds("deadline", d)?);
        }
        let wait = wait.map(|w| seconds("wait", w)).transpose()?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let slot = limit.map(|limit| SlotOptions::new(limit).fair(fair));
            let got: Result<Option<s3_lease_host::Lease>, _> = match (wait, slot) {
                (Some(wait), None) => client.acquire(&key, &options, wait).await.map(Some),
                (Some(wait), Some(slot)) => client
                    .acquire_slot(&key, &options, slot, wait)
                    .await
                    .map(Some),
                (None, None) => client.try_acquire(&key, &options).await,
                (None, Some(slot)) => match client.try_acquire_slot(&key, &options, slot).await {
                    Ok(SlotGrant::Granted(lease)) => Ok(Some(lease)),
                    Ok(_) => Ok(None),
                    Err(e) => Err(e),
                },
            };
            converted(got, |py, lease| match lease {
                Some(lease) => Ok(Py::new(py, Lease::new(lease))?.into_any()),
                None => Ok(none(py)),
            })
        })
    }

    /// Takes over a lease record another process handed over: renews it
    /// now (so it is surely held from this renew's send on), then keeps it
    /// renewed here.
    fn adopt(&self, record: &Bound<'_, PyDict>) -> PyResult<Pending> {
        self.owner.check("client")?;
        let record = args::record(record)?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let since = Instant::now();
            let renewed = client.renew(&record).await;
            converted(renewed, move |py, renewed| {
                let options = AcquireOptions::new(renewed.ttl);
                // `hold` starts renewing on the client's scheduler: in
                // s3-lease's runtime, entered here.
                let process = process::current()?;
                let _entered = process.tokio.enter();
                let lease = client.hold(renewed, since, &options);
                Ok(Py::new(py, Lease::new(lease))?.into_any())
            })
        })
    }

    /// Renews a lease record once (the returned record replaces it).
    fn renew_record(&self, record: &Bound<'_, PyDict>) -> PyResult<Pending> {
        self.owner.check("client")?;
        let record = args::record(record)?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let renewed = client.renew(&record).await;
            converted(renewed, |py, r| {
                Ok(convert::lease_record(py, &r)?.into_any().unbind())
            })
        })
    }

    /// Releases a lease record.
    fn release_record(&self, record: &Bound<'_, PyDict>) -> PyResult<Pending> {
        self.owner.check("client")?;
        let record = args::record(record)?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let released = client.release(&record).await;
            converted(released, |py, ()| Ok(none(py)))
        })
    }

    /// The key's lock as read now; `None` if it was never locked.
    fn status(&self, key: String) -> PyResult<Pending> {
        self.owner.check("client")?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let state = client.inspect(&key).await;
            converted(state, |py, state| match state {
                Some(s) => Ok(convert::lock_state(py, &s)?.into_any().unbind()),
                None => Ok(none(py)),
            })
        })
    }

    /// A semaphore's holders and queue; `None` for a plain lock or none.
    fn slots(&self, key: String) -> PyResult<Pending> {
        self.owner.check("client")?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let state = client.inspect_slots(&key).await;
            converted(state, |py, state| match state {
                Some(s) => Ok(convert::semaphore_state(py, &s)?.into_any().unbind()),
                None => Ok(none(py)),
            })
        })
    }

    /// The key's grant log, oldest first: from the first grant at or
    /// after `since_ms` (the store's clock).
    #[pyo3(signature = (key, since_ms=None))]
    fn audit(&self, key: String, since_ms: Option<u64>) -> PyResult<Pending> {
        self.owner.check("client")?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let entries = client.audit(&key, since_ms).await;
            converted(entries, |py, entries| {
                let list = pyo3::types::PyList::empty(py);
                for e in &entries {
                    list.append(convert::audit_entry(py, e)?)?;
                }
                Ok(list.into_any().unbind())
            })
        })
    }

    fn preflight(&self) -> PyResult<Pending> {
        self.owner.check("client")?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let report = client.preflight().await;
            converted(report, |py, r| {
                Ok(convert::preflight(py, &r)?.into_any().unbind())
            })
        })
    }

    fn fenced_get(&self, object_key: String) -> PyResult<Pending> {
        self.owner.check("client")?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let object = client.fenced_get(&object_key).await;
            converted(object, |py, object| match object {
                Some(o) => Ok(convert::fenced_object(py, &o)?.into_any().unbind()),
                None => Ok(none(py)),
            })
        })
    }

    /// Campaigns for `key` until the elector is resigned.
    #[pyo3(signature = (key, lease_duration, renew_deadline, retry_period, holder=None, metadata=None))]
    fn elect(
        &self,
        key: String,
        lease_duration: f64,
        renew_deadline: f64,
        retry_period: f64,
        holder: Option<String>,
        metadata: Option<String>,
    ) -> PyResult<Pending> {
        self.owner.check("client")?;
        let mut config = ElectorConfig::new(key)
            .lease_duration(seconds("lease_duration", lease_duration)?)
            .renew_deadline(seconds("renew_deadline", renew_deadline)?)
            .retry_period(seconds("retry_period", retry_period)?);
        config.holder_id = holder;
        config.metadata = metadata;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let elector = client.elect(&config).await;
            converted(elector, |py, elector| {
                Ok(Py::new(py, Elector::new(elector))?.into_any())
            })
        })
    }

    /// Releases every lease the client holds, waiting up to `timeout`.
    fn close(&self, timeout: f64) -> PyResult<Pending> {
        self.owner.check("client")?;
        let timeout = seconds("timeout", timeout)?;
        let client = (*self.client).clone();
        pending::spawn(async move {
            let report = client.close(timeout).await;
            Box::new(move |py: Python<'_>| {
                Ok(convert::close_report(py, &report)?.into_any().unbind())
            }) as Convert
        })
    }

    /// How many leases the client's scheduler keeps, and renewals so far.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.owner.check("client")?;
        let stats = self.client.stats();
        let d = PyDict::new(py);
        d.set_item("leases_kept", stats.leases_kept)?;
        d.set_item("renews_sent", stats.renews_sent)?;
        d.set_item("renews_failed", stats.renews_failed)?;
        d.set_item("credentials_refreshes", self.client.credentials_refreshes())?;
        d.set_item("credentials_error", self.client.credentials_error())?;
        Ok(d)
    }
}
