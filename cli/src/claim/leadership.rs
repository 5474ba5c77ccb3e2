//! The claim of `run` and `elect`: an elector's term, renewed by the
//! elector. Leadership ends at the renew deadline, half the ttl after the
//! last successful renew was sent, judged by the host elector's watchdog
//! (`Elector::leading_until`). `run` holds one term; `elect` campaigns
//! again after each loss.

use super::stall::Stall;
use super::wait_clock::WaitClock;
use super::{Claim, Held, Job, Waited, POLL};
use crate::commands::held_by;
use crate::duration::show;
use crate::exit::{Failure, HELD, INTERNAL, STORE};
use crate::probe::Probe;
use crate::tree::CommandGroup;
use s3_lease_host::blocking::Elector;
use s3_lease_host::clock::{self, Clock};
use s3_lease_host::{
    ElectionEvent, ElectorStats, ErrorKind, LeaseRecord as Lease, Role, StopReason,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a giving-up `run` waits for the read that classifies the
/// last failure (see `probe`).
const SETTLE: Duration = Duration::from_secs(1);
/// How long a campaign given up waits for the elector to resign.
const END_CAMPAIGN_WAIT: Duration = Duration::from_secs(1);

/// Set to why we are about to exit on an error retrying cannot fix, for
/// `--serve`'s `/healthz`.
pub type Fatal = Arc<Mutex<Option<String>>>;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Once: wait, run, exit (`run`).
    Once,
    /// Every term: run while leading, campaign again after losing (`elect`).
    EveryTerm,
}

pub struct Leadership<'a> {
    /// `None` once resigned.
    elector: Option<Elector>,
    mode: Mode,
    probe: Probe<'a>,
    fatal: Fatal,
    /// The deadline the guardian was given last (the host's clock,
    /// suspended time counted).
    held_until: clock::Instant,
    /// A term won again while the last one's command was stopping.
    regained: Option<Lease>,
}

impl<'a> Leadership<'a> {
    pub fn new(elector: Elector, mode: Mode, probe: Probe<'a>, fatal: Fatal) -> Self {
        Leadership {
            elector: Some(elector),
            mode,
            probe,
            fatal,
            held_until: Clock::system().now(),
            regained: None,
        }
    }
}

impl Leadership<'_> {
    /// Why the renew deadline passed: a stall of ours it passed in, else
    /// the store's failed or unanswered renews.
    fn deadline_passed(&self, stall: Option<Stall>) -> String {
        let last = self.elector.as_ref().and_then(|e| e.last_failure());
        renew_deadline_passed(stall, last.as_ref())
    }
}

/// Why the renew deadline passed, naming what happened: a stall of ours,
/// else the store's doing (no answer: a network cut; or its error).
fn renew_deadline_passed(stall: Option<Stall>, last: Option<&s3_lease_host::Error>) -> String {
    let store = match last {
        Some(e) if e.kind() != ErrorKind::Transport => format!("the last renew failed: {e}"),
        _ => "the store did not answer in time (requests failed or hung)".to_string(),
    };
    match stall {
        Some(stall) => format!(
            "the renew deadline passed while {}; the guardian ends the command's process group at that deadline",
            stall.describe()
        ),
        None => format!("{}: {store}", stop_reason(StopReason::RenewDeadline)),
    }
}

impl Claim for Leadership<'_> {
    fn held(&self) -> Held {
        Held::Lock
    }

    fn wait(&mut self, job: &Job) -> Result<Waited, Failure> {
        if let Some(lease) = self.regained.take() {
            return Ok(Waited::Granted(lease));
        }
        let Some(elector) = self.elector.as_mut() else {
            return Err(Failure::new(INTERNAL, "no elector"));
        };
        let waited = campaign(elector, job, &mut self.probe, &self.fatal);
        if waited.is_err() {
            end_campaign(&mut self.elector);
        }
        waited
    }

    fn give_up(&mut self) {
        end_campaign(&mut self.elector);
    }

    fn start(&mut self) -> Option<clock::Instant> {
        let until = self
            .elector
            .as_ref()
            .and_then(Elector::leading_deadline)
            .filter(|until| Clock::system().now() < *until)?;
        self.held_until = until;
        Some(until)
    }

    fn keep(&mut self, group: &mut CommandGroup, stall: Option<Stall>) -> Option<String> {
        // The deadline passed before we saw it extended (we were stopped
        // or starved, or renews failed): the guardian ends the group, and
        // the lock counts as lost, even if the elector has won a new term
        // since.
        let now = || Clock::system().now();
        let lapsed = now() >= self.held_until;
        let elector = self.elector.as_mut();
        // Read before the events: once leadership has ended, the event
        // that says why is already queued.
        let leading_until = elector.as_ref().and_then(|e| e.leading_deadline());
        let ended =
            lapsed || (elector.is_some() && leading_until.is_none_or(|until| now() >= until));
        if let (Some(until), false) = (leading_until, ended) {
            // The guardian's deadline: it ends the group if we cannot.
            if until > self.held_until {
                self.held_until = until;
                group.held_until(until);
            }
        }
        let event = elector.and_then(|e| match e.try_event() {
            None if !e.is_running() => Some(ElectionEvent::Failed("the elector stopped".into())),
            event => event,
        });
        match event {
            Some(ElectionEvent::StoppedLeading(StopReason::RenewDeadline)) => {
                Some(self.deadline_passed(stall))
            }
            Some(ElectionEvent::StoppedLeading(reason)) => Some(stop_reason(reason).into()),
            Some(ElectionEvent::Failed(why)) => Some(why),
            _ if ended => Some(self.deadline_passed(stall)),
            _ => None,
        }
    }

    fn while_stopping(&mut self) {
        if let Some(ElectionEvent::BecameLeader(lease)) =
            self.elector.as_mut().and_then(Elector::try_event)
        {
            self.regained = Some(lease);
        }
    }

    fn lost_unseen(&mut self, stall: Option<Stall>) -> Option<String> {
        (Clock::system().now() >= self.held_until).then(|| self.deadline_passed(stall))
    }

    fn release(&mut self) -> Result<(), String> {
        if let Some(e) = self.elector.take() {
            // A failed release leaves the lease to expire: nothing to add.
            let _ = e.resign();
        }
        Ok(())
    }

    fn again(&self) -> bool {
        self.mode == Mode::EveryTerm
    }
}

/// Ends on an error retrying cannot fix: `/healthz` says why first.
fn fatal(fatal: &Fatal, failure: Failure) -> Failure {
    *fatal.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!(
        "{} (s3-lease exits with {})",
        failure.message, failure.code
    ));
    failure
}

/// Ends a campaign given up before leading: resigns, so a term won by a
/// step still under way is released, but waits for that at most
/// `END_CAMPAIGN_WAIT`: a step stuck on a silent network would hold up the
/// exit until its request timed out. (Whatever it wins then is not
/// released: it runs out on its own.)
fn end_campaign(elector: &mut Option<Elector>) {
    if let Some(e) = elector.take() {
        let (done, resigned) = std::sync::mpsc::channel();
        let resigning = std::thread::Builder::new()
            .name("s3-lease-resign".into())
            .spawn(move || {
                let _ = e.resign();
                let _ = done.send(());
            });
        if resigning.is_ok() {
            let _ = resigned.recv_timeout(END_CAMPAIGN_WAIT);
        }
    }
}

/// Waits for leadership, one line on stderr every few seconds. Ends at
/// once on an error retrying cannot fix, and at `--wait` (after at least
/// one attempt: `--wait 0` is one attempt).
fn campaign(
    elector: &mut Elector,
    job: &Job,
    probe: &mut Probe,
    health: &Fatal,
) -> Result<Waited, Failure> {
    let mut wait = WaitClock::start(Clock::system(), job.wait);
    // `--wait 0` is one attempt: wait for it to complete. A longer wait
    // ends on time, whatever the attempt under way is doing.
    let one_attempt = job.wait.is_some_and(|w| w.is_zero());
    loop {
        // Read before the events: a step counted here has already sent
        // its events.
        let stats = elector.stats();
        if let Some(lease) = won(elector)? {
            return Ok(Waited::Granted(lease));
        }
        if let Some(failure) = probe.check(stats.failed_steps) {
            return Err(fatal(health, failure));
        }
        if let Ok(signal) = job.signals.try_recv() {
            return Ok(Waited::Signalled(signal));
        }
        let now = wait.now();
        if wait.ran_out(now) && (stats.steps > 0 || !one_attempt) {
            return Err(waited_out(
                elector,
                job,
                probe,
                health,
                &stats,
                wait.waited(),
            ));
        }
        if wait.line_due(now) {
            let line = format!(
                "waiting for {} ({} so far): {}",
                job.key,
                show(wait.waited()),
                who_holds(elector)
            );
            job.say("waiting", None, line);
        }
        // At the wait's end, one more look (the check above then ends it).
        let nap = match wait.nap(POLL, now) {
            Duration::ZERO => POLL,
            nap => nap,
        };
        match elector.recv_event_timeout(nap) {
            Some(ElectionEvent::BecameLeader(lease)) => return Ok(Waited::Granted(lease)),
            Some(ElectionEvent::Failed(why)) => return Err(Failure::new(INTERNAL, why)),
            _ => {}
        }
    }
}

/// The term won, from the events queued (or the role, if leading without
/// an event to say so); an elector that failed or stopped is an error.
fn won(elector: &mut Elector) -> Result<Option<Lease>, Failure> {
    while let Some(event) = elector.try_event() {
        match event {
            ElectionEvent::BecameLeader(lease) => return Ok(Some(lease)),
            ElectionEvent::Failed(why) => return Err(Failure::new(INTERNAL, why)),
            _ => {}
        }
    }
    if !elector.is_running() {
        return Err(Failure::new(INTERNAL, "the elector stopped"));
    }
    // Still leading, with no event to say so: the last term's command
    // was ended at a deadline this process saw pass before it saw the
    // elector renew (it was stopped or starved). The next term is now.
    if let Role::Leader(lease) = elector.role() {
        if elector
            .leading_deadline()
            .is_some_and(|until| Clock::system().now() < until)
        {
            return Ok(Some(lease));
        }
    }
    Ok(None)
}

/// `--wait` ran out: 75 if the last read saw the key held by someone
/// else; else the store failed (69), or the error the last failure was,
/// if retrying cannot fix it.
fn waited_out(
    elector: &Elector,
    job: &Job,
    probe: &mut Probe,
    health: &Fatal,
    stats: &ElectorStats,
    waited: Duration,
) -> Failure {
    let (key, waited) = (&job.key, show(waited));
    if stats.steps == 0 {
        return Failure::new(
            STORE,
            format!(
                "gave up on {key} after {waited}: the store has not answered the first attempt"
            ),
        );
    }
    if let Role::Follower(Some(state)) = elector.role() {
        if state.live {
            return Failure::new(
                HELD,
                format!(
                    "{key} is still held after {waited}: {}, can expire in {}",
                    held_by(&state),
                    show(state.expires_in)
                ),
            );
        }
    }
    let Some(error) = elector.last_error() else {
        return Failure::new(
            HELD,
            format!("{key} is still held after {waited}: {}", who_holds(elector)),
        );
    };
    if let Some(failure) = probe.settle(stats.failed_steps, SETTLE) {
        return fatal(health, failure);
    }
    Failure::new(STORE, format!(
        "gave up on {key} after {waited}: the store did not answer usefully ({}), and no read saw it held",
        error
    ))
}

fn who_holds(elector: &Elector) -> String {
    match elector.role() {
        Role::Follower(Some(state)) if state.live => format!(
            "{}, can expire in {}",
            held_by(&state),
            show(state.expires_in)
        ),
        Role::Follower(_) => "held, holder not read yet".into(),
        Role::Candidate => match elector.last_error() {
            Some(e) => format!("the last attempt failed: {e}"),
            None => "not acquired yet".into(),
        },
        Role::Leader(lease) => format!("acquired (token {})", lease.token),
    }
}

fn stop_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::RenewDeadline => "no renew succeeded before the renew deadline",
        StopReason::Lost => "a renew found it taken",
        StopReason::Resigned => "resigned",
    }
}
