//! Durations on the command line: `30s`, `5m`, `1h`, `250ms`, `1m30s`; a
//! bare number is seconds.

use std::time::Duration;

pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    if rest.is_empty() {
        return Err("an empty duration".into());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("{text:?} is not a duration like 30s, 5m, 1h or 250ms"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(1),
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            "d" => Duration::from_secs(86_400),
            other => {
                return Err(format!(
                    "{text:?}: unknown unit {other:?} (use ms, s, m, h or d)"
                ))
            }
        };
        rest = &rest[unit_len..];
        let part = unit
            .checked_mul(u32::try_from(number).map_err(|_| format!("{text:?} is too long"))?)
            .ok_or_else(|| format!("{text:?} is too long"))?;
        total = total
            .checked_add(part)
            .ok_or_else(|| format!("{text:?} is too long"))?;
    }
    Ok(total)
}

/// The longest lease the component grants.
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// `--ttl`: 1s to 7d, for `run`, `elect` and `acquire` alike. A lease
/// renewed every ttl/6 needs a second to be renewed at all, and a shorter
/// one from `acquire` can be expired by the time it is printed.
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    let ttl = parse(text)?;
    if ttl < Duration::from_secs(1) {
        return Err(format!("{} is under 1s, the shortest lease", text.trim()));
    }
    if ttl > MAX_TTL {
        return Err(format!("{} is over 7 days, the longest lease", text.trim()));
    }
    Ok(ttl)
}

/// A duration that must not be zero (`--every`).
pub fn parse_positive(text: &str) -> Result<Duration, String> {
    let d = parse(text)?;
    if d.is_zero() {
        return Err("must be more than 0".into());
    }
    Ok(d)
}

/// `12.3s`, `4m05s`: for people.
pub fn show(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_people_type() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        for bad in ["", "s", "10x", "-3s", "99999999999999999999s", "1.5s"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_ttl_is_one_second_to_seven_days() {
        assert_eq!(parse_ttl("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_ttl("7d"), Ok(MAX_TTL));
        assert_eq!(
            parse_ttl("100d"),
            Err("100d is over 7 days, the longest lease".into())
        );
        assert_eq!(
            parse_ttl("500ms"),
            Err("500ms is under 1s, the shortest lease".into())
        );
        assert!(parse_ttl("0").is_err());
    }
}
