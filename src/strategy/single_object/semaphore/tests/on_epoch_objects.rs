//! Slot calls on a client of the epoch-objects strategy: the docs promise
//! `invalid-argument` before any request, for every one of them.

use super::*;

#[test]
fn every_slot_call_is_refused_before_any_request() {
    let mut c = client_of(Strategy::EpochObjects, ExpiryClock::Server);
    let mut io = ModelIo::new(START_MS);
    let refused = |what: &str, e: Error, io: &mut ModelIo| {
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("single-object")),
            "{what}: {e:?}"
        );
        assert!(io.take_requests().is_empty(), "{what}: a request was sent");
    };
    let e = c
        .try_acquire_slot(&mut io, "k", &grant("a"), 2, true)
        .ready()
        .unwrap_err();
    refused("try-acquire-slot", e, &mut io);
    let e = c
        .acquire_slot(&mut io, "k", &grant("a"), 2, true, 1_000)
        .ready()
        .unwrap_err();
    refused("acquire-slot", e, &mut io);
    let e = c.inspect_slots(&mut io, "k").ready().unwrap_err();
    refused("inspect-slots", e, &mut io);
    let e = c.leave_queue(&mut io, "k", "a").ready().unwrap_err();
    refused("leave-queue", e, &mut io);
}
