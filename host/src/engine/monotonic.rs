//! The monotonic clock every instance reads (`wasi:clocks/monotonic-clock`):
//! its client's [`Clock`] (suspended time counted), from one process-wide
//! origin, so an instant the component reports (`step-result.leading-until-ms`)
//! maps to an instant of that clock exactly.
//!
//! wasmtime's default monotonic clock starts at zero when each instance's
//! WASI context is built, an origin the host never learns, and it is std's
//! `Instant`, which stops while the machine is suspended. Ours counts from
//! the system clock's reading when the process first asked: component
//! milliseconds `ms` are `origin() + ms`, and since the component floors
//! nanoseconds to milliseconds, the mapped instant is never later than the
//! one it meant. (A test's clock reads at or after the system's, never
//! before the origin.)

use crate::engine::clock::{Clock, Instant};
use std::sync::OnceLock;
use std::time::Duration;
use wasmtime_wasi::HostMonotonicClock;

static ORIGIN: OnceLock<Instant> = OnceLock::new();

fn origin() -> Instant {
    *ORIGIN.get_or_init(|| Clock::system().now())
}

/// The instant of a component monotonic-clock reading in ms.
pub fn instant_of_ms(ms: u64) -> Instant {
    origin().saturating_add(Duration::from_millis(ms))
}

/// An instant as a component monotonic-clock reading in ms (floored, so
/// never later than the instant; an instant before the origin reads 0).
pub fn ms_of(at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(origin()).as_millis()).unwrap_or(u64::MAX)
}

/// `wasi:clocks/monotonic-clock` for an instance: nanoseconds since the
/// process-wide origin on its client's clock.
pub(crate) struct InstanceMonotonicClock(pub Clock);

impl HostMonotonicClock for InstanceMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        let since = self.0.now().saturating_duration_since(origin());
        u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_map_back_to_the_instants_they_were_taken_at() {
        let clock = Clock::system();
        let before = clock.now();
        let ms = InstanceMonotonicClock(clock.clone()).now() / 1_000_000;
        let after = clock.now();
        let mapped = instant_of_ms(ms);
        // Floored to the millisecond: at most 1 ms before the reading.
        assert!(mapped <= after, "never later than the reading");
        assert!(mapped.saturating_add(Duration::from_millis(1)) >= before);
        assert!(instant_of_ms(u64::MAX) > clock.now());
        assert_eq!(ms_of(instant_of_ms(1234)), 1234);
    }

    #[test]
    fn an_instance_on_a_resumed_clock_reads_the_time_suspended() {
        let clock = Clock::for_tests();
        let instance = InstanceMonotonicClock(clock.clone());
        let before = instance.now();
        clock.resume_after(Duration::from_secs(90));
        let jumped = Duration::from_nanos(instance.now() - before);
        assert!(jumped >= Duration::from_secs(90) && jumped < Duration::from_secs(91));
    }
}
