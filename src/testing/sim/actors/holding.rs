//! Holding a lease as the host does: `s3_lease_keep::guard` says when to
//! renew and until when the lease is held; this drives it on the
//! simulation's time and records what it says as the holder's term.

use super::{expect_fault, fenced_write, judge_lost};
use crate::client::ClientCore;
use crate::error::Error;
use crate::lease::Lease;
use crate::testing::history::{Grant, Rewrite};
use crate::testing::sim::host::SimIo;
use s3_lease_keep::guard::{Attempt, End, Guard, Next, Timing};

/// A lease held under a guard, and the term it is believed in.
pub struct Held {
    pub key: String,
    pub key_index: usize,
    pub lease: Lease,
    pub guard: Guard,
    term: Option<u64>,
}

/// A grant came back now, from an attempt begun at `attempt` (`sent`:
/// the same instant in true time): recorded, and guarded.
pub fn granted(
    io: &mut SimIo,
    key: &str,
    lease: Lease,
    attempt: Attempt,
    sent: u64,
    timing: Timing,
) -> Held {
    guarded(io, key, lease, attempt, sent, timing, true)
}

/// A lapsed lease renewed now by a renew begun at `attempt`: held anew
/// (the same grant, so no grant is recorded).
pub fn revived(io: &mut SimIo, lease: Lease, attempt: Attempt, timing: Timing) -> Held {
    let key = lease.key.clone();
    let sent = io.now();
    guarded(io, &key, lease, attempt, sent, timing, false)
}

fn guarded(
    io: &mut SimIo,
    key: &str,
    lease: Lease,
    attempt: Attempt,
    sent: u64,
    timing: Timing,
    new_grant: bool,
) -> Held {
    let now_mono = crate::driver::Io::monotonic_ms(io);
    let guard = attempt.granted(timing, now_mono);
    let (key_index, term) = io.with(|w, id| {
        let key_index = w.history.key(key).expect("a key of the run");
        if new_grant {
            w.history.grants.push(Grant {
                key: key_index,
                who: w.who(id),
                token: lease.token,
                sent: sent * 1_000,
                acked: w.now * 1_000,
            });
            w.report.grants += 1;
        }
        let term = match guard.held_until(now_mono) {
            Some(until) => {
                let until = w.true_at(id, until);
                Some(w.open_term(id, key_index, lease.token, until))
            }
            None => {
                w.report.grants_never_held += 1;
                None
            }
        };
        (key_index, term)
    });
    Held {
        key: key.to_string(),
        key_index,
        lease,
        guard,
        term,
    }
}

/// How a hold ended.
pub enum Ended {
    /// Its time was up and the guard still held it: the caller gives it
    /// back (or not).
    Due,
    /// The guard said it was lost.
    Lost(End),
}

/// What holding does besides renewing.
pub struct Work<'a> {
    /// Fenced writes under the lease to this key's objects, this often.
    pub fence: Option<(&'a str, u64)>,
}

impl Held {
    /// The guard's claim as a term: extended, or closed once it says no more.
    fn judge(&mut self, io: &mut SimIo, why: &str) {
        let now_mono = crate::driver::Io::monotonic_ms(io);
        let Some(term) = self.term else {
            return;
        };
        match self.guard.held_until(now_mono) {
            Some(until) => io.with(|w, id| {
                let until = w.true_at(id, until);
                w.extend_term(term, until);
            }),
            None => {
                io.with(|w, _| w.close_term(term, why));
                self.term = None;
            }
        }
    }

    pub fn is_held(&self, io: &mut SimIo) -> bool {
        let now_mono = crate::driver::Io::monotonic_ms(io);
        self.guard.is_held(now_mono)
    }

    /// Holds until true time `until`, renewing as the guard says, doing
    /// `work` while it holds.
    pub async fn hold(
        &mut self,
        io: &mut SimIo,
        core: &mut ClientCore,
        until: u64,
        work: Work<'_>,
    ) -> Ended {
        let mut next_write = io.now();
        loop {
            let now_mono = crate::driver::Io::monotonic_ms(io);
            let next = self.guard.poll(now_mono);
            match next {
                Next::Ended(end) => {
                    self.judge(io, "the guard said lost");
                    io.with(|w, _| match end {
                        End::Taken => w.report.lost_taken += 1,
                        _ => w.report.lost_expired += 1,
                    });
                    return Ended::Lost(end);
                }
                Next::Renew => self.renew(io, core).await,
                Next::WakeAt(at) => {
                    let now = io.now();
                    if now >= until {
                        return Ended::Due;
                    }
                    if let Some((key, every)) = work.fence {
                        if now >= next_write && self.is_held(io) {
                            let lease = self.lease.clone();
                            fenced_write(io, core, key, &lease, false).await;
                            next_write = io.now() + every;
                            continue;
                        }
                    }
                    let wake = io.with(|w, id| w.true_at(id, at));
                    let mut next = wake.min(until);
                    if work.fence.is_some() {
                        next = next.min(next_write.max(now + 1));
                    }
                    io.sleep_until(next.max(now + 1)).await;
                }
            }
        }
    }

    async fn renew(&mut self, io: &mut SimIo, core: &mut ClientCore) {
        let sent = io.now();
        let result = core.rewrite(io, self.lease.clone(), false).await;
        let now_mono = crate::driver::Io::monotonic_ms(io);
        match result {
            Ok(renewed) => {
                self.guard.renewed(now_mono);
                record_rewrite(io, self.key_index, &self.lease, sent, false, None);
                if self.guard.is_held(now_mono) {
                    self.lease = renewed;
                }
                io.with(|w, _| w.report.renewals += 1);
            }
            Err(e @ Error::Lost { .. }) => {
                judge_lost(io, "a renew", &self.lease, &e);
                self.guard.renew_refused(now_mono)
            }
            Err(e) => {
                expect_fault(io, "a renew", &e);
                self.guard.renew_failed(now_mono, e.is_transient());
            }
        }
        self.judge(io, "renewed");
    }

    /// Stops holding now (its believer stops believing as it sends a
    /// release, or gives the lease up); true if it was still held.
    pub fn stop(&mut self, io: &mut SimIo, why: &str) -> bool {
        let now_mono = crate::driver::Io::monotonic_ms(io);
        let held = self.guard.stop(now_mono);
        self.judge(io, why);
        held
    }

    /// Gives the lease back; the lease it released, if the release succeeded.
    pub async fn release(mut self, io: &mut SimIo, core: &mut ClientCore) -> Option<Lease> {
        if !self.stop(io, "released") {
            return None;
        }
        let sent = io.now();
        match core.rewrite(io, self.lease.clone(), true).await {
            Ok(_) => {
                record_rewrite(io, self.key_index, &self.lease, sent, true, None);
                io.with(|w, _| w.report.releases += 1);
                Some(self.lease)
            }
            Err(e @ Error::Lost { .. }) => {
                judge_lost(io, "a release", &self.lease, &e);
                None
            }
            Err(e) => {
                expect_fault(io, "a release", &e);
                None
            }
        }
    }
}

/// A renew or release of `lease` sent at `sent` succeeded.
pub fn record_rewrite(
    io: &SimIo,
    key: usize,
    lease: &Lease,
    sent: u64,
    release: bool,
    spent: Option<&'static str>,
) {
    io.with(|w, id| {
        let who = w.who(id);
        w.history.rewrites.push(Rewrite {
            key,
            who,
            token: lease.token,
            sent: sent * 1_000,
            release,
            spent,
        })
    });
}

/// Tries a spent lease again (renew or release): it must fail.
pub async fn try_spent(io: &mut SimIo, core: &mut ClientCore, lease: &Lease, why: &'static str) {
    let release = io.with(|w, _| w.rng.chance(0.5));
    let sent = io.now();
    let key = io
        .with(|w, _| w.history.key(&lease.key))
        .expect("a key of the run");
    match core.rewrite(io, lease.clone(), release).await {
        Ok(_) => record_rewrite(io, key, lease, sent, release, Some(why)),
        Err(e @ Error::Lost { .. }) => {
            judge_lost(io, "a spent lease's rewrite", lease, &e);
            io.with(|w, _| w.report.spent_refused += 1)
        }
        Err(e) => expect_fault(io, "a spent lease's rewrite", &e),
    }
}
