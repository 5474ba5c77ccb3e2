//! `verify --fenced` on a versioned bucket: a fenced object's versions,
//! oldest to newest, must never carry a token below an earlier version's
//! (of the same lock). A fenced write refuses a lower token than the one
//! it replaces, so a fall shows a write that went around the fence: a
//! stale holder's, or a forged one.

use crate::prelude::*;

use super::verify::{Finding, FindingKind};
use crate::http_date::format_rfc3339;

/// One version of a fenced object, as its listing and its HEAD show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FencedVersion {
    pub object_key: String,
    pub version_id: String,
    /// The store's time of the write (the listing's `LastModified`).
    pub last_modified_ms: u64,
    /// `lock_identity` of the lock that fenced it (empty: none).
    pub lock: String,
    /// 0: written without fencing.
    pub token: u64,
}

impl FencedVersion {
    /// How a finding names it: the object key and its version id, as a
    /// GET of it would ask.
    pub fn name(&self) -> String {
        format!("{}?versionId={}", self.object_key, self.version_id)
    }
}

/// The findings on `versions` (of any objects, each object's versions in
/// the listing's order: newest first, as S3 lists them) of the key whose
/// lock is `lock`: each version fenced by it whose token is below the
/// highest of the earlier ones. Oldest to newest is by `LastModified`; two
/// versions written in the same millisecond keep the listing's order
/// (the later listed is the older). Versions written without fencing
/// (token 0) or by another lock are skipped: their tokens do not compare.
pub fn fell(versions: &[FencedVersion], lock: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut start = 0;
    while start < versions.len() {
        let key = &versions[start].object_key;
        let len = versions[start..]
            .iter()
            .take_while(|v| &v.object_key == key)
            .count();
        findings.extend(fell_in_one(&versions[start..start + len], lock));
        start += len;
    }
    findings
}

/// `fell` on one object's versions.
fn fell_in_one(listed: &[FencedVersion], lock: &str) -> Vec<Finding> {
    let mut order: Vec<(usize, &FencedVersion)> = listed
        .iter()
        .enumerate()
        .filter(|(_, v)| v.lock == lock && v.token > 0)
        .collect();
    order.sort_by_key(|&(i, v)| (v.last_modified_ms, core::cmp::Reverse(i)));
    let mut highest: Option<&FencedVersion> = None;
    let mut findings = Vec::new();
    for (_, v) in order {
        match highest {
            Some(h) if v.token < h.token => findings.push(Finding {
                kind: FindingKind::FencedTokenFell,
                token: v.token,
                detail: format!(
                    "{:?} version {:?} (written {}) carries token {}, below token {} of its \
                     earlier version {:?} (written {}): a write went around the fence",
                    v.object_key,
                    v.version_id,
                    format_rfc3339(v.last_modified_ms),
                    v.token,
                    h.token,
                    h.version_id,
                    format_rfc3339(h.last_modified_ms),
                ),
                evidence: vec![h.name(), v.name()],
            }),
            Some(h) if v.token <= h.token => {}
            _ => highest = Some(v),
        }
    }
    findings
}

#[cfg(test)]
mod tests;
