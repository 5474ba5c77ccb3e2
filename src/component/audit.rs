//! The grant log's calls (`audit`, `audit-verify`, `audit-prune`): the
//! core's, their results as the WIT's.

use crate::prelude::*;

use super::Client;
use crate::audit::timeline::{Ended, Entry};
use crate::audit::verify::{Finding, Report};
use crate::bindings::exports::s3_lease::lease::types as wit;
use s3_lease_keep::twins::FromTwin;

s3_lease_keep::same_cases! {
    Ended = wit::AuditEnd { Released, Expired, TakenOver, Held, Unknown }
}

s3_lease_keep::same_fields! {
    |e: Entry| -> wit::AuditEntry { token, ttl_ms, ended, held_ms, written_by, backfilled;
        holder_id: e.holder,
        granted_at_ms: e.granted_ms,
        ended_at_ms: e.ended_ms }
    |r: Report| -> wit::AuditReport { key, first_token, last_token, grants, backfilled, findings;
        overlapped: r.overlapped() }
    |f: Finding| -> wit::AuditFinding { kind, token, detail, evidence }
}

impl Client {
    pub(super) async fn audit(
        &self,
        key: String,
        since_ms: Option<u64>,
    ) -> Result<Vec<wit::AuditEntry>, wit::Error> {
        self.run(async |core, io| core.audit_timeline(io, &key, since_ms).await)
            .await
            .map(Vec::from_twin)
    }

    pub(super) async fn audit_verify(
        &self,
        key: String,
        fenced_prefix: Option<String>,
    ) -> Result<wit::AuditReport, wit::Error> {
        self.run(async |core, io| core.audit_verify(io, &key, fenced_prefix.as_deref()).await)
            .await
            .map(wit::AuditReport::from_twin)
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
