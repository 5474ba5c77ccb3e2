//! What the gate saw while a request waited (the holder, the queue, how
//! fast the key changed hands), and what its instance saw of recent holds:
//! the 503's holder, its message and its `Retry-After`. Plain Rust,
//! tested natively.

/// A holder as an attempt read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub id: String,
    pub token: u64,
    /// When it was granted, on its writer's wall clock (ms since the epoch).
    pub acquired_at_ms: u64,
    /// How long its lease has left, as the reader judged it.
    pub expires_in_ms: u64,
}

/// One wait's sightings. Times are the gate's monotonic milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    /// The holder seen last.
    pub holder: Option<Holder>,
    /// The place in the queue seen last (fair), 1-based.
    pub place: Option<u32>,
    /// Attempts that missed without reading a holder (their write lost a
    /// race to another request's).
    pub unseen_misses: u32,
    /// An attempt the store did not answer in time: the wait ended on it
    /// (WASI 0.3), or its requests timed out (0.2).
    pub store_slow: bool,
    /// (when, token) first and last seen: grants between them.
    tokens: Option<((u64, u64), (u64, u64))>,
    /// (when, place) first and last seen: the queue's moves between them.
    places: Option<((u64, u32), (u64, u32))>,
}

impl Seen {
    /// An attempt found `holder` at `now_ms`.
    pub fn held_by(&mut self, now_ms: u64, holder: Holder) {
        let seen = (now_ms, holder.token);
        self.tokens = Some(self.tokens.map_or((seen, seen), |(first, _)| (first, seen)));
        self.holder = Some(holder);
    }

    /// An attempt found this request `place`-th in the queue at `now_ms`.
    pub fn queued(&mut self, now_ms: u64, place: u32) {
        let seen = (now_ms, place);
        self.places = Some(self.places.map_or((seen, seen), |(first, _)| (first, seen)));
        self.place = Some(place);
    }

    /// An attempt missed without naming a holder.
    pub fn missed_unseen(&mut self) {
        self.unseen_misses = self.unseen_misses.saturating_add(1);
    }

    /// How long a hold lasted while this request waited, on average: the
    /// key changed hands this often.
    fn hold_during_wait(&self) -> Option<u64> {
        let by_tokens = self
            .tokens
            .and_then(|((t0, k0), (t1, k1))| (k1 > k0).then(|| t1.saturating_sub(t0) / (k1 - k0)));
        let by_places = self.places.and_then(|((t0, p0), (t1, p1))| {
            (p0 > p1).then(|| t1.saturating_sub(t0) / u64::from(p0 - p1))
        });
        by_tokens.or(by_places).map(|ms| ms.max(1))
    }

    /// When to try again, in ms: the holds ahead (the queue before this
    /// request's place, and the holder's) at the typical hold this gate
    /// saw: its instance's recent holds, else how often the key changed
    /// hands during this wait, else how long the holder has held it so far.
    /// With no sighting at all, the holder's lease's remaining time (or 1 s).
    /// Never past the holder's expiry when nobody queues before it.
    pub fn retry_after_ms(&self, recent: &Recent, now_wall_ms: u64) -> u64 {
        let ahead = u64::from(self.place.map_or(0, |p| p.saturating_sub(1)));
        let holder_age = self
            .holder
            .as_ref()
            .map(|h| now_wall_ms.saturating_sub(h.acquired_at_ms))
            .filter(|&age| age > 0);
        let hold = recent
            .typical()
            .or_else(|| self.hold_during_wait())
            .or(holder_age);
        let expiry = self.holder.as_ref().map(|h| h.expires_in_ms.max(1));
        let Some(hold) = hold else {
            return expiry.unwrap_or(1_000);
        };
        let estimate = ahead.saturating_add(1).saturating_mul(hold);
        match expiry {
            Some(expiry) if ahead == 0 => estimate.min(expiry),
            _ => estimate,
        }
        .max(1)
    }

    /// The 503's message: who held the key, or why no holder is named.
    pub fn message(&self, wait_ms: u64) -> String {
        let place = self.place.map_or(String::new(), |p| {
            format!("; this request was {p} in the queue")
        });
        match &self.holder {
            Some(h) => format!(
                "held by {} (token {}) for the whole wait of {wait_ms} ms{place}",
                crate::answer::escape(&h.id),
                h.token
            ),
            None if self.store_slow => format!(
                "no holder seen: the store did not answer in time (the wait is {wait_ms} ms){place}"
            ),
            None if self.unseen_misses > 0 => format!(
                "no holder seen: each write lost its race to another request's within the wait \
                 of {wait_ms} ms{place}"
            ),
            None => format!("no holder seen within the wait of {wait_ms} ms{place}"),
        }
    }
}

/// How many recent holds an instance keeps.
const RECENT: usize = 16;

/// The last holds this instance saw from grant to release (ms).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recent {
    holds: [u64; RECENT],
    len: usize,
    next: usize,
}

impl Recent {
    pub fn record(&mut self, hold_ms: u64) {
        self.holds[self.next] = hold_ms;
        self.next = (self.next + 1) % RECENT;
        self.len = (self.len + 1).min(RECENT);
    }

    /// The median of the recent holds, once there are three.
    pub fn typical(&self) -> Option<u64> {
        if self.len < 3 {
            return None;
        }
        let mut holds = self.holds[..self.len].to_vec();
        holds.sort_unstable();
        Some(holds[self.len / 2].max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(token: u64, acquired_at_ms: u64, expires_in_ms: u64) -> Holder {
        Holder {
            id: "h".into(),
            token,
            acquired_at_ms,
            expires_in_ms,
        }
    }

    #[test]
    fn with_nothing_seen_it_is_the_holders_expiry_or_a_second() {
        assert_eq!(Seen::default().retry_after_ms(&Recent::default(), 0), 1_000);
        let mut seen = Seen::default();
        seen.held_by(0, holder(5, 10_000, 9_000));
        // Its age is unknown (acquired "now"): its expiry.
        assert_eq!(seen.retry_after_ms(&Recent::default(), 10_000), 9_000);
    }

    #[test]
    fn recent_holds_set_the_pace_times_the_queue_ahead() {
        let mut recent = Recent::default();
        for ms in [20, 25, 400, 22, 21] {
            recent.record(ms);
        }
        assert_eq!(recent.typical(), Some(22));
        let mut seen = Seen::default();
        seen.held_by(0, holder(5, 0, 9_000));
        assert_eq!(seen.retry_after_ms(&recent, 100), 22);
        seen.queued(10, 4);
        assert_eq!(seen.retry_after_ms(&recent, 100), 88);
    }

    #[test]
    fn how_fast_the_key_changed_hands_during_the_wait() {
        let mut seen = Seen::default();
        seen.held_by(100, holder(5, 0, 9_000));
        seen.held_by(300, holder(9, 0, 9_000));
        assert_eq!(seen.retry_after_ms(&Recent::default(), 0), 50);
        let mut queued = Seen::default();
        queued.queued(0, 6);
        queued.queued(200, 2);
        // Place 2: one ahead, and the holder: two holds of 50 ms.
        assert_eq!(queued.retry_after_ms(&Recent::default(), 0), 100);
    }

    #[test]
    fn the_holders_age_when_nothing_else_was_seen_capped_by_its_expiry() {
        let mut seen = Seen::default();
        seen.held_by(0, holder(5, 1_000, 9_000));
        assert_eq!(seen.retry_after_ms(&Recent::default(), 1_030), 30);
        seen.held_by(0, holder(5, 1_000, 20));
        assert_eq!(seen.retry_after_ms(&Recent::default(), 1_030), 20);
    }

    #[test]
    fn the_message_names_the_holder_or_says_why_none() {
        let mut seen = Seen::default();
        assert!(seen.message(200).contains("no holder seen within"));
        seen.missed_unseen();
        assert!(
            seen.message(200).contains("lost its race"),
            "{}",
            seen.message(200)
        );
        seen.store_slow = true;
        assert!(seen.message(200).contains("did not answer in time"));
        seen.held_by(0, holder(7, 0, 1));
        seen.queued(0, 3);
        let m = seen.message(200);
        assert!(
            m.contains("held by h (token 7)") && m.contains("3 in the queue"),
            "{m}"
        );
    }
}
