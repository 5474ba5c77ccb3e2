//! The counter object's body: `{"value": N, "token": T}`, where `token` is
//! the fencing token of the lease that wrote it. The token makes every
//! write's bytes unique, as s3-lease's fenced writes ask (an S3 etag is the
//! MD5 of the bytes), and shows who wrote the value last.

use serde_json::Value;

/// The counter as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counter {
    pub value: u64,
    pub token: u64,
}

/// Reads a stored counter; `Err` says what is wrong with the bytes.
pub fn parse(body: &[u8]) -> Result<Counter, String> {
    let json: Value =
        serde_json::from_slice(body).map_err(|e| format!("counter object is not JSON: {e}"))?;
    let field = |name: &str| {
        json.get(name)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("counter object has no unsigned integer {name:?}"))
    };
    Ok(Counter {
        value: field("value")?,
        token: field("token")?,
    })
}

/// The body stored for `counter`, and the reply to an increment.
pub fn to_json(counter: Counter) -> Vec<u8> {
    serde_json::json!({ "value": counter.value, "token": counter.token })
        .to_string()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let c = Counter {
            value: 41,
            token: u64::MAX,
        };
        assert_eq!(parse(&to_json(c)), Ok(c));
    }

    #[test]
    fn foreign_bytes_are_errors() {
        for body in [
            &b""[..],
            b"<html>",
            b"[]",
            b"{\"value\": -1, \"token\": 1}",
            b"{\"value\": 1.5, \"token\": 1}",
            b"{\"value\": \"1\", \"token\": 1}",
            b"{\"token\": 1}",
            b"{\"value\": 1}",
        ] {
            assert!(parse(body).is_err(), "{body:?}");
        }
    }
}
