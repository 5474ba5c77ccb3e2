//! Leadership as a host must judge it, whatever its elector's step is doing.
//!
//! A step of the component's elector can block for as long as its requests
//! take, and a host or a network may not honour their timeouts. So
//! leadership is judged here, from the instant the last step said it holds
//! until (`leading_until_ms`), never from whichever step returned last: at
//! that instant [`Leadership::check`] ends it with
//! `StoppedLeading(RenewDeadline)` and the role stops saying leader,
//! whether or not the step has returned. A step that returns after its own
//! deadline is not leadership; a renew confirmed after the watchdog ended a
//! term starts a new term, said as one.
//!
//! Generic over the lease `L` and the lock state `S` a step reports, so
//! the host (the component's generated types) and the simulation (the
//! core's) drive the same machine.

use alloc::vec::Vec;

/// Where an elector stands, as the host reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role<L, S> {
    /// It leads with this lease.
    Leader(L),
    /// Someone else leads (when known: the state last read).
    Follower(Option<S>),
    /// Nobody is known to lead, or the last attempt failed.
    Candidate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The renew deadline passed without a successful renew.
    RenewDeadline,
    /// A renew found the lease taken or gone.
    Lost,
    /// It resigned (or stopped campaigning).
    Resigned,
}

/// What changed, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<L, S> {
    BecameLeader(L),
    StoppedLeading(StopReason),
    /// The leader as last seen changed; `None`: nobody.
    LeaderChanged(Option<S>),
}

/// What one step of the elector reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step<L, S> {
    pub role: Role<L, S>,
    pub events: Vec<Event<L, S>>,
    /// While leading: the instant (the driver's monotonic clock, ms)
    /// leadership ends unless a later step renews it.
    pub leading_until_ms: Option<u64>,
    /// When to step next, from the step's return.
    pub next_step_in_ms: u64,
}

/// One elector's leadership, judged on the driver's clock: see the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leadership<L, S> {
    role: Role<L, S>,
    /// While it leads: when leadership ends unless a step renews it first.
    /// `None` exactly when it has been reported not leading.
    leading_until: Option<u64>,
    next_step_at: u64,
}

impl<L: Clone, S: Clone> Leadership<L, S> {
    /// A candidate whose first step is due at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Leadership {
            role: Role::Candidate,
            leading_until: None,
            next_step_at: now_ms,
        }
    }

    /// The watchdog: ends leadership once its deadline has passed, and
    /// says so (once).
    pub fn check(&mut self, now_ms: u64) -> Option<Event<L, S>> {
        match self.leading_until {
            Some(until) if now_ms >= until => self.stop(StopReason::RenewDeadline),
            _ => None,
        }
    }

    /// The role at `now_ms`: as of the last step, except that leadership
    /// ends at its deadline even while a step is still under way. Call
    /// [`Leadership::check`] first to collect the event that ends it.
    pub fn role(&self, now_ms: u64) -> Role<L, S> {
        match (&self.role, self.leading_until) {
            (Role::Leader(_), until) if until.is_none_or(|until| now_ms >= until) => {
                Role::Candidate
            }
            (role, _) => role.clone(),
        }
    }

    /// While leading at `now_ms`: the instant leadership ends unless renewed first.
    pub fn leading_until(&self, now_ms: u64) -> Option<u64> {
        self.leading_until.filter(|&until| now_ms < until)
    }

    pub fn is_leading(&self, now_ms: u64) -> bool {
        self.leading_until(now_ms).is_some()
    }

    /// When the next step is due.
    pub fn next_step_at(&self) -> u64 {
        self.next_step_at
    }

    /// The next instant a driver must act at: the next step, or the end
    /// of leadership if that comes first.
    pub fn wake_at(&self) -> u64 {
        match self.leading_until {
            Some(until) => until.min(self.next_step_at),
            None => self.next_step_at,
        }
    }

    /// Step again at once (new credentials went in after the store
    /// refused the old ones: still within the deadline the step bounds
    /// itself by).
    pub fn step_now(&mut self, now_ms: u64) {
        self.next_step_at = now_ms;
    }

    /// Leadership ended (if it had not already): the event that says so, once.
    pub fn stop(&mut self, reason: StopReason) -> Option<Event<L, S>> {
        if matches!(self.role, Role::Leader(_)) {
            self.role = Role::Candidate;
        }
        self.leading_until
            .take()
            .map(|_| Event::StoppedLeading(reason))
    }

    /// Takes in what a step returned at `now_ms`: the component's events
    /// in order, except that leadership is reported only while its
    /// deadline is ahead, and ended once (by the step or by the watchdog,
    /// whichever saw it first). Returns the events to report.
    pub fn apply(&mut self, step: Step<L, S>, now_ms: u64) -> Vec<Event<L, S>> {
        let until = step.leading_until_ms.filter(|&until| until > now_ms);
        self.next_step_at = now_ms.saturating_add(step.next_step_in_ms);
        let mut out = Vec::new();
        for event in step.events {
            match event {
                Event::BecameLeader(lease) => {
                    if self.leading_until.is_none() && until.is_some() {
                        self.leading_until = until;
                        out.push(Event::BecameLeader(lease));
                    }
                }
                Event::StoppedLeading(reason) => out.extend(self.stop(reason)),
                Event::LeaderChanged(seen) => out.push(Event::LeaderChanged(seen)),
            }
        }
        match (step.role, until) {
            (Role::Leader(lease), Some(until)) => {
                if self.leading_until.is_none() {
                    // The watchdog ended this term, then a renew sent before
                    // the deadline was confirmed: a new term, said as one.
                    out.push(Event::BecameLeader(lease.clone()));
                }
                self.leading_until = Some(until);
                self.role = Role::Leader(lease);
            }
            // The step returned after its own deadline (or not as leader).
            (role, _) => {
                out.extend(self.stop(StopReason::RenewDeadline));
                self.role = match role {
                    Role::Leader(_) => Role::Candidate,
                    other => other,
                };
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    type L = Leadership<u64, &'static str>;

    fn step(
        role: Role<u64, &'static str>,
        events: Vec<Event<u64, &'static str>>,
        until: Option<u64>,
    ) -> Step<u64, &'static str> {
        Step {
            role,
            events,
            leading_until_ms: until,
            next_step_in_ms: 100,
        }
    }

    #[test]
    fn leadership_is_reported_until_its_deadline_and_ended_once() {
        let mut l = L::new(0);
        let won = step(Role::Leader(1), vec![Event::BecameLeader(1)], Some(5_000));
        assert_eq!(l.apply(won, 0), vec![Event::BecameLeader(1)]);
        assert_eq!(l.next_step_at(), 100);
        assert_eq!(l.check(4_999), None);
        assert_eq!(l.role(4_999), Role::Leader(1));
        // The watchdog, at the deadline, while the next step is blocked.
        assert_eq!(l.role(5_000), Role::Candidate);
        assert_eq!(
            l.check(5_000),
            Some(Event::StoppedLeading(StopReason::RenewDeadline))
        );
        // The blocked step returns: the component steps down too; not said twice.
        let late = step(
            Role::Candidate,
            vec![Event::StoppedLeading(StopReason::RenewDeadline)],
            None,
        );
        assert_eq!(l.apply(late, 25_000), vec![]);
    }

    #[test]
    fn a_step_that_returns_after_its_own_deadline_is_not_leadership() {
        let mut l = L::new(0);
        let won = step(Role::Leader(1), vec![Event::BecameLeader(1)], Some(100));
        assert_eq!(l.apply(won, 101), vec![]);
        assert_eq!(l.role(101), Role::Candidate);
        assert_eq!(l.leading_until(101), None);
    }

    #[test]
    fn a_renew_confirmed_after_the_watchdog_fired_is_a_new_term() {
        let mut l = L::new(0);
        l.apply(
            step(Role::Leader(1), vec![Event::BecameLeader(1)], Some(50)),
            0,
        );
        assert!(l.check(51).is_some());
        let renewed = step(Role::Leader(1), vec![], Some(9_000));
        assert_eq!(l.apply(renewed, 52), vec![Event::BecameLeader(1)]);
        assert_eq!(l.role(52), Role::Leader(1));
    }

    #[test]
    fn wakes_for_the_next_step_or_the_deadline_whichever_is_first() {
        let mut l = L::new(7);
        assert_eq!(l.wake_at(), 7);
        let won = Step {
            next_step_in_ms: 1_000,
            ..step(Role::Leader(1), vec![Event::BecameLeader(1)], Some(600))
        };
        l.apply(won, 10);
        assert_eq!(l.wake_at(), 600);
        l.step_now(20);
        assert_eq!(l.wake_at(), 20);
    }
}
