//! Stores that behave worse than SeaweedFS, simulated in front of it by a
//! host hook rule (see `hooks::Rule`): what the preflight must catch.
//!
//! Conditional headers are signed, so a rule that strips one re-signs the
//! request with the endpoint's keys, as if the store had never seen it.

use crate::hooks::Fault;
use crate::server::Endpoint;
use http::request::Parts;
use http::HeaderValue;
use s3_lease::sigv4::{self, Credentials, Scope, SigningRequest};
use std::time::{SystemTime, UNIX_EPOCH};

const CONDITIONS: [&str; 2] = ["if-match", "if-none-match"];

/// A store that ignores `If-Match` and `If-None-Match` on writes (Garage
/// 2.5): every writer wins.
pub fn ignoring_conditions(
    endpoint: &Endpoint,
) -> impl Fn(&mut Parts) -> Option<Fault> + Send + Sync {
    let endpoint = endpoint.clone();
    move |parts| {
        if matches!(parts.method.as_str(), "PUT" | "DELETE") {
            strip_and_resign(parts, &CONDITIONS, &endpoint);
        }
        None
    }
}

/// A store that ignores `If-Match` on DELETE (s3s-fs 0.14).
pub fn ignoring_delete_if_match(
    endpoint: &Endpoint,
) -> impl Fn(&mut Parts) -> Option<Fault> + Send + Sync {
    let endpoint = endpoint.clone();
    move |parts| {
        if parts.method == http::Method::DELETE {
            strip_and_resign(parts, &["if-match"], &endpoint);
        }
        None
    }
}

/// A store that answers 501 to `If-Match` on the methods given (LocalStack:
/// DELETE).
pub fn if_match_not_implemented(
    methods: &'static [&'static str],
) -> impl Fn(&mut Parts) -> Option<Fault> + Send + Sync {
    move |parts| {
        let applies =
            methods.contains(&parts.method.as_str()) && parts.headers.contains_key("if-match");
        applies.then(|| Fault::Respond {
            status: 501,
            content_type: "application/xml",
            body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NotImplemented</Code>\
                   <Message>A header you provided implies functionality that is not implemented</Message>\
                   </Error>"
                .into(),
        })
    }
}

/// Removes `names` and signs the request again. Requests with a query
/// string are left alone: only LIST has one, and it carries no condition.
fn strip_and_resign(parts: &mut Parts, names: &[&str], endpoint: &Endpoint) {
    if !names.iter().any(|n| parts.headers.contains_key(*n)) || parts.uri.query().is_some() {
        return;
    }
    for name in names {
        parts.headers.remove(*name);
    }
    let signed: Vec<String> = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|a| a.split("SignedHeaders=").nth(1))
        .and_then(|s| s.split(',').next())
        .map(|s| s.split(';').map(str::to_string).collect())
        .unwrap_or_default();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let host = parts
        .uri
        .authority()
        .map(|a| a.to_string())
        .or_else(|| header("host"))
        .unwrap_or_default();
    let keep: Vec<(String, String)> = signed
        .iter()
        .filter(|n| !matches!(n.as_str(), "host" | "x-amz-date" | "x-amz-security-token"))
        .filter(|n| !names.contains(&n.as_str()))
        .filter_map(|n| header(n).map(|v| (n.clone(), v)))
        .collect();
    let payload = header("x-amz-content-sha256").unwrap_or_default();
    let creds = Credentials {
        access_key_id: endpoint.access_key_id.clone(),
        secret_access_key: endpoint.secret_access_key.clone(),
        session_token: endpoint.session_token.clone(),
    };
    let unix_seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let request = SigningRequest {
        method: parts.method.as_str(),
        host: &host,
        path: parts.uri.path(),
        query: &[],
        headers: &keep,
        payload_sha256_hex: &payload,
    };
    let scope = Scope {
        region: &endpoint.region,
        service: "s3",
        unix_seconds,
    };
    for (name, value) in sigv4::sign(&request, &creds, scope) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            parts.headers.insert(name, value);
        }
    }
}
