//! A point in time as `--since` and `--before` take one.

use std::time::{SystemTime, UNIX_EPOCH};

/// `--since` and `--before`: an RFC 3339 time (`2026-11-28T03:12:00Z`,
/// `2026-11-28T04:12:00+01:00`; the store's clock is compared with it), or
/// a span back from now on this machine's clock (`2h`, `7d`).
pub fn parse_time(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if let Some(ms) = parse_rfc3339(text) {
        return Ok(ms);
    }
    let ago = crate::duration::parse(text).map_err(|_| {
        format!("{text:?} is neither an RFC 3339 time (2026-11-28T03:12:00Z) nor a span (2h, 7d)")
    })?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    Ok(u64::try_from(now.saturating_sub(ago).as_millis()).unwrap_or(u64::MAX))
}

/// `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)` to ms since the Unix epoch.
fn parse_rfc3339(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = text.get(start..i.min(start + 3))?;
        if digits.is_empty() {
            return None;
        }
        ms = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
    }
    let offset_s = match text.get(i..)? {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && zone.as_bytes()[3] == b':' => {
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            sign * (oh * 3600 + om * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_s;
    u64::try_from(secs.checked_mul(1000)?.checked_add(ms)?).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_as_the_store_writes_them() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_time("2026-11-28T03:12:00Z"), Ok(1_795_835_520_000));
        assert_eq!(
            parse_time("2026-11-28T03:12:00.250Z"),
            Ok(1_795_835_520_250)
        );
        assert_eq!(
            parse_time("2026-11-28T04:12:00+01:00"),
            Ok(1_795_835_520_000)
        );
        assert_eq!(parse_time("2000-02-29T00:00:00Z"), Ok(951_782_400_000));
        for bad in [
            "2026-13-01T00:00:00Z",
            "2026-11-28",
            "2026-11-28T03:12:00",
            "soon",
        ] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_span_counts_back_from_now() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let then = parse_time("2h").unwrap();
        assert!(now - then >= 7_200_000 && now - then < 7_260_000);
    }
}
