//! HTTP dates (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110's IMF-fixdate), the
//! format of S3's `Date` and `Last-Modified` headers. The epoch-objects
//! strategy judges validity by these, on the server's clock.

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/// The IMF-fixdate of a Unix time in seconds (an HTTP date, as `x-ms-date`).
pub fn format(unix_seconds: u64) -> alloc::string::String {
    let days = unix_seconds / 86_400;
    let secs = unix_seconds % 86_400;
    let (year, month, day) = crate::sigv4::civil_from_days(days as i64);
    format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7 + 4) as usize % 7],
        MONTHS[(month as usize).saturating_sub(1) % 12],
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60
    )
}

/// Milliseconds since the Unix epoch, or `None` for anything else.
pub fn parse_ms(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let _weekday = parts.next()?.strip_suffix(',')?;
    let day: u32 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?;
    let month = MONTHS.iter().position(|m| *m == month_name)? as u32 + 1;
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let (h, m, s): (u64, u64, u64) = (
        hms.next()?.parse().ok()?,
        hms.next()?.parse().ok()?,
        hms.next()?.parse().ok()?,
    );
    if parts.next()? != "GMT" || parts.next().is_some() || hms.next().is_some() {
        return None;
    }
    if !(1970..=9999).contains(&year) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    let days = u64::try_from(days_from_civil(year, month, day)).ok()?;
    Some(((days * 24 + h) * 60 + m) * 60_000 + s * 1000)
}

/// Milliseconds since the Unix epoch of an RFC 3339 time in UTC, as a JSON
/// API writes an object's `updated` (`2026-11-28T08:56:18.123Z`, the fraction
/// any length or none), or `None` for anything else.
pub fn parse_rfc3339_ms(value: &str) -> Option<u64> {
    let value = value.trim();
    let (date, time) = value.split_once(['T', 't'])?;
    let time = time
        .strip_suffix(['Z', 'z'])
        .or_else(|| time.strip_suffix("+00:00"))?;
    let mut ymd = date.split('-');
    let (year, month, day): (i64, u32, u32) = (
        ymd.next()?.parse().ok()?,
        ymd.next()?.parse().ok()?,
        ymd.next()?.parse().ok()?,
    );
    let (hms, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut hms = hms.split(':');
    let (h, m, s): (u64, u64, u64) = (
        hms.next()?.parse().ok()?,
        hms.next()?.parse().ok()?,
        hms.next()?.parse().ok()?,
    );
    if ymd.next().is_some() || hms.next().is_some() || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if !(1970..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || h > 23
        || m > 59
        || s > 60
    {
        return None;
    }
    let ms: u64 = format!("{fraction:0<3}")[..3].parse().ok()?;
    let days = u64::try_from(days_from_civil(year, month, day)).ok()?;
    Some(((days * 24 + h) * 60 + m) * 60_000 + s * 1000 + ms)
}

/// The RFC 3339 time (UTC, milliseconds) of `ms` since the Unix epoch.
pub fn format_rfc3339(ms: u64) -> alloc::string::String {
    let seconds = ms / 1000;
    let days = seconds / 86_400;
    let secs = seconds % 86_400;
    let (year, month, day) = crate::sigv4::civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_rfc3339_times_as_json_apis_send_them() {
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_ms("2026-11-22T08:39:16.123Z"),
            Some(1_795_336_756_123)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-22T08:39:16.1234567Z"),
            Some(1_795_336_756_123)
        );
        assert_eq!(
            parse_rfc3339_ms("2026-11-22T08:39:16.5+00:00"),
            Some(1_795_336_756_500)
        );
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22T08:39:16",
            "2026-11-22T08:39:16+01:00",
            "2026-13-22T08:39:16Z",
            "2026-11-22T08:39:16.x1Z",
            "2026-11-22T08:39Z",
        ] {
            assert_eq!(parse_rfc3339_ms(bad), None, "{bad}");
        }
        for ms in [0, 1_795_336_756_123, 1_835_481_599_999] {
            assert_eq!(parse_rfc3339_ms(&format_rfc3339(ms)), Some(ms));
        }
        assert_eq!(
            format_rfc3339(1_795_336_756_000),
            "2026-11-22T08:39:16.000Z"
        );
    }

    #[test]
    fn parses_imf_fixdates() {
        assert_eq!(parse_ms("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_ms("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777_000)
        );
        // What SeaweedFS sent on the day this was written.
        assert_eq!(
            parse_ms("Sun, 22 Nov 2026 08:39:16 GMT"),
            Some(1_795_336_756_000)
        );
        assert_eq!(
            parse_ms("Tue, 29 Feb 2028 23:59:59 GMT"),
            Some(1_835_481_599_000)
        );
    }

    #[test]
    fn formats_what_it_parses() {
        assert_eq!(format(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(format(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format(1_835_481_599), "Tue, 29 Feb 2028 23:59:59 GMT");
        for s in [0, 86_399, 951_782_400, 1_795_336_756, 4_102_444_800] {
            assert_eq!(parse_ms(&format(s)), Some(s * 1000), "{s}");
            assert_eq!(
                format(s),
                crate::stores::s3::model::http_date(s * 1000),
                "{s}"
            );
        }
    }

    #[test]
    fn refuses_anything_else() {
        for bad in [
            "",
            "yesterday",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 PST",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 25:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37:01 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, 06 Nov 99999999999999999999 08:49:37 GMT",
            "1994-11-06T08:49:37Z",
        ] {
            assert_eq!(parse_ms(bad), None, "{bad:?}");
        }
    }
}
