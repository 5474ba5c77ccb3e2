//! One simulated process: the `Io` its code runs on (its clocks and what
//! it waits for are `process`).
//!
//! The process's code is the real code (`ClientCore`, the core `Elector`,
//! `s3_lease_keep`'s machines), run as a future that the simulation polls.
//! Its `Io` never blocks: `send` hands the request to the world (which
//! decides when it reaches the store, if it does, and when its reply comes
//! back, if it does) and suspends until the world resumes the process at
//! that instant; `sleep_ms` likewise. One process runs at a time, so a run
//! replays exactly from its seed.

use super::process::Lane;
use super::store::SimStore;
use super::world::World;
use crate::driver::Io;
use crate::error::Error;
use crate::stores::s3::{Endpoint, S3Request, S3Response};
use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

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
            SimStore::S3(_) => &crate::stores::s3::PROFILE,
            SimStore::DynamoDb(_) => &crate::stores::dynamodb::PROFILE,
            SimStore::Azure(_) => &crate::stores::azure::PROFILE,
            SimStore::Gcs(_) => &crate::stores::gcs::PROFILE,
        });
        Some(Endpoint {
            store,
            url: crate::testing::model_io::MODEL_ENDPOINT.into(),
        })
    }
}
