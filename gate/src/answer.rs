//! The answers the gate gives itself, as plain data (status, headers, a
//! small JSON body); each build's glue turns one into its response. The
//! headers it stamps on a forwarded request are named here too.

use s3_lease_guest::headers::escape_holder;

/// A holder id as the gate's headers and bodies carry it (the guest
/// crate's `escape_holder`: printable ASCII only).
pub fn escape(holder: &str) -> String {
    escape_holder(holder)
}
use serde_json::json;

/// The headers the gate stamps on a forwarded request, as the guest crate
/// defines and encodes them (`s3_lease_guest::headers`): the fencing
/// token, the holder id and the whole sealed lease.
pub use s3_lease_guest::headers::{
    HOLDER as HOLDER_HEADER, LEASE as LEASE_HEADER, TOKEN as TOKEN_HEADER,
};

/// On a 503: who holds the key, escaped as the guest crate escapes
/// `s3-lease-holder` (`s3_lease_guest::headers::escape_holder`).
pub const HELD_BY_HEADER: &str = "s3-lease-held-by";

/// The headers a client may not send through the gate: it stamps them.
pub fn is_stamped(name: &str) -> bool {
    [TOKEN_HEADER, HOLDER_HEADER, LEASE_HEADER]
        .iter()
        .any(|h| h.eq_ignore_ascii_case(name))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Answer {
    fn json(status: u16, body: serde_json::Value) -> Answer {
        let body = body.to_string().into_bytes();
        Answer {
            status,
            headers: vec![
                ("content-type".into(), b"application/json".to_vec()),
                ("content-length".into(), body.len().to_string().into_bytes()),
            ],
            body,
        }
    }

    fn header(mut self, name: &str, value: String) -> Answer {
        self.headers.push((name.into(), value.into_bytes()));
        self
    }

    /// 400: no key could be derived from the request; nothing was locked.
    pub fn no_key(why: &str) -> Answer {
        Answer::json(400, json!({ "error": "no-key", "message": why }))
    }

    /// 400 (WASI 0.2 only): the client sent a header the gate would stamp.
    /// A 0.2 gate passes the request through as it came and so cannot
    /// strip it; it refuses the request instead, so the downstream never
    /// sees a forged one.
    pub fn stamped_header(name: &str) -> Answer {
        Answer::json(
            400,
            json!({ "error": "stamped-header", "message": format!("{name} is the gate's to send, not the client's") }),
        )
    }

    /// 500: the gate's settings are wrong.
    pub fn not_configured(why: &str) -> Answer {
        Answer::json(500, json!({ "error": "not-configured", "message": why }))
    }

    /// 503: the key stayed held for the whole wait. `holder`: the one
    /// seen last, if any (`message` says who, or why none was seen);
    /// `waited_ms`: how long the gate waited; `retry_after_ms`: when the
    /// gate expects the key free for this request (`Retry-After` rounds it
    /// up to whole seconds, at least 1).
    pub fn held(
        key: &str,
        holder: Option<&str>,
        waited_ms: u64,
        retry_after_ms: u64,
        message: &str,
    ) -> Answer {
        let retry_after = retry_after_ms.div_ceil(1_000).max(1);
        let holder = holder.map(escape_holder);
        let mut answer = Answer::json(
            503,
            json!({
                "error": "lock-timeout",
                "key": key,
                "holder": holder,
                "waited_ms": waited_ms,
                "retry_after_s": retry_after,
                "retry_after_ms": retry_after_ms,
                "message": message,
            }),
        )
        .header("retry-after", retry_after.to_string());
        if let Some(holder) = holder {
            answer = answer.header(HELD_BY_HEADER, holder);
        }
        answer
    }

    /// 502: the store refused or failed (`kind`: the typed error's case).
    /// s3-lease's errors carry no secrets, so the detail is passed on.
    pub fn store_error(kind: &str, detail: &str) -> Answer {
        Answer::json(502, json!({ "error": kind, "message": detail }))
    }

    /// 503 (WASI 0.3): the lease ran out (its renewals failed or were
    /// refused) before the downstream's head: nothing more was forwarded.
    pub fn lease_lost(key: &str, why: &str) -> Answer {
        Answer::json(
            503,
            json!({ "error": "lease-lost", "key": key, "message": format!("the gate's lease on {key} ended before the response ({why}): nothing more was forwarded") }),
        )
        .header("retry-after", "1".into())
    }

    /// 502: the downstream's call itself failed; the lease was released.
    pub fn downstream_failed(detail: &str) -> Answer {
        Answer::json(502, json!({ "error": "downstream", "message": detail }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_key_says_when_to_retry_and_who_holds_it() {
        let a = Answer::held("k", Some("gate 1\n"), 200, 2_001, "held");
        assert_eq!(a.status, 503);
        let header = |n: &str| {
            a.headers
                .iter()
                .find(|(h, _)| h == n)
                .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
        };
        assert_eq!(header("retry-after").as_deref(), Some("3"));
        assert_eq!(header(HELD_BY_HEADER).as_deref(), Some("gate%201%0A"));
        let body: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(body["holder"], "gate%201%0A");
        assert_eq!(body["retry_after_ms"], 2_001);
        assert_eq!(body["waited_ms"], 200);
        assert_eq!(body["message"], "held");
        assert_eq!(Answer::held("k", None, 0, 0, "").headers[2].1, b"1");
        assert_eq!(Answer::held("k", None, 0, 20, "").headers[2].1, b"1");
        assert_eq!(Answer::held("k", None, 0, 20, "").headers.len(), 3);
    }

    #[test]
    fn stamped_headers_are_recognised_in_any_case() {
        assert!(is_stamped("S3-Lease-Token"));
        assert!(is_stamped("s3-lease-lease"));
        assert!(!is_stamped("s3-lease-held-by"));
    }
}
