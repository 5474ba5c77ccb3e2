//! One member of the soak: one process's use of one key, on a client of
//! its own (the blocking API of the product host, one instance built with
//! the test hooks, so the soak's request faults apply, and with a wall
//! clock that follows the process's skew), living through what the plan
//! does to its process (crash, pause, clock steps).
//!
//! What is the same for every member is here: its lives (a crash drops
//! what the process held without giving anything back, and the process
//! restarts as new holders), its pauses, its requests checked and
//! counted, its record. What it does with its key is its [`Role`]:
//! campaign with an elector and write the key's fenced object while it
//! leads ([`leading`]), or wait for a slot of a semaphore key, hold it
//! and give it back ([`slot`]).

mod leading;
mod slot;

pub use leading::Leading;
pub(super) use leading::{Event, StepError};
pub use slot::Slot;

use super::process::Process;
use super::record::{Record, Violation};
use super::schedule::{instance_seed, RequestFaults};
use super::Shared;
use crate::hooks::Hooks;
use crate::instance::SkewedClock;
use s3_lease::testing::history::Who;
use s3_lease::testing::rng::Rng;
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a member sleeps before it looks at its process again.
const LOOK: Duration = Duration::from_millis(50);

/// Why a member stops what it does with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Crash,
    EndOfRun,
    /// A slot's guard said it lost the slot.
    GuardSaidLost,
}

impl Stop {
    fn name(self) -> &'static str {
        match self {
            Stop::Crash => "crash",
            Stop::EndOfRun => "end of run",
            Stop::GuardSaidLost => "the guard said lost",
        }
    }
}

/// What a member does with its key: the part that differs between one
/// that campaigns and one that takes slots. Each function gets the whole
/// member, so a role reads the member's process, life and record.
pub trait Role: Sized {
    /// What one life of the process holds for the key (its client, ...).
    type Life: Send + 'static;
    /// Seeds the member's request faults apart from other roles'.
    const SEED_KEY_BASE: usize;
    const RNG_SALT: u64;

    /// A fresh life: forgets the last one's state and connects.
    fn connect(
        m: &mut Member<'_, Self>,
        hooks: &Hooks,
        clock: SkewedClock,
    ) -> Result<Self::Life, String>;
    /// Does what the role calls for now; returns when to look again.
    fn step(m: &mut Member<'_, Self>, now: Instant) -> Instant;
    /// Ends the belief at `at` (a crash, the end of the run), giving
    /// nothing back.
    fn stop(m: &mut Member<'_, Self>, at: Instant, why: Stop);
    /// The process was paused (the latest pause): sleeps through it.
    fn pause(m: &mut Member<'_, Self>);
    /// Lets a dead life go (on a thread of its own).
    fn let_go(life: Self::Life);
    /// At the end of the run, after the last life went: collects what
    /// is still under way.
    fn finish(_m: &mut Member<'_, Self>) {}
}

pub struct Member<'a, R: Role> {
    shared: &'a Shared<'a>,
    process: Arc<Process>,
    p: usize,
    /// The key's index in the history; `name` its name.
    key: usize,
    name: String,
    /// Seeds the request faults (`SEED_KEY_BASE` + the key's index among
    /// its kind).
    seed_key: usize,
    generation: u32,
    life: Option<(Hooks, R::Life)>,
    rng: Rng,
    pause_seen: u64,
    /// Lives being let go, each on a thread of its own: a dead process
    /// waits for nothing, and dropping the last handle of a client waits
    /// for its calls still running.
    letting_go: Vec<JoinHandle<()>>,
    record: Record,
    role: R,
}

/// A violation seen by process `p`'s member on key `name`.
fn violation(
    p: usize,
    generation: u32,
    name: &str,
    invariant: &'static str,
    d: String,
) -> Violation {
    Violation {
        invariant,
        detail: format!("process {p} gen {generation} {name}: {d}"),
    }
}

impl<'a, R: Role> Member<'a, R> {
    /// Starts the member's first process, then waits for every other.
    pub fn start(
        shared: &'a Shared<'a>,
        process: Arc<Process>,
        p: usize,
        (key, name, seed_key): (usize, String, usize),
        role: R,
        barrier: &Barrier,
    ) -> Self {
        let mut m = Member {
            shared,
            generation: process.generation(),
            process,
            p,
            key,
            name,
            seed_key: R::SEED_KEY_BASE + seed_key,
            life: None,
            rng: Rng::new(0),
            pause_seen: 0,
            letting_go: Vec::new(),
            record: Record::default(),
            role,
        };
        m.spawn_life();
        barrier.wait();
        m
    }

    fn violation(&mut self, invariant: &'static str, detail: String) {
        let v = violation(self.p, self.generation, &self.name, invariant, detail);
        self.record.history.violations.push(v);
    }

    fn who(&self) -> Who {
        Who {
            actor: self.p,
            generation: self.generation,
        }
    }

    /// A fresh process: new client, new holder ids.
    fn spawn_life(&mut self) {
        self.generation = self.process.generation();
        self.pause_seen = self.process.latest_pause().map_or(0, |(n, _)| n);
        let seed = instance_seed(
            self.shared.config.seed,
            self.p,
            self.seed_key,
            self.generation,
        );
        self.rng = Rng::new(seed ^ R::RNG_SALT);
        let hooks = Hooks::new(self.shared.harness.runtime().http().clone());
        let config = &self.shared.config;
        let faults = RequestFaults::new(
            seed,
            config.request_fault_rate,
            self.shared.counts.clone(),
            self.process.clone(),
        );
        hooks.set_policy(faults.into_policy());
        // The process's clock: a jump moves every instance of it at once.
        let clock = SkewedClock {
            offset_ms: self.process.clock_offset_ms.clone(),
        };
        match R::connect(self, &hooks, clock) {
            Ok(life) => self.life = Some((hooks, life)),
            Err(e) => self.violation("setup", e),
        }
    }

    /// Does its role until the end of the run.
    pub fn run(mut self) -> Record {
        let t_end = self.shared.t_end;
        std::thread::sleep(self.shared.t0.saturating_duration_since(Instant::now()));
        loop {
            let now = Instant::now();
            if now >= t_end {
                break;
            }
            if self.process.generation() != self.generation {
                self.crashed();
                continue;
            }
            if let Some((n, _)) = self.process.latest_pause() {
                if n > self.pause_seen {
                    self.pause_seen = n;
                    R::pause(&mut self);
                    continue;
                }
            }
            let next = match self.life {
                Some(_) => R::step(&mut self, now),
                None => now + LOOK,
            };
            let now = Instant::now();
            std::thread::sleep(
                next.min(now + LOOK)
                    .min(t_end)
                    .saturating_duration_since(now),
            );
        }
        R::stop(&mut self, t_end, Stop::EndOfRun);
        self.end_life();
        R::finish(&mut self);
        for handle in self.letting_go.drain(..) {
            let _ = handle.join();
        }
        self.record
    }

    /// Takes the requests the life sent since last time (those of what is
    /// being let go too), checks and counts them.
    fn count_requests(&mut self) {
        let Some((hooks, _)) = self.life.as_ref() else {
            return;
        };
        let taken = hooks.take_requests();
        self.record.counts.requests += taken.len() as u64;
        if let Some(bad) = taken.iter().find(|r| !r.payload_hash_ok) {
            let detail = format!("payload hash mismatch on {bad:?}");
            self.violation("requests as signed", detail);
        }
    }

    /// Lets the life go without giving anything back.
    fn end_life(&mut self) {
        self.count_requests();
        if let Some((_, life)) = self.life.take() {
            self.letting_go
                .push(std::thread::spawn(move || R::let_go(life)));
        }
    }

    /// The process died: what it held stops without being given back, and
    /// it restarts as a fresh process.
    fn crashed(&mut self) {
        let crash = self.process.last_crash();
        let at = crash.map_or_else(Instant::now, |c| c.at);
        R::stop(self, at, Stop::Crash);
        self.end_life();
        if self.process.wait_for_restart(crash, self.shared.t_end) {
            self.spawn_life();
        } else {
            self.generation = self.process.generation();
        }
    }

    /// Lets `thing` go on a thread of its own (see `letting_go`).
    fn let_go_of<T: Send + 'static>(&mut self, thing: T) {
        self.letting_go
            .push(std::thread::spawn(move || drop(thing)));
    }
}
