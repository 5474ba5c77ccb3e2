//! Stores that break under a race, over the models: an `Io` whose
//! `send_all` (the preflight's racing writers) meets a store that checks
//! every writer's condition before any of them writes, then writes them
//! all, as a store does that evaluates a condition and writes in two steps
//! with a window between. One at a time (`send`) it is the model itself,
//! faithful. What the preflight's race must refuse.

use crate::driver::Io;
use crate::error::Error;
use crate::ready::Ready;
use crate::s3::{S3Request, S3Response};

/// A model whose whole state can be saved and put back.
pub trait Snapshot {
    type State: Clone;
    fn state(&self) -> Self::State;
    fn set_state(&mut self, state: Self::State);
}

impl Snapshot for crate::testing::model_io::ModelIo {
    type State = std::collections::BTreeMap<String, crate::testing::s3_model::Object>;
    fn state(&self) -> Self::State {
        self.store.objects.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.store.objects = state;
    }
}

impl Snapshot for crate::testing::dynamodb_model::DynamoIo {
    type State = std::collections::BTreeMap<String, crate::testing::dynamodb_model::Item>;
    fn state(&self) -> Self::State {
        self.table.items.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.table.items = state;
    }
}

impl Snapshot for crate::testing::azure_model::AzureIo {
    type State = std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, crate::testing::azure_model::Blob>,
    >;
    fn state(&self) -> Self::State {
        self.store.containers.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.store.containers = state;
    }
}

/// How the store takes racing writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Race {
    /// One at a time, as the model does: atomic.
    Atomic,
    /// Every writer's condition is checked against the state before the
    /// race, then every writer that passed writes (the last one's bytes
    /// stay): every racing create wins.
    CheckThenWrite,
    /// Answers as an atomic store would (one winner, the rest refused),
    /// but every writer's bytes are written, the last one's staying: a
    /// refused write that lands anyway.
    RefusedButApplied,
}

pub struct Racing<'a, I: Io + Snapshot> {
    pub io: &'a mut I,
    pub race: Race,
}

impl<I: Io + Snapshot> Io for Racing<'_, I> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        self.io.send(request).await
    }

    async fn send_all(&mut self, requests: &[S3Request]) -> Vec<Result<S3Response, Error>> {
        match self.race {
            Race::Atomic => {
                let mut replies = Vec::new();
                for r in requests {
                    replies.push(self.io.send(r).await);
                }
                replies
            }
            Race::CheckThenWrite => {
                let before = self.io.state();
                let mut after = before.clone();
                let mut replies = Vec::new();
                for r in requests {
                    self.io.set_state(before.clone());
                    let reply = self.io.send(r).ready();
                    if reply
                        .as_ref()
                        .is_ok_and(|x| (200..=299).contains(&x.status))
                    {
                        after = self.io.state();
                    }
                    replies.push(reply);
                }
                self.io.set_state(after);
                replies
            }
            Race::RefusedButApplied => {
                let mut replies = Vec::new();
                for r in requests {
                    replies.push(self.io.send(r).ready());
                }
                // Then every writer's bytes land, unconditionally.
                for r in requests {
                    let mut blind = r.clone();
                    blind
                        .headers
                        .retain(|(k, _)| k != "if-match" && k != "if-none-match");
                    let _ = self.io.send(&blind).ready();
                }
                replies
            }
        }
    }

    fn now_ms(&mut self) -> u64 {
        self.io.now_ms()
    }
    fn monotonic_ms(&mut self) -> u64 {
        self.io.monotonic_ms()
    }
    async fn sleep_ms(&mut self, ms: u64) {
        self.io.sleep_ms(ms).await;
    }
    fn random_u64(&mut self) -> u64 {
        self.io.random_u64()
    }
    fn correct_signing_clock(&mut self, server_ms: u64) {
        self.io.correct_signing_clock(server_ms);
    }
}
