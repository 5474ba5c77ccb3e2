//! The claim of `run KEY --limit N` and `--fair`: one of a semaphore's
//! slots.
//!
//! No elector here (an elector elects one leader): the process waits for a
//! slot itself, saying its place in the queue, then holds the slot with a
//! `LeaseGuard` whose deadline is half the ttl after each renew was sent,
//! as `run`'s elector's renew deadline is. Past it the command gets SIGTERM,
//! and SIGKILL `--kill-after` later, while the slot still has the other
//! half of its ttl to run: before any other contender can judge it expired.

use super::stall::Stall;
use super::wait_clock::WaitClock;
use super::{Claim, Held, Job, Waited};
use crate::duration::show;
use crate::exit::{is_permanent, Failure, HELD, STORE};
use crate::tree::CommandGroup;
use s3_lease_host::blocking::{BlockingSlotGrant, Client, LeaseGuard};
use s3_lease_host::clock::{self, Clock};
use s3_lease_host::{AcquireOptions, Error, LostReason, SlotOptions};
use std::time::Duration;

pub struct Slot<'c> {
    client: &'c Client,
    key: String,
    /// Its deadline half the ttl (see the module).
    options: AcquireOptions,
    slot: SlotOptions,
    /// When the first wait began: `--wait` counts from it.
    wait: Option<WaitClock>,
    /// The slot, while held.
    guard: Option<LeaseGuard>,
}

/// What one attempt to take a slot saw.
enum Attempt {
    Granted(LeaseGuard),
    /// Where things stand, and whether a holder was seen (else it failed).
    Standing {
        line: String,
        held: bool,
    },
}

impl<'c> Slot<'c> {
    pub fn new(client: &'c Client, key: &str, options: AcquireOptions, slot: SlotOptions) -> Self {
        Slot {
            client,
            key: key.to_string(),
            options,
            slot,
            wait: None,
            guard: None,
        }
    }

    /// A place left behind blocks the queue for its ttl: give it up.
    fn leave(&self) {
        if self.slot.fair {
            if let Some(holder) = &self.options.holder_id {
                let _ = self.client.leave_queue(&self.key, holder);
            }
        }
    }

    /// Waits for a slot, from when the first wait began.
    fn wait_for_slot(&mut self, job: &Job) -> Result<Waited, Failure> {
        // From when the first wait began; its lines from this one's start.
        let mut wait = self
            .wait
            .get_or_insert_with(|| WaitClock::start(Clock::system(), job.wait))
            .clone();
        let poll = (self.options.ttl / 10).clamp(Duration::from_millis(50), Duration::from_secs(1));
        let mut last_place = None;
        // What the last attempt that got an answer saw: every slot held.
        let mut seen_held: Option<String> = None;
        loop {
            let sent = wait.now();
            let standing = match self.attempt(job, &mut last_place) {
                Ok(Attempt::Granted(guard)) => {
                    let lease = guard.record();
                    self.guard = Some(guard);
                    return Ok(Waited::Granted(lease));
                }
                Ok(Attempt::Standing { line, held }) => {
                    if held {
                        seen_held = Some(line.clone());
                    }
                    line
                }
                Err(e) => {
                    self.leave();
                    return Err(e.into());
                }
            };
            if let Ok(signal) = job.signals.try_recv() {
                return Ok(Waited::Signalled(signal));
            }
            let now = wait.now();
            if wait.ran_out(now) {
                let waited = wait.waited();
                self.leave();
                return Err(no_slot(&self.key, waited, seen_held.as_deref(), &standing));
            }
            if wait.line_due(now) {
                let waited = show(wait.waited());
                let line = format!("waiting for {} ({waited} so far): {standing}", self.key);
                job.say("waiting", None, line);
            }
            // Jitter, so waiters that started together do not look
            // together; never past the deadline.
            let took = wait.now().saturating_duration_since(sent);
            let jitter = Duration::from_millis(u64::from(took.subsec_nanos() % 50));
            let nap = wait.nap(poll + jitter, wait.now());
            std::thread::sleep(nap);
        }
    }

    /// One attempt; an error is one retrying cannot fix. A new place in
    /// the queue is said when first seen.
    fn attempt(&self, job: &Job, last_place: &mut Option<u32>) -> Result<Attempt, Error> {
        let standing = |line: String, held: bool| Ok(Attempt::Standing { line, held });
        match self
            .client
            .try_acquire_slot(&self.key, &self.options, self.slot)
        {
            Ok(BlockingSlotGrant::Granted(guard)) => Ok(Attempt::Granted(guard)),
            Ok(BlockingSlotGrant::Queued { place }) => {
                if *last_place != Some(place) {
                    let line = format!("waiting for {}: place {place} in the queue", self.key);
                    job.say("queued", None, line);
                    *last_place = Some(place);
                }
                standing(format!("place {place} in the queue"), true)
            }
            Ok(BlockingSlotGrant::Full(state)) => {
                let line = match state.map(|s| (s.holder_id, s.expires_in)) {
                    Some((None, expires_in)) => format!(
                        "all {} slots held; the first can expire in {}",
                        self.slot.limit,
                        show(expires_in)
                    ),
                    Some((Some(holder), _)) => {
                        format!("held by {} as a plain lock", crate::log::shown(&holder))
                    }
                    None => "all slots held".into(),
                };
                standing(line, true)
            }
            Ok(_) => standing("not granted".into(), false),
            Err(e) if !is_permanent(&e) => standing(format!("the last attempt failed: {e}"), false),
            Err(e) => Err(e),
        }
    }
}

/// `--wait` ran out: 75 only when someone was seen holding the key; a
/// store that never answered usefully is a store failure.
fn no_slot(key: &str, waited: Duration, seen_held: Option<&str>, standing: &str) -> Failure {
    let waited = show(waited);
    match seen_held {
        Some(seen) => Failure::new(HELD, format!("no slot of {key} after {waited}: {seen}")),
        None => Failure::new(
            STORE,
            format!("gave up on {key} after {waited}: {standing}"),
        ),
    }
}

impl Claim for Slot<'_> {
    fn held(&self) -> Held {
        Held::Slot {
            limit: self.slot.limit,
        }
    }

    fn wait(&mut self, job: &Job) -> Result<Waited, Failure> {
        self.wait_for_slot(job)
    }

    fn give_up(&mut self) {
        self.leave();
    }

    fn start(&mut self) -> Option<clock::Instant> {
        let guard = self.guard.take()?;
        if guard.lost().is_some() {
            let _ = guard.release();
            return None;
        }
        // Held (checked above), so the guardian does not end it at once.
        let until = guard.deadline().unwrap_or_else(|| Clock::system().now());
        self.guard = Some(guard);
        Some(until)
    }

    fn keep(&mut self, group: &mut CommandGroup, stall: Option<Stall>) -> Option<String> {
        let guard = self.guard.as_ref()?;
        if let Some(until) = guard.deadline() {
            // The guardian's deadline: it ends the group if we cannot.
            group.held_until(until);
        }
        guard.lost().map(|why| describe(&why, stall))
    }

    fn lost_unseen(&mut self, stall: Option<Stall>) -> Option<String> {
        let why = self.guard.as_ref()?.lost()?;
        Some(describe(&why, stall))
    }

    fn release(&mut self) -> Result<(), String> {
        match self.guard.take() {
            Some(guard) => guard.release().map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    fn again(&self) -> bool {
        false
    }
}

/// Why the slot was lost: the guard's reason; a deadline that passed in a
/// stall of ours is the stall's doing.
fn describe(why: &LostReason, stall: Option<Stall>) -> String {
    match (why, stall) {
        (LostReason::Expired(_), Some(stall)) => format!(
            "its deadline passed while {}; the guardian ends the command's process group at that deadline",
            stall.describe()
        ),
        (why, _) => describe_loss(why),
    }
}

fn describe_loss(why: &LostReason) -> String {
    match why {
        LostReason::Taken(_) => "a renew found it taken".into(),
        LostReason::Expired(Some(e)) => format!("no renew succeeded before its deadline: {e}"),
        LostReason::Expired(None) => "no renew succeeded before its deadline".into(),
        LostReason::Failed(e) => format!("a renew failed: {e}"),
        _ => "given up".into(),
    }
}
