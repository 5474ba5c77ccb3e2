//! The short commands: `status`, `acquire`, `renew`, `release`, `fenced`,
//! `elect --watch`.

use crate::duration::show;
use crate::exit::{about_lease, Failure, HELD, LOST, USAGE};
use crate::json;
use crate::log::shown;
use crate::out::{self, say};
use s3_lease_host::blocking::{BlockingSlotGrant, Client};
use s3_lease_host::{
    AcquireOptions, ErrorKind, LeaseRecord, LockState, SemaphoreState, SlotOptions,
};
use serde_json::{json, Value};
use std::io::Read;
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// A key's lock, and its semaphore when it is one.
type KeyState = (Option<LockState>, Option<SemaphoreState>);

fn read_key(client: &Client, key: &str) -> Result<KeyState, Failure> {
    // One read for a plain lock, the common case. A semaphore's state
    // names no holder (its holders are listed by `inspect_slots`, a second
    // read: on S3 a conditional GET answered 304); so does a lock of a
    // design that records no holder, for which that read finds no semaphore.
    let state = client.inspect(key)?;
    let maybe_semaphore = state
        .as_ref()
        .is_some_and(|s| s.holder_id.is_none() && s.acquired_at_ms.is_none());
    if !maybe_semaphore {
        return Ok((state, None));
    }
    Ok(match client.inspect_slots(key)? {
        Some(sem) => (Some(sem.lock.clone()), Some(sem)),
        None => (state, None),
    })
}

/// `held by HOLDER with token N`, or what stands for them in a lock
/// written by a client that records neither (another design's lease table). The
/// holder id as read from the store, escaped for a terminal.
pub fn held_by(s: &LockState) -> String {
    match (s.holder_id.as_deref().map(shown), s.token) {
        (None, None) => "held by a client that records no holder and no token".into(),
        (None, Some(token)) => format!("held by an unnamed holder with token {token}"),
        (Some(holder), None) => format!("held by {holder} (no token)"),
        (Some(holder), Some(token)) => format!("held by {holder} with token {token}"),
    }
}

/// One key as `status --json` prints it (`--serve`'s `/status` too).
pub fn status_value(client: &Client, key: &str) -> Result<Value, Failure> {
    let (state, slots) = read_key(client, key)?;
    Ok(json::state(key, state.as_ref(), slots.as_ref()))
}

pub fn status(client: &Client, keys: &[String], as_json: bool) -> Result<i32, Failure> {
    let mut rows = Vec::new();
    for key in keys {
        let (state, slots) = read_key(client, key)?;
        rows.push((key.clone(), state, slots));
    }
    if as_json {
        let all: Vec<Value> = rows
            .iter()
            .map(|(k, s, sem)| json::state(k, s.as_ref(), sem.as_ref()))
            .collect();
        say!("{}", Value::Array(all));
        return Ok(0);
    }
    let mut table = vec![[
        "KEY".to_string(),
        "HOLDER".into(),
        "TOKEN".into(),
        "LIVE".into(),
        "EXPIRES IN".into(),
    ]];
    for (key, state, slots) in &rows {
        if let Some(sem) = slots {
            semaphore_rows(&mut table, key, sem);
            continue;
        }
        table.push(match state {
            None => [key.clone(), "-".into(), "-".into(), "no".into(), "-".into()],
            Some(s) => [
                key.clone(),
                s.holder_id
                    .as_deref()
                    .map_or_else(|| "-".into(), |h| shown(h).into()),
                // A lock of another design's lease table records no token.
                s.token.map_or_else(|| "-".into(), |t| t.to_string()),
                if s.live { "yes" } else { "no" }.into(),
                if s.live {
                    show(s.expires_in)
                } else {
                    "-".into()
                },
            ],
        });
    }
    print_table(&table);
    Ok(0)
}

/// A semaphore: one line for the key, one per holder, one per waiter in
/// queue order.
fn semaphore_rows(table: &mut Vec<[String; 5]>, key: &str, sem: &SemaphoreState) {
    let held = sem.holders.iter().filter(|h| h.live).count();
    let waiting = sem.queue.iter().filter(|w| w.live).count();
    let left = |live: bool, d: Duration| {
        if live {
            show(d)
        } else {
            "expired".into()
        }
    };
    table.push([
        key.to_string(),
        format!("{held} of {} slots held, {waiting} waiting", sem.limit),
        sem.lock.token.unwrap_or(0).to_string(),
        if sem.lock.live { "yes" } else { "no" }.into(),
        if sem.lock.live {
            show(sem.lock.expires_in)
        } else {
            "-".into()
        },
    ]);
    for h in &sem.holders {
        table.push([
            "  slot".into(),
            shown(&h.holder_id).into(),
            h.token.unwrap_or(0).to_string(),
            if h.live { "yes" } else { "no" }.into(),
            left(h.live, h.expires_in),
        ]);
    }
    for (i, w) in sem.queue.iter().enumerate() {
        table.push([
            format!("  queue {}", i + 1),
            shown(&w.holder_id).into(),
            "-".into(),
            if w.live { "yes" } else { "no" }.into(),
            left(w.live, w.expires_in),
        ]);
    }
}

pub fn print_table<const N: usize>(rows: &[[String; N]]) {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        say!("{}", cells.join("  ").trim_end());
    }
}

/// Prints the lease as JSON (always: scripts keep it for renew and release).
pub fn acquire(
    client: &Client,
    key: &str,
    options: &AcquireOptions,
    wait: Duration,
) -> Result<i32, Failure> {
    let guard = if wait.is_zero() {
        match client.try_acquire(key, options)? {
            Some(guard) => guard,
            None => return Err(held_now(client, key)),
        }
    } else {
        client.acquire(key, options, wait)?
    };
    print_detached(client, guard)
}

/// Prints a granted lease for a later `renew` or `release`, held on the
/// store until its ttl runs out (this process does not renew it).
fn print_detached(
    client: &Client,
    guard: s3_lease_host::blocking::LeaseGuard,
) -> Result<i32, Failure> {
    let lease = guard
        .detach()
        .ok_or_else(|| Failure::new(crate::exit::INTERNAL, "the lease was let go"))?;
    print_lease(client, &lease)
}

/// Prints the lease, the caller's only copy. One printed to nobody (stdout
/// closed) could be renewed or released by no one: it is released, so the
/// key is not left blocked until its ttl, and the exit says it was not
/// delivered (`out::PIPE_CLOSED`, as SIGPIPE would end the process).
fn print_lease(client: &Client, lease: &LeaseRecord) -> Result<i32, Failure> {
    say!("{}", json::lease(lease));
    if !out::closed() {
        return Ok(0);
    }
    // At best effort: the process exits either way, and the lease lapses
    // after its ttl if this release does not get through.
    let _ = client.release(lease);
    Ok(out::PIPE_CLOSED)
}

/// `acquire --limit N` (and `--fair`): a slot of a semaphore.
pub fn acquire_slot(
    client: &Client,
    key: &str,
    options: &AcquireOptions,
    slot: SlotOptions,
    wait: Duration,
) -> Result<i32, Failure> {
    let guard = if wait.is_zero() {
        // One attempt: no place is kept in the queue past this process.
        let once = slot.fair(false);
        match client.try_acquire_slot(key, options, once)? {
            BlockingSlotGrant::Granted(guard) => guard,
            _ => {
                return Err(Failure::new(
                    HELD,
                    format!("{key} has no free slot (limit {})", slot.limit),
                ))
            }
        }
    } else {
        client.acquire_slot(key, options, slot, wait)?
    };
    print_detached(client, guard)
}

fn held_now(client: &Client, key: &str) -> Failure {
    let who = match client.inspect(key) {
        Ok(Some(s)) => format!("{}, can expire in {}", held_by(&s), show(s.expires_in)),
        _ => "held".into(),
    };
    Failure::new(HELD, format!("{key} is {who}"))
}

/// The bytes of `FILE`, or of stdin for `-` or no flag; `what` names them
/// in the error.
fn read_input(source: Option<&str>, what: &str) -> Result<Vec<u8>, Failure> {
    let (read, from) = match source {
        None | Some("-") => {
            let mut bytes = Vec::new();
            (
                std::io::stdin().read_to_end(&mut bytes).map(|_| bytes),
                "stdin",
            )
        }
        Some(path) => (std::fs::read(path), path),
    };
    read.map_err(|e| {
        Failure::new(
            crate::exit::USAGE,
            format!("reading {what} from {from}: {e}"),
        )
    })
}

/// The lease from `--lease FILE`, `-` or no flag meaning stdin.
pub fn read_lease(source: Option<&str>) -> Result<LeaseRecord, Failure> {
    let bytes = read_input(source, "the lease")?;
    json::parse_lease(&String::from_utf8_lossy(&bytes))
}

pub fn renew(client: &Client, source: Option<&str>) -> Result<i32, Failure> {
    let lease = read_lease(source)?;
    match client.renew(&lease) {
        Ok(renewed) => print_lease(client, &renewed),
        Err(e) => match lost_state(&e) {
            Some(current) => Err(Failure::new(
                LOST,
                format!("cannot renew: {}", what_became_of(&lease, current)),
            )),
            None => Err(about_lease(e)),
        },
    }
}

/// Releases the lease. One already released (by an earlier `release`,
/// or from another copy of it) is not held: that succeeds, and says so.
pub fn release(client: &Client, source: Option<&str>, as_json: bool) -> Result<i32, Failure> {
    let lease = read_lease(source)?;
    let already = match client.release(&lease) {
        Ok(()) => false,
        Err(e) => match lost_state(&e) {
            Some(Some(current)) if current.token == Some(lease.token) && !current.live => true,
            Some(current) => {
                return Err(Failure::new(
                    LOST,
                    format!("not released: {}", what_became_of(&lease, current)),
                ))
            }
            None => return Err(about_lease(e)),
        },
    };
    if already {
        let about = crate::log::About {
            key: &lease.key,
            holder: Some(&lease.holder_id),
            token: Some(lease.token),
        };
        let line = format!("{} (token {}) was already released", lease.key, lease.token);
        crate::log::say("already-released", &about, &line);
    }
    if as_json {
        say!(
            "{}",
            json!({"released": lease.key, "token": lease.token, "already_released": already})
        );
    }
    Ok(0)
}

/// `Some(current)` when the store said the lease is no longer ours.
fn lost_state(e: &s3_lease_host::Error) -> Option<Option<&LockState>> {
    (e.kind() == ErrorKind::Lost).then(|| e.holder())
}

/// What happened to a lease the store no longer takes, from the lock as
/// the store answered it.
fn what_became_of(lease: &LeaseRecord, current: Option<&LockState>) -> String {
    let ours = format!("the lease of {} with token {}", lease.key, lease.token);
    let Some(c) = current else {
        return format!("{ours} is gone: its lock object was deleted");
    };
    let token = c.token.unwrap_or(0);
    if token > lease.token {
        let now = if c.live {
            format!("now {}", held_by(c))
        } else {
            format!("token {token} was granted since and released")
        };
        format!("{ours} was superseded ({now})")
    } else if token == lease.token && !c.live {
        format!("{ours} was already released")
    } else if token == lease.token {
        // An older copy of the same grant renews it (the component adopts
        // its own grant): an equal token that is not ours is another grant.
        format!(
            "{ours} no longer matches its lock object, which records another grant of that token"
        )
    } else {
        format!("{ours} no longer matches its lock object, which now records token {token}")
    }
}

/// The lease for a fenced write: `--lease FILE` (or `-`), else the one
/// `s3-lease run` hands its command in `S3LEASE_LEASE`.
pub fn fence_lease(source: Option<&str>) -> Result<LeaseRecord, Failure> {
    match (source, std::env::var("S3LEASE_LEASE")) {
        (None, Ok(text)) => json::parse_lease(&text),
        (source, _) => read_lease(source),
    }
}

pub fn fenced_put(
    client: &Client,
    lease_source: Option<&str>,
    object: &str,
    body_file: Option<&str>,
    content_type: &str,
    as_json: bool,
) -> Result<i32, Failure> {
    let lease = fence_lease(lease_source)?;
    let body = read_input(body_file, "the body")?;
    check_body(&body, content_type)?;
    let written = client
        .fenced_put(&lease, object, &body, content_type)
        .map_err(about_lease)?;
    if as_json {
        say!(
            "{}",
            json!({"object_key": written.object_key, "etag": written.etag, "token": written.token,
                   "previous_token": written.previous_token})
        );
    }
    Ok(0)
}

/// What the component would refuse as an invalid argument, refused first
/// with the flag's name (a refusal there would read as a bad lease).
fn check_body(body: &[u8], content_type: &str) -> Result<(), Failure> {
    // The component's bounds on a fenced object.
    const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
    const MAX_CONTENT_TYPE_BYTES: usize = 256;
    if body.len() > MAX_BODY_BYTES {
        return Err(Failure::new(
            USAGE,
            format!(
                "the body is {} bytes; fenced writes take at most {MAX_BODY_BYTES}",
                body.len()
            ),
        ));
    }
    if content_type.len() > MAX_CONTENT_TYPE_BYTES
        || !content_type.bytes().all(|b| (b' '..=b'~').contains(&b))
    {
        return Err(Failure::new(
            USAGE,
            format!("--content-type must be at most {MAX_CONTENT_TYPE_BYTES} printable ASCII characters"),
        ));
    }
    Ok(())
}

pub fn fenced_get(client: &Client, object: &str, as_json: bool) -> Result<i32, Failure> {
    let Some(found) = client.fenced_get(object)? else {
        if as_json {
            say!("null");
        }
        return Err(Failure::new(
            crate::exit::NOT_FOUND,
            format!("{object} does not exist"),
        ));
    };
    if as_json {
        let mut out = json!({"object_key": found.object_key, "token": found.token.unwrap_or(0), "etag": found.etag,
                             "content_type": found.content_type, "bytes": found.body.len()});
        if let Ok(text) = std::str::from_utf8(&found.body) {
            out["body"] = Value::String(text.to_string());
        }
        say!("{out}");
    } else {
        out::write_bytes(&found.body);
    }
    Ok(0)
}

pub fn fenced_delete(
    client: &Client,
    lease_source: Option<&str>,
    object: &str,
) -> Result<i32, Failure> {
    client
        .fenced_delete(&fence_lease(lease_source)?, object)
        .map_err(about_lease)?;
    Ok(0)
}

/// One line (or JSON object) per change of who leads, until SIGINT/SIGTERM.
pub fn watch(
    client: &Client,
    key: &str,
    every: Duration,
    as_json: bool,
    signals: &Receiver<i32>,
) -> Result<i32, Failure> {
    let mut last: Option<(bool, Option<String>, Option<u64>)> = None;
    loop {
        let state = client.inspect(key)?;
        let now = summary(state.as_ref());
        if last.as_ref() != Some(&now) {
            let stamp = unix_seconds();
            let clock = utc_time_of_day(stamp);
            if as_json {
                let mut v = json::state(key, state.as_ref(), None);
                v["at_unix_s"] = json!(stamp);
                say!("{v}");
            } else {
                match &state {
                    Some(s) if s.live => say!(
                        "{clock} {key}: leader {}, can expire in {})",
                        who_and_token(s),
                        show(s.expires_in)
                    ),
                    Some(LockState { token: None, .. }) => say!("{clock} {key}: no leader"),
                    Some(LockState {
                        token: Some(token), ..
                    }) => say!("{clock} {key}: no leader (last token {token})"),
                    None => say!("{clock} {key}: no leader (never locked)"),
                }
            }
            if out::closed() {
                // Nobody reads the changes any more.
                return Ok(0);
            }
            last = Some(now);
        }
        if signals.recv_timeout(every).is_ok() {
            return Ok(0);
        }
    }
}

/// `vm/530 (token 1`: the leader as `elect --watch` names it.
fn who_and_token(s: &LockState) -> String {
    let who = shown(s.holder_id.as_deref().unwrap_or("unnamed"));
    match s.token {
        None => format!("{who} (no token"),
        Some(token) => format!("{who} (token {token}"),
    }
}

fn summary(state: Option<&LockState>) -> (bool, Option<String>, Option<u64>) {
    match state {
        Some(s) if s.live => (true, s.holder_id.clone(), s.token),
        Some(s) => (false, None, s.token),
        None => (false, None, None),
    }
}

fn unix_seconds() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `19:10:15.380Z`: when a change was seen, for people (UTC).
fn utc_time_of_day(unix_s: f64) -> String {
    let millis = (unix_s * 1000.0) as u64 % 86_400_000;
    let (h, m, s, ms) = (
        millis / 3_600_000,
        millis / 60_000 % 60,
        millis / 1000 % 60,
        millis % 1000,
    );
    format!("{h:02}:{m:02}:{s:02}.{ms:03}Z")
}
