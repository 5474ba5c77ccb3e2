//! Stores that break under a race, over the models: an `Io` whose
//! `send_all` (the preflight's racing writers) meets a store that checks
//! every writer's condition before any of them writes, then writes them
//! all, as a store does that evaluates a condition and writes in two steps
//! with a window between. One at a time (`send`) it is the model itself,
//! faithful. What the preflight's race must refuse.

use crate::driver::{Io, Sends, Wrapped};
use crate::error::Error;
use crate::ready::Ready;
use crate::stores::s3::{S3Request, S3Response};

/// A model whose whole state can be saved and put back.
pub trait Snapshot {
    type State: Clone;
    fn state(&self) -> Self::State;
    fn set_state(&mut self, state: Self::State);
}

impl Snapshot for crate::testing::model_io::ModelIo {
    type State = std::collections::BTreeMap<String, crate::stores::s3::model::Object>;
    fn state(&self) -> Self::State {
        self.store.objects.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.store.objects = state;
    }
}

impl Snapshot for crate::stores::dynamodb::model::DynamoIo {
    type State = std::collections::BTreeMap<String, crate::stores::dynamodb::model::Item>;
    fn state(&self) -> Self::State {
        self.store.items.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.store.items = state;
    }
}

impl Snapshot for crate::stores::azure::model::AzureIo {
    type State = std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, crate::stores::azure::model::Blob>,
    >;
    fn state(&self) -> Self::State {
        self.store.containers.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.store.containers = state;
    }
}

impl Snapshot for crate::stores::gcs::model::GcsIo {
    type State = std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, crate::stores::gcs::model::GcsObject>,
    >;
    fn state(&self) -> Self::State {
        self.store.buckets.clone()
    }
    fn set_state(&mut self, state: Self::State) {
        self.store.buckets = state;
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

/// A model's `Io` whose racing writers meet a store that takes them as
/// `race` says.
pub type Racing<'a, I> = Wrapped<'a, I, Race>;

impl<'a, I: Io + Snapshot> Racing<'a, I> {
    pub fn new(io: &'a mut I, race: Race) -> Self {
        Wrapped { io, sends: race }
    }
}

impl<I: Io + Snapshot> Sends<I> for Race {
    async fn send(&mut self, io: &mut I, request: &S3Request) -> Result<S3Response, Error> {
        io.send(request).await
    }

    async fn send_all(
        &mut self,
        io: &mut I,
        requests: &[S3Request],
    ) -> Vec<Result<S3Response, Error>> {
        match self {
            Race::Atomic => {
                let mut replies = Vec::new();
                for r in requests {
                    replies.push(io.send(r).await);
                }
                replies
            }
            Race::CheckThenWrite => {
                let before = io.state();
                let mut after = before.clone();
                let mut replies = Vec::new();
                for r in requests {
                    io.set_state(before.clone());
                    let reply = io.send(r).ready();
                    if reply
                        .as_ref()
                        .is_ok_and(|x| (200..=299).contains(&x.status))
                    {
                        after = io.state();
                    }
                    replies.push(reply);
                }
                io.set_state(after);
                replies
            }
            Race::RefusedButApplied => {
                let mut replies = Vec::new();
                for r in requests {
                    replies.push(io.send(r).ready());
                }
                // Then every writer's bytes land, unconditionally.
                for r in requests {
                    let mut blind = r.clone();
                    blind
                        .headers
                        .retain(|(k, _)| k != "if-match" && k != "if-none-match");
                    let _ = io.send(&blind).ready();
                }
                replies
            }
        }
    }
}
