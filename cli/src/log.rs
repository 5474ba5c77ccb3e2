//! Progress lines on stderr: `s3-lease: …` for people (the default), or
//! with `--log-format json` one JSON object per line for log pipelines,
//! carrying the event, key, holder and token beside the same message.

use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Human,
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Set once, from the command line, before anything is said.
pub fn set_format(format: LogFormat) {
    let _ = FORMAT.set(format);
}

pub fn is_json() -> bool {
    FORMAT.get() == Some(&LogFormat::Json)
}

/// Who and what a line is about.
pub struct About<'a> {
    pub key: &'a str,
    pub holder: Option<&'a str>,
    pub token: Option<u64>,
}

/// One progress line. `event` is a stable name (`acquired`, `lost`, …);
/// `message` is the human text, the same in both formats (escaped for a
/// terminal in the human one; JSON escapes what it must itself).
pub fn say(event: &str, about: &About, message: &str) {
    if is_json() {
        eprintln!("{}", record(event, about, message, SystemTime::now()));
    } else {
        eprintln!("s3-lease: {}", shown(message));
    }
}

/// `text` safe to print to a terminal: every control character (C0, DEL,
/// C1: escape sequences, carriage returns, newlines that would forge a
/// line) and every character that reorders or hides text (bidirectional
/// overrides and isolates, zero-width marks) written as an escape (`\x1b`,
/// `\u{202e}`). Whatever the store holds (a holder id, metadata, an error
/// naming them) was written by whoever could take the lock: it goes
/// through this before any human-readable output. JSON output is exact.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_odd) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !is_odd(c) => out.push(c),
            c if u32::from(c) < 0x80 => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    out.into()
}

fn is_odd(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{061c}'
                | '\u{feff}'
        )
}

fn record(event: &str, about: &About, message: &str, now: SystemTime) -> Value {
    json!({
        "ts": rfc3339(now),
        "event": event,
        "key": about.key,
        "holder": about.holder,
        "token": about.token,
        "message": message,
    })
}

/// `2026-11-23T23:41:07.123Z`: UTC, milliseconds.
fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Duration;

    #[test]
    fn what_a_terminal_would_obey_is_escaped() {
        assert_eq!(shown("vm-1/530/ab"), "vm-1/530/ab");
        assert_eq!(shown("naïve ✓"), "naïve ✓");
        assert_eq!(
            shown("a\x1b]0;owned\x07b\x1b[2J\r\nc\u{9b}"),
            "a\\x1b]0;owned\\x07b\\x1b[2J\\x0d\\x0ac\\u{9b}"
        );
        assert_eq!(shown("x\u{202e}y\u{2066}z"), "x\\u{202e}y\\u{2066}z");
        assert_eq!(shown("\x7f"), "\\x7f");
        // Escaping twice changes nothing more.
        let once = shown("\x1b[31m").into_owned();
        assert_eq!(shown(&once), once);
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_477_267_123);
        assert_eq!(rfc3339(t), "2026-11-23T23:41:07.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
    }

    #[test]
    fn a_json_line_has_the_event_key_holder_token_and_message() {
        let about = About {
            key: "k",
            holder: Some("h"),
            token: Some(3),
        };
        let v = record("acquired", &about, "acquired k", UNIX_EPOCH);
        assert_eq!(v["event"], "acquired");
        assert_eq!(v["key"], "k");
        assert_eq!(v["holder"], "h");
        assert_eq!(v["token"], 3);
        assert_eq!(v["message"], "acquired k");
    }
}
