//! What the simulation holds credential refreshers to, judged on the spot:
//! fetches paced whatever the source hands out, and keys renewed before
//! they expire whenever they could have been.

use super::world::World;
use super::START_MS;
use s3_lease_keep::refresh::MIN_PACE_MS;

#[cfg(test)]
mod tests;

/// Fetches a refresher may make beyond one per pace over its life (its
/// first, and one due the instant it starts).
const SPARE_FETCHES: u64 = 2;

pub const PACED: &str = "a credential refresher fetches at most once per pace";
pub const BOUNDED: &str = "a credential refresher's fetches are bounded by its life over the pace";
pub const FRESH: &str = "credentials from a healthy source are renewed before they expire";

impl World {
    /// `actor`'s refresher begins a fetch at `wall_ms` on its own clock.
    ///
    /// Pacing: never two fetches within `MIN_PACE_MS` of the host's wall
    /// clock (unless the clock stepped between them, which moves every
    /// reading), and no more over a life than its length allows at that
    /// pace (plus one per step of the clock).
    pub fn fetch_began(&mut self, actor: usize, wall_ms: u64) {
        let now = self.now;
        let who = self.who(actor);
        let c = &mut self.hosts[actor].credentials;
        let previous = c.last_fetch.replace((wall_ms, c.jumps));
        c.fetches += 1;
        let fetches = c.fetches;
        let allowed = (now - c.life_start) / MIN_PACE_MS + SPARE_FETCHES + u64::from(c.jumps);
        self.report.credential_fetches += 1;
        if let Some((last, jumps)) = previous {
            if jumps == self.hosts[actor].credentials.jumps && wall_ms < last + MIN_PACE_MS {
                self.violated(
                    PACED,
                    format!(
                        "{who}: a fetch at {wall_ms} ms on its clock, {} ms after the last",
                        wall_ms.saturating_sub(last)
                    ),
                );
            }
        }
        if fetches > allowed {
            self.violated(
                BOUNDED,
                format!(
                    "{who}: {fetches} fetches in {} ms",
                    now - self.hosts[actor].credentials.life_start
                ),
            );
        }
    }

    /// The access key `actor`'s next request signs with.
    ///
    /// Freshness: from a healthy source, a request never goes out with
    /// keys past their expiry, unless its process stalled since its last
    /// fetch or its wall clock was further off than the refresh lead
    /// covers (then its refresh may come late, as the host's would).
    pub fn signed_with(&mut self, actor: usize) -> Option<String> {
        let c = &self.hosts[actor].credentials;
        let key = c.installed.as_ref()?.access_key_id.clone();
        let wall = START_MS + self.now;
        let plan = &self.source.plan;
        let judged = plan.is_healthy() && !c.stalled && c.max_skew_ms <= plan.fresh_skew_ms();
        self.report.sends_judged_fresh += u64::from(judged);
        if !self.source.expired(&key, wall) {
            return Some(key);
        }
        self.report.sent_expired += 1;
        if judged {
            let who = self.who(actor);
            let expired = self.source.expiry(&key).unwrap_or(0);
            let (skew, fetched) = (c.max_skew_ms, c.last_fetch);
            self.violated(
                FRESH,
                format!(
                    "{who}: sent at {wall} ms with {key}, expired at {expired} ms; \
                     its clock at most {skew} ms off, last fetch at {fetched:?} (its clock)"
                ),
            );
        }
        Some(key)
    }
}
