//! Leader election for one key, stepwise: the host owns time and calls
//! `step` when the last step said to (or whenever it likes), and each step
//! does at most one thing that is due: one acquire attempt, one renew, or
//! one observation. WASI 0.2 components have no threads, so the renewal
//! loop is the host's timer, as in quinn-proto.
//!
//! Timing follows client-go's leader election:
//! - the lease lives `lease_duration` from when its last write was sent;
//! - a leader renews every `retry_period`, and stops reporting itself
//!   leader once `renew_deadline` has passed since it *sent* its last
//!   successful renew, by its monotonic clock, whether or not a reply came;
//! - followers look every `retry_period`.
//!
//! Since `renew_deadline < lease_duration`, a leader has stepped down
//! before any contender can judge its lease expired, provided the clocks
//! run at nearly the same rate (they need not agree).
//!
//! Requests take time, and a step is synchronous: so every request of a
//! step is bounded by the renew deadline (`driver::Within`), a reply that
//! comes after the deadline never extends leadership, and `Status` says
//! until when leadership holds (`leading_until_ms`), so a caller's own
//! watchdog can stop acting as leader at that instant even while a step
//! is still blocked on a host that ignores request timeouts.

use crate::prelude::*;

use crate::client::ClientCore;
use crate::driver::{Io, Within};
use crate::error::Error;
use crate::lease::{Grant, Lease};
use crate::limits::{MAX_TTL_MS, MIN_TTL_MS};
use crate::lock_object::LockState;
use crate::protocol::AcquireOutcome;
use s3_lease_keep::leadership;

/// The elector's parameters (client-go's three, plus who we are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectorConfig {
    pub key: String,
    pub lease_duration_ms: u64,
    pub renew_deadline_ms: u64,
    pub retry_period_ms: u64,
    pub holder_id: String,
    pub metadata: String,
}

impl ElectorConfig {
    /// Checks the durations: `0 < retry_period < renew_deadline <
    /// lease_duration`, and the lease duration a valid ttl.
    pub fn validate(&self) -> Result<Grant, Error> {
        let bad = |what: &str| Err(Error::InvalidArgument(what.to_string()));
        if !(MIN_TTL_MS..=MAX_TTL_MS).contains(&self.lease_duration_ms) {
            return bad(&format!(
                "lease-duration-ms {} must be {MIN_TTL_MS} ..= {MAX_TTL_MS}",
                self.lease_duration_ms
            ));
        }
        if self.renew_deadline_ms >= self.lease_duration_ms {
            return bad(&format!(
                "renew-deadline-ms {} must be below lease-duration-ms {}: a leader must step down before its lease can expire",
                self.renew_deadline_ms, self.lease_duration_ms
            ));
        }
        if self.retry_period_ms == 0 || self.retry_period_ms >= self.renew_deadline_ms {
            return bad(&format!(
                "retry-period-ms {} must be above 0 and below renew-deadline-ms {}: a leader must get a renew in before its deadline",
                self.retry_period_ms, self.renew_deadline_ms
            ));
        }
        Grant::new(
            self.lease_duration_ms,
            self.holder_id.clone(),
            self.metadata.clone(),
        )
    }
}

/// Where this elector stands: the leadership machine's role
/// (`s3_lease_keep::leadership`), over the core's lease and lock state.
pub type Role = leadership::Role<Lease, LockState>;

/// Why leadership ended: the leadership machine's.
pub use s3_lease_keep::leadership::StopReason;

/// What changed, in order: the leadership machine's events, over the
/// core's lease and lock state.
pub type Event = leadership::Event<Lease, LockState>;

/// What `step` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub role: Role,
    /// What happened since the last step, in order.
    pub events: Vec<Event>,
    /// When to step next, from now.
    pub next_step_in_ms: u64,
    /// While leading: the monotonic instant (ms, the `Io`'s clock) at which
    /// leadership ends unless a later step renews it. A caller must stop
    /// acting as leader then, whether or not a later step has returned.
    pub leading_until_ms: Option<u64>,
    /// The error of this step's attempt, if it failed (it keeps trying).
    pub last_error: Option<Error>,
}

pub struct Elector {
    config: ElectorConfig,
    grant: Grant,
    client: ClientCore,
    lease: Option<Lease>,
    /// Monotonic time the last successful grant or renew was sent.
    last_ok_sent_ms: u64,
    /// The leader as last seen: (holder, token), for `LeaderChanged`.
    leader_seen: Option<(String, u64)>,
    follower_of: Option<LockState>,
    next_due_ms: u64,
    events: Vec<Event>,
}

impl Elector {
    pub fn new(client: ClientCore, config: ElectorConfig) -> Result<Self, Error> {
        let grant = config.validate()?;
        client.object_key(&config.key)?;
        // A store may take only about one write a second per object: a leader renews
        // every retry period, and every third of its lease at the least.
        client.config.check_ttl(config.lease_duration_ms)?;
        client.config.check_retry_period(config.retry_period_ms)?;
        Ok(Self::with(client, config, grant))
    }

    fn with(client: ClientCore, config: ElectorConfig, grant: Grant) -> Self {
        Elector {
            config,
            grant,
            client,
            lease: None,
            last_ok_sent_ms: 0,
            leader_seen: None,
            follower_of: None,
            next_due_ms: 0,
            events: Vec::new(),
        }
    }

    pub fn client_config(&self) -> &crate::config::ClientConfig {
        &self.client.config
    }

    /// The client it campaigns with (for fenced writes under its lease).
    pub fn client_mut(&mut self) -> &mut ClientCore {
        &mut self.client
    }

    /// Does what is due now (at most one attempt) and reports the role.
    pub async fn step(&mut self, io: &mut impl Io) -> Status {
        let now = io.monotonic_ms();
        self.check_deadline(now);
        let mut last_error = None;
        if now >= self.next_due_ms {
            let sent = now;
            let result = match self.lease.clone() {
                Some(lease) => {
                    let until_ms = Some(self.leading_until());
                    self.renew(&mut Within::new(io, until_ms), lease, sent)
                        .await
                }
                // A grant whose reply comes after the renew deadline it
                // would start is useless: bound the campaign the same way.
                None => {
                    let until_ms = Some(sent.saturating_add(self.config.renew_deadline_ms));
                    self.campaign(&mut Within::new(io, until_ms), sent).await
                }
            };
            last_error = result.err();
            // Whatever happened, the next attempt is a retry period after
            // this one was sent.
            self.next_due_ms = sent.saturating_add(self.config.retry_period_ms);
        }
        let now = io.monotonic_ms();
        self.check_deadline(now);
        self.status(now, last_error)
    }

    /// Releases the lease if it leads, and goes back to following.
    pub async fn resign(&mut self, io: &mut impl Io) -> Result<(), Error> {
        let now = io.monotonic_ms();
        self.check_deadline(now);
        let until_ms = Some(self.leading_until());
        let Some(lease) = self.lease.take() else {
            return Ok(());
        };
        self.events
            .push(Event::StoppedLeading(StopReason::Resigned));
        // Do not take it straight back: let the others in first.
        self.next_due_ms = now.saturating_add(self.config.retry_period_ms);
        // Bounded like a renew: a release still in flight after the
        // deadline would be a leader's request outliving its leadership.
        match self
            .client
            .rewrite(&mut Within::new(io, until_ms), lease, true)
            .await
        {
            Ok(_) | Err(Error::Lost { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The role now, without stepping.
    pub fn role(&self) -> Role {
        match (&self.lease, &self.follower_of) {
            (Some(lease), _) => Role::Leader(lease.clone()),
            (None, Some(s)) if s.live => Role::Follower(Some(s.clone())),
            (None, _) => Role::Candidate,
        }
    }

    fn status(&mut self, now: u64, last_error: Option<Error>) -> Status {
        let mut next = self.next_due_ms.saturating_sub(now);
        let leading_until_ms = self.lease.is_some().then(|| self.leading_until());
        if let Some(until) = leading_until_ms {
            // Wake at the deadline too, to step down on time.
            next = next.min(until.saturating_sub(now));
        }
        Status {
            role: self.role(),
            events: core::mem::take(&mut self.events),
            next_step_in_ms: next,
            leading_until_ms,
            last_error,
        }
    }

    /// The renew deadline: when leadership ends unless renewed first.
    fn leading_until(&self) -> u64 {
        self.last_ok_sent_ms
            .saturating_add(self.config.renew_deadline_ms)
    }

    /// Steps down once the renew deadline passed since the last successful
    /// renew was sent: from then on a contender may take over.
    fn check_deadline(&mut self, now: u64) {
        if self.lease.is_some() && now >= self.leading_until() {
            self.lease = None;
            self.events
                .push(Event::StoppedLeading(StopReason::RenewDeadline));
        }
    }

    async fn campaign(&mut self, io: &mut impl Io, sent: u64) -> Result<(), Error> {
        match self
            .client
            .try_acquire(io, &self.config.key, &self.grant)
            .await
        {
            Ok(AcquireOutcome::Granted(lease)) => {
                self.last_ok_sent_ms = sent;
                self.follower_of = None;
                // `BecameLeader` says it; `LeaderChanged` is for others.
                self.leader_seen = Some((lease.holder_id.clone(), lease.token));
                self.events.push(Event::BecameLeader(lease.clone()));
                self.lease = Some(lease);
                Ok(())
            }
            Ok(AcquireOutcome::Held(Some(seen))) => {
                self.follow(Some(seen));
                Ok(())
            }
            // Lost a race to a write we did not read: someone leads, but
            // who is known only at the next look. Say nothing until then.
            Ok(AcquireOutcome::Held(None)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn renew(&mut self, io: &mut impl Io, lease: Lease, sent: u64) -> Result<(), Error> {
        match self.client.rewrite(io, lease, false).await {
            Ok(renewed) => {
                // A reply after the deadline does not bring leadership
                // back: the caller's watchdog has already ended it (a host
                // that ignores request timeouts can deliver one that late).
                // The renewed lease lapses unused.
                if io.monotonic_ms() >= self.leading_until() {
                    self.check_deadline(u64::MAX);
                } else if self.lease.is_some() {
                    self.last_ok_sent_ms = sent;
                    self.lease = Some(renewed);
                }
                Ok(())
            }
            Err(Error::Lost { current, .. }) => {
                if self.lease.take().is_some() {
                    self.events.push(Event::StoppedLeading(StopReason::Lost));
                }
                self.follow(current.map(|c| *c));
                Ok(())
            }
            // Transient: retry at the next period, until the deadline.
            Err(e) => Err(e),
        }
    }

    fn follow(&mut self, seen: Option<LockState>) {
        let live = seen.as_ref().filter(|s| s.live);
        self.note_leader(
            live.map(|s| (s.record.holder_id.clone(), s.record.token)),
            live.cloned(),
        );
        self.follower_of = seen;
    }

    fn note_leader(&mut self, leader: Option<(String, u64)>, state: Option<LockState>) {
        if leader != self.leader_seen {
            self.leader_seen = leader;
            self.events.push(Event::LeaderChanged(state));
        }
    }
}

#[cfg(test)]
mod tests;
