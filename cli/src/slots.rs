//! `run KEY --limit N` and `--fair`: hold one of a semaphore's slots while
//! a command runs.
//!
//! No elector here (an elector elects one leader): the process waits for a
//! slot itself, saying its place in the queue, then holds the slot with a
//! `LeaseGuard` whose deadline is half the ttl after each renew was sent,
//! as `run`'s elector's renew deadline is. Past it the command gets SIGTERM,
//! and SIGKILL `--kill-after` later, while the slot still has the other
//! half of its ttl to run: before any other contender can judge it expired.

use crate::duration::show;
use crate::exit::{describe as describe_error, is_permanent, Failure, HELD, LOST, STORE};
use crate::signals;
use crate::supervise::{leftovers_line, spawn_group, Stopping};
use crate::tree::GroupState;
use s3_lease_host::blocking::{BlockingSlotGrant, Client, LeaseGuard};
use s3_lease_host::{AcquireOptions, LostReason, SlotOptions};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// How often we look at the command, the guard and the signals.
const POLL: Duration = Duration::from_millis(25);
/// How often a waiter says where it stands, at least.
const WAIT_LINE_EVERY: Duration = Duration::from_secs(5);

pub struct SlotRun {
    pub key: String,
    /// Its deadline half the ttl (see the module).
    pub options: AcquireOptions,
    pub slot: SlotOptions,
    pub command: Vec<String>,
    pub env: Vec<(String, String)>,
    pub kill_after: Duration,
    /// `None`: wait as long as it takes.
    pub wait: Option<Duration>,
    pub quiet: bool,
    pub signals: Receiver<i32>,
}

impl SlotRun {
    /// A progress line about this key (see `log`); `token` when known.
    fn say(&self, event: &str, token: Option<u64>, line: impl AsRef<str>) {
        if !self.quiet {
            let about = crate::log::About {
                key: &self.key,
                holder: self.options.holder_id.as_deref(),
                token,
            };
            crate::log::say(event, &about, line.as_ref());
        }
    }

    fn ttl(&self) -> Duration {
        self.options.ttl
    }

    /// A place left behind blocks the queue for its ttl: give it up.
    fn leave(&self, client: &Client) {
        if self.slot.fair {
            if let Some(holder) = &self.options.holder_id {
                let _ = client.leave_queue(&self.key, holder);
            }
        }
    }
}

enum Waited {
    Granted(LeaseGuard),
    Signalled(i32),
}

/// Waits for a slot, runs the command in it, releases it.
pub fn run_in_slot(client: &Client, r: SlotRun) -> Result<i32, Failure> {
    let started = Instant::now();
    let guard = loop {
        match wait_for_slot(client, &r, started)? {
            // The slot may have run out between the grant and now (a
            // stalled process): never start the command outside it.
            Waited::Granted(guard) if guard.lost().is_some() => {
                let token = guard.record().token;
                let _ = guard.release();
                r.say(
                    "ended-before-start",
                    Some(token),
                    format!(
                        "the slot of {} ran out before the command could start; waiting again",
                        r.key
                    ),
                );
            }
            Waited::Granted(guard) => break guard,
            Waited::Signalled(signal) => {
                r.say(
                    "gave-up",
                    None,
                    format!("{} while waiting; giving up", signals::name(signal)),
                );
                r.leave(client);
                return Ok(128 + signal);
            }
        }
    };
    let lease = guard.record();
    r.say(
        "acquired",
        Some(lease.token),
        format!(
            "acquired a slot of {} (limit {}) with fencing token {} (holder {})",
            r.key, r.slot.limit, lease.token, lease.holder_id
        ),
    );
    // Checked above: the slot is held (else the guardian ends it at once).
    let held_until = guard.held_until().unwrap_or_else(Instant::now);
    let held = (held_until, r.kill_after);
    let mut group = spawn_group(&r.command, &r.env, &r.key, &lease, held, |w| {
        r.say("warning", Some(lease.token), w)
    })?;
    let mut lost: Option<String> = None;
    let mut forwarded = None;
    let mut stopping = Stopping::new();
    loop {
        let state = group.poll();
        if let GroupState::Gone(code) = state {
            // Gone while we were not looking (stopped, starved), past the
            // deadline: the guardian may have ended it; the slot is lost.
            if let (None, Some(why)) = (&lost, guard.lost()) {
                lost = Some(describe(&why));
            }
            if let Some(reason) = lost {
                return Err(Failure::new(
                    LOST,
                    format!(
                        "lost the slot of {} (token {}): {reason}; the command was stopped",
                        r.key, lease.token
                    ),
                ));
            }
            let released = guard.release();
            match (forwarded, released) {
                (Some(signal), _) => r.say(
                    "released",
                    Some(lease.token),
                    format!(
                        "the command ended after {}; released the slot of {}",
                        signals::name(signal),
                        r.key
                    ),
                ),
                (None, Ok(())) => r.say(
                    "released",
                    Some(lease.token),
                    format!("released the slot of {} (token {})", r.key, lease.token),
                ),
                (None, Err(e)) => r.say(
                    "release-failed",
                    Some(lease.token),
                    format!("could not release (it will expire): {}", describe_error(&e)),
                ),
            }
            return Ok(code);
        }
        if let GroupState::Leftovers(code) = state {
            if stopping.first_leftovers(state) {
                r.say("waiting", None, leftovers_line(code, group.pid()));
            }
        }
        if let Ok(signal) = r.signals.try_recv() {
            r.say(
                "signal-forwarded",
                None,
                format!(
                    "forwarding {} to the command's process group",
                    signals::name(signal)
                ),
            );
            group.signal(signal);
            forwarded = Some(signal);
        }
        if lost.is_none() {
            if let Some(until) = guard.held_until() {
                // The guardian's deadline: ends the group if we cannot.
                group.held_until(until);
            }
            if let Some(why) = guard.lost() {
                let reason = describe(&why);
                r.say("lost", None, format!(
                    "lost the slot of {} ({reason}): sending SIGTERM to the command's process group {}, SIGKILL in {}",
                    r.key,
                    group.pid(),
                    show(r.kill_after)
                ));
                stopping.begin(&mut group);
                lost = Some(reason);
            }
        }
        if stopping.escalate(&group, r.kill_after) {
            r.say(
                "killed",
                None,
                "the command's process group outlived --kill-after: SIGKILL",
            );
        }
        std::thread::sleep(POLL);
    }
}

fn describe(why: &LostReason) -> String {
    match why {
        LostReason::Taken(_) => "a renew found it taken".into(),
        LostReason::Expired(Some(e)) => format!("no renew succeeded before its deadline: {e}"),
        LostReason::Expired(None) => "no renew succeeded before its deadline".into(),
        LostReason::Failed(e) => format!("a renew failed: {e}"),
        _ => "given up".into(),
    }
}

/// Waits for a slot; `started` is when the whole wait began (`--wait`
/// counts from it).
fn wait_for_slot(client: &Client, r: &SlotRun, started: Instant) -> Result<Waited, Failure> {
    // A wait too long for the clock to count is a wait for ever.
    let deadline = r.wait.and_then(|w| started.checked_add(w));
    let poll = (r.ttl() / 10).clamp(Duration::from_millis(50), Duration::from_secs(1));
    let mut last_place = None;
    let mut next_line = started + crate::supervise::FIRST_WAIT_LINE;
    // What the last attempt that got an answer saw: every slot held.
    let mut seen_held: Option<String> = None;
    loop {
        let sent = Instant::now();
        // Whether this attempt saw the key held (else it failed).
        let (standing, held) = match client.try_acquire_slot(&r.key, &r.options, r.slot) {
            Ok(BlockingSlotGrant::Granted(guard)) => return Ok(Waited::Granted(guard)),
            Ok(BlockingSlotGrant::Queued { place }) => {
                if last_place != Some(place) {
                    r.say(
                        "queued",
                        None,
                        format!("waiting for {}: place {place} in the queue", r.key),
                    );
                    last_place = Some(place);
                }
                (format!("place {place} in the queue"), true)
            }
            Ok(BlockingSlotGrant::Full(state)) => (
                match state.map(|s| (s.holder_id, s.expires_in)) {
                    Some((None, expires_in)) => format!(
                        "all {} slots held; the first can expire in {}",
                        r.slot.limit,
                        show(expires_in)
                    ),
                    Some((Some(holder), _)) => {
                        format!("held by {} as a plain lock", crate::log::shown(&holder))
                    }
                    None => "all slots held".into(),
                },
                true,
            ),
            Ok(_) => ("not granted".into(), false),
            Err(e) if !is_permanent(&e) => (
                format!("the last attempt failed: {}", describe_error(&e)),
                false,
            ),
            Err(e) => {
                r.leave(client);
                return Err(e.into());
            }
        };
        if held {
            seen_held = Some(standing.clone());
        }
        if let Ok(signal) = r.signals.try_recv() {
            return Ok(Waited::Signalled(signal));
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            r.leave(client);
            let waited = show(started.elapsed());
            // 75 only when someone was seen holding it; a store that never
            // answered usefully is a store failure.
            return Err(match &seen_held {
                Some(seen) => {
                    Failure::new(HELD, format!("no slot of {} after {waited}: {seen}", r.key))
                }
                None => Failure::new(
                    STORE,
                    format!("gave up on {} after {waited}: {standing}", r.key),
                ),
            });
        }
        if now >= next_line {
            next_line = now + WAIT_LINE_EVERY;
            r.say(
                "waiting",
                None,
                format!(
                    "waiting for {} ({} so far): {standing}",
                    r.key,
                    show(started.elapsed())
                ),
            );
        }
        // Jitter, so waiters that started together do not look together;
        // never past the deadline.
        let jitter = Duration::from_millis(u64::from(sent.elapsed().subsec_nanos() % 50));
        let nap = match deadline {
            Some(d) => (poll + jitter).min(d.saturating_duration_since(Instant::now())),
            None => poll + jitter,
        };
        std::thread::sleep(nap);
    }
}
