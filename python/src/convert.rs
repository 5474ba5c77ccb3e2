//! The host's records as Python values: plain dicts and tuples, which the
//! package's Python classes (`s3_lease/_types.py`) wrap.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use s3_lease_host::{
    AuditEntry, CloseReport, FencedObject, FencedWrite, LeaseRecord, LockState, LostReason,
    PreflightReport, Role, SemaphoreState, SlotEntry,
};
use std::time::Duration;

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(crate) fn lease_record<'py>(py: Python<'py>, r: &LeaseRecord) -> PyResult<Bound<'py, PyDict>> {
    // The command line's lease JSON, field for field (see `args::record`).
    let d = PyDict::new(py);
    d.set_item("key", &r.key)?;
    d.set_item("token", r.token)?;
    d.set_item("holder_id", &r.holder_id)?;
    d.set_item("etag", &r.etag)?;
    d.set_item("expires_at_ms", r.expires_at_ms)?;
    d.set_item("acquired_at_ms", r.acquired_at_ms)?;
    d.set_item("ttl_ms", ms(r.ttl))?;
    d.set_item("metadata", &r.metadata)?;
    d.set_item("seal", &r.seal)?;
    Ok(d)
}

pub(crate) fn lock_state<'py>(py: Python<'py>, s: &LockState) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("key", &s.key)?;
    d.set_item("holder_id", &s.holder_id)?;
    d.set_item("token", s.token)?;
    d.set_item("expires_at_ms", s.expires_at_ms)?;
    d.set_item("acquired_at_ms", s.acquired_at_ms)?;
    d.set_item("metadata", &s.metadata)?;
    d.set_item("etag", &s.etag)?;
    d.set_item("live", s.live)?;
    d.set_item("expires_in", s.expires_in.as_secs_f64())?;
    Ok(d)
}

fn slot_entry<'py>(py: Python<'py>, s: &SlotEntry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("holder_id", &s.holder_id)?;
    d.set_item("token", s.token)?;
    d.set_item("expires_at_ms", s.expires_at_ms)?;
    d.set_item("acquired_at_ms", s.acquired_at_ms)?;
    d.set_item("metadata", &s.metadata)?;
    d.set_item("live", s.live)?;
    d.set_item("expires_in", s.expires_in.as_secs_f64())?;
    Ok(d)
}

pub(crate) fn semaphore_state<'py>(
    py: Python<'py>,
    s: &SemaphoreState,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("lock", lock_state(py, &s.lock)?)?;
    d.set_item("limit", s.limit)?;
    let entries = |list: &[SlotEntry]| -> PyResult<Vec<Bound<'py, PyDict>>> {
        list.iter().map(|e| slot_entry(py, e)).collect()
    };
    d.set_item("holders", entries(&s.holders)?)?;
    d.set_item("queue", entries(&s.queue)?)?;
    Ok(d)
}

pub(crate) fn fenced_write<'py>(py: Python<'py>, w: &FencedWrite) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("object_key", &w.object_key)?;
    d.set_item("etag", &w.etag)?;
    d.set_item("token", w.token)?;
    d.set_item("previous_token", w.previous_token)?;
    Ok(d)
}

pub(crate) fn fenced_object<'py>(
    py: Python<'py>,
    o: &FencedObject,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("object_key", &o.object_key)?;
    d.set_item("body", PyBytes::new(py, &o.body))?;
    d.set_item("etag", &o.etag)?;
    d.set_item("content_type", &o.content_type)?;
    d.set_item("token", o.token)?;
    Ok(d)
}

/// One grant of a key's log (see `AuditEntry` in `_types.py`).
pub(crate) fn audit_entry<'py>(py: Python<'py>, e: &AuditEntry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("token", e.token)?;
    d.set_item("holder", &e.holder_id)?;
    d.set_item("ttl_ms", e.ttl_ms)?;
    d.set_item("granted_at_ms", e.granted_at_ms)?;
    d.set_item("ended", e.ended.name())?;
    d.set_item("ended_at_ms", e.ended_at_ms)?;
    d.set_item("held_ms", e.held_ms)?;
    d.set_item("written_by", &e.written_by)?;
    d.set_item("backfilled", e.backfilled)?;
    Ok(d)
}

pub(crate) fn lost_reason<'py>(py: Python<'py>, r: &LostReason) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (reason, message, holder) = match r {
        LostReason::Taken(state) => (
            "taken",
            "a renew found another grant in place (or the lock object gone)".to_string(),
            state.as_ref(),
        ),
        LostReason::Expired(last) => (
            "expired",
            match last {
                Some(error) => {
                    format!("no renew succeeded before the lease's safe margin: {error}")
                }
                None => "no renew succeeded before the lease's safe margin".to_string(),
            },
            None,
        ),
        LostReason::Failed(error) => ("failed", format!("a renew failed for good: {error}"), None),
        LostReason::Released => ("released", "released by its holder".to_string(), None),
        _ => ("failed", format!("{r:?}"), None),
    };
    d.set_item("reason", reason)?;
    d.set_item("message", message)?;
    d.set_item("holder", holder.map(|s| lock_state(py, s)).transpose()?)?;
    Ok(d)
}

pub(crate) fn role<'py>(py: Python<'py>, role: &Role) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match role {
        Role::Leader(lease) => {
            d.set_item("role", "leader")?;
            d.set_item("lease", lease_record(py, lease)?)?;
        }
        Role::Follower(seen) => {
            d.set_item("role", "follower")?;
            d.set_item(
                "leader",
                seen.as_ref().map(|s| lock_state(py, s)).transpose()?,
            )?;
        }
        _ => d.set_item("role", "candidate")?,
    }
    Ok(d)
}

pub(crate) fn preflight<'py>(py: Python<'py>, r: &PreflightReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let mut results = Vec::new();
    for c in &r.results {
        let e = PyDict::new(py);
        e.set_item("capability", c.capability.name())?;
        e.set_item("verdict", c.verdict.name())?;
        e.set_item("status", c.status)?;
        e.set_item("code", &c.code)?;
        e.set_item("detail", &c.detail)?;
        e.set_item("silent", c.silent)?;
        results.push(e);
    }
    d.set_item("results", results)?;
    d.set_item(
        "clock_offset_ms",
        r.clock_offset.map(|c| (c.offset_ms, c.uncertainty_ms)),
    )?;
    let names =
        |list: &[s3_lease_host::Strategy]| list.iter().map(|s| s.name()).collect::<Vec<_>>();
    d.set_item("safe_strategies", names(&r.safe_strategies))?;
    d.set_item(
        "safe_expiry_clocks",
        r.safe_expiry_clocks
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>(),
    )?;
    d.set_item(
        "recommended_strategy",
        r.recommended_strategy.map(|s| s.name()),
    )?;
    d.set_item("config_safe", r.config_safe)?;
    d.set_item("notes", &r.notes)?;
    d.set_item("requests", r.requests)?;
    Ok(d)
}

pub(crate) fn close_report<'py>(py: Python<'py>, r: &CloseReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("released", r.released)?;
    d.set_item("already_over", r.already_over)?;
    d.set_item(
        "failed",
        r.failed
            .iter()
            .map(|(key, e)| (key.clone(), e.to_string()))
            .collect::<Vec<_>>(),
    )?;
    d.set_item("unfinished", r.unfinished)?;
    Ok(d)
}
