//! A process that campaigns for the leader key as the host does: it steps
//! the component's elector when the last step said to, and believes it
//! leads exactly while `s3_lease_keep::leadership` says so (the host's
//! watchdog: leadership ends at its deadline whether or not a step has
//! returned). While leading it writes fenced objects; now and then it
//! resigns; after a pause, it may write once with the lease it had.

use super::{expect_fault, fenced_write};
use crate::client::ClientCore;
use crate::driver::Io;
use crate::elector::{self, Elector, ElectorConfig, Status};
use crate::lease::Lease;
use crate::lock_object::LockState;
use crate::testing::history::Grant;
use crate::testing::sim::host::SimIo;
use crate::testing::sim::setup::{ActorKind, LEADER_KEY};
use s3_lease_keep::leadership::{self, Event, Leadership};

type Machine = Leadership<Lease, LockState>;

pub async fn run(mut io: SimIo) {
    let (client_config, group, who, fences) = io.with(|w, id| {
        (
            w.setup.config(ActorKind::Elector),
            w.setup.group(ActorKind::Elector),
            w.who(id),
            !w.setup.dynamodb,
        )
    });
    let key_index = io
        .with(|w, _| w.history.key(LEADER_KEY))
        .expect("the leader key");
    let config = ElectorConfig {
        key: LEADER_KEY.into(),
        lease_duration_ms: group.ttl_ms,
        renew_deadline_ms: group.deadline_ms,
        retry_period_ms: group.retry_ms,
        holder_id: format!("elector-{}-{}", who.actor, who.generation),
        metadata: String::new(),
    };
    let holder_id = config.holder_id.clone();
    let mut elector = Elector::new(ClientCore::new(client_config), config).expect("valid");
    let mut machine = Machine::new(io.monotonic_ms());
    let mut term: Option<u64> = None;
    let mut last_granted = 0;
    let mut last_lease: Option<Lease> = None;
    let mut next_write = 0;
    loop {
        let now_mono = io.monotonic_ms();
        watchdog(&mut io, &mut machine, &mut term, now_mono);
        if now_mono >= machine.next_step_at() {
            let step_sent = io.now();
            let status = elector.step(&mut io).await;
            if let Some(e) = &status.last_error {
                expect_fault(&io, "a step", e);
            }
            // Its own grant read as another's (`judge_lost`): it stepped
            // down, and follows itself.
            if let elector::Role::Follower(Some(seen)) = &status.role {
                if seen.record.holder_id == holder_id {
                    io.with(|w, _| {
                        w.violated(
                            "an elector never follows itself",
                            format!("{who}: follows {seen:?}"),
                        )
                    });
                }
            }
            let now_mono = io.monotonic_ms();
            // The deadline may have passed while the step was under way.
            watchdog(&mut io, &mut machine, &mut term, now_mono);
            for event in machine.apply(step_of(status), now_mono) {
                match event {
                    Event::BecameLeader(lease) => {
                        if lease.token != last_granted {
                            last_granted = lease.token;
                            io.with(|w, id| {
                                w.history.grants.push(Grant {
                                    key: key_index,
                                    who: w.who(id),
                                    token: lease.token,
                                    sent: step_sent * 1_000,
                                    acked: w.now * 1_000,
                                });
                                w.report.grants += 1;
                            });
                        }
                        let until = machine.leading_until(now_mono).unwrap_or(now_mono);
                        let opened = io.with(|w, id| {
                            let until = w.true_at(id, until);
                            w.open_term(id, key_index, lease.token, until)
                        });
                        if let Some(old) = term.replace(opened) {
                            io.with(|w, _| w.close_term(old, "a new term"));
                        }
                    }
                    Event::StoppedLeading(reason) => {
                        if let Some(t) = term.take() {
                            io.with(|w, _| {
                                w.close_term(t, &format!("stopped leading: {reason:?}"))
                            });
                        }
                    }
                    Event::LeaderChanged(_) => {}
                }
            }
            if let (Some(t), Some(until)) = (term, machine.leading_until(now_mono)) {
                io.with(|w, id| {
                    let until = w.true_at(id, until);
                    w.extend_term(t, until);
                });
            }
            if let leadership::Role::Leader(lease) = machine.role(now_mono) {
                last_lease = Some(lease.clone());
                let now = io.now();
                if fences && now >= next_write {
                    fenced_write(&mut io, elector.client_mut(), LEADER_KEY, &lease, false).await;
                    next_write = io.now() + group.retry_ms;
                }
                if io.with(|w, _| w.rng.chance(0.01)) {
                    // A caller resigning stops acting first, then releases.
                    if machine.stop(leadership::StopReason::Resigned).is_some() {
                        if let Some(t) = term.take() {
                            io.with(|w, _| w.close_term(t, "resigned"));
                        }
                    }
                    if let Err(e) = elector.resign(&mut io).await {
                        expect_fault(&io, "a resign", &e);
                    }
                    io.with(|w, _| w.report.resigns += 1);
                }
            }
        }
        // Sleep until the machine's next instant, a little late, sometimes
        // much later (a slow scheduler; pauses come from the world).
        let late = io.with(|w, _| {
            if w.rng.chance(0.02) {
                w.rng.below(2 * group.retry_ms)
            } else {
                w.rng.below(10)
            }
        });
        let planned = io
            .with(|w, id| w.true_at(id, machine.wake_at()))
            .max(io.now() + 1)
            + late;
        io.sleep_until(planned).await;
        if io.now() > planned + group.ttl_ms / 2 && fences {
            // It was paused: half the time, it writes once with the lease
            // it had, before stepping. The fence must judge that write.
            if let Some(lease) = last_lease
                .take()
                .filter(|_| io.with(|w, _| w.rng.chance(0.5)))
            {
                fenced_write(&mut io, elector.client_mut(), LEADER_KEY, &lease, true).await;
            }
        }
    }
}

/// The host's watchdog: ends the term once leadership's deadline passed.
fn watchdog(io: &mut SimIo, machine: &mut Machine, term: &mut Option<u64>, now_mono: u64) {
    if machine.check(now_mono).is_some() {
        if let Some(t) = term.take() {
            io.with(|w, _| w.close_term(t, "the watchdog: renew deadline"));
        }
    }
}

/// A step's result as the leadership machine takes it.
fn step_of(status: Status) -> leadership::Step<Lease, LockState> {
    // The core's role and events are the machine's own types.
    let (role, events) = (status.role, status.events);
    leadership::Step {
        role,
        events,
        leading_until_ms: status.leading_until_ms,
        next_step_in_ms: status.next_step_in_ms,
    }
}
