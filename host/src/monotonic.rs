//! The monotonic clock every instance reads, with a known origin, so an
//! instant the component reports (`step-result.leading-until-ms`) maps to a
//! host `Instant` exactly.
//!
//! wasmtime's default monotonic clock starts at zero when each instance's
//! WASI context is built, an origin the host never learns. Ours starts at
//! one process-wide `Instant`: component milliseconds `ms` are
//! `origin() + ms`, and since the component floors nanoseconds to
//! milliseconds, the mapped instant is never later than the one it meant.

use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmtime_wasi::HostMonotonicClock;

static ORIGIN: OnceLock<Instant> = OnceLock::new();

fn origin() -> Instant {
    *ORIGIN.get_or_init(Instant::now)
}

/// The host `Instant` of a component monotonic-clock reading in ms.
pub fn instant_of_ms(ms: u64) -> Instant {
    let origin = origin();
    origin
        .checked_add(Duration::from_millis(ms))
        // Beyond what `Instant` can hold: centuries away, so "never".
        .unwrap_or_else(|| origin + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// An instant as a component monotonic-clock reading in ms (floored, so
/// never later than the instant; an instant before the origin reads 0).
pub fn ms_of(at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(origin()).as_millis()).unwrap_or(u64::MAX)
}

/// `wasi:clocks/monotonic-clock` for every instance: nanoseconds since the
/// process-wide origin.
pub(crate) struct ProcessMonotonicClock;

impl HostMonotonicClock for ProcessMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        u64::try_from(origin().elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_map_back_to_the_instants_they_were_taken_at() {
        let before = Instant::now();
        let ms = ProcessMonotonicClock.now() / 1_000_000;
        let after = Instant::now();
        let mapped = instant_of_ms(ms);
        // Floored to the millisecond: at most 1 ms before the reading.
        assert!(mapped <= after, "never later than the reading");
        assert!(mapped + Duration::from_millis(1) >= before);
        assert!(instant_of_ms(u64::MAX) > Instant::now());
    }
}
