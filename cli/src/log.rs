//! Progress lines on stderr: `s3-lease: …` for people (the default), or
//! with `--log-format json` one JSON object per line for log pipelines,
//! carrying the event, key, holder and token beside the same message.
//! Every line goes through `stderr_lines`: written at best effort by a
//! thread of its own, never by the caller.

use serde_json::{json, Value};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};
use tracing_subscriber::filter::Targets;
use tracing_subscriber::Layer;

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Human,
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Set once, from the command line, before anything is said.
pub fn set_format(format: LogFormat) {
    let _ = FORMAT.set(format);
    crate::stderr_lines::init(match format {
        LogFormat::Human => crate::stderr_lines::lost_lines,
        LogFormat::Json => lost_lines_json,
    });
}

/// The note on lines stderr did not take, as one JSON line.
fn lost_lines_json(lost: u64) -> String {
    let about = About {
        key: "",
        holder: None,
        token: None,
    };
    let message = crate::stderr_lines::lost_lines(lost);
    let message = message.trim_start_matches("s3-lease: ");
    let mut line = record("lines-lost", &about, message, SystemTime::now());
    line["key"] = Value::Null;
    line["lost"] = lost.into();
    line.to_string()
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
    crate::stderr_lines::line(if is_json() {
        record(event, about, message, SystemTime::now()).to_string()
    } else {
        format!("s3-lease: {}", shown(message))
    });
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

/// Shows the host's `tracing` events on stderr as progress lines (unless
/// `quiet`): by default its INFO and above under `s3_lease` (a failed
/// request: an endpoint down, a 5xx, a 429), each naming the call, the key
/// and the endpoint; `S3LEASE_LOG` (`s3_lease=debug`: every request and
/// call) changes what is shown. The elector's role changes are left out:
/// the command line says them itself.
pub fn show_host_events(quiet: bool) {
    use tracing_subscriber::layer::SubscriberExt;
    if quiet {
        return;
    }
    let filter = std::env::var("S3LEASE_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| {
            Targets::new()
                .with_target("s3_lease", tracing::Level::INFO)
                .with_target(
                    "s3_lease::elector",
                    tracing::level_filters::LevelFilter::OFF,
                )
        });
    let subscriber = tracing_subscriber::registry().with(HostLines::default().with_filter(filter));
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// A request event that failed prints at most once in this long; the
/// ones in between are counted on the next line (a waiting acquire on an
/// endpoint that refuses at once tries every few hundred ms).
const FAILED_REQUEST_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The layer that turns the host's events into progress lines.
#[derive(Default)]
struct HostLines {
    /// When the last failed request was printed, and how many were not since.
    failed: std::sync::Mutex<(Option<std::time::Instant>, u64)>,
}

/// A span's fields, kept for its events.
struct SpanFields(serde_json::Map<String, Value>);

struct Collect<'a>(&'a mut serde_json::Map<String, Value>);

impl tracing::field::Visit for Collect<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl<S> Layer<S> for HostLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = serde_json::Map::new();
        attrs.record(&mut Collect(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields));
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(span) = ctx.span(id) {
            if let Some(fields) = span.extensions_mut().get_mut::<SpanFields>() {
                values.record(&mut Collect(&mut fields.0));
            }
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: tracing_subscriber::layer::Context<'_, S>) {
        // The call's fields (op, key, store, endpoint, bucket), then the event's.
        let mut fields = serde_json::Map::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(own) = span.extensions().get::<SpanFields>() {
                    fields.extend(own.0.clone());
                }
            }
        }
        event.record(&mut Collect(&mut fields));
        let level = *event.metadata().level();
        let name = event.metadata().name();
        // The preflight provokes failures on purpose and reports each
        // finding itself (and `--json preflight` keeps stderr one object).
        if name == "s3lease.request"
            && fields.get("op").and_then(Value::as_str) == Some("preflight")
        {
            return;
        }
        if name == "s3lease.request" && level <= tracing::Level::WARN {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            let now = std::time::Instant::now();
            match failed.0 {
                Some(last) if now.duration_since(last) < FAILED_REQUEST_EVERY => {
                    failed.1 += 1;
                    return;
                }
                _ => {
                    if failed.1 > 0 {
                        fields.insert("not_shown".into(), failed.1.into());
                    }
                    *failed = (Some(now), 0);
                }
            }
        }
        say_host_event(name, level, fields);
    }
}

/// One line for a host event: `s3-lease: acquire k: <message>`, or its
/// fields as one JSON object (`event` is the event's name without the
/// `s3lease.` in front: `request`, `call.end`).
fn say_host_event(name: &str, level: tracing::Level, mut fields: serde_json::Map<String, Value>) {
    let message = match fields.remove("message") {
        Some(Value::String(m)) => m,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    if is_json() {
        let mut line = serde_json::Map::new();
        line.insert("ts".into(), rfc3339(SystemTime::now()).into());
        line.insert(
            "event".into(),
            name.strip_prefix("s3lease.").unwrap_or(name).into(),
        );
        line.insert("level".into(), level.as_str().to_ascii_lowercase().into());
        line.insert("message".into(), message.into());
        for (k, v) in fields {
            line.entry(k).or_insert(v);
        }
        line.entry("key").or_insert(Value::Null);
        line.entry("holder").or_insert(Value::Null);
        line.entry("token").or_insert(Value::Null);
        crate::stderr_lines::line(Value::Object(line).to_string());
    } else {
        let str_of = |k: &str| fields.get(k).and_then(Value::as_str).unwrap_or("");
        let mut text = match (str_of("op"), str_of("key")) {
            ("", _) => message,
            (op, "") => format!("{op}: {message}"),
            (op, key) => format!("{op} {key}: {message}"),
        };
        if let Some(n) = fields.get("not_shown").and_then(Value::as_u64) {
            text.push_str(&format!(" ({n} more failed requests since the last line)"));
        }
        crate::stderr_lines::line(format!("s3-lease: {}", shown(&text)));
    }
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

/// [`rfc3339`] of a time in ms since the Unix epoch (a store's).
pub fn rfc3339_ms(ms: u64) -> String {
    rfc3339(UNIX_EPOCH + std::time::Duration::from_millis(ms))
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
