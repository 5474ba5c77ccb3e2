//! One simulated process: its clocks, and the `Io` its code runs on.
//!
//! The process's code is the real code (`ClientCore`, the core `Elector`,
//! `s3_lease_keep`'s machines), run as a future that the simulation polls.
//! Its `Io` never blocks: `send` hands the request to the world (which
//! decides when it reaches the store, if it does, and when its reply comes
//! back, if it does) and suspends until the world resumes the process at
//! that instant; `sleep_ms` likewise. One process runs at a time, so a run
//! replays exactly from its seed.

use super::store::SimStore;
use super::world::World;
use super::START_MS;
use crate::driver::Io;
use crate::error::Error;
use crate::s3::{Endpoint, S3Request, S3Response, StoreKind};
use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

/// A process's clocks as functions of true time `t` (ms since the start).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// Monotonic: its own origin, and a rate off by `ppm` millionths
    /// (never a jump).
    pub mono_origin: u64,
    pub ppm: i64,
    /// Wall: true time plus an offset, which jumps (`World::jump`).
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

/// What a process waits for, and what came of it.
#[derive(Debug, Default)]
pub struct Waiting {
    /// The ticket of the send or sleep the process is suspended on.
    pub ticket: Option<u64>,
    /// Set when the world resumes the process: that ticket is over.
    pub done: Option<u64>,
    /// A send's outcome, once its reply came (or failed to).
    pub outcome: Option<Result<S3Response, Error>>,
}

/// Which of a process's threads waits: its calls, or its credential
/// refresher (which runs beside them, as the host's thread does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Calls,
    Refresher,
}

/// The `Io` of one thread of one process (one generation of one actor).
pub struct SimIo {
    pub world: Rc<RefCell<World>>,
    pub actor: usize,
    pub lane: Lane,
}

impl SimIo {
    /// Runs `f` on the world and this actor's id.
    pub fn with<T>(&self, f: impl FnOnce(&mut World, usize) -> T) -> T {
        f(&mut self.world.borrow_mut(), self.actor)
    }

    /// True time now (ms since the start).
    pub fn now(&self) -> u64 {
        self.world.borrow().now
    }

    /// Suspends until the world resumes this process for `ticket`.
    async fn wait(&self, ticket: u64) {
        poll_fn(|_| {
            let mut w = self.world.borrow_mut();
            let waiting = w.hosts[self.actor].lane(self.lane);
            if waiting.done == Some(ticket) {
                waiting.done = None;
                waiting.ticket = None;
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }

    /// Sleeps until true time `at`.
    pub async fn sleep_until(&mut self, at: u64) {
        let lane = self.lane;
        let ticket = self.with(|w, id| w.resume_at(id, lane, at));
        self.wait(ticket).await;
    }

    /// Sleeps `ms` of true time.
    pub async fn pause(&mut self, ms: u64) {
        let at = self.now() + ms;
        self.sleep_until(at).await;
    }

    /// Requests this process has sent so far.
    pub fn requests(&self) -> u64 {
        self.with(|w, id| w.hosts[id].requests)
    }
}

impl Io for SimIo {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        let ticket = self.with(|w, id| w.send(id, request));
        self.wait(ticket).await;
        self.with(|w, id| w.hosts[id].waiting.outcome.take())
            .unwrap_or_else(|| Err(Error::Transport("no reply".into())))
    }

    fn now_ms(&mut self) -> u64 {
        self.with(|w, id| w.hosts[id].clock.wall(w.now))
    }

    fn monotonic_ms(&mut self) -> u64 {
        self.with(|w, id| w.hosts[id].clock.mono(w.now))
    }

    async fn sleep_ms(&mut self, ms: u64) {
        let at = self.with(|w, id| {
            let clock = w.hosts[id].clock;
            clock.true_at(clock.mono(w.now) + ms)
        });
        self.sleep_until(at).await;
    }

    fn random_u64(&mut self) -> u64 {
        self.with(|w, _| w.rng.next_u64())
    }

    fn endpoint(&self) -> Option<Endpoint> {
        let store = self.with(|w, _| match w.store {
            SimStore::S3(_) => StoreKind::S3,
            SimStore::DynamoDb(_) => StoreKind::DynamoDb,
            SimStore::Azure(_) => StoreKind::AzureBlob,
            SimStore::Gcs(_) => StoreKind::Gcs,
        });
        Some(Endpoint {
            store,
            url: crate::testing::model_io::MODEL_ENDPOINT.into(),
        })
    }
}
