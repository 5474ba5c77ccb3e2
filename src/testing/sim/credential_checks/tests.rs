//! The credential checkers flag what they exist to flag, on hand-made
//! events: a refresher fetching too soon or too often, a request sent with
//! expired keys from a healthy source; and let pass what they excuse.

use super::{BOUNDED, FRESH, PACED};
use crate::testing::sim::credentials::{Lifetime, SourcePlan};
use crate::testing::sim::world::World;
use crate::testing::sim::{Sim, START_MS};
use s3_lease_keep::refresh::MIN_PACE_MS;

const W: u64 = START_MS;

/// The world of a seed before anything ran, with a healthy source of keys
/// living `life_ms`.
fn world(life_ms: u64) -> World {
    let sim = Sim::new(0);
    let world = std::rc::Rc::try_unwrap(sim.world)
        .ok()
        .expect("nothing else holds the world");
    let mut world = world.into_inner();
    world.source.plan = SourcePlan {
        lifetime: Lifetime::For(life_ms),
        fails: 0.0,
        slow: 0.0,
    };
    for host in &mut world.hosts {
        host.credentials.max_skew_ms = 0;
    }
    world
}

fn flagged(w: &World) -> Vec<&'static str> {
    w.history.violations.iter().map(|v| v.invariant).collect()
}

#[test]
fn a_fetch_within_the_pace_is_flagged_unless_the_clock_stepped() {
    let mut w = world(60_000);
    w.now = 10_000;
    w.fetch_began(0, W);
    w.fetch_began(0, W + MIN_PACE_MS);
    assert!(flagged(&w).is_empty(), "{:?}", w.history.violations);
    w.fetch_began(0, W + 2 * MIN_PACE_MS - 1);
    assert_eq!(flagged(&w), [PACED]);
    // A step of the wall clock moves every reading: not compared.
    w.history.violations.clear();
    w.hosts[0].credentials.jumped(-60_000);
    w.fetch_began(0, W);
    assert!(flagged(&w).is_empty(), "{:?}", w.history.violations);
}

#[test]
fn more_fetches_than_a_life_allows_are_flagged() {
    let mut w = world(60_000);
    // A life 5 s long: one fetch per second, and two more.
    w.now = w.hosts[0].credentials.life_start + 5 * MIN_PACE_MS;
    for i in 0..7 {
        w.fetch_began(0, W + i * MIN_PACE_MS);
    }
    assert!(flagged(&w).is_empty(), "{:?}", w.history.violations);
    w.fetch_began(0, W + 7 * MIN_PACE_MS);
    assert_eq!(flagged(&w), [BOUNDED]);
}

#[test]
fn expired_keys_from_a_healthy_source_are_flagged_unless_excused() {
    let mut w = world(10_000);
    let (keys, _) = w.source.fetch(W, true).expect("a first fetch");
    w.hosts[0].credentials.installed = Some(keys.clone());
    w.now = 9_999;
    assert_eq!(w.signed_with(0), Some(keys.access_key_id.clone()));
    assert!(flagged(&w).is_empty(), "{:?}", w.history.violations);
    w.now = 10_000;
    assert_eq!(w.signed_with(0), Some(keys.access_key_id.clone()));
    assert_eq!(flagged(&w), [FRESH]);
    // Excused: a process that stalled, a clock further off than the lead
    // covers, a source that fails.
    w.history.violations.clear();
    w.hosts[0].credentials.stalled = true;
    w.signed_with(0);
    w.hosts[0].credentials.stalled = false;
    w.hosts[0].credentials.max_skew_ms = 10_000;
    w.signed_with(0);
    w.hosts[0].credentials.max_skew_ms = 0;
    w.source.plan.fails = 0.1;
    w.signed_with(0);
    assert!(flagged(&w).is_empty(), "{:?}", w.history.violations);
}
