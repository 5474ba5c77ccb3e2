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
//! Semaphore clients (see `semaphores`) share the store: a key of limit 3,
//! a fair key of limit 2 and a fair key of limit 1 that a plain lock client
//! shares, each judged per seed by one of the three expiry clocks. Their
//! waiters poll the queue, give up and leave it, or crash and leave their
//! place to expire; their holders renew, release, crash, take their key
//! again, and try spent and altered leases.
//!
//! The invariants (see `checks`): per key, granted tokens are unique and
//! rise in the order grants are acknowledged; no two grants are believed
//! held at once; a superseded lease never renews or releases; an altered
//! lease is refused before any request; each fenced object's history is
//! linearizable (writes in token order only, no acknowledged write lost).
//! Of semaphores (see `semaphore_checks`): never more than the limit of
//! slots believed held at once; tokens unique (and, under a limit of 1,
//! rising as acknowledged); every write the store applies keeps the
//! semaphore's rules (a live entry of another is never dropped, others'
//! entries kept and stamped, new slots from the counter, and the queue's
//! order: a grant leaves a slot for every live waiter ahead of it); a
//! superseded or released slot lease never renews; an altered one, or one
//! shown as a lock's, is refused before any request.
//!
//! Everything comes from one seed: a failing run prints it, and
//! `S3LEASE_SIM_SEED=<seed>` replays it.

mod checks;
mod client;
pub mod electors;
mod semaphore_checks;
mod semaphores;
mod store;

use crate::testing::rng::Rng;
use checks::History;
pub use checks::Violation;
use client::{Client, Kind};
use semaphore_checks::SemaphoreHistory;
use semaphores::{semaphore_key, SemClient, SEMAPHORE_KEYS};

use crate::expiry::ExpiryClock;
use crate::s3::{Method, S3Request, S3Response};
use crate::testing::s3_model::{MissingIfMatch, S3Model};
use std::collections::BTreeMap;
use store::SimStore;

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
    /// Semaphore keys run under each expiry clock: holder, server, observed.
    pub semaphore_keys_by_clock: [u64; 3],
    pub slot_grants: u64,
    /// Plain locks granted on a semaphore key (before it became one).
    pub plain_grants_on_semaphore_keys: u64,
    pub slot_renewals: u64,
    pub slot_releases: u64,
    /// Renewals of held slots that found them gone.
    pub slot_lost: u64,
    pub slot_full: u64,
    /// Fair waiters' attempts answered with a place in the queue.
    pub slot_polls_queued: u64,
    /// Places first taken (a waiter starting to wait).
    pub places_taken: u64,
    pub places_left: u64,
    pub slot_crashes: u64,
    pub slot_forgeries_refused: u64,
    pub slot_superseded_refused: u64,
    pub slot_released_refused: u64,
    /// Lapsed leases renewed or released (their slot still stored) and refused.
    pub lapsed_rewritten: u64,
    pub lapsed_refused: u64,
    /// Grants on keys of limit > 1 acknowledged after a higher token's.
    pub slot_acks_out_of_order: u64,
    /// The most slots believed held at one instant, per semaphore key (in
    /// the order of `SEMAPHORE_KEYS`), of any run.
    pub max_slots_believed: [u64; 3],
    pub max_slots_stored: u64,
    /// Expired entries of others dropped by a writer.
    pub slots_dropped_expired: u64,
    pub places_dropped_expired: u64,
    /// Grants on fair keys checked against the queue, those to a waiter
    /// with a place, and those while alive waiters were ahead (free slots
    /// left for them).
    pub fair_grants_checked: u64,
    pub fair_grants_from_queue: u64,
    pub fair_passes: u64,
    /// DynamoDB runs: calls refused as throttled (429, not applied).
    pub throttles_injected: u64,
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
        for (a, b) in self
            .semaphore_keys_by_clock
            .iter_mut()
            .zip(o.semaphore_keys_by_clock)
        {
            *a += b;
        }
        self.slot_grants += o.slot_grants;
        self.plain_grants_on_semaphore_keys += o.plain_grants_on_semaphore_keys;
        self.slot_renewals += o.slot_renewals;
        self.slot_releases += o.slot_releases;
        self.slot_lost += o.slot_lost;
        self.slot_full += o.slot_full;
        self.slot_polls_queued += o.slot_polls_queued;
        self.places_taken += o.places_taken;
        self.places_left += o.places_left;
        self.slot_crashes += o.slot_crashes;
        self.slot_forgeries_refused += o.slot_forgeries_refused;
        self.slot_superseded_refused += o.slot_superseded_refused;
        self.slot_released_refused += o.slot_released_refused;
        self.lapsed_rewritten += o.lapsed_rewritten;
        self.lapsed_refused += o.lapsed_refused;
        self.slot_acks_out_of_order += o.slot_acks_out_of_order;
        for (a, b) in self.max_slots_believed.iter_mut().zip(o.max_slots_believed) {
            *a = (*a).max(b);
        }
        self.max_slots_stored = self.max_slots_stored.max(o.max_slots_stored);
        self.slots_dropped_expired += o.slots_dropped_expired;
        self.places_dropped_expired += o.places_dropped_expired;
        self.fair_grants_checked += o.fair_grants_checked;
        self.fair_grants_from_queue += o.fair_grants_from_queue;
        self.fair_passes += o.fair_passes;
        self.throttles_injected += o.throttles_injected;
    }
}

/// What travels between clients and the store.
enum Event {
    /// A client's request, sent at `sent`, reaches the store (or, refused,
    /// never does).
    Arrive {
        client: usize,
        request: S3Request,
        sent: u64,
    },
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
    store: SimStore,
    clients: Vec<Client>,
    /// Semaphore clients; their ids follow those of `clients`.
    sems: Vec<SemClient>,
    events: BTreeMap<(u64, u64), Event>,
    seq: u64,
    now: u64,
    history: History,
    sem_history: SemaphoreHistory,
    report: Report,
    /// A store without `If-Match` for the epoch-objects keys (the stores
    /// that strategy is for): 501, and nothing applied.
    epoch_without_if_match: bool,
    /// `S3LEASE_SIM_TRACE=<key>`: print every request to that key, its
    /// reply and the object it left, to read a failing seed.
    trace: Option<String>,
}

/// Keys of each strategy; clients of a strategy use all its keys.
pub const SINGLE_KEYS: [&str; 2] = ["s0", "s1"];
pub const EPOCH_KEYS: [&str; 2] = ["e0", "e1"];
const CLIENTS_PER_STRATEGY: usize = 4;

impl Sim {
    pub fn new(seed: u64) -> Self {
        Sim::on(seed, false)
    }

    /// A run on the DynamoDB model (see `store`): single-object clients
    /// only (a table has no listing), no fenced writes (they are S3's),
    /// and the clocks a table allows: `holder` and `observed` (the keys
    /// an S3 run judges by `server` judge by `observed` here). Calls are
    /// also throttled, and writes meet `TransactionConflictException`.
    pub fn on_dynamodb(seed: u64) -> Self {
        Sim::on(seed, true)
    }

    fn on(seed: u64, dynamodb: bool) -> Self {
        // Mixed, so sim seed n is not another suite's seed n.
        let mut rng = Rng::new(seed ^ 0x5EED_5EED_5EED_5EED);
        let mut s3 = S3Model::new(START_MS);
        s3.missing_if_match = if rng.chance(0.5) {
            MissingIfMatch::NotFound
        } else {
            MissingIfMatch::PreconditionFailed
        };
        let epoch_without_if_match = rng.chance(0.25) && !dynamodb;
        let short_lists = rng.chance(0.3) && !dynamodb;
        if short_lists {
            s3.list_page_keys = Some(1 + rng.below(3) as usize);
        }
        let store = if dynamodb {
            SimStore::new_dynamodb(START_MS)
        } else {
            SimStore::S3(s3)
        };
        let mut clients = Vec::new();
        for i in 0..CLIENTS_PER_STRATEGY * 2 {
            let kind = if i % 2 == 0 || dynamodb {
                Kind::Single
            } else {
                Kind::Epoch
            };
            clients.push(Client::new(
                i,
                kind,
                epoch_without_if_match,
                dynamodb,
                &mut rng,
            ));
        }
        // Each semaphore key judges expiry by a clock of its own per seed.
        let clocks = [
            ExpiryClock::Holder,
            if dynamodb {
                ExpiryClock::Observed
            } else {
                ExpiryClock::Server
            },
            ExpiryClock::Observed,
        ];
        let mut by_clock = [0; 3];
        let mut sems = Vec::new();
        for key in &SEMAPHORE_KEYS {
            let c = rng.below(3) as usize;
            by_clock[c] += 1;
            for j in 0..key.slot_clients + key.plain_clients {
                let id = clients.len() + sems.len();
                let plain = j >= key.slot_clients;
                sems.push(SemClient::new(
                    id, key, plain, clocks[c], dynamodb, &mut rng,
                ));
            }
        }
        let mut sim = Sim {
            rng,
            store,
            clients,
            sems,
            events: BTreeMap::new(),
            seq: 0,
            now: 0,
            history: History::default(),
            sem_history: SemaphoreHistory::default(),
            report: Report {
                semaphore_keys_by_clock: by_clock,
                seeds_without_if_match: u64::from(epoch_without_if_match),
                seeds_with_short_lists: u64::from(short_lists),
                ..Report::default()
            },
            epoch_without_if_match,
            trace: std::env::var("S3LEASE_SIM_TRACE").ok(),
        };
        sim.sem_history.without_write_times = dynamodb;
        for client in 0..sim.clients.len() + sim.sems.len() {
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
            self.store.set_now(START_MS + at);
            self.report.steps += 1;
            match event {
                Event::Arrive {
                    client,
                    request,
                    sent,
                } => self.arrive(client, request, sent)?,
                Event::Reply { client, reply } => self.reply(client, reply)?,
                Event::Wake { client } => self.wake(client)?,
            }
        }
        if let Some(s3) = self.store.s3() {
            self.history.check_fenced_objects(s3)?;
        }
        Ok(self.report)
    }

    fn arrive(&mut self, client: usize, request: S3Request, sent: u64) -> Result<(), Violation> {
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
            return Ok(());
        }
        // A write to a semaphore key: the object as it was, to compare.
        let semaphore = semaphore_key(&request.object_key)
            .filter(|_| request.method == Method::Put)
            .map(|key| (key, self.store.object(key.name)));
        let conditional = request
            .headers
            .iter()
            .any(|(k, _)| k == "if-match" || k == "if-none-match");
        if conditional && self.rng.chance(0.04) {
            self.store.inject_conflict();
            self.report.conflicts_injected += 1;
        }
        if let SimStore::DynamoDb(table) = &mut self.store {
            if self.rng.chance(0.03) {
                table.throttle_next = 1;
                self.report.throttles_injected += 1;
            }
        }
        let empty_page = request.object_key.is_empty() && self.rng.chance(0.05);
        if let (true, Some(s3)) = (empty_page, self.store.s3()) {
            s3.empty_list_pages = 1;
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
        self.store.clear_conflicts();
        if let SimStore::DynamoDb(table) = &mut self.store {
            table.throttle_next = 0;
        }
        if self.trace.as_deref() == Some(request.object_key.as_str()) {
            self.print_trace(client, &request, &reply, sent);
        }
        if let Some((key, before)) = semaphore {
            let after = self.store.object(key.name);
            if let (200, Some(after), Some(sem)) = (
                reply.status,
                after,
                client
                    .checked_sub(self.clients.len())
                    .and_then(|i| self.sems.get(i)),
            ) {
                self.sem_history.applied(
                    key,
                    sem.acting_for(),
                    before.as_ref(),
                    &after,
                    sent,
                    self.now,
                    &mut self.report,
                )?;
            }
        }
        // Served (the model counts it down), or not servable: never left
        // over for the next LIST.
        if let Some(s3) = self.store.s3() {
            if request.object_key.is_empty() && s3.empty_list_pages == 0 && empty_page {
                self.report.empty_list_pages += 1;
            }
            s3.empty_list_pages = 0;
        }
        let reply = if self.rng.chance(0.03) {
            self.report.lost_replies += 1;
            None
        } else {
            Some(reply)
        };
        let delay = self.delay();
        self.schedule(delay, Event::Reply { client, reply });
        Ok(())
    }

    fn print_trace(&self, client: usize, request: &S3Request, reply: &S3Response, sent: u64) {
        let who = match client.checked_sub(self.clients.len()) {
            Some(i) => self.sems[i].describe(),
            None => format!("client {client}"),
        };
        let conditions: Vec<String> = request
            .headers
            .iter()
            .filter(|(k, _)| k.starts_with("if-"))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        println!(
            "{} ms (sent {sent}): {who}: {:?} {conditions:?} -> {}",
            self.now, request.method, reply.status
        );
        if request.method == Method::Put && reply.status == 200 {
            if let Some(o) = self.store.object(&request.object_key) {
                println!(
                    "    stored (etag {}, Last-Modified {}): {}",
                    o.etag,
                    o.last_modified_ms - START_MS,
                    String::from_utf8_lossy(&o.body)
                );
            }
        }
    }

    fn reply(&mut self, id: usize, reply: Option<S3Response>) -> Result<(), Violation> {
        let now = self.now;
        if let Some(i) = id.checked_sub(self.clients.len()) {
            if self.trace.as_deref() == Some(self.sems[i].key_name()) {
                let status = reply.as_ref().map(|r| r.status);
                println!("{now} ms: {} gets {status:?}", self.sems[i].describe());
            }
        }
        let next = match id.checked_sub(self.clients.len()) {
            None => self.clients[id].on_reply(reply, now, &mut self.history, &mut self.report)?,
            Some(i) => {
                self.sems[i].on_reply(reply, now, &mut self.sem_history, &mut self.report)?
            }
        };
        self.after(id, next);
        Ok(())
    }

    fn wake(&mut self, id: usize) -> Result<(), Violation> {
        let now = self.now;
        let (rng, history, report) = (&mut self.rng, &mut self.history, &mut self.report);
        let next = match id.checked_sub(self.clients.len()) {
            None => {
                let client = &mut self.clients[id];
                if client.maybe_jump_clock(rng) {
                    report.clock_jumps += 1;
                }
                client.wake(now, rng, history, report)?
            }
            Some(i) => {
                let client = &mut self.sems[i];
                if client.maybe_jump_clock(rng) {
                    report.clock_jumps += 1;
                }
                client.wake(now, rng, &mut self.sem_history, report)?
            }
        };
        self.after(id, next);
        Ok(())
    }

    /// Sends the client's next request, or wakes it again later.
    fn after(&mut self, client: usize, next: Option<S3Request>) {
        match next {
            Some(request) => {
                let delay = self.delay();
                let sent = self.now;
                self.schedule(
                    delay,
                    Event::Arrive {
                        client,
                        request,
                        sent,
                    },
                );
            }
            None => {
                let pause = match client.checked_sub(self.clients.len()) {
                    Some(i) => self.sems[i].pause(self.now, &mut self.rng),
                    None if self.rng.chance(0.1) => self.rng.below(8_000),
                    None => self.rng.below(600),
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
