//! The table's TTL sweeper against the token counter: tokens never repeat
//! on a key, whatever the holders' clocks, with TTL on and the sweeper
//! deleting what it may as early as it may (the model's `sweeper`).

use super::*;

const DAY_MS: u64 = 24 * 3600 * 1000;

fn table_with_sweeper() -> DynamoIo {
    let mut io = DynamoIo::with_table("locks", START_MS);
    io.store.sweeper = true;
    io
}

fn granted(outcome: AcquireOutcome) -> crate::lease::Lease {
    match outcome {
        AcquireOutcome::Granted(lease) => lease,
        other => panic!("not granted: {other:?}"),
    }
}

/// `b` takes `k` over once it has watched it unchanged for the ttl (the
/// `observed` clock): the first look only starts watching.
fn take_over(b: &mut ClientCore, io: &mut DynamoIo) -> crate::lease::Lease {
    let first = b.try_acquire(io, "k", &grant("b")).ready().unwrap();
    if let AcquireOutcome::Granted(lease) = first {
        return lease;
    }
    io.advance(10_000 + 200);
    io.store.sweep();
    granted(b.try_acquire(io, "k", &grant("b")).ready().unwrap())
}

#[test]
fn a_holder_whose_clock_is_31_days_slow_keeps_its_lease_and_the_next_token_is_above_its() {
    let (mut a, mut b) = (client(), client());
    let mut io = table_with_sweeper();
    let slow = -i64::try_from(31 * DAY_MS).unwrap();
    io.clock_offset_ms = slow;
    let held = granted(a.try_acquire(&mut io, "k", &grant("a")).ready().unwrap());
    assert_eq!(held.token, 1);
    io.clock_offset_ms = 0;
    io.store.sweep();
    let seen = b.try_acquire(&mut io, "k", &grant("b")).ready().unwrap();
    assert!(
        matches!(&seen, AcquireOutcome::Held(Some(s)) if s.record.token == 1),
        "a's live lease is still there: {seen:?}"
    );
    // a renews on its slow clock, as a live holder does, and keeps it.
    io.advance(3_000);
    io.clock_offset_ms = slow;
    let held = a.rewrite(&mut io, held, false).ready().unwrap();
    io.clock_offset_ms = 0;
    io.store.sweep();
    // Then it stops renewing: b takes the key over, with a higher token.
    let next = take_over(&mut b, &mut io);
    assert!(
        next.token > held.token,
        "{} after {}",
        next.token,
        held.token
    );
}

#[test]
fn a_key_idle_for_31_days_does_not_restart_its_tokens() {
    // Abandoned (never released), and released.
    for release in [false, true] {
        let (mut a, mut b) = (client(), client());
        let mut io = table_with_sweeper();
        let held = granted(a.try_acquire(&mut io, "k", &grant("a")).ready().unwrap());
        if release {
            a.rewrite(&mut io, held, true).ready().unwrap();
        }
        io.advance(31 * DAY_MS);
        io.store.sweep();
        assert!(io.store.items.contains_key("locks/k"), "release {release}");
        let next = take_over(&mut b, &mut io);
        assert_eq!(next.token, 2, "release {release}");
    }
}

#[test]
fn a_semaphore_idle_for_31_days_does_not_restart_its_tokens() {
    use crate::strategy::single_object::semaphore::SlotOutcome;
    let (mut a, mut b) = (client(), client());
    let mut io = table_with_sweeper();
    let slot = |c: &mut ClientCore, io: &mut DynamoIo, holder: &str| {
        c.try_acquire_slot(io, "k", &grant(holder), 2, false)
            .ready()
            .unwrap()
    };
    assert!(matches!(slot(&mut a, &mut io, "a"), SlotOutcome::Granted(l) if l.token == 1));
    io.advance(31 * DAY_MS);
    io.store.sweep();
    assert!(matches!(slot(&mut b, &mut io, "b"), SlotOutcome::Granted(l) if l.token == 2));
}

#[test]
fn the_model_sweeps_a_number_attribute_in_the_past_and_nothing_else() {
    let mut io = DynamoIo::with_table("locks", START_MS);
    let now_s = START_MS / 1000;
    for (key, expiry) in [
        ("past", json!({ "N": (now_s - 1).to_string() })),
        ("past-fraction", json!({ "N": format!("{}.5", now_s - 1) })),
        ("future", json!({ "N": (now_s + 1).to_string() })),
        ("a-string", json!({ "S": (now_s - 1).to_string() })),
    ] {
        let mut item = serde_json::Map::new();
        item.insert("key".into(), json!({ "S": key }));
        item.insert("lease_expiry".into(), expiry);
        io.store.items.insert(key.into(), item);
    }
    let mut none = serde_json::Map::new();
    none.insert("key".into(), json!({ "S": "none" }));
    io.store.items.insert("none".into(), none);
    assert_eq!(io.store.sweep(), ["past", "past-fraction"]);
    assert_eq!(io.store.items.len(), 3);
    io.store.ttl_attribute = None;
    io.advance(10_000);
    assert!(io.store.sweep().is_empty(), "TTL off");
}
