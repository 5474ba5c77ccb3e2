//! The dead-man's switch that ends a supervised command when its lock's
//! deadline passes, whatever the supervisor is doing.
//!
//! A command line that runs a command under a lock (`s3-lease run`) stops
//! the command when the lock is lost. But the supervisor itself can stop
//! (SIGSTOP, a terminal's Ctrl-Z), starve or wedge; then nothing would
//! stop the command, which runs on while another holder is granted the
//! lock. So a second process (the guardian) holds this switch. The
//! supervisor feeds it each new deadline, until when the lock is surely
//! held; the guardian acts on its own clock: at the deadline it ends the
//! command's group (SIGTERM, then SIGKILL `kill_after` later, as the
//! supervisor does on loss), unless a later deadline was fed first. A
//! supervisor that cannot run cannot feed it, so it cannot extend it; once
//! the deadline has passed, no later feed undoes the ending.
//!
//! If the supervisor is gone (its end of the pipe closed, however it
//! died), the switch ends the group at once with SIGKILL; if it says the
//! group is gone on its own, the switch is released and kills nothing.
//!
//! Times are milliseconds on one clock the supervisor and the guardian
//! both read (the system's, counting the time the machine spent
//! suspended), so a deadline means the same instant to both, however late
//! the guardian reads it, and one passed while the machine slept has
//! passed when it resumes.
//!
//! Acting never waits on saying: the switch's SIGTERM at a deadline comes
//! first, and why it came is said only later ([`Act::Explain`]), once the
//! supervisor has had time to say it is ending the group itself. A
//! supervisor that runs sees the same deadline pass within its next look
//! (a network cut: its renews failed or hung) and says why itself; one
//! that cannot act (stopped, starved) says nothing, and the guardian says
//! so.

/// How long after a missed deadline the switch waits for the supervisor
/// to say it is ending the group itself before it explains the SIGTERM
/// it sent (the supervisor looks every few tens of milliseconds: twenty
/// looks, and within most kill-after graces, so that the explanation
/// comes before the SIGKILL's line).
pub const EXPLAIN_AFTER_MS: u64 = 500;

/// What the guardian does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Nothing until this instant, or until the supervisor says something
    /// (`None`: only the supervisor can change anything).
    SleepUntil(Option<u64>),
    /// Send SIGTERM to the group now (and SIGCONT, so a stopped member
    /// sees it). Why: [`Switch::why`].
    Terminate,
    /// Send SIGKILL to the group now.
    Kill,
    /// Say why the group was sent SIGTERM at the deadline: the supervisor,
    /// which would have said so itself, did not act (stopped, starved).
    /// Returned once, and only after any signal due at the same instant.
    Explain,
    /// Nothing is left to do: exit.
    Exit,
}

/// Why the group is being ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// The deadline passed without a later one fed.
    Deadline,
    /// The supervisor is gone.
    SupervisorGone,
    /// The supervisor lost the lock and sent SIGTERM itself.
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No deadline fed yet: only the supervisor's end can act.
    Unarmed,
    /// Held until this instant (exclusive).
    Armed { until: u64 },
    /// SIGTERM sent; SIGKILL at `kill_at` unless released first.
    Terminating { kill_at: u64 },
    /// SIGKILL due now, then waiting for the supervisor's word or end.
    KillDue { then_exit: bool },
    /// SIGKILL sent; nothing more to send.
    Killed,
    /// Nothing more to do.
    Over,
}

/// The switch: see the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switch {
    kill_after_ms: u64,
    state: State,
    why: Option<Why>,
    /// When to explain a SIGTERM sent at a missed deadline, unless the
    /// supervisor speaks first.
    explain_at: Option<u64>,
}

impl Switch {
    /// A switch that escalates to SIGKILL `kill_after_ms` after the
    /// deadline. It is unarmed until the first deadline is fed.
    pub fn new(kill_after_ms: u64) -> Switch {
        Switch {
            kill_after_ms,
            state: State::Unarmed,
            why: None,
            explain_at: None,
        }
    }

    /// The supervisor says the lock is held until `until_ms` (it may be
    /// earlier than the last one: the latest word counts). Ignored once
    /// the group is being ended: a deadline that has passed is never
    /// extended.
    pub fn held_until(&mut self, now_ms: u64, until_ms: u64) {
        match self.state {
            State::Unarmed => self.state = State::Armed { until: until_ms },
            State::Armed { until } if now_ms < until => {
                self.state = State::Armed { until: until_ms }
            }
            // Passed but not polled yet: too late all the same.
            _ => {}
        }
    }

    /// The supervisor lost the lock and sent the group SIGTERM itself at
    /// `at_ms`: no SIGTERM from the switch, but SIGKILL at the end of the
    /// grace counted from then, in case the supervisor cannot send it.
    pub fn supervisor_ends(&mut self, now_ms: u64, at_ms: u64) {
        // It acts, and says why itself.
        self.explain_at = None;
        let kill_at = at_ms.min(now_ms).saturating_add(self.kill_after_ms);
        match self.state {
            State::Unarmed | State::Armed { .. } => {
                self.why.get_or_insert(Why::Lost);
                self.state = State::Terminating { kill_at };
            }
            State::Terminating { kill_at: due } => {
                self.state = State::Terminating {
                    kill_at: due.min(kill_at),
                }
            }
            State::KillDue { .. } | State::Killed | State::Over => {}
        }
    }

    /// The supervisor says the group is gone on its own: nothing to kill.
    pub fn released(&mut self) {
        self.state = State::Over;
        self.explain_at = None;
    }

    /// The supervisor is gone (its pipe closed): SIGKILL the group at once
    /// (unless it said the group was gone, or it was killed already), then
    /// exit.
    pub fn supervisor_gone(&mut self) {
        // The SIGKILL's own line says why.
        self.explain_at = None;
        self.state = match self.state {
            State::Over | State::Killed => State::Over,
            State::KillDue { .. } => State::KillDue { then_exit: true },
            State::Unarmed | State::Armed { .. } | State::Terminating { .. } => {
                self.why.get_or_insert(Why::SupervisorGone);
                State::KillDue { then_exit: true }
            }
        };
    }

    /// Why the group is being ended, once it is.
    pub fn why(&self) -> Option<Why> {
        self.why
    }

    /// What to do at `now_ms`. `Terminate`, `Kill` and `Explain` are
    /// returned once each: the caller does it, then polls again.
    pub fn poll(&mut self, now_ms: u64) -> Act {
        match self.signal(now_ms) {
            Act::SleepUntil(wake) => match self.explain_at {
                Some(at) if now_ms >= at => {
                    self.explain_at = None;
                    Act::Explain
                }
                Some(at) => Act::SleepUntil(Some(wake.map_or(at, |wake| wake.min(at)))),
                None => Act::SleepUntil(wake),
            },
            act => act,
        }
    }

    /// The signal due at `now_ms`, or until when nothing is.
    fn signal(&mut self, now_ms: u64) -> Act {
        match self.state {
            State::Unarmed | State::Killed => Act::SleepUntil(None),
            State::Armed { until } if now_ms >= until => {
                self.why = Some(Why::Deadline);
                self.explain_at = Some(until.saturating_add(EXPLAIN_AFTER_MS));
                // Counted from the deadline, not from now: a guardian
                // that woke late does not extend the command's grace.
                self.state = State::Terminating {
                    kill_at: until.saturating_add(self.kill_after_ms),
                };
                Act::Terminate
            }
            State::Armed { until } => Act::SleepUntil(Some(until)),
            State::Terminating { kill_at } if now_ms >= kill_at => {
                self.state = State::Killed;
                Act::Kill
            }
            State::Terminating { kill_at } => Act::SleepUntil(Some(kill_at)),
            State::KillDue { then_exit } => {
                self.state = if then_exit {
                    State::Over
                } else {
                    State::Killed
                };
                Act::Kill
            }
            State::Over => Act::Exit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KILL_AFTER: u64 = 1_000;

    /// Polls at `now` until the switch sleeps or exits; the signals sent.
    fn acts(switch: &mut Switch, now: u64) -> (Vec<Act>, Act) {
        let mut sent = Vec::new();
        loop {
            match switch.poll(now) {
                act @ (Act::Terminate | Act::Kill | Act::Explain) => sent.push(act),
                other => return (sent, other),
            }
        }
    }

    #[test]
    fn fed_deadlines_keep_it_quiet() {
        let mut s = Switch::new(KILL_AFTER);
        assert_eq!(acts(&mut s, 0), (vec![], Act::SleepUntil(None)));
        s.held_until(0, 2_000);
        assert_eq!(acts(&mut s, 0), (vec![], Act::SleepUntil(Some(2_000))));
        s.held_until(1_500, 3_500);
        assert_eq!(acts(&mut s, 1_999), (vec![], Act::SleepUntil(Some(3_500))));
        s.released();
        assert_eq!(acts(&mut s, 10_000), (vec![], Act::Exit));
        assert_eq!(s.why(), None);
    }

    #[test]
    fn a_stopped_supervisor_cannot_extend_it() {
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 2_000);
        // The supervisor stops: no feed. At the deadline, SIGTERM; the
        // kill-after grace later, SIGKILL.
        assert_eq!(acts(&mut s, 1_999), (vec![], Act::SleepUntil(Some(2_000))));
        assert_eq!(
            acts(&mut s, 2_000),
            (vec![Act::Terminate], Act::SleepUntil(Some(2_500)))
        );
        assert_eq!(s.why(), Some(Why::Deadline));
        // It said nothing of ending the group: the switch explains its
        // SIGTERM.
        assert_eq!(
            acts(&mut s, 2_500),
            (vec![Act::Explain], Act::SleepUntil(Some(3_000)))
        );
        // Resumed, it feeds a deadline it renewed before it stopped: too late.
        s.held_until(2_600, 9_000);
        assert_eq!(acts(&mut s, 2_600), (vec![], Act::SleepUntil(Some(3_000))));
        assert_eq!(
            acts(&mut s, 3_000),
            (vec![Act::Kill], Act::SleepUntil(None))
        );
        // It then says the group is gone, or goes: either way, exit.
        s.released();
        assert_eq!(acts(&mut s, 3_100), (vec![], Act::Exit));
    }

    #[test]
    fn a_feed_that_arrives_after_the_deadline_is_too_late() {
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 2_000);
        // Written before the deadline, read after it (a starved guardian).
        s.held_until(2_400, 5_000);
        assert_eq!(
            acts(&mut s, 2_400),
            (vec![Act::Terminate], Act::SleepUntil(Some(2_500)))
        );
    }

    #[test]
    fn a_late_wake_does_not_extend_the_grace() {
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 2_000);
        // The guardian wakes 5 s late: SIGTERM and SIGKILL both due, and
        // the explanation after them.
        assert_eq!(
            acts(&mut s, 7_000),
            (
                vec![Act::Terminate, Act::Kill, Act::Explain],
                Act::SleepUntil(None)
            )
        );
    }

    #[test]
    fn a_lost_lock_is_fed_as_a_deadline_now() {
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 5_000);
        s.held_until(1_200, 1_200);
        assert_eq!(
            acts(&mut s, 1_200),
            (vec![Act::Terminate], Act::SleepUntil(Some(1_700)))
        );
        // The group ends within the grace: released, nothing killed.
        s.released();
        assert_eq!(acts(&mut s, 1_500), (vec![], Act::Exit));
    }

    #[test]
    fn a_supervisor_that_ends_the_group_itself_gets_a_sigkill_backstop() {
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 5_000);
        // Lost at 1.2 s: the supervisor sent SIGTERM; the switch does not.
        s.supervisor_ends(1_250, 1_200);
        assert_eq!(acts(&mut s, 1_250), (vec![], Act::SleepUntil(Some(2_200))));
        assert_eq!(s.why(), Some(Why::Lost));
        // The supervisor then stops: SIGKILL at the end of the grace.
        assert_eq!(
            acts(&mut s, 2_200),
            (vec![Act::Kill], Act::SleepUntil(None))
        );
        // Ending once the switch's own SIGTERM went keeps the earlier kill.
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 100);
        assert_eq!(acts(&mut s, 100).0, vec![Act::Terminate]);
        s.supervisor_ends(600, 600);
        assert_eq!(acts(&mut s, 600), (vec![], Act::SleepUntil(Some(1_100))));
        assert_eq!(s.why(), Some(Why::Deadline));
    }

    #[test]
    fn a_gone_supervisor_means_sigkill_at_once() {
        for fed in [false, true] {
            let mut s = Switch::new(KILL_AFTER);
            if fed {
                s.held_until(0, 60_000);
            }
            s.supervisor_gone();
            assert_eq!(acts(&mut s, 10), (vec![Act::Kill], Act::Exit));
            assert_eq!(s.why(), Some(Why::SupervisorGone));
        }
        // Gone while terminating: SIGKILL without waiting for the grace.
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 100);
        assert_eq!(acts(&mut s, 100).0, vec![Act::Terminate]);
        s.supervisor_gone();
        assert_eq!(acts(&mut s, 150), (vec![Act::Kill], Act::Exit));
        assert_eq!(s.why(), Some(Why::Deadline));
        // Gone after saying the group was gone, or after the kill: no kill.
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 100);
        s.released();
        s.supervisor_gone();
        assert_eq!(acts(&mut s, 10), (vec![], Act::Exit));
        let mut s = Switch::new(KILL_AFTER);
        s.held_until(0, 100);
        assert_eq!(
            acts(&mut s, 5_000).0,
            vec![Act::Terminate, Act::Kill, Act::Explain]
        );
        s.supervisor_gone();
        assert_eq!(acts(&mut s, 5_001), (vec![], Act::Exit));
    }

    #[test]
    fn extreme_times_saturate() {
        let mut s = Switch::new(u64::MAX);
        s.held_until(0, u64::MAX - 1);
        assert_eq!(
            acts(&mut s, u64::MAX - 1),
            (vec![Act::Terminate], Act::SleepUntil(Some(u64::MAX)))
        );
        assert_eq!(
            acts(&mut s, u64::MAX),
            (vec![Act::Kill, Act::Explain], Act::SleepUntil(None))
        );
    }

    #[test]
    fn a_sigterm_at_the_deadline_is_explained_only_if_the_supervisor_says_nothing() {
        const LONG_GRACE: u64 = 10_000;
        // Silent (stopped, starved): SIGTERM at the deadline, the
        // explanation EXPLAIN_AFTER_MS later, SIGKILL at the grace's end.
        let mut s = Switch::new(LONG_GRACE);
        s.held_until(0, 2_000);
        assert_eq!(
            acts(&mut s, 2_000),
            (
                vec![Act::Terminate],
                Act::SleepUntil(Some(2_000 + EXPLAIN_AFTER_MS))
            )
        );
        assert_eq!(
            acts(&mut s, 2_000 + EXPLAIN_AFTER_MS),
            (vec![Act::Explain], Act::SleepUntil(Some(12_000)))
        );
        assert_eq!(
            acts(&mut s, 12_000),
            (vec![Act::Kill], Act::SleepUntil(None))
        );
        // A supervisor that runs (its renews failed or hung) saw the same
        // deadline and ends the group itself: it says why, not the switch.
        let mut s = Switch::new(LONG_GRACE);
        s.held_until(0, 2_000);
        assert_eq!(acts(&mut s, 2_000).0, vec![Act::Terminate]);
        s.supervisor_ends(2_030, 2_025);
        assert_eq!(acts(&mut s, 2_030), (vec![], Act::SleepUntil(Some(12_000))));
        assert_eq!(
            acts(&mut s, 12_000),
            (vec![Act::Kill], Act::SleepUntil(None))
        );
        // Or it finds the group already gone: it says why, and releases.
        let mut s = Switch::new(LONG_GRACE);
        s.held_until(0, 2_000);
        assert_eq!(acts(&mut s, 2_000).0, vec![Act::Terminate]);
        s.released();
        assert_eq!(acts(&mut s, 2_000 + EXPLAIN_AFTER_MS), (vec![], Act::Exit));
        // A supervisor gone: the SIGKILL's own line says why.
        let mut s = Switch::new(LONG_GRACE);
        s.held_until(0, 2_000);
        assert_eq!(acts(&mut s, 2_000).0, vec![Act::Terminate]);
        s.supervisor_gone();
        assert_eq!(
            acts(&mut s, 2_000 + EXPLAIN_AFTER_MS),
            (vec![Act::Kill], Act::Exit)
        );
        // A loss the supervisor found itself is never explained.
        let mut s = Switch::new(LONG_GRACE);
        s.held_until(0, 2_000);
        s.supervisor_ends(1_000, 1_000);
        assert_eq!(acts(&mut s, 5_000), (vec![], Act::SleepUntil(Some(11_000))));
    }

    /// A week on virtual time: a supervisor renews every second and feeds
    /// each new deadline (3 s on), but now and then it is stopped, for
    /// less or more than what is left of its deadline. The guardian, which
    /// only sleeps and polls, must end the group exactly at the last
    /// deadline fed whenever a stop outlasts it, and never otherwise.
    #[test]
    fn a_week_of_renews_and_stops() {
        const RENEW_EVERY: u64 = 1_000;
        const DEADLINE: u64 = 3_000;
        const WEEK: u64 = 7 * 24 * 3_600 * 1_000;
        let mut random = 0x2545_f491_4f6c_dd1du64;
        let mut next_random = move || {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            random
        };
        let (mut terms, mut kills, mut stops, mut long_stops) = (0u64, 0u64, 0u64, 0u64);
        let mut now = 0;
        while now < WEEK {
            // One term: the group starts, fed at once.
            let mut s = Switch::new(KILL_AFTER);
            let mut fed_until = now + DEADLINE;
            s.held_until(now, fed_until);
            let mut supervisor_wakes = now + RENEW_EVERY;
            loop {
                let guardian_wakes = match s.poll(now) {
                    Act::SleepUntil(Some(at)) => at,
                    Act::Terminate => {
                        // Only ever at the last deadline fed, which the
                        // supervisor missed.
                        assert_eq!(now, fed_until, "SIGTERM off the deadline");
                        assert!(supervisor_wakes >= fed_until);
                        terms += 1;
                        // Resumed, it finds the lock lost and only waits.
                        supervisor_wakes = u64::MAX;
                        continue;
                    }
                    Act::Explain => {
                        // Only after a SIGTERM at a missed deadline, and
                        // only once the supervisor had time to speak.
                        assert!(now >= fed_until + EXPLAIN_AFTER_MS);
                        continue;
                    }
                    Act::Kill => {
                        assert_eq!(now, fed_until + KILL_AFTER);
                        kills += 1;
                        break;
                    }
                    other => panic!("unexpected {other:?} at {now}"),
                };
                assert!(guardian_wakes > now, "a guardian that spins");
                if supervisor_wakes < guardian_wakes {
                    now = supervisor_wakes;
                    // A renew, sent now: held until `DEADLINE` from now.
                    fed_until = now + DEADLINE;
                    s.held_until(now, fed_until);
                    supervisor_wakes = now + RENEW_EVERY;
                    match next_random() % 100 {
                        // Stopped (Ctrl-Z, SIGSTOP, starved) for a while.
                        0..=4 => {
                            let stop = 500 + next_random() % 8_000;
                            stops += 1;
                            if stop >= DEADLINE {
                                long_stops += 1;
                            }
                            supervisor_wakes = now + stop;
                        }
                        // The term ends on its own.
                        5 => {
                            s.released();
                            assert_eq!(s.poll(now), Act::Exit);
                            break;
                        }
                        _ => {}
                    }
                } else {
                    now = guardian_wakes;
                }
            }
            now += 1;
        }
        // Every stop that outlasted the deadline ended its term with
        // SIGTERM then SIGKILL; no other did.
        assert_eq!(terms, long_stops, "{stops} stops");
        assert_eq!(kills, long_stops);
        assert!(long_stops > 1_000, "{long_stops} long stops");
    }
}
