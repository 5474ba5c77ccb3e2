//! The two ways S3 writes an instant: IMF-fixdate in headers (`Date`,
//! `Last-Modified`) and ISO 8601 in ListObjectsV2 XML. Both in whole seconds
//! of UTC, as S3 keeps them.

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// A UTC instant broken into calendar fields, whole seconds.
struct Civil {
    year: i64,
    /// 1 ..= 12
    month: usize,
    day: i64,
    /// 0 is Sunday.
    weekday: usize,
    hour: u64,
    minute: u64,
    second: u64,
}

fn civil(ms: u64) -> Civil {
    let secs = ms / 1000;
    // At most u64::MAX / 86_400_000 days: far inside i64.
    let days = (secs / 86_400) as i64;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        // 1970-01-01 was a Thursday.
        weekday: ((days + 4) % 7) as usize,
        hour: secs / 3600 % 24,
        minute: secs / 60 % 60,
        second: secs % 60,
    }
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, the inverse of `http_date::days_from_civil`).
fn civil_from_days(days: i64) -> (i64, usize, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as usize, day)
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`: RFC 9110's IMF-fixdate, milliseconds
/// dropped as S3 drops them.
pub fn http_date(ms: u64) -> String {
    let c = civil(ms);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[c.weekday],
        c.day,
        MONTHS[c.month - 1],
        c.year,
        c.hour,
        c.minute,
        c.second
    )
}

/// `1994-11-06T08:49:37.000Z`: ListObjectsV2's `LastModified`.
pub fn iso8601(ms: u64) -> String {
    let c = civil(ms);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.000Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}
