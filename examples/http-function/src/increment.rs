//! One increment, written once for both builds: acquire the counter's
//! lease (waiting at most the lock timeout), `fenced-get` the counter,
//! `fenced-put` it plus one with the lease's token in the body, release.
//! Only a write S3 accepted answers 200; every other answer left the
//! counter as it was.
//!
//! The four calls go through [`LeaseCalls`], which each build implements
//! for its client: `lease`'s blocking calls (WASI 0.2) or `async-lease`'s
//! async ones (WASI 0.3).

use crate::bindings::s3_lease::lease::types::{Error, FencedObject, FencedWrite, Lease, Options};
use crate::counter::{self, Counter};
use crate::reply::Reply;
use crate::settings::Settings;
use serde_json::json;

/// The calls an increment makes, on either build's client.
pub(crate) trait LeaseCalls {
    async fn acquire(&self, key: String, options: Options, timeout_ms: u64)
        -> Result<Lease, Error>;
    async fn fenced_get(&self, object_key: String) -> Result<Option<FencedObject>, Error>;
    async fn fenced_put(
        &self,
        lease: Lease,
        object_key: String,
        body: Vec<u8>,
        content_type: String,
    ) -> Result<FencedWrite, Error>;
    async fn release(&self, lease: Lease) -> Result<(), Error>;
}

pub(crate) async fn increment(client: &impl LeaseCalls, settings: &Settings, name: &str) -> Reply {
    let options = Options {
        ttl_ms: settings.lease_ttl_ms,
        holder_id: None,
        metadata: Some(format!("http-function: counter {name}")),
    };
    let lease = match client
        .acquire(
            format!("counters/{name}"),
            options,
            settings.lock_timeout_ms,
        )
        .await
    {
        Ok(lease) => lease,
        Err(Error::Timeout(t)) => {
            let holder = t.holder.map(|h| h.holder_id);
            let body = json!({
                "error": "lock-timeout",
                "message": format!("counter {name} stayed locked for {} ms; not incremented", t.waited_ms),
                "holder": holder,
            });
            return Reply::json(503, &body).header("retry-after", "1");
        }
        Err(e) => return s3_lease_error(&e),
    };
    let written = write_next(client, &lease, settings, name).await;
    // Release whatever happened: the next caller need not wait out the ttl.
    // A failed release after a written value changes nothing the caller
    // asked for (the lease lapses by itself), so it does not turn a 200
    // into an error.
    let _ = client.release(lease).await;
    match written {
        Ok(c) => Reply::json(200, &json!({ "value": c.value, "token": c.token })),
        Err(reply) => reply,
    }
}

/// Reads the counter and writes it plus one, fenced by `lease`.
async fn write_next(
    client: &impl LeaseCalls,
    lease: &Lease,
    settings: &Settings,
    name: &str,
) -> Result<Counter, Reply> {
    let object_key = format!(
        "{}counters/{name}.json",
        settings.config.key_prefix.as_deref().unwrap_or("")
    );
    let current = match client.fenced_get(object_key.clone()).await {
        Ok(None) => 0,
        Ok(Some(object)) => {
            counter::parse(&object.body)
                .map_err(|why| Reply::error(500, "corrupt-counter", &why))?
                .value
        }
        Err(e) => return Err(s3_lease_error(&e)),
    };
    let Some(value) = current.checked_add(1) else {
        return Err(Reply::error(
            409,
            "counter-full",
            "the counter is at its maximum",
        ));
    };
    let next = Counter {
        value,
        token: lease.token,
    };
    client
        .fenced_put(
            lease.clone(),
            object_key,
            counter::to_json(next),
            "application/json".into(),
        )
        .await
        .map_err(|e| s3_lease_error(&e))?;
    Ok(next)
}

/// Any s3-lease error other than a lock timeout: the counter was not
/// incremented. `fenced` (a newer holder wrote first) is a conflict; the
/// rest are the storage's or the configuration's fault. The library's
/// errors carry no secrets, so their details are passed on.
pub(crate) fn s3_lease_error(e: &Error) -> Reply {
    let (status, code) = match e {
        Error::Fenced(_) => (409, "fenced"),
        Error::Lost(_) => (409, "lost"),
        Error::InvalidConfig(_) => (500, "invalid-config"),
        Error::InvalidArgument(_) => (500, "invalid-argument"),
        Error::AccessDenied(_) => (502, "access-denied"),
        Error::NoSuchBucket(_) => (502, "no-such-bucket"),
        Error::ClockSkewed(_) => (502, "clock-skewed"),
        Error::CorruptLockObject(_) => (502, "corrupt-lock-object"),
        Error::Conflict(_) => (502, "conflict"),
        Error::S3(_) => (502, "s3"),
        Error::Transport(_) => (502, "transport"),
        Error::StoreUnsafe(_) => (502, "store-unsafe"),
        // The counter key is a plain lock; a semaphore of the same name
        // is a deployment mistake.
        Error::LimitMismatch(_) => (500, "limit-mismatch"),
        Error::Timeout(_) => (503, "lock-timeout"),
    };
    Reply::error(status, code, &format!("{e:?}"))
}
