//! S3's lifecycle rules, as GetBucketLifecycleConfiguration answers them:
//! the rules that delete (or archive) current objects, for the
//! preflight's notes (`LifecycleRules::Xml`).

use crate::prelude::*;

use super::xml_text;
use crate::stores::profile::LifecycleRule as Rule;

/// The enabled rules of an S3 lifecycle configuration that delete (or
/// archive) current objects without a tag of theirs: lock objects carry
/// no tags, so a rule filtered on tags never matches them.
pub fn rules(xml: &str) -> Result<Vec<Rule>, String> {
    if !xml.contains("<LifecycleConfiguration") {
        return Err("the reply is no LifecycleConfiguration".into());
    }
    let mut rules = Vec::new();
    for rule in elements(xml, "Rule") {
        if xml_text(rule, "Status").as_deref() != Some("Enabled") || rule.contains("<Tag>") {
            continue;
        }
        let action = match (elements(rule, "Expiration").first(), archive(rule)) {
            (Some(e), _) if xml_text(e, "Days").is_some() => {
                format!(
                    "expiration after {} days",
                    xml_text(e, "Days").unwrap_or_default()
                )
            }
            (Some(e), _) if xml_text(e, "Date").is_some() => {
                format!("expiration on {}", xml_text(e, "Date").unwrap_or_default())
            }
            (_, Some(class)) => format!("transition to {class}, unreadable until restored"),
            // Delete markers, noncurrent versions, uploads: not ours.
            _ => continue,
        };
        rules.push(Rule {
            name: xml_text(rule, "ID").unwrap_or_default(),
            action,
            prefixes: vec![xml_text(rule, "Prefix").unwrap_or_default()],
            suffixes: Vec::new(),
        });
    }
    Ok(rules)
}

/// A transition of current objects to a storage class that cannot be read
/// until restored.
fn archive(rule: &str) -> Option<String> {
    elements(rule, "Transition").iter().find_map(|t| {
        xml_text(t, "StorageClass").filter(|c| matches!(c.as_str(), "GLACIER" | "DEEP_ARCHIVE"))
    })
}

/// The contents of every `<tag>…</tag>` in `xml`, in order (not nested
/// in one another).
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut found = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(&close) else { break };
        found.push(&body[..end]);
        rest = &body[end + close.len()..];
    }
    found
}
