//! This machine's wall clock against the store's, from the `Date` of the
//! preflight's replies. `Date` is whole seconds, stamped somewhere between
//! our send and our receipt, so each reply bounds the offset to an interval;
//! the intervals of all replies are intersected.

/// Our wall clock minus the store's, in ms (positive: this machine is
/// ahead), give or take `uncertainty_ms`: defined once for the core, the
/// host crate and the guest crate.
pub use s3_lease_keep::records::ClockOffset;

/// The interval the offset lies in, `[low, high]` ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct OffsetBounds {
    bounds: Option<(i128, i128)>,
    /// The last reply's own interval: used when the intersection is empty
    /// (a clock stepped during the preflight).
    last: Option<(i128, i128)>,
}

impl OffsetBounds {
    /// A reply stamped `date_ms` to a request sent at `sent_ms` and
    /// answered at `received_ms` (our wall clock). The server stamped it at
    /// some true time in `[date, date + 1000)` on its clock, while ours read
    /// between `sent` and `received`.
    pub(super) fn add(&mut self, sent_ms: u64, received_ms: u64, date_ms: u64) {
        let (sent, received, date) = (
            i128::from(sent_ms),
            i128::from(received_ms.max(sent_ms)),
            i128::from(date_ms),
        );
        let this = (sent - date - 999, received - date);
        self.last = Some(this);
        self.bounds = Some(match self.bounds {
            None => this,
            Some((low, high)) => (low.max(this.0), high.min(this.1)),
        });
    }

    pub(super) fn estimate(&self) -> Option<ClockOffset> {
        let (low, high) = match self.bounds {
            Some((low, high)) if low <= high => (low, high),
            _ => self.last?,
        };
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        Some(ClockOffset {
            offset_ms: clamp(low + (high - low) / 2),
            uncertainty_ms: u64::try_from((high - low + 1) / 2).unwrap_or(u64::MAX),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_reply_bounds_the_offset_to_a_second_and_the_round_trip() {
        let mut b = OffsetBounds::default();
        // Sent at 10.100 s, answered at 10.120 s, stamped 10 s: the server
        // read 10.000..10.999 while we read 10.100..10.120.
        b.add(10_100, 10_120, 10_000);
        let o = b.estimate().unwrap();
        assert!(o.offset_ms - o.uncertainty_ms as i64 <= -899 + 1);
        assert!(o.offset_ms + o.uncertainty_ms as i64 >= 120);
        assert!(o.uncertainty_ms <= 520, "{o:?}");
    }

    #[test]
    fn replies_across_a_second_boundary_narrow_it() {
        let mut b = OffsetBounds::default();
        // Our clock 3 s ahead of the store's; the store's second ticks
        // between the two replies.
        b.add(13_990, 13_995, 10_000);
        b.add(14_000, 14_005, 11_000);
        let o = b.estimate().unwrap();
        assert!((2_990..=3_010).contains(&o.offset_ms), "{o:?}");
        assert!(o.uncertainty_ms <= 10, "{o:?}");
        assert!(o.worst_ms() >= 3_000);
    }

    #[test]
    fn a_clock_that_steps_falls_back_to_the_last_reply() {
        let mut b = OffsetBounds::default();
        b.add(10_000, 10_010, 10_000);
        b.add(500_000, 500_010, 11_000);
        let o = b.estimate().unwrap();
        assert!(o.offset_ms > 400_000, "{o:?}");
        assert_eq!(OffsetBounds::default().estimate(), None);
        let mut extreme = OffsetBounds::default();
        extreme.add(u64::MAX, 0, 0);
        extreme.add(0, u64::MAX, u64::MAX);
        let _ = extreme.estimate();
    }
}
