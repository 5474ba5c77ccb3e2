//! When to fetch credentials again: ahead of expiry as the AWS SDKs do,
//! sooner after a failure, and never faster than a paced rate, whatever a
//! source hands out (credentials already expired, or expiring at once,
//! would otherwise make every fetch due again the moment it ends).
//!
//! Times are wall-clock milliseconds since the Unix epoch: an expiry is a
//! wall time.

/// How far ahead of expiry the SDKs refresh (at most).
pub const LEAD_MS: u64 = 5 * 60 * 1000;
/// The shortest time between two fetches.
pub const MIN_PACE_MS: u64 = 1_000;
/// The longest time between attempts while fetches fail or give
/// credentials that are already due.
pub const MAX_PACE_MS: u64 = 30_000;

/// When credentials fetched at `fetched_ms` that expire at `expires_ms`
/// are due for a refresh: five minutes ahead, or a quarter of their
/// lifetime ahead when that is less (short-lived credentials). `None`: they
/// do not expire.
pub fn due_at(fetched_ms: u64, expires_ms: Option<u64>) -> Option<u64> {
    let expires = expires_ms?;
    let lifetime = expires.saturating_sub(fetched_ms);
    Some(expires - LEAD_MS.min(lifetime / 4))
}

/// One client's refresh schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refresh {
    due: Option<u64>,
    expires: Option<u64>,
    /// The pause before the next fetch when the last one did not help;
    /// doubles each time up to `MAX_PACE_MS`, back to `MIN_PACE_MS` after
    /// one that did.
    pace_ms: u64,
}

impl Refresh {
    /// Credentials fetched at `now_ms`, expiring at `expires_ms`, are in.
    pub fn new(now_ms: u64, expires_ms: Option<u64>) -> Refresh {
        let mut refresh = Refresh {
            due: None,
            expires: None,
            pace_ms: MIN_PACE_MS,
        };
        refresh.fetched(now_ms, expires_ms);
        refresh
    }

    /// When to fetch next; `None`: never (they do not expire).
    pub fn due(&self) -> Option<u64> {
        self.due
    }

    /// When the credentials in now stop working.
    pub fn expires(&self) -> Option<u64> {
        self.expires
    }

    /// A fetch at `now_ms` gave credentials expiring at `expires_ms`.
    pub fn fetched(&mut self, now_ms: u64, expires_ms: Option<u64>) {
        self.expires = expires_ms;
        match due_at(now_ms, expires_ms) {
            None => {
                self.due = None;
                self.pace_ms = MIN_PACE_MS;
            }
            Some(due) if due >= now_ms.saturating_add(MIN_PACE_MS) => {
                self.due = Some(due);
                self.pace_ms = MIN_PACE_MS;
            }
            // Already due (expired, or about to): try again, paced.
            Some(_) => self.back_off(now_ms, self.pace_ms),
        }
    }

    /// A fetch at `now_ms` failed; the credentials in stay until one
    /// succeeds. Tried again sooner as expiry nears (a quarter of what
    /// is left), never sooner than the pace.
    pub fn failed(&mut self, now_ms: u64) {
        let left = self.expires.map_or(0, |e| e.saturating_sub(now_ms));
        self.back_off(now_ms, (left / 4).clamp(self.pace_ms, MAX_PACE_MS));
    }

    fn back_off(&mut self, now_ms: u64, wait_ms: u64) {
        self.due = Some(now_ms.saturating_add(wait_ms));
        self.pace_ms = (self.pace_ms * 2).min(MAX_PACE_MS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_000_000_000;

    #[test]
    fn refreshes_five_minutes_ahead_or_a_quarter_of_a_short_life() {
        let hour = T0 + 3_600_000;
        assert_eq!(due_at(T0, Some(hour)), Some(hour - LEAD_MS));
        let minute = T0 + 60_000;
        assert_eq!(due_at(T0, Some(minute)), Some(T0 + 45_000));
        assert_eq!(due_at(T0, None), None);
        assert_eq!(due_at(minute, Some(T0)), Some(T0));
    }

    /// A source that keeps handing out expired credentials gets a fetch
    /// at most every second, backing off to one every 30 s: never a spin.
    #[test]
    fn every_fetch_is_paced_even_of_credentials_already_expired() {
        let mut r = Refresh::new(T0, Some(T0 - 1));
        let mut now = T0;
        let mut fetches = 0;
        while now < T0 + 600_000 {
            let due = r.due().expect("expiring credentials are refreshed");
            assert!(due >= now + MIN_PACE_MS, "due {due} at {now}");
            now = due;
            r.fetched(now, Some(now - 1));
            fetches += 1;
        }
        assert!(fetches < 30, "{fetches} fetches in 10 minutes");
        // Good credentials put the pace back.
        r.fetched(now, Some(now + 3_600_000));
        assert_eq!(r.due(), Some(now + 3_600_000 - LEAD_MS));
    }

    #[test]
    fn failures_are_retried_sooner_as_expiry_nears_but_paced() {
        let mut r = Refresh::new(T0, Some(T0 + 3_600_000));
        r.failed(T0 + 3_300_000);
        assert_eq!(r.due(), Some(T0 + 3_300_000 + MAX_PACE_MS));
        let mut now = T0 + 3_599_000;
        let mut last = now;
        for _ in 0..20 {
            r.failed(now);
            let due = r.due().expect("due");
            assert!(due >= now + MIN_PACE_MS);
            last = due;
            now = due;
        }
        assert!(last > T0 + 3_600_000);
    }
}
