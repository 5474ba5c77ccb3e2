//! A deterministic simulation of the sans-IO core on the S3 model.
//!
//! Clients of both strategies and fenced writers run the real protocol
//! operations against one `S3Model`. Every request and every reply is an
//! event with a random delay, so deliveries interleave in any order; some
//! requests never arrive (a refused connection), some replies are lost after
//! the write was applied, some conditional writes meet a 409. Clients of
//! epoch-objects keys have wall clocks skewed by minutes that jump; clients
//! of single-object keys share the true clock (its rule, `holder`, needs
//! that). Some clients alter their leases before using them; some take
//! their own key again under the same holder id and keep the superseded
//! lease to try it later. Some seeds' store returns LIST pages of one to
//! three keys, and any LIST may come back empty but truncated, as S3 may.
//!
//! The invariants (see `checks`): per key, granted tokens are unique and
//! rise in the order grants are acknowledged; no two grants are believed
//! held at once; a superseded lease never renews or releases; an altered
//! lease is refused before any request; each fenced object's history is
//! linearizable (writes in token order only, no acknowledged write lost).
//!
//! Everything comes from one seed: a failing run prints it, and
//! `S3LEASE_SIM_SEED=<seed>` replays it.

mod checks;
mod client;
pub mod electors;

use crate::testing::rng::Rng;
use checks::History;
pub use checks::Violation;
use client::{Client, Kind};

use crate::s3::{S3Request, S3Response};
use crate::testing::s3_model::{MissingIfMatch, S3Model};
use std::collections::BTreeMap;

/// The model's clock starts here (2023-11-14T22:13:20Z); sim time is
/// milliseconds after it.
pub const START_MS: u64 = 1_700_000_000_000;

/// What one run did, for the report and to show the faults really happened.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub steps: u64,
    pub grants: u64,
    pub renewals: u64,
    pub releases: u64,
    pub lost: u64,
    pub fenced_accepted: u64,
    pub fenced_refused: u64,
    pub forgeries_refused: u64,
    pub superseded_refused: u64,
    pub released_refused: u64,
    /// Seeds whose store answers 501 to `If-Match` on epoch-objects keys.
    pub seeds_without_if_match: u64,
    pub lost_replies: u64,
    pub refused_connections: u64,
    pub conflicts_injected: u64,
    pub clock_jumps: u64,
    /// Seeds whose store returns at most a few keys per LIST page.
    pub seeds_with_short_lists: u64,
    /// LIST replies served empty but truncated.
    pub empty_list_pages: u64,
}

impl std::ops::AddAssign<&Report> for Report {
    fn add_assign(&mut self, o: &Report) {
        self.steps += o.steps;
        self.grants += o.grants;
        self.renewals += o.renewals;
        self.releases += o.releases;
        self.lost += o.lost;
        self.fenced_accepted += o.fenced_accepted;
        self.fenced_refused += o.fenced_refused;
        self.forgeries_refused += o.forgeries_refused;
        self.superseded_refused += o.superseded_refused;
        self.released_refused += o.released_refused;
        self.seeds_without_if_match += o.seeds_without_if_match;
        self.lost_replies += o.lost_replies;
        self.refused_connections += o.refused_connections;
        self.conflicts_injected += o.conflicts_injected;
        self.clock_jumps += o.clock_jumps;
        self.seeds_with_short_lists += o.seeds_with_short_lists;
        self.empty_list_pages += o.empty_list_pages;
    }
}

/// What travels between clients and the store.
enum Event {
    /// A client's request reaches the store (or, refused, never does).
    Arrive { client: usize, request: S3Request },
    /// The reply reaches the client; `None`: it was lost.
    Reply {
        client: usize,
        reply: Option<S3Response>,
    },
    /// A client decides what to do next.
    Wake { client: usize },
}

pub struct Sim {
    rng: Rng,
    store: S3Model,
    clients: Vec<Client>,
    events: BTreeMap<(u64, u64), Event>,
    seq: u64,
    now: u64,
    history: History,
    report: Report,
    /// A store without `If-Match` for the epoch-objects keys (the stores
    /// that strategy is for): 501, and nothing applied.
    epoch_without_if_match: bool,
}

/// Keys of each strategy; clients of a strategy use all its keys.
pub const SINGLE_KEYS: [&str; 2] = ["s0", "s1"];
pub const EPOCH_KEYS: [&str; 2] = ["e0", "e1"];
const CLIENTS_PER_STRATEGY: usize = 4;

impl Sim {
    pub fn new(seed: u64) -> Self {
        // Mixed, so sim seed n is not another suite's seed n.
        let mut rng = Rng::new(seed ^ 0x5EED_5EED_5EED_5EED);
        let mut store = S3Model::new(START_MS);
        store.missing_if_match = if rng.chance(0.5) {
            MissingIfMatch::NotFound
        } else {
            MissingIfMatch::PreconditionFailed
        };
        let epoch_without_if_match = rng.chance(0.25);
        let short_lists = rng.chance(0.3);
        if short_lists {
            store.list_page_keys = Some(1 + rng.below(3) as usize);
        }
        let mut clients = Vec::new();
        for i in 0..CLIENTS_PER_STRATEGY * 2 {
            let kind = if i % 2 == 0 {
                Kind::Single
            } else {
                Kind::Epoch
            };
            clients.push(Client::new(i, kind, epoch_without_if_match, &mut rng));
        }
        let mut sim = Sim {
            rng,
            store,
            clients,
            events: BTreeMap::new(),
            seq: 0,
            now: 0,
            history: History::default(),
            report: Report {
                seeds_without_if_match: u64::from(epoch_without_if_match),
                seeds_with_short_lists: u64::from(short_lists),
                ..Report::default()
            },
            epoch_without_if_match,
        };
        for client in 0..sim.clients.len() {
            let at = sim.rng.below(500);
            sim.schedule(at, Event::Wake { client });
        }
        sim
    }

    fn schedule(&mut self, delay: u64, event: Event) {
        self.seq += 1;
        self.events.insert((self.now + delay, self.seq), event);
    }

    /// A network delay: mostly milliseconds, sometimes seconds (a slow or
    /// paused peer), so replies also arrive after leases expired.
    fn delay(&mut self) -> u64 {
        if self.rng.chance(0.03) {
            1_000 + self.rng.below(12_000)
        } else {
            1 + self.rng.below(150)
        }
    }

    /// Runs `steps` events, checking every invariant as it goes.
    pub fn run(mut self, steps: u64) -> Result<Report, Violation> {
        while self.report.steps < steps {
            let Some(((at, _), event)) = self.events.pop_first() else {
                break;
            };
            self.now = at;
            self.store.now_ms = START_MS + at;
            self.report.steps += 1;
            match event {
                Event::Arrive { client, request } => self.arrive(client, request),
                Event::Reply { client, reply } => self.reply(client, reply)?,
                Event::Wake { client } => self.wake(client)?,
            }
        }
        self.history.check_fenced_objects(&self.store)?;
        Ok(self.report)
    }

    fn arrive(&mut self, client: usize, request: S3Request) {
        if self.rng.chance(0.02) {
            self.report.refused_connections += 1;
            let delay = self.delay();
            self.schedule(
                delay,
                Event::Reply {
                    client,
                    reply: None,
                },
            );
            return;
        }
        let conditional = request
            .headers
            .iter()
            .any(|(k, _)| k == "if-match" || k == "if-none-match");
        if conditional && self.rng.chance(0.04) {
            self.store.conflicts = 1;
            self.report.conflicts_injected += 1;
        }
        let empty_page = request.object_key.is_empty() && self.rng.chance(0.05);
        if empty_page {
            self.store.empty_list_pages = 1;
        }
        let refuses_if_match = self.epoch_without_if_match
            && EPOCH_KEYS.iter().any(|k| request.object_key.starts_with(k))
            && request.headers.iter().any(|(k, _)| k == "if-match");
        let reply = if refuses_if_match {
            S3Response {
                status: 501,
                ..S3Response::default()
            }
        } else {
            self.store.handle(&request)
        };
        self.store.conflicts = 0;
        // Served (the model counts it down), or not servable: never left
        // over for the next LIST.
        if request.object_key.is_empty() && self.store.empty_list_pages == 0 && empty_page {
            self.report.empty_list_pages += 1;
        }
        self.store.empty_list_pages = 0;
        let reply = if self.rng.chance(0.03) {
            self.report.lost_replies += 1;
            None
        } else {
            Some(reply)
        };
        let delay = self.delay();
        self.schedule(delay, Event::Reply { client, reply });
    }

    fn reply(&mut self, id: usize, reply: Option<S3Response>) -> Result<(), Violation> {
        let now = self.now;
        let next = self.clients[id].on_reply(reply, now, &mut self.history, &mut self.report)?;
        self.after(id, next);
        Ok(())
    }

    fn wake(&mut self, id: usize) -> Result<(), Violation> {
        let now = self.now;
        if self.clients[id].maybe_jump_clock(&mut self.rng) {
            self.report.clock_jumps += 1;
        }
        let next =
            self.clients[id].wake(now, &mut self.rng, &mut self.history, &mut self.report)?;
        self.after(id, next);
        Ok(())
    }

    /// Sends the client's next request, or wakes it again later.
    fn after(&mut self, client: usize, next: Option<S3Request>) {
        match next {
            Some(request) => {
                let delay = self.delay();
                self.schedule(delay, Event::Arrive { client, request });
            }
            None => {
                let pause = if self.rng.chance(0.1) {
                    self.rng.below(8_000)
                } else {
                    self.rng.below(600)
                };
                self.schedule(pause, Event::Wake { client });
            }
        }
    }
}

/// Runs seeds from `first` until `total_steps` have run, `steps` each.
pub fn run_seeds(first: u64, steps: u64, total_steps: u64) -> Result<Report, (u64, Violation)> {
    let mut total = Report::default();
    let mut seed = first;
    while total.steps < total_steps {
        let report = Sim::new(seed).run(steps).map_err(|v| (seed, v))?;
        total += &report;
        seed += 1;
    }
    Ok(total)
}

#[cfg(test)]
mod tests;
