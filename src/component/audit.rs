//! The grant log's calls (`audit`, `audit-verify`, `audit-prune`): the
//! core's, their results as the WIT's.

use crate::prelude::*;

use super::Client;
use crate::audit::timeline::{Ended, Entry};
use crate::audit::verify::{Finding, Report};
use crate::bindings::exports::s3_lease::lease::types as wit;

s3_lease_keep::same_cases! {
    s3_lease_keep::vocabulary::AuditFindingKind = wit::AuditFindingKind {
        TokenRepeated,
        MissedGrant,
        TakenWhileLive,
        OverLimit,
        UnexplainedGap,
        NotOnStoreClock,
        Unreadable,
        FencedUnknownToken,
        FencedTokenFell,
    }
}

impl Client {
    pub(super) async fn audit(
        &self,
        key: String,
        since_ms: Option<u64>,
    ) -> Result<Vec<wit::AuditEntry>, wit::Error> {
        self.run(async |core, io| core.audit_timeline(io, &key, since_ms).await)
            .await
            .map(|entries| entries.into_iter().map(to_wit_entry).collect())
    }

    pub(super) async fn audit_verify(
        &self,
        key: String,
        fenced_prefix: Option<String>,
    ) -> Result<wit::AuditReport, wit::Error> {
        self.run(async |core, io| core.audit_verify(io, &key, fenced_prefix.as_deref()).await)
            .await
            .map(to_wit_report)
    }

    pub(super) async fn audit_prune(
        &self,
        key: String,
        before_ms: u64,
    ) -> Result<wit::AuditPruned, wit::Error> {
        self.run(async |core, io| core.audit_prune(io, &key, before_ms).await)
            .await
            .map(|p| wit::AuditPruned {
                first_token: p.from,
                below_token: p.below,
            })
    }
}

fn to_wit_entry(e: Entry) -> wit::AuditEntry {
    wit::AuditEntry {
        token: e.token,
        holder_id: e.holder,
        ttl_ms: e.ttl_ms,
        granted_at_ms: e.granted_ms,
        ended: match e.ended {
            Ended::Released => wit::AuditEnd::Released,
            Ended::Expired => wit::AuditEnd::Expired,
            Ended::TakenOver => wit::AuditEnd::TakenOver,
            Ended::Held => wit::AuditEnd::Held,
            Ended::Unknown => wit::AuditEnd::Unknown,
        },
        ended_at_ms: e.ended_ms,
        held_ms: e.held_ms,
        written_by: e.written_by,
        backfilled: e.backfilled,
    }
}

fn to_wit_report(r: Report) -> wit::AuditReport {
    wit::AuditReport {
        overlapped: r.overlapped(),
        key: r.key,
        first_token: r.first_token,
        last_token: r.last_token,
        grants: r.grants,
        backfilled: r.backfilled,
        findings: r.findings.into_iter().map(to_wit_finding).collect(),
    }
}

fn to_wit_finding(f: Finding) -> wit::AuditFinding {
    wit::AuditFinding {
        kind: f.kind.into(),
        token: f.token,
        detail: f.detail,
        evidence: f.evidence,
    }
}
