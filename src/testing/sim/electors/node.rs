//! One elector's process: its clocks, its host (an `Io` whose requests take
//! virtual time), and the thread that steps it.
//!
//! `Elector::step` is synchronous, so each elector runs on its own thread
//! and blocks inside `send` until the virtual time reaches its reply. Only
//! the thread holding the turn runs (see `World::turn`): the run is as
//! deterministic as a single-threaded one, and while one elector's request
//! hangs, the others step at exactly their own times.

use super::{lock, Caller, Shared, World};
use crate::driver::Io;
use crate::elector::{Elector, Role, Status};
use crate::error::Error;
use crate::ready::Ready;
use crate::s3::{S3Request, S3Response};
use crate::testing::sim::START_MS;
use std::sync::Arc;

/// An elector's clocks as functions of true time `t` (ms since the start).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Monotonic: its own origin, and a rate off by `ppm` millionths
    /// (never a jump).
    pub mono_origin: u64,
    pub ppm: i64,
    /// Wall: true time plus an offset, which jumps (see `World::jump`).
    pub wall_offset_ms: i64,
}

const MILLION: i128 = 1_000_000;

impl Clock {
    pub fn mono(&self, t: u64) -> u64 {
        let drift = (i128::from(t) * i128::from(self.ppm)).div_euclid(MILLION);
        (i128::from(self.mono_origin) + i128::from(t) + drift) as u64
    }

    /// The first true instant at which the monotonic clock reads `m`.
    pub fn true_at(&self, m: u64) -> u64 {
        let since = i128::from(m.saturating_sub(self.mono_origin));
        let mut t = (since * MILLION / (MILLION + i128::from(self.ppm))) as u64;
        while self.mono(t) < m {
            t += 1;
        }
        while t > 0 && self.mono(t - 1) >= m {
            t -= 1;
        }
        t
    }

    pub fn wall(&self, t: u64) -> u64 {
        (START_MS + t).saturating_add_signed(self.wall_offset_ms)
    }
}

/// The process around one elector (dead ones are kept: ids index these).
#[derive(Debug)]
pub struct Node {
    pub clock: Clock,
    /// This host lets a request run its whole course, whatever its bound.
    pub ignores_timeouts: bool,
    /// Its network is slow, then silent, until these true instants
    /// (`Plan::Degrade`).
    pub slow_until: u64,
    pub silent_until: u64,
    /// Crashed: it never gets the turn again.
    pub dead: bool,
    /// The true instant its thread waits for; `None` while it runs.
    pub wake_at: Option<u64>,
}

/// What the caller does after a step.
enum Next {
    Continue,
    Resign,
    Stop,
}

/// The `Io` of one elector.
pub struct SimIo {
    shared: Arc<Shared>,
    id: usize,
}

impl SimIo {
    /// Gives the turn back and blocks until the true time is `at`. False
    /// when the run is over (or this node crashed): stop at once.
    fn wait_until(&mut self, at: u64) -> bool {
        let mut w = lock(&self.shared);
        let at = at.max(w.now);
        w.nodes[self.id].wake_at = Some(at);
        w.turn = None;
        self.shared.turn.notify_all();
        drop(w);
        self.wait_turn()
    }

    /// Blocks until the scheduler gives this node the turn.
    fn wait_turn(&self) -> bool {
        let w = lock(&self.shared);
        let w = self
            .shared
            .turn
            .wait_while(w, |w| !w.over && w.turn != Some(self.id))
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        !w.over && !w.nodes[self.id].dead
    }

    fn with<T>(&self, f: impl FnOnce(&mut World, usize) -> T) -> T {
        f(&mut lock(&self.shared), self.id)
    }

    /// Records a returned step and decides what the caller does next.
    fn stepped(&mut self, status: &Status) -> Next {
        self.with(|w, id| {
            if w.over || w.nodes[id].dead {
                return Next::Stop;
            }
            w.report.steps += 1;
            let now = w.now;
            let clock = w.nodes[id].clock;
            let until = status.leading_until_ms.map(|u| clock.true_at(u));
            if let Err(v) = w.acting.stepped(id, now, status, until) {
                w.violation.get_or_insert(v);
            }
            if matches!(status.role, Role::Leader(_)) && w.rng.chance(0.01) {
                // A caller resigning stops acting first, then releases.
                w.acting.stop(id, now);
                w.report.resigns += 1;
                return Next::Resign;
            }
            Next::Continue
        })
    }

    /// When the caller steps again: as asked, a little late, sometimes
    /// much later (a paused process: its watchdog still fires on time).
    fn next_step_at(&mut self, status: &Status) -> u64 {
        self.with(|w, id| {
            let late = if w.rng.chance(0.02) {
                w.rng.below(2 * w.setup.retry_period_ms)
            } else {
                w.rng.below(10)
            };
            // Without a watchdog, a paused caller would count as leading
            // through its pause: keep it prompt, so the overlaps it shows
            // are the network's alone (the same draws are made).
            let late = match w.acting.caller() {
                Caller::Watchdog => late,
                Caller::LastStep => late.min(9),
            };
            let clock = w.nodes[id].clock;
            let due = clock.mono(w.now) + status.next_step_in_ms.max(1) + late;
            clock.true_at(due)
        })
    }
}

/// The thread of one elector: step, record, sleep, until the run ends or
/// the node crashes.
pub fn run(shared: Arc<Shared>, id: usize, mut elector: Elector) {
    let _guard = PanicGuard(shared.clone());
    let mut io = SimIo { shared, id };
    // Its first wake is set by whoever started it.
    if !io.wait_turn() {
        return;
    }
    loop {
        let status = elector.step(&mut io).ready();
        match io.stepped(&status) {
            Next::Stop => return,
            Next::Resign => {
                let _ = elector.resign(&mut io).ready();
            }
            Next::Continue => {}
        }
        let at = io.next_step_at(&status);
        if !io.wait_until(at) {
            return;
        }
    }
}

/// A node thread that panics must not leave the scheduler waiting for the
/// turn forever: it ends the run with the panic as the violation.
struct PanicGuard(Arc<Shared>);

impl Drop for PanicGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut w = lock(&self.0);
            w.panicked = true;
            w.turn = None;
            self.0.turn.notify_all();
        }
    }
}

impl Io for SimIo {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        let Some(plan) = self.with(|w, id| w.plan_request(id, request)) else {
            return Err(Error::Transport("the simulation is over".into()));
        };
        if !self.wait_until(plan.end) {
            return Err(Error::Transport("the simulation is over".into()));
        }
        self.with(|w, _| match plan.reply {
            Some(seq) => w
                .replies
                .remove(&seq)
                .ok_or_else(|| Error::Transport("applied reply missing".into())),
            None => Err(Error::Transport(plan.failure.into())),
        })
    }

    fn now_ms(&mut self) -> u64 {
        self.with(|w, id| w.nodes[id].clock.wall(w.now))
    }

    fn monotonic_ms(&mut self) -> u64 {
        self.with(|w, id| w.nodes[id].clock.mono(w.now))
    }

    async fn sleep_ms(&mut self, ms: u64) {
        let at = self.with(|w, id| {
            let clock = w.nodes[id].clock;
            clock.true_at(clock.mono(w.now) + ms)
        });
        self.wait_until(at);
    }

    fn random_u64(&mut self) -> u64 {
        self.with(|w, _| w.rng.next_u64())
    }
}

/// How one request goes, decided when it is sent.
pub struct RequestPlan {
    /// True instant `send` returns.
    pub end: u64,
    /// Where the store's reply will be (`World::replies`), if it comes.
    pub reply: Option<u64>,
    pub failure: &'static str,
}
