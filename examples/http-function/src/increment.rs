//! One increment: acquire the counter's lease (waiting at most the lock
//! timeout), `fenced_get` the counter, `fenced_put` it plus one with the
//! lease's token in the body, release. Only a write S3 accepted answers
//! 200; every other answer left the counter as it was.
//!
//! The calls themselves are in each build's glue (`handler`: blocking,
//! `handler_p3`: the same lines with `.await`); what they share is here:
//! the settings, the lock's options, the next value and the replies.

use crate::counter::{self, Counter};
use crate::reply::Reply;
use s3_lease_guest::{environment, Config, Error, FencedObject, Options};
use serde_json::json;
use std::time::Duration;

/// What the function reads from its environment: s3-lease's config
/// (`Config::from_env`: `AWS_*`, `S3LEASE_*`) and the counter's lock
/// timeout and lease ttl.
pub(crate) struct Settings {
    pub config: Config,
    pub lock_timeout: Duration,
    pub lease_ttl: Duration,
}

pub(crate) fn settings() -> Result<Settings, Reply> {
    let not_configured = |message: &str| Reply::error(500, "not-configured", message);
    let config = Config::from_env().map_err(|e| match e {
        Error::MissingEnv { name } => not_configured(&format!("set {name}")),
        e => not_configured(&e.to_string()),
    })?;
    let millis = |name: &str, default: u64| match environment::var(name).filter(|v| !v.is_empty()) {
        None => Ok(Duration::from_millis(default)),
        Some(v) => v
            .parse()
            .map(Duration::from_millis)
            .map_err(|_| not_configured(&format!("{name} is not a number"))),
    };
    Ok(Settings {
        config,
        lock_timeout: millis("COUNTER_LOCK_TIMEOUT_MS", 5_000)?,
        lease_ttl: millis("COUNTER_LEASE_TTL_MS", 10_000)?,
    })
}

/// The counter's lock key and its options.
pub(crate) fn lock(settings: &Settings, name: &str) -> (String, Options) {
    let options =
        Options::ttl(settings.lease_ttl).with_metadata(format!("http-function: counter {name}"));
    (format!("counters/{name}"), options)
}

/// The counter's object: a full key, so the configured prefix is added here.
pub(crate) fn object_key(settings: &Settings, name: &str) -> String {
    format!("{}counters/{name}.json", settings.config.key_prefix())
}

/// The value to write after `current`, stamped with the lease's token.
pub(crate) fn next(current: Option<FencedObject>, token: u64) -> Result<Counter, Reply> {
    let current = match current {
        None => 0,
        Some(object) => {
            counter::parse(&object.body)
                .map_err(|why| Reply::error(500, "corrupt-counter", &why))?
                .value
        }
    };
    match current.checked_add(1) {
        Some(value) => Ok(Counter { value, token }),
        None => Err(Reply::error(
            409,
            "counter-full",
            "the counter is at its maximum",
        )),
    }
}

/// 200 with the value S3 accepted and the token that wrote it.
pub(crate) fn written(c: Counter) -> Reply {
    Reply::json(200, &json!({ "value": c.value, "token": c.token }))
}

/// Any s3-lease error: the counter was not incremented. A lock timeout is
/// 503 with `retry-after`; `fenced` or `lost` (a newer holder wrote first)
/// a conflict; a mistake of configuration 500 (a semaphore of the
/// counter's name among them); the rest are the storage's fault. The
/// library's errors carry no secrets, so their details are passed on.
pub(crate) fn refused(name: &str, e: &Error) -> Reply {
    if let Error::Timeout { waited, holder, .. } = e {
        let body = json!({
            "error": "lock-timeout",
            "message": format!("counter {name} stayed locked for {} ms; not incremented", waited.as_millis()),
            "holder": holder.as_ref().map(|h| &h.holder_id),
        });
        return Reply::json(503, &body).header("retry-after", "1");
    }
    let status = match e {
        Error::Fenced { .. } | Error::Lost { .. } => 409,
        Error::InvalidConfig { .. } | Error::InvalidArgument(_) | Error::LimitMismatch { .. } => {
            500
        }
        _ => 502,
    };
    Reply::error(status, e.code(), &e.to_string())
}
