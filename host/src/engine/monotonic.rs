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

/// How far ahead an instant is ever put: "never" to any lease or wait,
/// yet an instant every platform's clock holds (100 years overflows on
/// some), with room for tokio's timer, which rounds a deadline up by a
/// millisecond before it reads it.
const FOREVER: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// `at + d` without the panic of `Instant + Duration` on overflow: a `d`
/// beyond thirty years counts as thirty years, "never" to every caller
/// (a lease's claim, a wait's end: an end put earlier is the safe side of
/// a claim, and no wait outlives a process by decades).
pub(crate) fn saturating_add(at: Instant, d: Duration) -> Instant {
    // Thirty years fit every platform's `Instant` (tokio relies on it);
    // were it not so, `at` itself is the only instant known to fit.
    at.checked_add(d.min(FOREVER)).unwrap_or(at)
}

/// The host `Instant` of a component monotonic-clock reading in ms.
pub fn instant_of_ms(ms: u64) -> Instant {
    saturating_add(origin(), Duration::from_millis(ms))
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

    #[test]
    fn adding_any_duration_never_panics_and_keeps_order() {
        let now = Instant::now();
        let far = saturating_add(now, Duration::MAX);
        assert!(far > now + Duration::from_secs(29 * 365 * 24 * 3600));
        assert_eq!(
            saturating_add(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(saturating_add(now, Duration::from_secs(1)) < far);
        // tokio rounds a deadline up by a millisecond: still no overflow.
        assert!(far.checked_add(Duration::from_millis(1)).is_some());
    }
}
