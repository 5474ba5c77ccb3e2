//! Property tests: every parser of untrusted input (S3 replies, lock and
//! epoch objects, HTTP dates, header values, caller configuration) returns a
//! value or a typed error on arbitrary input and never panics, since a panic
//! traps the whole WebAssembly instance; and, where a writer exists, what is
//! written reads back equal.
//!
//! Inputs are arbitrary bytes and strings, plus strings assembled from
//! fragments of the expected syntax (JSON, XML, dates, URLs), so the parsers
//! get past their first check. Failures are not persisted to files: each one
//! found becomes a named regression test next to the code it fixed.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::Config;
use s3_lease::audit::fenced::FencedScan;
use s3_lease::config::{Addressing, ClientConfig, RawConfig, Store, Strategy as LockStrategy};
use s3_lease::error::Error;
use s3_lease::expiry::{ExpiryClock, Judge};
use s3_lease::fenced::{
    Change, Fence, FencedGet, FencedWrite, META_LOCK, META_TOKEN, META_TOMBSTONE,
};
use s3_lease::http_date::parse_ms;
use s3_lease::lease::{Grant, Lease};
use s3_lease::limits::MAX_TTL_MS;
use s3_lease::lock_object::semaphore::SemaphoreRecord;
use s3_lease::lock_object::LockRecord;
use s3_lease::preflight::{Preflight, Verdicts, RACE_REQUESTS};
use s3_lease::protocol::{Operation, Step};
use s3_lease::seal::{Sealer, StoredKey};
use s3_lease::sigv4::{self, Credentials, Scope, SigningRequest};
use s3_lease::stores::s3::{parse_list, parse_versions, Method, S3Request, S3Response};
use s3_lease::stores::S3Bucket;
use s3_lease::strategy::epoch::{
    epoch_key, parse_epoch_key, Cleanup, EpochInspect, EpochRecord, EpochRewrite, EpochTryAcquire,
};
use s3_lease::strategy::single_object::{Inspect, RewriteOwn, TryAcquire};

/// Cases per property: enough to matter, the whole file well under 5 s in
/// debug. `PROPTEST_CASES` overrides it for a longer run.
const CASES: u32 = 512;

fn config(cases: u32) -> Config {
    let default = Config::default();
    Config {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            default.cases
        } else {
            cases
        },
        failure_persistence: None,
        ..default
    }
}

/// Below this many milliseconds a record's times round-trip (year 5138).
const MAX_RECORD_MS: u64 = 100_000_000_000_000;
/// 10000-01-01T00:00:00Z: HTTP dates have four-digit years.
const YEAR_10000_MS: u64 = 253_402_300_800_000;

// ------------------------------------------------------------- strategies

/// Any string, control characters and all (`any::<String>()` leaves those out).
fn text(len: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    vec(any::<char>(), len).prop_map(String::from_iter)
}

/// Strings assembled from `frags` and bits of arbitrary text.
fn fragments(frags: &'static [&'static str], parts: usize) -> BoxedStrategy<String> {
    vec(
        prop_oneof![
            4 => select(frags).prop_map(str::to_string),
            1 => text(0..6),
        ],
        0..parts,
    )
    .prop_map(|p| p.concat())
    .boxed()
}

fn short_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..256)
}

/// A body that prints as escaped text when a case fails.
#[derive(Clone)]
struct Body(Vec<u8>);

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

/// Arbitrary bytes, JSON objects of our fields and broken JSON.
fn json_body() -> impl Strategy<Value = Body> {
    prop_oneof![
        1 => short_bytes(),
        1 => json_object(),
        1 => json_soup(),
        3 => record_like(),
    ]
    .prop_map(Body)
}

/// A JSON number as text, from plain to absurd (overflowing, huge exponents).
fn json_number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| f.to_string()),
        "-?[0-9]{1,25}(\\.[0-9]{0,12})?([eE][-+]?[0-9]{1,4})?",
        // Just below the ceiling of a lock time (1e11 s): rounding at the edge.
        "99999999999\\.999[0-9]{0,8}",
        select(EDGE_NUMBERS).prop_map(str::to_string),
    ]
}

/// Numbers at the edges of what the records accept.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-0.0",
    "0.0004",
    "-0.0004",
    "1e-400",
    "1e400",
    "-1",
    "99999999999.999",
    "99999999999.9995",
    "99999999999.9999",
    "1e11",
    "100000000000",
    "604800000",
    "604800001",
    "18446744073709551615",
    "18446744073709551616",
    "9007199254740993",
    "1.5",
];

/// A JSON value as text, shallow, of every kind.
fn json_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => json_number(),
        1 => select(&["null", "true", "false", "[]", "{}", "[1,2]", "{\"a\":1}"][..]).prop_map(str::to_string),
        1 => text(0..12).prop_map(|s| serde_json::Value::from(s).to_string()),
    ]
}

/// A JSON object of the fields our records use (and a stray one), each
/// absent or holding any kind of value; sometimes with a duplicate key.
fn json_object() -> impl Strategy<Value = Vec<u8>> {
    const FIELDS: &[&str] = &[
        "expires_at",
        "token",
        "holder",
        "acquired_at",
        "metadata",
        "ttl_ms",
        "renewed_at",
        "expired",
        "validity_ms",
        "other",
    ];
    vec((select(FIELDS), json_value()), 0..9).prop_map(|fields| {
        let inner: Vec<String> = fields
            .iter()
            .map(|(name, value)| format!("{name:?}:{value}"))
            .collect();
        format!("{{{}}}", inner.join(",")).into_bytes()
    })
}

/// A record of either kind with each field valid, at an edge, of any kind
/// or missing: mostly nearly valid, so parsing reaches every field's check.
fn record_like() -> impl Strategy<Value = Vec<u8>> {
    fn field(valid: BoxedStrategy<String>) -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            4 => valid.prop_map(Some),
            2 => select(EDGE_NUMBERS).prop_map(|n| Some(n.to_string())),
            1 => json_value().prop_map(Some),
            1 => Just(None),
        ]
    }
    let seconds = || {
        (0..MAX_RECORD_MS)
            .prop_map(|ms| (ms as f64 / 1000.0).to_string())
            .boxed()
    };
    let string = || {
        text(0..8)
            .prop_map(|s| serde_json::Value::from(s).to_string())
            .boxed()
    };
    (
        field(seconds()),
        field(
            prop_oneof![0..5u64, any::<u64>()]
                .prop_map(|n| n.to_string())
                .boxed(),
        ),
        field(string()),
        field(seconds()),
        field(string()),
        field(
            select(&["true", "false"][..])
                .prop_map(str::to_string)
                .boxed(),
        ),
        field((0..=MAX_TTL_MS).prop_map(|n| n.to_string()).boxed()),
    )
        .prop_map(|(e, t, h, a, m, x, v)| {
            let names = [
                "expires_at",
                "token",
                "holder",
                "acquired_at",
                "metadata",
                "expired",
                "validity_ms",
            ];
            let fields: Vec<String> = names
                .iter()
                .zip([e, t, h, a, m, x, v])
                .filter_map(|(name, value)| value.map(|v| format!("{name:?}:{v}")))
                .collect();
            format!("{{{}}}", fields.join(",")).into_bytes()
        })
}

/// A semaphore's object: a limit and a token at their edges or of any
/// kind, and lists of entries that are records of either kind (so nearly
/// valid), JSON values, or missing.
fn semaphore_like() -> impl Strategy<Value = Vec<u8>> {
    let number = || {
        prop_oneof![
            3 => (0..70u64).prop_map(|n| n.to_string()),
            1 => select(EDGE_NUMBERS).prop_map(str::to_string),
            1 => json_value(),
        ]
    };
    let entries = || {
        prop_oneof![
            4 => vec(record_like().prop_map(|b| String::from_utf8(b).unwrap_or_default()), 0..4)
                .prop_map(|items| Some(format!("[{}]", items.join(",")))),
            1 => json_value().prop_map(Some),
            1 => Just(None),
        ]
    };
    (number(), number(), entries(), entries()).prop_map(|(limit, token, holders, queue)| {
        let mut fields = vec![format!("\"limit\":{limit}"), format!("\"token\":{token}")];
        if let Some(h) = holders {
            fields.push(format!("\"holders\":{h}"));
        }
        if let Some(q) = queue {
            fields.push(format!("\"queue\":{q}"));
        }
        format!("{{{}}}", fields.join(",")).into_bytes()
    })
}

/// JSON syntax in pieces, for malformed and deeply nested documents.
fn json_soup() -> BoxedStrategy<Vec<u8>> {
    const JSON_FRAGS: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        "\"",
        "\"expires_at\"",
        "\"token\"",
        "\"expired\"",
        "\"validity_ms\"",
        "\"holder\"",
        "1",
        "-1",
        "1e400",
        "0.5",
        "true",
        "null",
        "\\u",
        "\\ud800",
        "\\\"",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        " ",
    ];
    fragments(JSON_FRAGS, 24)
        .prop_map(String::into_bytes)
        .boxed()
}

fn lock_record() -> impl Strategy<Value = LockRecord> {
    (
        // Any time, or one near the operations' clock (live or expired), or released.
        prop_oneof![
            2 => 0..MAX_RECORD_MS,
            2 => 1_700_000_000_000..1_800_000_000_000u64,
            1 => Just(0),
        ],
        prop_oneof![2 => any::<u64>(), 1 => epoch_number(), 1 => Just(u64::MAX)],
        text(0..24),
        0..MAX_RECORD_MS,
        text(0..48),
        (0..=MAX_TTL_MS, text(0..20)),
        // `renewed_at`: not recorded, or at most the longest ttl before
        // `expires_at` (a record claiming more is refused, and no writer
        // writes one).
        prop_oneof![1 => Just(None), 2 => (0..=MAX_TTL_MS).prop_map(Some)],
    )
        .prop_map(
            |(
                expires_at_ms,
                token,
                holder_id,
                acquired_at_ms,
                metadata,
                (ttl_ms, write_id),
                renewed_before_expiry_ms,
            )| {
                LockRecord {
                    expires_at_ms,
                    token,
                    holder_id,
                    acquired_at_ms,
                    metadata,
                    ttl_ms,
                    renewed_at_ms: renewed_before_expiry_ms
                        .map_or(0, |d| expires_at_ms.saturating_sub(d)),
                    write_id,
                }
            },
        )
}

fn epoch_record() -> impl Strategy<Value = EpochRecord> {
    (
        any::<bool>(),
        0..=MAX_TTL_MS,
        any::<u64>(),
        text(0..24),
        0..MAX_RECORD_MS,
        text(0..48),
        text(0..20),
    )
        .prop_map(
            |(expired, validity_ms, token, holder_id, acquired_at_ms, metadata, write_id)| {
                EpochRecord {
                    expired,
                    validity_ms,
                    token,
                    holder_id,
                    acquired_at_ms,
                    metadata,
                    write_id,
                }
            },
        )
}

/// One character written into XML text in any of the ways XML allows
/// (`<` and `&` never literally).
fn xml_escape_char(c: char, how: u8, out: &mut String) {
    let named = match c {
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '&' => Some("&amp;"),
        '"' => Some("&quot;"),
        '\'' => Some("&apos;"),
        _ => None,
    };
    match (how % 4, named) {
        (0, _) if c != '<' && c != '&' => out.push(c),
        (0 | 1, Some(n)) => out.push_str(n),
        (0 | 1, None) => out.push(c),
        (2, _) => out.push_str(&format!("&#{};", c as u32)),
        _ if how & 4 == 0 => out.push_str(&format!("&#x{:x};", c as u32)),
        _ => out.push_str(&format!("&#x{:X};", c as u32)),
    }
}

/// A string and one way of writing it as XML text.
fn xml_text() -> impl Strategy<Value = (String, String)> {
    vec((any::<char>(), any::<u8>()), 0..32).prop_map(|chars| {
        let mut escaped = String::new();
        for &(c, how) in &chars {
            xml_escape_char(c, how, &mut escaped);
        }
        (chars.into_iter().map(|(c, _)| c).collect(), escaped)
    })
}

/// A ListObjectsV2 reply with these (escaped) keys, the way S3 writes one,
/// with `token` (escaped) as its `NextContinuationToken`.
fn list_body(
    escaped_keys: &[(String, bool)],
    truncated: bool,
    prefix: &str,
    token: Option<&str>,
) -> String {
    let mut body = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    body.push_str(&format!(
        "<Name>locks</Name><Prefix>{prefix}</Prefix><KeyCount>{}</KeyCount>\
         <MaxKeys>200</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
        escaped_keys.len()
    ));
    for (key, key_first) in escaped_keys {
        let rest = "<LastModified>2026-01-02T03:04:05.000Z</LastModified>\
                    <ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>\
                    <Size>120</Size><StorageClass>STANDARD</StorageClass>";
        if *key_first {
            body.push_str(&format!("<Contents><Key>{key}</Key>{rest}</Contents>"));
        } else {
            body.push_str(&format!("<Contents>{rest}<Key>{key}</Key></Contents>"));
        }
    }
    if let Some(token) = token {
        body.push_str(&format!(
            "<NextContinuationToken>{token}</NextContinuationToken>"
        ));
    }
    body.push_str("</ListBucketResult>");
    body
}

/// A ListObjectVersions reply with these (escaped) entries, `(key,
/// version id, delete marker)`, each written at `2026-01-02T03:04:05Z`
/// plus its index in ms, the way S3 writes one, with `next` (escaped) as
/// its next key and version id markers.
fn versions_body(
    escaped: &[(String, String, bool)],
    truncated: bool,
    next: Option<(&str, &str)>,
) -> String {
    let mut body = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <ListVersionsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
         <Name>locks</Name><Prefix>p/</Prefix><KeyMarker></KeyMarker>",
    );
    if let Some((key, id)) = next {
        body.push_str(&format!(
            "<NextKeyMarker>{key}</NextKeyMarker><NextVersionIdMarker>{id}</NextVersionIdMarker>"
        ));
    }
    body.push_str(&format!(
        "<MaxKeys>1000</MaxKeys><IsTruncated>{truncated}</IsTruncated>"
    ));
    for (i, (key, id, marker)) in escaped.iter().enumerate() {
        let at = format!("<LastModified>2026-01-02T03:04:05.{i:03}Z</LastModified>");
        if *marker {
            body.push_str(&format!(
                "<DeleteMarker><Key>{key}</Key><VersionId>{id}</VersionId>\
                 <IsLatest>false</IsLatest>{at}</DeleteMarker>"
            ));
        } else {
            body.push_str(&format!(
                "<Version><Key>{key}</Key><VersionId>{id}</VersionId><IsLatest>false</IsLatest>\
                 {at}<ETag>&quot;9b2c&quot;</ETag><Size>3</Size>\
                 <StorageClass>STANDARD</StorageClass></Version>"
            ));
        }
    }
    body.push_str("</ListVersionsResult>");
    body
}

/// Writes `ms` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), by
/// counting whole years and months: the test's own calendar, independent of
/// the crate's.
fn imf_fixdate(ms: u64) -> String {
    const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, m, d, secs) = civil(ms);
    let days = ms / 1000 / 86_400;
    // 1970-01-01 was a Thursday.
    let weekday = WEEKDAYS[((days + 4) % 7) as usize];
    format!(
        "{weekday}, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        MONTHS[m as usize - 1],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// (year, month 1-12, day 1-31, second of the day) of `ms` after 1970.
fn civil(ms: u64) -> (u64, u64, u64, u64) {
    let leap = |y: u64| y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
    let secs = ms / 1000;
    let mut days = secs / 86_400;
    // 400 Gregorian years are exactly 146097 days.
    let mut year = 1970 + 400 * (days / 146_097);
    days %= 146_097;
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let month_lengths = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while days >= month_lengths[month] {
        days -= month_lengths[month];
        month += 1;
    }
    (year, month as u64 + 1, days + 1, secs % 86_400)
}

/// Percent-decoding, the inverse of `uri_encode`.
fn percent_decode(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

fn credentials() -> impl Strategy<Value = Credentials> {
    let part = || {
        prop_oneof![
            6 => "[A-Za-z0-9/+=]{1,40}",
            1 => text(0..8),
        ]
    };
    (part(), part(), option::of(part())).prop_map(|(id, secret, token)| Credentials {
        access_key_id: id,
        secret_access_key: secret,
        session_token: token,
    })
}

// ------------------------------------------------------------- lock JSON

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn lock_json_never_panics(Body(body) in json_body()) {
        if let Ok(record) = LockRecord::from_json(&body) {
            // Whatever is accepted is also written back readably, unchanged.
            prop_assert_eq!(LockRecord::from_json(&record.to_json()), Ok(record));
        }
    }

    #[test]
    fn lock_json_round_trips(record in lock_record()) {
        prop_assert_eq!(LockRecord::from_json(&record.to_json()), Ok(record));
    }

    #[test]
    fn semaphore_json_never_panics_on_any_json(Body(body) in json_body()) {
        if let Some(Ok(record)) = SemaphoreRecord::from_json(&body) {
            prop_assert_eq!(SemaphoreRecord::from_json(&record.to_json()), Some(Ok(record)));
        }
    }

    #[test]
    fn semaphore_json_never_panics(body in semaphore_like()) {
        if let Some(Ok(record)) = SemaphoreRecord::from_json(&body) {
            // Accepted means written back readably, unchanged, and readable
            // as a lock too (its design fields).
            let again = record.to_json();
            prop_assert_eq!(SemaphoreRecord::from_json(&again), Some(Ok(record)));
            prop_assert!(LockRecord::from_json(&again).is_ok());
        }
    }

    // ---------------------------------------------------------- epoch JSON

    #[test]
    fn epoch_json_never_panics(
        Body(body) in json_body(),
        epoch in prop_oneof![0..5u64, any::<u64>()],
    ) {
        if let Ok(record) = EpochRecord::from_json(&body, epoch) {
            prop_assert_eq!(record.token, epoch);
            prop_assert!(record.validity_ms <= MAX_TTL_MS);
            prop_assert_eq!(EpochRecord::from_json(&record.to_json(), epoch), Ok(record));
        }
    }

    #[test]
    fn epoch_json_round_trips(record in epoch_record()) {
        prop_assert_eq!(EpochRecord::from_json(&record.to_json(), record.token), Ok(record.clone()));
        // The token in the body must name the epoch of the key.
        let other = record.token.wrapping_add(1);
        prop_assert!(EpochRecord::from_json(&record.to_json(), other).is_err());
    }

    #[test]
    fn epoch_keys_round_trip(dir in text(0..16), epoch in any::<u64>()) {
        prop_assert_eq!(parse_epoch_key(&dir, &epoch_key(&dir, epoch)), Some(epoch));
    }

    #[test]
    fn epoch_key_parsing_never_panics_and_is_strict(
        dir in text(0..8),
        key in prop_oneof![
            text(0..40),
            "(epoch-)?[0-9+ -]{0,22}(\\.json)?",
            // Digits only, of about the right length.
            "epoch-[0-9]{0,22}\\.json",
            // Twenty digits, up to and past u64::MAX.
            "epoch-[0-9]{20}\\.json",
            "epoch-1844674407370955161[0-9]\\.json",
        ],
        under_dir in proptest::bool::weighted(0.8),
    ) {
        let key = if under_dir { format!("{dir}{key}") } else { key };
        if let Some(epoch) = parse_epoch_key(&dir, &key) {
            // Only the one canonical spelling of an epoch is accepted.
            prop_assert_eq!(epoch_key(&dir, epoch), key);
        }
    }
}

// ------------------------------------------------------------- LIST XML

const XML_FRAGS: &[&str] = &[
    "<ListBucketResult>",
    "<ListBucketResult xmlns=\"x\">",
    "</ListBucketResult>",
    "<Contents>",
    "</Contents>",
    "<Key>",
    "</Key>",
    "<IsTruncated>",
    "</IsTruncated>",
    "true",
    "<Error>",
    "<Code>",
    "</Code>",
    "<Message>",
    "</Message>",
    "<RequestId>",
    "</RequestId>",
    "&",
    "&amp;",
    "&lt;",
    "&#",
    "&#x",
    "&#x110000;",
    "&#xD800;",
    "&#4294967296;",
    "&#-1;",
    "&#x+41;",
    ";",
    "<",
    ">",
    "é",
    "\u{0}",
    " ",
];

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn list_parsing_never_panics(Body(body) in prop_oneof![
        short_bytes(),
        fragments(XML_FRAGS, 32).prop_map(String::into_bytes),
    ].prop_map(Body)) {
        let _ = parse_list(&body);
    }

    #[test]
    fn listed_keys_come_back_equal(
        keys in vec((xml_text(), any::<bool>()), 0..12),
        truncated in any::<bool>(),
        (_, prefix) in xml_text(),
        token in option::of(xml_text()),
    ) {
        let escaped: Vec<(String, bool)> =
            keys.iter().map(|((_, e), first)| (e.clone(), *first)).collect();
        let escaped_token = token.as_ref().map(|(_, e)| e.as_str());
        let page = parse_list(list_body(&escaped, truncated, &prefix, escaped_token).as_bytes());
        let page = page.map_err(TestCaseError::fail)?;
        let want: Vec<String> = keys.into_iter().map(|((k, _), _)| k).collect();
        prop_assert_eq!(page.keys, want);
        prop_assert_eq!(page.truncated, truncated);
        // An empty token is no token.
        let want_token = token.map(|(t, _)| t).filter(|t| !t.is_empty());
        prop_assert_eq!(page.next_token, want_token);
    }
}

const VERSIONS_FRAGS: &[&str] = &[
    "<ListVersionsResult>",
    "</ListVersionsResult>",
    "<Version>",
    "</Version>",
    "<DeleteMarker>",
    "</DeleteMarker>",
    "<Key>",
    "</Key>",
    "<VersionId>",
    "</VersionId>",
    "<LastModified>",
    "</LastModified>",
    "2026-01-02T03:04:05.000Z",
    "9999-12-31T23:59:60.99999999999999999999Z",
    "0000-00-00T",
    "<NextKeyMarker>",
    "</NextKeyMarker>",
    "<NextVersionIdMarker>",
    "</NextVersionIdMarker>",
    "<IsTruncated>",
    "</IsTruncated>",
    "true",
    "null",
    "&amp;",
    "&#x110000;",
    "<",
    ">",
    "é",
    " ",
];

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn versions_parsing_never_panics(Body(body) in prop_oneof![
        short_bytes(),
        fragments(VERSIONS_FRAGS, 40).prop_map(String::into_bytes),
        fragments(XML_FRAGS, 32).prop_map(String::into_bytes),
    ].prop_map(Body)) {
        let _ = parse_versions(&body);
    }

    #[test]
    fn listed_versions_come_back_equal(
        entries in vec((xml_text(), xml_text(), any::<bool>()), 0..12),
        truncated in any::<bool>(),
        next in option::of((xml_text(), xml_text())),
    ) {
        // A version id is never empty.
        let entries: Vec<_> = entries
            .into_iter()
            .map(|(k, (id, eid), m)| if id.is_empty() { (k, ("v".to_string(), "v".to_string()), m) } else { (k, (id, eid), m) })
            .collect();
        let escaped: Vec<(String, String, bool)> =
            entries.iter().map(|((_, k), (_, id), m)| (k.clone(), id.clone(), *m)).collect();
        let body = versions_body(
            &escaped,
            truncated,
            next.as_ref().map(|((_, k), (_, id))| (k.as_str(), id.as_str())),
        );
        let page = parse_versions(body.as_bytes()).map_err(TestCaseError::fail)?;
        let got: Vec<(String, String, bool)> = page
            .entries
            .iter()
            .map(|v| (v.key.clone(), v.version_id.clone(), v.delete_marker))
            .collect();
        let want: Vec<(String, String, bool)> =
            entries.iter().map(|((k, _), (id, _), m)| (k.clone(), id.clone(), *m)).collect();
        prop_assert_eq!(got, want);
        let times: Vec<u64> = page.entries.iter().map(|v| v.last_modified_ms % 1000).collect();
        prop_assert_eq!(times, (0..entries.len() as u64).collect::<Vec<_>>());
        prop_assert_eq!(page.truncated, truncated);
        // A marker only continues a truncated page, and an empty one is none.
        let want_next = next
            .filter(|((k, _), _)| truncated && !k.is_empty())
            .map(|((k, _), (id, _))| (k, Some(id).filter(|id| !id.is_empty())));
        let got_next = page.next.map(|m| (m.key, m.version_id));
        prop_assert_eq!(got_next, want_next);
    }
}

// ------------------------------------------------------------- error XML

fn header_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(&[
            "etag", "ETag", "date", "last-modified", "x-amz-request-id", "X-Amz-Request-Id",
            "content-type", META_TOKEN, META_LOCK, META_TOMBSTONE,
        ][..]).prop_map(str::to_string),
        1 => text(0..12),
    ]
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..YEAR_10000_MS).prop_map(imf_fixdate),
        select(
            &[
                "\"9b2c\"",
                "",
                " ",
                "true",
                "1",
                "2",
                "18446744073709551615",
                "18446744073709551616",
                "-1",
                "+3",
                " 7 "
            ][..]
        )
        .prop_map(str::to_string),
        text(0..24),
    ]
}

fn status() -> impl Strategy<Value = u16> {
    prop_oneof![
        4 => select(&[200u16, 404, 409, 412, 501, 403, 500, 503, 304, 204][..]),
        1 => any::<u16>(),
    ]
}

fn response_with(body: BoxedStrategy<Vec<u8>>) -> impl Strategy<Value = S3Response> {
    (
        status(),
        vec((header_name(), header_value()), 0..6),
        body,
        option::weighted(0.1, any::<u64>()),
    )
        .prop_map(|(status, headers, body, body_too_large)| S3Response {
            status,
            headers,
            body,
            body_too_large,
        })
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn error_replies_never_panic(r in response_with(prop_oneof![
        short_bytes(),
        fragments(XML_FRAGS, 32).prop_map(String::into_bytes),
    ].boxed())) {
        let e = r.s3_error();
        prop_assert_eq!(e.status, r.status);
        let status = r.status;
        let typed = r.into_error();
        let _ = typed.to_string();
        // The typed error carries exactly what `s3_error` read, and the
        // kind follows the code and status.
        let inner = match &typed {
            Error::NoSuchBucket(x) => {
                prop_assert!(["NoSuchBucket", "ResourceNotFoundException"].contains(&x.code.as_str()));
                x
            }
            Error::Conflict(x) => {
                prop_assert_eq!(status, 409);
                prop_assert!(["ConditionalRequestConflict", "TransactionConflictException"].contains(&x.code.as_str()));
                x
            }
            Error::AccessDenied(x) => x,
            Error::S3(x) => { prop_assert_ne!(status, 403); x }
            other => return Err(TestCaseError::fail(format!("not an S3 error: {other:?}"))),
        };
        prop_assert_eq!(inner, &e);
    }

    #[test]
    fn error_xml_comes_back_equal(
        (code, code_xml) in xml_text(),
        (message, message_xml) in xml_text(),
        (request_id, request_id_xml) in xml_text(),
        header_id in option::of(text(0..16)),
        declaration in any::<bool>(),
        order in Just(vec![0, 1, 2, 3, 4]).prop_shuffle(),
        status in status(),
    ) {
        let elements = [
            format!("<Code>{code_xml}</Code>"),
            format!("<Message>{message_xml}</Message>"),
            format!("<RequestId>{request_id_xml}</RequestId>"),
            "<Resource>/locks/k</Resource>".to_string(),
            "<HostId>aGVsbG8=</HostId>".to_string(),
        ];
        let mut body = String::new();
        if declaration {
            body.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        }
        body.push_str("<Error>");
        for i in order {
            body.push_str(&elements[i]);
        }
        body.push_str("</Error>");
        let r = S3Response {
            status,
            headers: header_id.iter().map(|h| ("x-amz-request-id".to_string(), h.clone())).collect(),
            body: body.into_bytes(),
            body_too_large: None,
        };
        let e = r.s3_error();
        prop_assert_eq!(e.status, status);
        prop_assert_eq!(&e.code, &code);
        if code.is_empty() && message.is_empty() {
            prop_assert!(e.message.starts_with("non-S3 reply: "), "{:?}", e.message);
        } else {
            prop_assert_eq!(&e.message, &message);
        }
        // The header wins over the body, as S3 sends both.
        prop_assert_eq!(&e.request_id, header_id.as_ref().unwrap_or(&request_id));
    }
}

// ------------------------------------------------------------ DynamoDB replies

/// DynamoDB-shaped bodies: items with odd attributes, error objects, soup.
fn dynamodb_body() -> BoxedStrategy<Vec<u8>> {
    let attribute = prop_oneof![
        json_value().prop_map(|v| format!(r#"{{"S":{v}}}"#)),
        json_number().prop_map(|n| format!(r#"{{"N":"{n}"}}"#)),
        json_value(),
    ];
    let item = vec(
        (
            select(
                &[
                    "key",
                    "lease_version",
                    "lease_body",
                    "lease_expiry",
                    "token",
                    "x",
                ][..],
            ),
            attribute,
        ),
        0..5,
    )
    .prop_map(|attrs| {
        let fields: Vec<String> = attrs.iter().map(|(k, v)| format!(r#""{k}":{v}"#)).collect();
        format!(r#"{{"Item":{{{}}}}}"#, fields.join(",")).into_bytes()
    });
    let error = (
        select(
            &[
                "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
                "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                "com.amazon.coral.service#InvalidSignatureException",
                "#",
                "",
            ][..],
        ),
        json_value(),
    )
        .prop_map(|(t, m)| format!(r#"{{"__type":"{t}","message":{m}}}"#).into_bytes());
    prop_oneof![
        item,
        error,
        json_body().prop_map(|Body(b)| b),
        short_bytes()
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(CASES))]

    /// Any reply to any translated call reads back without a panic, and
    /// reading it as a lock gives a state or a typed error.
    #[test]
    fn dynamodb_replies_never_panic(
        r in response_with(dynamodb_body()),
        method in select(&[Method::Get, Method::Put, Method::Delete, Method::Post][..]),
        cached in option::of(text(0..8)),
    ) {
        let mut req = S3Request::new(method, "locks/k", 64 * 1024);
        if let Some(etag) = &cached {
            req = req.header("if-none-match", etag);
        }
        let reply = s3_lease::stores::dynamodb::read_reply(&req, r);
        let _ = reply.s3_error().to_string();
        let mut inspect = Inspect::new("k".into(), "locks/k".into(), Judge::new(ExpiryClock::Observed, None));
        let _ = inspect.start(1_700_000_000_000);
        let _ = inspect.on_response(reply, 1_700_000_000_000);
    }
}

/// Azure's error bodies, whole or in pieces, and bytes.
fn azure_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        fragments(
            &[
                "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?>",
                "<Error>",
                "</Error>",
                "<Code>",
                "</Code>",
                "BlobAlreadyExists",
                "ConditionNotMet",
                "ContainerNotFound",
                "AuthenticationFailed",
                "<Message>",
                "</Message>",
                "\nRequestId:x\n",
                "&amp;",
                "&lt;",
                "&",
                "<AuthenticationErrorDetail>",
                "</AuthenticationErrorDetail>",
                "Request date header too old: '",
                "é",
            ],
            14,
        )
        .prop_map(String::into_bytes),
        short_bytes(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(CASES))]

    /// Any reply Azure (or whatever answers in its place) sends reads back
    /// without a panic, and reading it as a lock or a fenced object gives
    /// a state or a typed error.
    #[test]
    fn azure_replies_never_panic(
        mut r in response_with(azure_body()),
        azure_headers in vec((select(&["x-ms-error-code", "x-ms-request-id", "x-ms-meta-s3lease_token", "x-ms-meta-", "X-MS-META-S3LEASE_LOCK"][..]), header_value()), 0..4),
        method in select(&[Method::Get, Method::Head, Method::Put, Method::Delete][..]),
    ) {
        r.headers.extend(azure_headers.into_iter().map(|(k, v)| (k.to_string(), v)));
        let req = S3Request::new(method, "locks/k", 64 * 1024);
        let reply = s3_lease::stores::azure::read_reply(&req, r);
        let _ = reply.s3_error().to_string();
        let _ = reply.clone().into_error().to_string();
        let mut inspect = Inspect::new("k".into(), "locks/k".into(), Judge::new(ExpiryClock::Server, None));
        let _ = inspect.start(1_700_000_000_000);
        let _ = inspect.on_response(reply.clone(), 1_700_000_000_000);
        let mut get = FencedGet::new("k".into());
        let _ = get.start(0);
        let _ = get.on_response(reply, 0);
    }
}

proptest! {
    #![proptest_config(config(CASES))]

    /// Any text as an Azure credential: a credential or `invalid-config`,
    /// and a key that decodes re-encodes to what was given.
    #[test]
    fn azure_credentials_never_panic(text in prop_oneof![
        text(0..120),
        "[A-Za-z0-9+/]{0,90}={0,3}",
        fragments(&["sig=", "?", "&", "sv=2024", " ", "%2B", "#"], 8),
    ]) {
        use s3_lease::stores::AzureCredential;
        let _ = AzureCredential::sas(&text).map_err(|e| e.to_string());
        let _ = AzureCredential::bearer(&text).map_err(|e| e.to_string());
        if let Some(bytes) = s3_lease::base64::decode(&text) {
            prop_assert_eq!(s3_lease::base64::encode(&bytes), text.clone());
        }
        let _ = AzureCredential::shared_key(&text);
    }
}

/// GCS's JSON bodies (errors, object resources, listings), whole or in
/// pieces, and bytes.
fn gcs_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        fragments(
            &[
                "{",
                "}",
                "[",
                "]",
                ",",
                ":",
                "\"error\"",
                "\"code\"",
                "412",
                "\"message\"",
                "\"errors\"",
                "\"reason\"",
                "\"conditionNotMet\"",
                "\"The specified bucket does not exist.\"",
                "\"generation\"",
                "\"1795856434528706\"",
                "\"updated\"",
                "\"2026-11-28T09:00:34.528698Z\"",
                "\"metadata\"",
                "\"s3lease-token\"",
                "\"items\"",
                "\"name\"",
                "\"nextPageToken\"",
                "null",
                "1e400",
                "Not Found",
                "é",
            ],
            16,
        )
        .prop_map(String::into_bytes),
        short_bytes(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(CASES))]

    /// Any reply GCS (or whatever answers in its place) sends reads back
    /// without a panic, and reading it as a lock, a fenced object or a
    /// listing gives a state, a page or a typed error.
    #[test]
    fn gcs_replies_never_panic(
        mut r in response_with(gcs_body()),
        gcs_headers in vec((select(&["x-goog-generation", "x-guploader-uploadid", "x-goog-meta-s3lease-token", "x-goog-meta-", "etag"][..]), header_value()), 0..4),
        method in select(&[Method::Get, Method::Head, Method::Put, Method::Delete][..]),
        list in any::<bool>(),
    ) {
        r.headers.extend(gcs_headers.into_iter().map(|(k, v)| (k.to_string(), v)));
        let req = if list {
            s3_lease::stores::s3::list_request("locks/", Some("locks/a"))
        } else {
            S3Request::new(method, "locks/k", 64 * 1024)
        };
        let reply = s3_lease::stores::gcs::read_reply(&req, r);
        let _ = reply.s3_error().to_string();
        let _ = reply.clone().into_error().to_string();
        if list {
            let _ = parse_list(&reply.body);
            return Ok(());
        }
        let mut inspect = Inspect::new("k".into(), "locks/k".into(), Judge::new(ExpiryClock::Server, None));
        let _ = inspect.start(1_700_000_000_000);
        let _ = inspect.on_response(reply.clone(), 1_700_000_000_000);
        let mut get = FencedGet::new("k".into());
        let _ = get.start(0);
        let _ = get.on_response(reply, 0);
    }

    /// Any text as a GCS bearer token or an RFC 3339 time.
    #[test]
    fn gcs_tokens_and_times_never_panic(text in prop_oneof![
        text(0..80),
        fragments(&["2026", "-", "11", "T", "09", ":", ".", "5", "Z", "+00:00", "é", " "], 12),
    ]) {
        let _ = s3_lease::stores::GcsCredential::bearer(&text).map_err(|e| e.to_string());
        if let Some(ms) = s3_lease::http_date::parse_rfc3339_ms(&text) {
            let _ = s3_lease::http_date::format_rfc3339(ms);
        }
    }
}

// ------------------------------------------------------------ HTTP dates

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn http_dates_never_panic(value in prop_oneof![
        text(0..40),
        fragments(&[
            "Sun,", "Mon, ", " ", "\t", "06", "6", "00", "31", "32", "-1", "+1", "Nov", "Feb", "nov",
            "1970", "1969", "9999", "10000", "99999999999999999999", "18446744073709551616",
            "08:49:37", "23:59:60", "24:00:00", ":", "::", "GMT", "UTC", ",",
        ], 12),
        "[A-Z][a-z]{2}, [0-9]{1,3} [A-Z][a-z]{2} [0-9]{1,21} [0-9]{1,3}:[0-9]{1,3}:[0-9]{1,3} GMT",
    ]) {
        if let Some(ms) = parse_ms(&value) {
            prop_assert_eq!(ms % 1000, 0);
            prop_assert!(ms < YEAR_10000_MS + 86_400_000 * 31, "{}", ms);
        }
    }

    #[test]
    fn http_dates_round_trip(ms in 0..YEAR_10000_MS) {
        let text = imf_fixdate(ms);
        prop_assert_eq!(parse_ms(&text), Some(ms / 1000 * 1000), "{}", text);
        // The crate's own calendar (SigV4 dates) agrees with the test's.
        let (y, m, d, secs) = civil(ms);
        let amz = format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60);
        prop_assert_eq!(sigv4::amz_date(ms / 1000), amz);
    }
}

// --------------------------------------------------------- header values

fn signing_headers() -> impl Strategy<Value = Vec<(String, String)>> {
    vec(
        (
            prop_oneof![
                select(
                    &[
                        "if-match",
                        "If-None-Match",
                        "content-type",
                        "x-amz-meta-a",
                        "X-AMZ-META-A"
                    ][..]
                )
                .prop_map(str::to_string),
                text(0..10),
            ],
            prop_oneof![
                fragments(
                    &[" ", "  ", "\t", "\n", "a", "b c", "\u{a0}", "\u{3000}", "\"e\"", ","],
                    10
                ),
                text(0..24),
            ],
        ),
        0..6,
    )
}

fn sign_with(
    headers: &[(String, String)],
    host: &str,
    path: &str,
    query: &[(String, String)],
    region: &str,
    creds: &Credentials,
    unix_seconds: u64,
) -> Vec<(String, String)> {
    sigv4::sign(
        &SigningRequest {
            method: "PUT",
            host,
            path,
            query,
            headers,
            payload_sha256_hex: sigv4::EMPTY_SHA256,
        },
        creds,
        Scope {
            region,
            service: "s3",
            unix_seconds,
        },
    )
}

/// The same header values with their whitespace rewritten: other runs of
/// spaces and tabs between the words, and around them.
fn respaced(headers: &[(String, String)], seps: &[String]) -> Vec<(String, String)> {
    let mut sep = seps.iter().cycle();
    headers
        .iter()
        .map(|(name, value)| {
            let mut out = sep.next().cloned().unwrap_or_default();
            for (i, word) in value.split_whitespace().enumerate() {
                if i > 0 {
                    out.push(' ');
                    out.push_str(sep.next().map(String::as_str).unwrap_or_default());
                }
                out.push_str(word);
            }
            out.push_str(sep.next().map(String::as_str).unwrap_or_default());
            (name.to_ascii_uppercase(), out)
        })
        .collect()
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn uri_encoding_never_panics_and_decodes_back(input in text(0..48), encode_slash in any::<bool>()) {
        let encoded = sigv4::uri_encode(&input, encode_slash);
        prop_assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric()
            || b"-._~%".contains(&b)
            || (b == b'/' && !encode_slash)));
        prop_assert_eq!(percent_decode(&encoded), Some(input.into_bytes()));
    }

    #[test]
    fn signing_never_panics_and_ignores_whitespace_and_name_case(
        headers in signing_headers(),
        seps in vec("[ \t]{0,3}", 1..8),
        host in text(0..16),
        path in text(0..24),
        query in vec((text(0..8), text(0..8)), 0..4),
        region in text(0..12),
        creds in credentials(),
        unix_seconds in prop_oneof![0..4_102_444_800u64, any::<u64>()],
    ) {
        let signed = sign_with(&headers, &host, &path, &query, &region, &creds, unix_seconds);
        let _ = sigv4::canonical_query(&query);
        prop_assert_eq!(signed.last().map(|(n, _)| n.as_str()), Some("authorization"));
        // SigV4 trims values and folds inner whitespace; names are lowercased.
        let again = sign_with(&respaced(&headers, &seps), &host, &path, &query, &region, &creds, unix_seconds);
        prop_assert_eq!(signed, again);
    }
}

// ------------------------------------------------------- fenced metadata

fn token_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        fragments(
            &[
                " ",
                "\t",
                "+",
                "-",
                "0",
                "1",
                "9",
                "18446744073709551615",
                "18446744073709551616",
                "x",
                "é"
            ],
            6
        ),
        text(0..24),
    ]
}

proptest! {
    #![proptest_config(config(CASES))]

    #[test]
    fn fenced_get_never_panics_on_metadata(
        status in status(),
        token in option::of(token_value()),
        lock in option::of(text(0..16)),
        tombstone in option::of(prop_oneof![
            select(&["true", "TRUE", " true ", "false", ""][..]).prop_map(str::to_string),
            text(0..8),
        ]),
        etag in option::of(header_value()),
        extra in vec((header_name(), header_value()), 0..3),
        body in short_bytes(),
        body_too_large in option::weighted(0.1, any::<u64>()),
    ) {
        let mut headers = extra;
        for (name, value) in [(META_TOKEN, token), (META_LOCK, lock), (META_TOMBSTONE, tombstone), ("etag", etag)] {
            if let Some(v) = value {
                headers.insert(0, (name.to_string(), v));
            }
        }
        let mut op = FencedGet::new("k".into());
        prop_assert!(matches!(op.start(0), Step::Send(_)));
        let r = S3Response { status, headers, body, body_too_large };
        match op.on_response(r, 0) {
            Step::Done(Ok(_)) => {}
            Step::Done(Err(e)) => { let _ = e.to_string(); }
            Step::Send(req) => return Err(TestCaseError::fail(format!("a GET is one request: {req:?}"))),
            Step::SendAll(reqs) => return Err(TestCaseError::fail(format!("a GET is one request: {reqs:?}"))),
        }
    }

    #[test]
    fn fenced_tokens_are_read_through_whitespace(
        token in any::<u64>(),
        before in "[ \t]{0,3}",
        after in "[ \t]{0,3}",
        body in short_bytes(),
    ) {
        let mut op = FencedGet::new("k".into());
        let _ = op.start(0);
        let r = S3Response {
            status: 200,
            headers: vec![
                ("ETag".into(), "\"e\"".into()),
                (META_TOKEN.into(), format!("{before}{token}{after}")),
            ],
            body: body.clone(),
            body_too_large: None,
        };
        match op.on_response(r, 0) {
            Step::Done(Ok(Some(o))) => {
                prop_assert_eq!(o.token, token);
                prop_assert_eq!(o.body, body);
                prop_assert_eq!(o.etag, "\"e\"");
            }
            other => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
    }
}

// ---------------------------------------------------------- endpoint URLs

/// An endpoint shaped like a URL, each part sometimes wrong.
fn endpoint() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            3 => select(&["http://", "https://"][..]),
            1 => select(&["HTTPS://", "ftp://", "http:/", ""][..]),
        ],
        prop_oneof![
            1 => Just(String::new()),
            4 => select(&[
                "", "h", "example.com", "S3.EU-WEST-1.AMAZONAWS.COM", "127.0.0.1", "[::1]", "[", "]",
                "[]", "[::1", "::1]", "a]b", "u:p@h", "h h", "h_1", "-", ".", "é.com",
            ][..]).prop_map(str::to_string),
            1 => text(0..8),
        ],
        select(&["", ":", ":80", ":443", ":9000", ":0", ":65535", ":65536", ":x", "::", ":-1", ":+80", ":080"][..]),
        select(&["", "/", "//", "/b", "?q", "#f"][..]),
    )
        .prop_map(|(scheme, host, port, suffix)| format!("{scheme}{host}{port}{suffix}"))
}

proptest! {
    #![proptest_config(config(CASES * 4))]

    #[test]
    fn config_validation_never_panics(
        endpoint in prop_oneof![
            2 => endpoint(),
            1 => text(0..32),
            1 => fragments(&[
                "http://", "https://", "HTTP://", "[", "]", ":", "::1", "80", "443", "9000", "65535",
                "65536", "0", "@", "/", "?", "#", "example.com", "S3.AMAZONAWS.COM", "-", ".", "_",
                " ", "é", "%20",
            ], 8),
        ],
        // Every field mostly valid, so that validation reaches each check.
        region in prop_oneof![
            4 => "[a-z0-9-]{1,20}".boxed(),
            1 => text(0..70).boxed(),
        ],
        bucket in prop_oneof![
            4 => "[a-z0-9]{3,20}".boxed(),
            1 => "[a-z0-9.-]{1,70}".boxed(),
            1 => fragments(&["a", "B", ".", "-", "_", "/", "..", "xn--", "é", " "], 8),
            1 => text(0..32).boxed(),
        ],
        virtual_hosted in any::<bool>(),
        creds in credentials(),
        key_prefix in option::of(prop_oneof![
            "[a-z/]{0,20}".boxed(),
            text(0..24).boxed(),
            ".{500,520}".boxed(),
        ]),
        request_timeout_ms in option::weighted(0.3, prop_oneof![Just(0u32), Just(600_000), Just(600_001), any::<u32>()]),
        epoch_objects in option::of(any::<bool>()),
        key in text(0..24),
        unix_seconds in prop_oneof![0..4_102_444_800u64, any::<u64>()],
    ) {
        let secret = creds.secret_access_key.clone();
        let raw = RawConfig {
            key_prefix,
            request_timeout_ms,
            strategy: epoch_objects.map(|e| if e { LockStrategy::EpochObjects } else { LockStrategy::SingleObject }),
            ..RawConfig::of(Store::S3(S3Bucket {
                endpoint,
                region,
                bucket,
                addressing: if virtual_hosted { Addressing::VirtualHosted } else { Addressing::Path },
                credentials: creds,
            }))
        };
        match ClientConfig::validate(raw.clone()) {
            Ok(c) => {
                // A usable endpoint names a host: something to connect to.
                let host = match c.endpoint_authority.rfind(':') {
                    Some(i) if !c.endpoint_authority[i..].contains(']') => &c.endpoint_authority[..i],
                    _ => c.endpoint_authority.as_str(),
                };
                prop_assert!(!host.is_empty(), "{:?} gave authority {:?}", raw.store.endpoint(), c.endpoint_authority);
                // And every request can be built and signed with it.
                let http = s3_lease::config::ClientConfig::prepare(&c, &S3Request::new(Method::Put, &key, 100), unix_seconds);
                prop_assert!(http.authority.contains(&c.endpoint_authority));
            }
            Err(Error::InvalidConfig { reason, .. }) => {
                // Reasons never repeat the secret (checked for secrets long
                // enough not to occur in a reason by chance).
                let secret = &secret;
                prop_assert!(secret.len() < 12 || !reason.contains(secret.as_str()));
            }
            Err(other) => return Err(TestCaseError::fail(format!("not a config error: {other:?}"))),
        }
    }
}

// ------------------------------------------- operations on arbitrary replies

/// Where the epoch operations below keep their epochs.
const DIR: &str = "p/k/";

fn epoch_number() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0..5u64,
        1 => select(&[u64::MAX, u64::MAX - 1, u64::MAX - 2][..]),
        1 => any::<u64>(),
    ]
}

/// Reply bodies of every kind the operations read, valid and not.
fn any_body() -> BoxedStrategy<Vec<u8>> {
    let holder = || select(&["a", "b", ""][..]).prop_map(str::to_string);
    prop_oneof![
        1 => short_bytes(),
        2 => (lock_record(), holder()).prop_map(|(mut r, h)| {
            r.holder_id = h;
            r.to_json()
        }),
        2 => (epoch_record(), epoch_number(), holder()).prop_map(|(mut r, token, h)| {
            r.token = token;
            r.holder_id = h;
            r.to_json()
        }),
        2 => (vec((epoch_number(), any::<bool>()), 0..5), any::<bool>(), any::<bool>()).prop_map(
            |(epochs, truncated, token)| {
                let keys: Vec<(String, bool)> = epochs
                    .iter()
                    .map(|&(e, first)| (epoch_key(DIR, e), first))
                    .collect();
                let token = token.then_some("t");
                list_body(&keys, truncated, "p/k/epoch-", token).into_bytes()
            }
        ),
        1 => select(
            &[
                "NoSuchBucket",
                "NoSuchKey",
                "AccessDenied",
                "ConditionalRequestConflict",
                "PreconditionFailed",
                "SlowDown",
                ""
            ][..]
        )
        .prop_map(
            |code| format!("<Error><Code>{code}</Code><Message>m</Message></Error>").into_bytes()
        ),
        1 => record_like(),
    ]
    .boxed()
}

/// A reply as a store sends one: mostly a 200 with an ETag and the server's
/// `Last-Modified` and `Date`, so the operations get past their first check.
fn plausible_reply() -> impl Strategy<Value = S3Response> {
    (
        prop_oneof![
            12 => Just(200u16),
            1 => select(&[404u16, 409, 412, 501][..]),
            1 => status(),
        ],
        option::weighted(0.9, select(&["\"e\"", "\"9b2c\""][..])),
        1_700_000_000_000..1_800_000_000_000u64,
        prop_oneof![0..10_000u64, 0..1_000_000_000u64],
        vec((header_name(), header_value()), 0..3),
        any_body(),
    )
        .prop_map(|(status, etag, modified, age, extra, body)| {
            let mut headers = vec![
                ("last-modified".to_string(), imf_fixdate(modified)),
                ("date".to_string(), imf_fixdate(modified + age)),
            ];
            headers.extend(etag.map(|e| ("etag".to_string(), e.to_string())));
            headers.extend(extra);
            S3Response {
                status,
                headers,
                body,
                body_too_large: None,
            }
        })
}

/// A reply, and what to answer with if it is fitted to the request.
#[derive(Debug, Clone)]
struct ReplySeed {
    reply: S3Response,
    /// Answer the request that was sent: a LIST with a listing, a GET of an
    /// epoch with that epoch's record, a GET of a lock with a lock record.
    fitted: bool,
    lock: LockRecord,
    epoch: EpochRecord,
    listed: Vec<(u64, bool)>,
    truncated: bool,
}

fn reply_seed() -> impl Strategy<Value = ReplySeed> {
    let holder = || select(&["a", "b"][..]).prop_map(str::to_string);
    (
        prop_oneof![
            3 => plausible_reply(),
            1 => response_with(any_body()),
        ],
        proptest::bool::weighted(0.75),
        (lock_record(), holder()),
        (epoch_record(), holder()),
        vec((epoch_number(), any::<bool>()), 0..5),
        proptest::bool::weighted(0.2),
    )
        .prop_map(
            |(reply, fitted, (lock, lock_holder), (epoch, epoch_holder), listed, truncated)| {
                ReplySeed {
                    reply,
                    fitted,
                    lock: LockRecord {
                        holder_id: lock_holder,
                        ..lock
                    },
                    epoch: EpochRecord {
                        holder_id: epoch_holder,
                        ..epoch
                    },
                    listed,
                    truncated,
                }
            },
        )
}

/// The reply `seed` makes to `request`.
fn respond(request: &S3Request, seed: ReplySeed) -> S3Response {
    let mut reply = seed.reply;
    if !seed.fitted {
        return reply;
    }
    let listing = request.query.iter().any(|(k, _)| k == "list-type");
    let versions = request.query.iter().any(|(k, _)| k == "versions");
    reply.body = if versions {
        // Each listed key twice (two versions), a delete marker after
        // the first; half the truncated pages name where they end.
        let mut entries = Vec::new();
        for &(e, marker) in &seed.listed {
            entries.push((epoch_key(DIR, e), format!("v{e}"), false));
            entries.push((epoch_key(DIR, e), "null".to_string(), marker));
        }
        let next = entries
            .len()
            .is_multiple_of(4)
            .then_some(("p/k/epoch-", "v"));
        versions_body(&entries, seed.truncated, next).into_bytes()
    } else if listing {
        let keys: Vec<(String, bool)> = seed
            .listed
            .iter()
            .map(|&(e, first)| (epoch_key(DIR, e), first))
            .collect();
        // Half the truncated pages carry a token, half cannot be continued.
        let token = keys.len().is_multiple_of(2).then_some("t");
        list_body(&keys, seed.truncated, "p/k/epoch-", token).into_bytes()
    } else if request.method == Method::Get {
        match parse_epoch_key(DIR, &request.object_key) {
            Some(epoch) => EpochRecord {
                token: epoch,
                ..seed.epoch
            }
            .to_json(),
            None => seed.lock.to_json(),
        }
    } else if reply.status == 200 {
        Vec::new()
    } else {
        reply.body
    };
    reply
}

/// A lease, mostly as returned. Its `expires_at_ms` is the time left, made
/// absolute on the operation's clock by the property.
fn lease() -> impl Strategy<Value = Lease> {
    (
        prop_oneof![4 => 1..5u64, 1 => epoch_number()],
        prop_oneof![4 => Just("\"e\""), 1 => select(&["", " ", "\"9b2c\""][..])],
        prop_oneof![4 => 0..100_000u64, 1 => Just(0u64), 1 => any::<u64>()],
        prop_oneof![Just(0u64), 0..MAX_RECORD_MS, any::<u64>()],
        prop_oneof![
            4 => select(&[1, 1_000, 30_000, MAX_TTL_MS][..]),
            1 => select(&[0, MAX_TTL_MS + 1, u64::MAX][..]),
        ],
        select(&["a", "b"][..]),
    )
        .prop_map(
            |(token, etag, time_left_ms, acquired_at_ms, ttl_ms, holder)| Lease {
                key: "k".into(),
                token,
                holder_id: holder.into(),
                etag: etag.into(),
                expires_at_ms: time_left_ms,
                acquired_at_ms,
                ttl_ms,
                metadata: "m".into(),
                seal: String::new(),
            },
        )
}

/// Runs `op` on the replies `seeds` make until it finishes or they run out.
/// The property is that nothing panics, whatever the replies.
fn drive<O: Operation>(
    mut op: O,
    seeds: Vec<ReplySeed>,
    now_ms: u64,
    steps: &[u64],
) -> Result<(), TestCaseError>
where
    O::Output: std::fmt::Debug,
{
    let mut now = now_ms;
    let mut step = op.start(now);
    for (seed, dt) in seeds.into_iter().zip(steps.iter().cycle()) {
        match step {
            Step::Send(request) => {
                now = now.saturating_add(*dt);
                step = op.on_response(respond(&request, seed), now);
            }
            Step::SendAll(requests) => {
                now = now.saturating_add(*dt);
                let replies = requests
                    .iter()
                    .map(|r| Ok(respond(r, seed.clone())))
                    .collect();
                step = op.on_replies(replies, now);
            }
            Step::Done(_) => break,
        }
    }
    if let Step::Done(Err(e)) = &step {
        let _ = e.to_string();
        let _ = format!("{e:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(CASES * 2))]

    #[test]
    fn operations_never_panic_on_any_replies(
        which in 0..12u8,
        replies in vec(reply_seed(), 0..8),
        now_ms in prop_oneof![4 => 1_700_000_000_000..1_800_000_000_000u64, 1 => any::<u64>()],
        steps in vec(prop_oneof![4 => 0..2_000u64, 1 => any::<u64>()], 1..4),
        hint in epoch_number(),
        lease in lease(),
        ttl_ms in select(&[1, 1_000, MAX_TTL_MS][..]),
        holder in select(&["a", "b"][..]),
        fence_token in prop_oneof![4 => 1..5u64, 1 => epoch_number()],
        reject_equal in any::<bool>(),
        clock_pick in 0..3u8,
    ) {
        let grant = Grant::new(ttl_ms, holder.into(), "meta".into()).expect("a valid grant");
        let lease = Lease { expires_at_ms: now_ms.saturating_add(lease.expires_at_ms), ..lease };
        // Sealed, so the operations go past the seal check to the replies.
        let sealer = Sealer::stored("bucket", &StoredKey::from_bytes([7; 32]));
        let single = || sealer.for_lock("single-object:k".into());
        let epoch = || sealer.for_lock(format!("epoch-objects:{DIR}"));
        let single_lease = single().seal(lease.clone());
        let epoch_lease = epoch().seal(lease);
        let key = || "k".to_string();
        let dir = || DIR.to_string();
        let wid = || "w".to_string();
        let clock = [ExpiryClock::Holder, ExpiryClock::Server, ExpiryClock::Observed][clock_pick as usize % 3];
        let epoch_clock = if clock == ExpiryClock::Holder { ExpiryClock::Server } else { clock };
        let judge = |clock| Judge::new(clock, None);
        let fence = Fence { lock: "single-object:k".into(), token: fence_token, reject_equal };
        match which {
            0 => drive(Inspect::new(key(), key(), judge(clock)), replies, now_ms, &steps)?,
            1 => drive(TryAcquire::new(key(), key(), grant, single(), judge(clock), wid()), replies, now_ms, &steps)?,
            2 => drive(RewriteOwn::renew(single_lease, key(), single(), wid()).token_known(), replies, now_ms, &steps)?,
            3 => drive(RewriteOwn::release(single_lease, key(), single(), wid()), replies, now_ms, &steps)?,
            4 => drive(EpochTryAcquire::new(key(), dir(), grant, epoch(), judge(epoch_clock), wid(), hint), replies, now_ms, &steps)?,
            5 => drive(EpochInspect::new(key(), dir(), judge(epoch_clock), hint), replies, now_ms, &steps)?,
            6 => drive(EpochRewrite::renew(epoch_lease, dir(), epoch(), wid()), replies, now_ms, &steps)?,
            7 => drive(EpochRewrite::release(epoch_lease, dir(), epoch(), wid()), replies, now_ms, &steps)?,
            8 => drive(Cleanup::new(vec![epoch_key(DIR, 1), epoch_key(DIR, 2)]), replies, now_ms, &steps)?,
            9 => {
                let change = Change::Put { body: b"x".to_vec(), content_type: "text/plain".into() };
                if let Ok(op) = FencedWrite::new(key(), fence, change, wid()) {
                    drive(op, replies, now_ms, &steps)?;
                }
            }
            10 => drive(FencedScan::new(DIR.to_string(), true), replies, now_ms, &steps)?,
            _ => {
                if let Ok(op) = FencedWrite::new(key(), fence, Change::Delete { nonce: hint }, wid()) {
                    drive(op, replies, now_ms, &steps)?;
                }
            }
        }
    }
}

// ------------------------------------------------------- the store preflight

proptest! {
    #![proptest_config(config(CASES))]

    /// Any replies: a report with every capability, or an error after the
    /// first request (the bucket's GET) or the third (the first write,
    /// which decides a plain 403 the GET left open; the lifecycle read
    /// between them ends nothing, its failure is a note); never more than 13
    /// probes and 4 deletes; a safe configuration only where everything
    /// it needs passed.
    #[test]
    fn the_preflight_never_panics_on_any_replies(
        replies in vec(reply_seed(), 0..20),
        now_ms in prop_oneof![4 => 1_700_000_000_000..1_800_000_000_000u64, 1 => any::<u64>()],
        steps in vec(prop_oneof![4 => 0..2_000u64, 1 => any::<u64>()], 1..4),
        epoch_objects in any::<bool>(),
        clock_pick in 0..3u8,
        lost in vec(any::<bool>(), 20),
    ) {
        let strategy = if epoch_objects { LockStrategy::EpochObjects } else { LockStrategy::SingleObject };
        let clock = [ExpiryClock::Holder, ExpiryClock::Server, ExpiryClock::Observed][clock_pick as usize];
        let mut op = Preflight::new(
            "p/.s3-lease-preflight/0123456789abcdef/".into(),
            "0123456789abcdef".into(),
            strategy,
            clock,
        );
        let mut now = now_ms;
        let mut step = op.start(now);
        let mut sent = 0;
        let mut seeds = replies.into_iter();
        let outcome = loop {
            match step {
                Step::Done(outcome) => break outcome,
                Step::Send(request) => {
                    sent += 1;
                    prop_assert!(sent <= 17 + RACE_REQUESTS as usize, "{sent} requests");
                    now = now.saturating_add(steps[sent % steps.len()]);
                    step = match seeds.next() {
                        Some(_) if lost[sent % lost.len()] => {
                            op.on_transport_error(Error::Transport("lost".into()), now)
                        }
                        Some(seed) => op.on_response(respond(&request, seed), now),
                        // Out of replies: the store answers 503 from now on.
                        None => op.on_response(S3Response { status: 503, ..S3Response::default() }, now),
                    };
                }
                Step::SendAll(requests) => {
                    now = now.saturating_add(steps[sent % steps.len()]);
                    let mut replies = Vec::new();
                    for request in &requests {
                        sent += 1;
                        replies.push(match seeds.next() {
                            Some(_) if lost[sent % lost.len()] => Err(Error::Transport("lost".into())),
                            Some(seed) => Ok(respond(request, seed)),
                            None => Ok(S3Response { status: 503, ..S3Response::default() }),
                        });
                    }
                    prop_assert!(sent <= 17 + RACE_REQUESTS as usize, "{sent} requests");
                    step = op.on_replies(replies, now);
                }
            }
        };
        match outcome {
            Ok(report) => {
                prop_assert_eq!(report.results.len(), s3_lease::capability::S3_PROBES.len() + 2);
                prop_assert_eq!(report.requests as usize, sent);
                if report.config_safe {
                    prop_assert!(report.blocking(strategy, clock).is_none());
                    prop_assert!(report.results.iter().all(|r| !r.silent));
                }
            }
            Err(e) => {
                prop_assert!(sent <= 3, "only the bucket's GET and the first write end it: {:?}", e);
                let _ = e.to_string();
            }
        }
    }
}
