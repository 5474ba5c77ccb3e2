//! A full fair queue and the 64 KiB cap: growth (a join, a new slot) is
//! refused while it would leave too little room, so that a holder's renew
//! and release, and a waiter's keeping or leaving its place, always fit.

use super::*;
use crate::lock_object::MAX_LOCK_OBJECT_BYTES;

const METADATA: usize = 1_000;

fn waiter(name: &str, metadata_bytes: usize) -> Grant {
    Grant::new(TTL, name.into(), "m".repeat(metadata_bytes)).unwrap()
}

fn join(c: &mut ClientCore, io: &mut ModelIo, g: &Grant) -> Result<SlotOutcome, Error> {
    c.try_acquire_slot(io, "k", g, 1, true).ready()
}

fn object_bytes(io: &ModelIo) -> usize {
    io.store.object("locks/k").map_or(0, |o| o.body.len())
}

/// Joins waiters until the client refuses one, then one more whose
/// metadata fills what is left as tightly as the client allows. Returns
/// the waiters (in queue order) and the refusal.
fn fill_queue(c: &mut ClientCore, io: &mut ModelIo) -> (Vec<Grant>, Error) {
    let mut waiters = Vec::new();
    let refusal = loop {
        let g = waiter(&format!("w{:03}", waiters.len()), METADATA);
        match join(c, io, &g) {
            Ok(SlotOutcome::Queued { .. }) => waiters.push(g),
            Ok(other) => panic!("expected a place, got {other:?}"),
            Err(e) => break e,
        }
    };
    // The largest metadata that still joins: each try that joins leaves
    // again, so only the last one stays.
    let last = |n: usize| waiter("last", n);
    let (mut fits, mut too_big) = (None, METADATA);
    let mut low = 0;
    while low < too_big {
        let mid = (low + too_big) / 2;
        match join(c, io, &last(mid)) {
            Ok(SlotOutcome::Queued { .. }) => {
                fits = Some(mid);
                c.leave_queue(io, "k", "last").ready().unwrap();
                low = mid + 1;
            }
            Ok(other) => panic!("expected a place, got {other:?}"),
            Err(_) => too_big = mid,
        }
    }
    if let Some(n) = fits {
        assert!(matches!(
            join(c, io, &last(n)),
            Ok(SlotOutcome::Queued { .. })
        ));
        waiters.push(last(n));
    }
    (waiters, refusal)
}

#[test]
fn a_full_queue_never_stops_a_holder_renewing_and_a_join_is_what_is_refused() {
    for clock in CLOCKS {
        full_queue_under(clock);
    }
}

fn full_queue_under(clock: ExpiryClock) {
    let (mut c, mut io) = (client(clock), ModelIo::new(START_MS));
    let a = slot(&mut c, &mut io, "a", 1);
    let (waiters, refusal) = fill_queue(&mut c, &mut io);
    let full = object_bytes(&io);
    assert!(full <= MAX_LOCK_OBJECT_BYTES, "{full}");
    eprintln!(
        "{clock:?}: {} waiters fill the queue: {full} bytes",
        waiters.len()
    );

    // The holder renews (another's write came last: it reads, stamps the
    // others' entries, and writes).
    io.advance(TTL / 3);
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    // Every waiter keeps its place, the holder renews again.
    io.advance(TTL / 3);
    for (i, g) in waiters.iter().enumerate() {
        let kept = join(&mut c, &mut io, g).unwrap();
        assert_eq!(place(&kept), Some(i as u32 + 1), "{}", g.holder_id);
    }
    let a = c.rewrite(&mut io, a, false).ready().unwrap();
    // It releases, and the first waiter's grant fits.
    c.rewrite(&mut io, a, true).ready().unwrap();
    let first = join(&mut c, &mut io, &waiters[0]).unwrap();
    assert!(matches!(first, SlotOutcome::Granted(_)), "{first:?}");
    // The last waiter leaves.
    let last = waiters.last().unwrap();
    c.leave_queue(&mut io, "k", &last.holder_id)
        .ready()
        .unwrap();
    assert!(object_bytes(&io) <= MAX_LOCK_OBJECT_BYTES);
    // What was refused was growth, and it says why.
    assert!(
        matches!(&refusal, Error::InvalidArgument(m) if m.contains("queue") && m.contains("renew")),
        "{refusal:?}"
    );
}
