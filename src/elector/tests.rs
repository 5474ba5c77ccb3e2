//! Electors over one shared S3 model: several peers, each with its own
//! (skewable) wall clock and a network that can be cut; time moves only
//! when a test says so.

use super::*;
use crate::config::{ClientConfig, Strategy};
use crate::expiry::ExpiryClock;
use crate::ready::Ready;
use crate::stores::s3::model::S3Model;
use crate::stores::s3::{Method, S3Request, S3Response};
use crate::testing::intercept::Intercept;
use crate::testing::model_io::ModelIo;
use std::cell::RefCell;
use std::rc::Rc;

const START_MS: u64 = 1_700_000_000_000;

/// An elector's client of the shared store: time passing for one passes
/// for all, and its network can be cut (`cut`).
type Peer = ModelIo<Rc<RefCell<S3Model>>>;

fn peer(store: &Rc<RefCell<S3Model>>, id: u64) -> Peer {
    let mut io = ModelIo::of(store.clone());
    io.random = id << 48;
    io
}

fn client(strategy: Strategy, clock: ExpiryClock) -> ClientCore {
    ClientCore::new(ClientConfig::validate(crate::testing::raw_config(strategy, clock)).unwrap())
}

fn config(holder: &str) -> ElectorConfig {
    ElectorConfig {
        key: "leader".into(),
        lease_duration_ms: 10_000,
        renew_deadline_ms: 7_000,
        retry_period_ms: 2_000,
        holder_id: holder.into(),
        metadata: String::new(),
    }
}

fn is_leader(s: &Status) -> bool {
    matches!(s.role, Role::Leader(_))
}

#[test]
fn durations_out_of_order_are_refused() {
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let bad = [
        ElectorConfig {
            lease_duration_ms: 0,
            ..config("a")
        },
        ElectorConfig {
            renew_deadline_ms: 10_000,
            ..config("a")
        },
        ElectorConfig {
            renew_deadline_ms: 12_000,
            ..config("a")
        },
        ElectorConfig {
            retry_period_ms: 0,
            ..config("a")
        },
        ElectorConfig {
            retry_period_ms: 7_000,
            ..config("a")
        },
        ElectorConfig {
            key: String::new(),
            ..config("a")
        },
        ElectorConfig {
            holder_id: String::new(),
            ..config("a")
        },
    ];
    for b in bad {
        assert!(
            matches!(
                Elector::new(c.clone(), b.clone()),
                Err(Error::InvalidArgument(_))
            ),
            "{b:?}"
        );
    }
}

/// Steps every elector whose step is due, advancing time by `tick` until
/// `until` ms have passed; returns, per tick, which of them report leader.
fn run(
    store: &Rc<RefCell<S3Model>>,
    electors: &mut [(Elector, Peer)],
    until_ms: u64,
    tick_ms: u64,
    mut each: impl FnMut(u64, &mut [(Elector, Peer)]),
) -> Vec<Vec<bool>> {
    let mut leaders = Vec::new();
    let mut due = vec![0u64; electors.len()];
    let mut t = 0;
    while t <= until_ms {
        each(t, electors);
        let mut now = Vec::new();
        for (i, (e, io)) in electors.iter_mut().enumerate() {
            if t >= due[i] {
                let status = e.step(io).ready();
                due[i] = t + status.next_step_in_ms.max(1);
                now.push(is_leader(&status));
            } else {
                now.push(matches!(e.role(), Role::Leader(_)));
            }
        }
        leaders.push(now);
        store.borrow_mut().advance(tick_ms);
        t += tick_ms;
    }
    leaders
}

#[test]
fn one_leader_renews_followers_look_cheaply_and_resigning_hands_over() {
    for strategy in [Strategy::SingleObject, Strategy::EpochObjects] {
        let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
        let c = client(strategy, ExpiryClock::Server);
        let mut a = (
            Elector::new(c.clone(), config("a")).unwrap(),
            peer(&store, 1),
        );
        let mut b = (
            Elector::new(c.clone(), config("b")).unwrap(),
            peer(&store, 2),
        );
        let first = a.0.step(&mut a.1).ready();
        assert!(is_leader(&first), "{strategy:?}");
        assert!(matches!(first.events[..], [Event::BecameLeader(_)]));
        assert_eq!(first.next_step_in_ms, 2_000);
        let seen = b.0.step(&mut b.1).ready();
        assert!(matches!(seen.role, Role::Follower(Some(_))), "{seen:?}");
        assert!(matches!(seen.events[..], [Event::LeaderChanged(Some(_))]));
        // Each elector's first step reads the seal key (a's creates it).
        let seal_key = |r: &S3Request| r.object_key == "locks/.s3-lease-seal-key";
        let firsts: Vec<(Method, Method)> = [&a.1.requests, &b.1.requests]
            .iter()
            .map(|sent| (sent[0].method, sent[1].method))
            .collect();
        assert_eq!(
            firsts,
            [(Method::Get, Method::Put), (Method::Get, Method::Get)],
            "{strategy:?}"
        );
        assert_eq!(a.1.requests.iter().filter(|r| seal_key(r)).count(), 2);
        assert_eq!(b.1.requests.iter().filter(|r| seal_key(r)).count(), 1);
        a.1.requests.clear();
        b.1.requests.clear();
        // A retry period later: the leader renews, the follower looks.
        store.borrow_mut().advance(2_000);
        assert!(is_leader(&a.0.step(&mut a.1).ready()));
        let look = b.0.step(&mut b.1).ready();
        assert!(look.events.is_empty());
        let renew: Vec<Method> = a.1.requests.iter().map(|r| r.method).collect();
        let observe: Vec<(Method, bool)> =
            b.1.requests
                .iter()
                .map(|r| {
                    (
                        r.method,
                        r.headers.iter().any(|(k, _)| k == "if-none-match"),
                    )
                })
                .collect();
        match strategy {
            Strategy::SingleObject => {
                assert_eq!(renew, [Method::Put]);
                assert_eq!(observe, [(Method::Get, true)], "one conditional GET");
            }
            Strategy::EpochObjects => {
                assert_eq!(renew, [Method::Put, Method::Get], "PUT, LIST");
                assert_eq!(
                    observe,
                    [(Method::Get, false), (Method::Get, true)],
                    "LIST, conditional GET"
                );
            }
        }
        // Not due yet: a step does nothing.
        a.1.requests.clear();
        let idle = a.0.step(&mut a.1).ready();
        assert!(a.1.requests.is_empty() && is_leader(&idle));
        // Resign: released; the follower takes over on its next look.
        a.0.resign(&mut a.1).ready().unwrap();
        store.borrow_mut().advance(2_000);
        let taken = b.0.step(&mut b.1).ready();
        assert!(is_leader(&taken), "{strategy:?}: {taken:?}");
        let after = a.0.step(&mut a.1).ready();
        assert!(
            matches!(
                after.events[..],
                [Event::StoppedLeading(StopReason::Resigned), ..]
            ),
            "{after:?}"
        );
        assert!(!is_leader(&after));
    }
}

#[test]
fn a_cut_off_leader_steps_down_at_its_deadline_before_anyone_takes_over() {
    for (strategy, clock, skew) in [
        (Strategy::SingleObject, ExpiryClock::Holder, 0),
        (Strategy::SingleObject, ExpiryClock::Server, 300_000),
        (Strategy::SingleObject, ExpiryClock::Observed, -300_000),
        (Strategy::EpochObjects, ExpiryClock::Server, 300_000),
        (Strategy::EpochObjects, ExpiryClock::Observed, -300_000),
    ] {
        let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
        let c = client(strategy, clock);
        let mut electors = vec![
            (
                Elector::new(c.clone(), config("a")).unwrap(),
                peer(&store, 1),
            ),
            (
                Elector::new(c.clone(), config("b")).unwrap(),
                peer(&store, 2),
            ),
            (
                Elector::new(c.clone(), config("c")).unwrap(),
                peer(&store, 3),
            ),
        ];
        electors[1].1.clock_offset_ms = skew;
        electors[2].1.clock_offset_ms = -skew;
        let mut cut_at = None;
        let history = run(&store, &mut electors, 40_000, 100, |t, es| {
            // Cut the first leader's network once it has led for 5 s.
            if t == 5_000 {
                if let Some(i) = es
                    .iter()
                    .position(|(e, _)| matches!(e.role(), Role::Leader(_)))
                {
                    es[i].1.cut = true;
                    cut_at = Some(i);
                }
            }
        });
        let cut = cut_at.expect("someone led");
        for (t, now) in history.iter().enumerate() {
            assert!(
                now.iter().filter(|l| **l).count() <= 1,
                "{strategy:?} {clock:?}: two leaders at {} ms: {now:?}",
                t * 100
            );
        }
        // The cut leader stepped down, and someone else leads by the end.
        let last = history.last().unwrap();
        assert!(!last[cut], "{strategy:?} {clock:?}");
        assert!(
            last.iter().any(|l| *l),
            "{strategy:?} {clock:?}: nobody leads"
        );
        // Step-down at the renew deadline: within 7 s of the last renew
        // sent before the cut (at most 2 s before it).
        let stopped = history.iter().skip(50).position(|now| !now[cut]).unwrap() * 100;
        assert!(
            stopped <= 7_100,
            "{strategy:?} {clock:?}: stepped down {stopped} ms after the cut"
        );
    }
}

#[test]
fn a_leader_that_lost_its_lease_says_so() {
    let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let mut a = (
        Elector::new(c.clone(), config("a")).unwrap(),
        peer(&store, 1),
    );
    assert!(is_leader(&a.0.step(&mut a.1).ready()));
    // An operator deletes the lock object.
    store.borrow_mut().objects.clear();
    store.borrow_mut().advance(2_000);
    let status = a.0.step(&mut a.1).ready();
    assert!(!is_leader(&status));
    assert!(
        status
            .events
            .contains(&Event::StoppedLeading(StopReason::Lost)),
        "{status:?}"
    );
}

#[test]
fn losing_a_race_says_nothing_until_the_winner_is_seen() {
    let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let mut a = (
        Elector::new(c.clone(), config("a")).unwrap(),
        peer(&store, 1),
    );
    let mut z = (
        Elector::new(c.clone(), config("z")).unwrap(),
        peer(&store, 2),
    );
    assert!(is_leader(&z.0.step(&mut z.1).ready()));
    let seen = a.0.step(&mut a.1).ready();
    assert!(
        matches!(&seen.events[..], [Event::LeaderChanged(Some(s))] if s.record.holder_id == "z")
    );
    // z dies; once its lease is over, a and b race, and b's write lands
    // between a's read and a's write: a gets 412 without reading b.
    store.borrow_mut().advance(15_000);
    let winner = br#"{"expires_at": 1800000000, "token": 2, "holder": "b", "ttl_ms": 10000}"#;
    let mut winner = Some(&winner[..]);
    let raced =
        a.0.step(&mut Intercept::new(&mut a.1, |request, peer: &mut Peer| {
            if request.method == Method::Put {
                if let Some(body) = winner.take() {
                    peer.store
                        .borrow_mut()
                        .put_object(&request.object_key, body);
                }
            }
            None
        }))
        .ready();
    assert!(!is_leader(&raced), "{raced:?}");
    assert!(
        raced.events.is_empty(),
        "no leader-changed(none) while b leads: {:?}",
        raced.events
    );
    store.borrow_mut().advance(2_000);
    let next = a.0.step(&mut a.1).ready();
    assert!(
        matches!(&next.events[..], [Event::LeaderChanged(Some(s))] if s.record.holder_id == "b"),
        "{next:?}"
    );
}

/// A peer whose requests take `delay_ms` each: it honours each request's
/// bound (`within_ms`) as a host's timeout does, failing at the bound with
/// the request maybe applied, unless `ignores_timeouts` (a host that does
/// not support them): then every request takes its whole delay.
fn slow(
    delay_ms: u64,
    ignores_timeouts: bool,
) -> impl FnMut(&S3Request, &mut Peer) -> Option<Result<S3Response, Error>> {
    move |request, peer| {
        let bound = request.within_ms.map(u64::from);
        let takes = match bound {
            Some(b) if !ignores_timeouts && b < delay_ms => b,
            _ => delay_ms,
        };
        peer.requests.push(request.clone());
        let reply = peer.store.borrow_mut().handle(request);
        peer.store.borrow_mut().advance(takes);
        Some(if takes < delay_ms {
            Err(Error::Transport("timed out".into()))
        } else {
            Ok(reply)
        })
    }
}

#[test]
fn a_leader_says_until_when_it_leads_and_bounds_each_request_by_it() {
    let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let (mut e, mut io) = (Elector::new(c, config("a")).unwrap(), peer(&store, 1));
    let first = e.step(&mut io).ready();
    assert!(is_leader(&first));
    // Granted by a write sent at monotonic 0: leads until 0 + renew deadline.
    assert_eq!(first.leading_until_ms, Some(7_000));
    assert!(
        io.requests.iter().all(|r| r.within_ms == Some(7_000)),
        "the campaign is bounded by the deadline it would start: {:?}",
        io.requests
    );
    io.requests.clear();
    store.borrow_mut().advance(2_500);
    let renewed = e.step(&mut io).ready();
    assert_eq!(renewed.leading_until_ms, Some(9_500));
    assert_eq!(io.requests.len(), 1);
    assert_eq!(
        io.requests[0].within_ms,
        Some(4_500),
        "a renew sent at 2.5 s may take only what is left of the deadline (7 s)"
    );
    let follower = Elector::new(
        client(Strategy::SingleObject, ExpiryClock::Server),
        config("b"),
    )
    .unwrap()
    .step(&mut peer(&store, 2))
    .ready();
    assert_eq!(follower.leading_until_ms, None);
}

#[test]
fn a_renew_that_hangs_ends_at_the_deadline_and_its_late_reply_does_not_lead() {
    for ignores_timeouts in [false, true] {
        let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
        let c = client(Strategy::SingleObject, ExpiryClock::Server);
        let (mut e, mut io) = (Elector::new(c, config("a")).unwrap(), peer(&store, 1));
        assert!(is_leader(&e.step(&mut io).ready()));
        store.borrow_mut().advance(2_000);
        // The renew, sent at 2 s (deadline 7 s), hangs for 30 s.
        let hung = e
            .step(&mut Intercept::new(&mut io, slow(30_000, ignores_timeouts)))
            .ready();
        let ended = store.borrow().now_ms - START_MS;
        if ignores_timeouts {
            assert_eq!(ended, 32_000);
        } else {
            assert_eq!(ended, 7_000, "the step returns at the deadline");
        }
        assert!(!is_leader(&hung), "{hung:?}");
        assert_eq!(hung.leading_until_ms, None);
        assert!(
            hung.events
                .contains(&Event::StoppedLeading(StopReason::RenewDeadline)),
            "{hung:?}"
        );
        // And nothing more goes out as leader: a resign now sends nothing.
        io.requests.clear();
        e.resign(&mut io).ready().unwrap();
        assert!(io.requests.is_empty(), "{:?}", io.requests);
    }
}

#[test]
fn a_late_grant_is_not_leadership() {
    let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let (mut e, mut io) = (Elector::new(c, config("a")).unwrap(), peer(&store, 1));
    // Each of the campaign's requests (GET, PUT) takes 4 s on a host that
    // ignores timeouts: the grant's reply comes 8 s after it was sent.
    let late = e
        .step(&mut Intercept::new(&mut io, slow(4_000, true)))
        .ready();
    assert!(!is_leader(&late), "{late:?}");
    assert_eq!(late.leading_until_ms, None);
}

#[test]
fn a_resign_is_bounded_by_the_deadline_too() {
    let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let (mut e, mut io) = (Elector::new(c, config("a")).unwrap(), peer(&store, 1));
    assert!(is_leader(&e.step(&mut io).ready()));
    store.borrow_mut().advance(5_000);
    io.requests.clear();
    e.resign(&mut io).ready().unwrap();
    assert_eq!(io.requests.len(), 1);
    assert_eq!(io.requests[0].within_ms, Some(2_000));
}

#[test]
fn a_renew_reply_after_the_old_deadline_does_not_bring_leadership_back() {
    let store = Rc::new(RefCell::new(S3Model::new(START_MS)));
    let c = client(Strategy::SingleObject, ExpiryClock::Server);
    let (mut e, mut io) = (Elector::new(c, config("a")).unwrap(), peer(&store, 1));
    assert!(is_leader(&e.step(&mut io).ready()));
    // A renew sent at 6 s (deadline 7 s) whose reply comes at 8 s, on a
    // host that ignores the bound: the watchdog ended leadership at 7 s,
    // so the renewed lease (good until 6 + 7 = 13 s) must not revive it.
    store.borrow_mut().advance(6_000);
    let late = e
        .step(&mut Intercept::new(&mut io, slow(2_000, true)))
        .ready();
    assert_eq!(store.borrow().now_ms - START_MS, 8_000);
    assert!(!is_leader(&late), "{late:?}");
    assert_eq!(
        late.events,
        vec![Event::StoppedLeading(StopReason::RenewDeadline)]
    );
}
