//! A GCS bucket's lifecycle rules, from its metadata's `lifecycle` field:
//! the rules that delete live objects, for the preflight's notes
//! (`LifecycleRules::BucketJson`).

use crate::prelude::*;

use crate::stores::profile::LifecycleRule as Rule;
use serde_json::Value;

/// The rules of a GCS bucket's `lifecycle` that delete live objects.
pub fn rules(body: &[u8]) -> Result<Vec<Rule>, String> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| "the bucket's metadata is not JSON".to_string())?;
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let Some(rules) = value.pointer("/lifecycle/rule").and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        if rule.pointer("/action/type").and_then(Value::as_str) != Some("Delete") {
            continue;
        }
        let condition = rule.get("condition").cloned().unwrap_or(Value::Null);
        // Conditions only noncurrent versions meet: a lock object is live.
        let noncurrent = condition.get("isLive") == Some(&Value::Bool(false))
            || [
                "numNewerVersions",
                "daysSinceNoncurrentTime",
                "noncurrentTimeBefore",
            ]
            .iter()
            .any(|c| condition.get(*c).is_some());
        if noncurrent {
            continue;
        }
        let action = match condition.get("age").and_then(Value::as_u64) {
            Some(days) => format!("delete at age {days} days"),
            None => "delete".into(),
        };
        let mut prefixes = strings(condition.get("matchesPrefix"));
        if prefixes.is_empty() {
            prefixes.push(String::new());
        }
        found.push(Rule {
            name: format!("rule {}", i + 1),
            action,
            prefixes,
            suffixes: strings(condition.get("matchesSuffix")),
        });
    }
    Ok(found)
}
