//! Requests a runtime's instances sent, counted by operation and outcome
//! as its sender sends them (public as `stats::RequestCounts`).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Requests a runtime's instances sent through its own sender, by operation
/// (`get`, `head`, `put`, `delete`, `list`, `post`) and outcome (the HTTP
/// status, or `error` when no answer came).
#[derive(Debug, Default)]
pub struct RequestCounts {
    counts: Mutex<BTreeMap<(&'static str, String), u64>>,
}

impl RequestCounts {
    pub(crate) fn record(&self, op: &'static str, outcome: String) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry((op, outcome)).or_default() += 1;
    }

    /// `(operation, outcome, count)`, sorted.
    pub fn snapshot(&self) -> Vec<(&'static str, String, u64)> {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts
            .iter()
            .map(|((op, outcome), n)| (*op, outcome.clone(), *n))
            .collect()
    }
}

/// The operation a request performs: a REST request's from its method and
/// query, an AWS JSON protocol call's from its `x-amz-target`
/// (`<service>_<version>.<operation>`: `GetItem`, `PutItem`…).
pub(crate) fn operation(
    method: &http::Method,
    uri: &http::Uri,
    headers: &http::HeaderMap,
) -> &'static str {
    if *method == http::Method::POST {
        let target = headers
            .get("x-amz-target")
            .and_then(|t| t.to_str().ok())
            .and_then(|t| t.rsplit_once('.'))
            .map(|(_, operation)| operation);
        return match target {
            Some("GetItem") => "GetItem",
            Some("PutItem") => "PutItem",
            Some("DeleteItem") => "DeleteItem",
            Some("DescribeTable") => "DescribeTable",
            Some("DescribeTimeToLive") => "DescribeTimeToLive",
            _ => "post",
        };
    }
    operation_s3(method, uri)
}

fn operation_s3(method: &http::Method, uri: &http::Uri) -> &'static str {
    let listing = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "list-type=2"));
    match *method {
        http::Method::GET if listing => "list",
        http::Method::GET => "get",
        http::Method::HEAD => "head",
        http::Method::PUT => "put",
        http::Method::DELETE => "delete",
        http::Method::POST => "post",
        _ => "other",
    }
}

#[cfg(test)]
mod tests;
