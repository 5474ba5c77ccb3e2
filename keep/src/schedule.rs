//! When a driver looks next at each of many held leases: one entry per
//! lease, however often it is rescheduled.
//!
//! A host keeps all its leases on one scheduler: it sleeps until the
//! earliest entry is due, takes out what is due, asks each lease's guard
//! (`crate::guard`) what to do, and puts the lease back at the instant the
//! guard names (or takes it out for good). Rescheduling a lease replaces
//! its entry, so the schedule holds exactly one entry per lease it keeps,
//! and the work of a step is the same after a week of renews as after the
//! first: memory and work per renew stay flat in the time a lease is held.
//!
//! Leases are named by a `u64` the driver chooses (unique among those it
//! keeps). Times are milliseconds on the driver's monotonic clock; none is
//! read here.

use alloc::collections::{BTreeMap, BTreeSet};

/// The schedule: see the module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    /// `(due, lease)`, earliest first; ties by lease, so the order is total.
    by_due: BTreeSet<(u64, u64)>,
    /// Each lease's one entry: its due time in `by_due`.
    due_of: BTreeMap<u64, u64>,
    /// Entries handed out as due since the start (each is one lease looked at).
    steps: u64,
}

impl Schedule {
    pub fn new() -> Schedule {
        Schedule::default()
    }

    /// Looks at `lease` at `at_ms`, replacing the time it had, if any.
    pub fn set(&mut self, lease: u64, at_ms: u64) {
        if let Some(old) = self.due_of.insert(lease, at_ms) {
            self.by_due.remove(&(old, lease));
        }
        self.by_due.insert((at_ms, lease));
    }

    /// Looks at `lease` no more; true if it had an entry.
    pub fn remove(&mut self, lease: u64) -> bool {
        match self.due_of.remove(&lease) {
            Some(at) => self.by_due.remove(&(at, lease)),
            None => false,
        }
    }

    /// When `lease` is looked at next, if it is scheduled.
    pub fn due_of(&self, lease: u64) -> Option<u64> {
        self.due_of.get(&lease).copied()
    }

    /// The earliest instant any lease is due: when the driver wakes next
    /// (`None`: nothing scheduled, sleep until a lease comes in).
    pub fn next_wake(&self) -> Option<u64> {
        self.by_due.first().map(|&(at, _)| at)
    }

    /// Takes out the earliest lease due at `now_ms`, if any. It has no
    /// entry until the driver sets it again (after asking its guard) or
    /// lets it go, so call this in a loop until `None`, handling each.
    pub fn pop_due(&mut self, now_ms: u64) -> Option<u64> {
        let &(at, lease) = self.by_due.first()?;
        if at > now_ms {
            return None;
        }
        self.by_due.remove(&(at, lease));
        self.due_of.remove(&lease);
        self.steps += 1;
        Some(lease)
    }

    /// How many leases are scheduled (one entry each).
    pub fn len(&self) -> usize {
        self.due_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.due_of.is_empty()
    }

    /// How many entries were handed out as due since the start: the
    /// scheduler's work, to compare with the renews it led to.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescheduling_replaces_the_entry_so_entries_equal_leases() {
        let mut s = Schedule::new();
        for lease in 0..20 {
            s.set(lease, 1_000);
        }
        // Many renews' worth of rescheduling, some earlier, some later.
        for round in 0..1_000u64 {
            for lease in 0..20 {
                s.set(lease, 1_000 + (round * 7 + lease * 13) % 500);
            }
            assert_eq!(s.len(), 20);
            assert_eq!(s.by_due.len(), 20);
        }
    }

    #[test]
    fn due_leases_come_out_earliest_first_and_only_when_due() {
        let mut s = Schedule::new();
        s.set(1, 300);
        s.set(2, 100);
        s.set(3, 200);
        s.set(4, 200);
        assert_eq!(s.next_wake(), Some(100));
        assert_eq!(s.pop_due(99), None);
        assert_eq!(s.pop_due(250), Some(2));
        assert_eq!(s.pop_due(250), Some(3));
        assert_eq!(s.pop_due(250), Some(4));
        assert_eq!(s.pop_due(250), None);
        assert_eq!(s.next_wake(), Some(300));
        assert_eq!(s.len(), 1);
        assert_eq!(s.steps(), 3);
    }

    #[test]
    fn a_lease_rescheduled_later_is_not_due_at_its_old_time() {
        let mut s = Schedule::new();
        s.set(7, 100);
        s.set(7, 900);
        assert_eq!(s.pop_due(500), None);
        assert_eq!(s.due_of(7), Some(900));
        s.set(7, 50);
        assert_eq!(s.pop_due(60), Some(7));
        assert!(s.is_empty());
    }

    #[test]
    fn a_removed_lease_is_never_due() {
        let mut s = Schedule::new();
        s.set(1, 10);
        s.set(2, 20);
        assert!(s.remove(1));
        assert!(!s.remove(1));
        assert_eq!(s.pop_due(u64::MAX), Some(2));
        assert_eq!(s.pop_due(u64::MAX), None);
        assert_eq!((s.len(), s.next_wake()), (0, None));
    }

    #[test]
    fn times_at_the_end_of_the_clock_are_kept_in_order() {
        let mut s = Schedule::new();
        s.set(1, u64::MAX);
        s.set(2, u64::MAX - 1);
        assert_eq!(s.pop_due(u64::MAX - 1), Some(2));
        assert_eq!(s.pop_due(u64::MAX - 1), None);
        assert_eq!(s.pop_due(u64::MAX), Some(1));
    }
}
