//! Reads the probes' replies into one verdict per capability, with the
//! reply that decided it as evidence. Pure: the replies are all in `seen`.

use crate::prelude::*;

use super::offset::OffsetBounds;
use super::{Capability, CapabilityResult, Phase, Probes, Seen, Verdict};

/// Beyond this, this machine's clock is too far from the store's for the
/// `holder` expiry clock, which compares wall clocks directly.
pub const HOLDER_MAX_OFFSET_MS: u64 = 2_000;
/// Beyond this, S3 refuses request signatures (`RequestTimeTooSkewed`).
const SIGNING_MAX_OFFSET_MS: u64 = 15 * 60 * 1000;

/// How a store answered a conditional request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// 2xx: it did what was asked.
    Applied,
    /// 412, or 409 (a conflict: not applied either).
    Refused,
    /// 404.
    NotFound,
    /// 501: it says it cannot evaluate the condition.
    Unsupported,
    /// No reply, or one that decides nothing (5xx, 400, ...).
    Unclear,
}

fn answer(seen: &Seen) -> Answer {
    match seen.status {
        Some(200..=299) => Answer::Applied,
        Some(409 | 412) => Answer::Refused,
        Some(404) => Answer::NotFound,
        Some(501) => Answer::Unsupported,
        // Alibaba OSS names what it cannot evaluate with this code under
        // another status (400): the same answer as a 501.
        Some(_) if seen.code == "NotImplemented" => Answer::Unsupported,
        _ => Answer::Unclear,
    }
}

/// A result whose evidence is `seen` (or nothing, when the probe did not run).
fn result(
    capability: Capability,
    verdict: Verdict,
    seen: Option<&Seen>,
    detail: impl Into<String>,
) -> CapabilityResult {
    CapabilityResult {
        capability,
        verdict,
        status: seen.and_then(|s| s.status),
        code: seen.map(|s| s.code.clone()).unwrap_or_default(),
        detail: detail.into(),
        silent: false,
    }
}

fn silent(capability: Capability, seen: &Seen, detail: impl Into<String>) -> CapabilityResult {
    CapabilityResult {
        silent: true,
        ..result(capability, Verdict::Fail, Some(seen), detail)
    }
}

/// What the reply was, in words, for an unclear answer.
fn described(seen: &Seen) -> String {
    match (&seen.failure, seen.status) {
        (Some(failure), _) => format!("no reply ({failure})"),
        (None, Some(status)) if seen.code.is_empty() => format!("HTTP {status}"),
        (None, Some(status)) => format!("HTTP {status} {}", seen.code),
        (None, None) => "no reply".into(),
    }
}

fn unclear(capability: Capability, seen: &Seen, what: &str) -> CapabilityResult {
    result(
        capability,
        Verdict::Unknown,
        Some(seen),
        format!("{what}: {}, which decides nothing", described(seen)),
    )
}

/// Why probes on the scratch object `a` did not run.
fn no_scratch_object(capability: Capability, seen: &Probes) -> CapabilityResult {
    let why = match seen.get(&Phase::CreateFirst) {
        Some(s) if s.applied() && s.etag.is_none() => {
            "the store accepted the scratch object but its reply carried no ETag, so no condition could name it".to_string()
        }
        Some(s) => format!("the scratch object could not be created ({})", described(s)),
        None => "the scratch object was not created".to_string(),
    };
    result(
        capability,
        Verdict::Unknown,
        seen.get(&Phase::CreateFirst),
        format!("not probed: {why}"),
    )
}

pub(super) fn results(seen: &Probes, offset: &OffsetBounds) -> Vec<CapabilityResult> {
    crate::capability::S3_PROBES
        .iter()
        .map(|&c| match c {
            Capability::IfNoneMatchExisting => if_none_match_existing(seen),
            Capability::IfMatchPut => if_match_put(seen),
            Capability::IfMatchMissingKey => if_match_missing_key(seen),
            Capability::IfMatchDelete => if_match_delete(seen),
            Capability::ServerDates => server_dates(seen),
            Capability::ListStartAfter => list_start_after(seen),
            Capability::ConditionalGet => conditional_get(seen),
            Capability::PayloadHash => payload_hash(seen),
            Capability::ClockOffset => clock_offset(offset),
            Capability::TableKeySchema
            | Capability::TtlAttribute
            | Capability::ConcurrentCreate
            | Capability::ConcurrentUpdate => result(
                c,
                Verdict::Unknown,
                None,
                "not probed: not an S3 capability",
            ),
        })
        .collect()
}

fn if_none_match_existing(seen: &Probes) -> CapabilityResult {
    let c = Capability::IfNoneMatchExisting;
    let Some(first) = seen.get(&Phase::CreateFirst) else {
        return no_scratch_object(c, seen);
    };
    match answer(first) {
        Answer::Applied => {}
        Answer::Unsupported => {
            return result(c, Verdict::Fail, Some(first), "If-None-Match: * answered NotImplemented: the store has no create-only writes, so no first grant can be made safely");
        }
        Answer::Refused => {
            return result(c, Verdict::Fail, Some(first), "If-None-Match: * was refused on a key that did not exist: create-only writes never succeed");
        }
        _ => {
            return unclear(
                c,
                first,
                "creating the scratch object with If-None-Match: *",
            )
        }
    }
    let Some(again) = seen.get(&Phase::CreateExisting) else {
        return no_scratch_object(c, seen);
    };
    match answer(again) {
        Answer::Refused => result(c, Verdict::Pass, Some(again), "refused on an existing key, accepted on a new one"),
        Answer::Applied => silent(c, again, "If-None-Match: * on an existing key was ignored and the object overwritten: every contender would win the first grant"),
        Answer::Unsupported => result(c, Verdict::Fail, Some(again), "If-None-Match: * on an existing key answered NotImplemented"),
        _ => unclear(c, again, "If-None-Match: * on an existing key"),
    }
}

fn if_match_put(seen: &Probes) -> CapabilityResult {
    let c = Capability::IfMatchPut;
    let Some(wrong) = seen.get(&Phase::PutWrongEtag) else {
        return no_scratch_object(c, seen);
    };
    match answer(wrong) {
        Answer::Refused => {}
        Answer::Applied => {
            return silent(c, wrong, "If-Match with a wrong ETag was ignored and the object overwritten: compare-and-swap does not hold, a stale holder's renew would win");
        }
        Answer::Unsupported => {
            return result(c, Verdict::Fail, Some(wrong), "If-Match on PUT answered NotImplemented: no compare-and-swap (single-object cannot work; epoch-objects can, but cannot renew or release)");
        }
        _ => return unclear(c, wrong, "If-Match with a wrong ETag"),
    }
    let Some(right) = seen.get(&Phase::PutRightEtag) else {
        return no_scratch_object(c, seen);
    };
    match answer(right) {
        Answer::Applied => match &right.etag {
            None => result(c, Verdict::Fail, Some(right), "a write under If-Match was accepted, but its reply carried no ETag to name in the next condition"),
            Some(etag) if Some(etag) == right.sent_etag.as_ref() => silent(c, right, "the ETag stayed the same when the body changed: If-Match cannot tell one write from the next"),
            Some(_) => read_back(seen).unwrap_or_else(|| {
                result(c, Verdict::Pass, Some(wrong), "a wrong ETag refused, the right one accepted, and the ETag changed with the body")
            }),
        },
        Answer::Refused if unquoted_only(seen, right) => result(c, Verdict::Fail, Some(right), UNQUOTED_ONLY),
        Answer::Refused | Answer::NotFound => result(c, Verdict::Fail, Some(right), "If-Match with the object's own ETag was refused: a holder could never renew"),
        Answer::Unsupported => result(c, Verdict::Fail, Some(right), "If-Match with the right ETag answered NotImplemented"),
        Answer::Unclear => unclear(c, right, "If-Match with the right ETag"),
    }
}

const UNQUOTED_ONLY: &str =
    "If-Match with the object's own ETag, quoted as the store returned it, \
     was refused with 412 while the object was unchanged: a store that matches If-Match only on an \
     unquoted ETag, as DigitalOcean Spaces does; a holder could never renew";

/// A 412 to `If-Match` naming the object's current ETag in quotes, while a
/// later read shows the object still has that ETag: the store compared
/// the value without stripping the quotes (DigitalOcean Spaces). Every
/// other store we know of takes the quoted form S3 returns, so we keep
/// sending it and name the symptom instead.
fn unquoted_only(seen: &Probes, refused: &Seen) -> bool {
    let Some(sent) = refused.sent_etag.as_deref() else {
        return false;
    };
    let quoted = sent.len() >= 2 && sent.starts_with('"') && sent.ends_with('"');
    let unchanged = seen
        .get(&Phase::GetOtherEtag)
        .and_then(|get| get.etag.as_deref())
        .is_some_and(|now| now == sent || now == sent.trim_matches('"'));
    refused.status == Some(412) && quoted && unchanged
}

/// The object read back is the last write the store accepted, or else the
/// failure: a refused write that landed anyway, or an accepted one lost.
fn read_back(seen: &Probes) -> Option<CapabilityResult> {
    let get = seen.get(&Phase::GetOtherEtag)?;
    (get.body_matches == Some(false)).then(|| {
        silent(Capability::IfMatchPut, get, "the object read back is not the last write the store accepted: a refused write landed anyway, or an accepted one was lost")
    })
}

fn if_match_missing_key(seen: &Probes) -> CapabilityResult {
    let c = Capability::IfMatchMissingKey;
    let Some(put) = seen.get(&Phase::PutMissingKey) else {
        return no_scratch_object(c, seen);
    };
    match answer(put) {
        Answer::NotFound => result(c, Verdict::Pass, Some(put), "refused with 404, as AWS does"),
        Answer::Refused => result(c, Verdict::Pass, Some(put), "refused with 412 (AWS answers 404; both refuse)"),
        Answer::Applied => silent(c, put, "If-Match on a missing key was ignored and the object created: a lock object deleted under its holder would come back"),
        Answer::Unsupported => result(c, Verdict::Fail, Some(put), "If-Match on a missing key answered NotImplemented"),
        Answer::Unclear => unclear(c, put, "If-Match on a missing key"),
    }
}

fn if_match_delete(seen: &Probes) -> CapabilityResult {
    let c = Capability::IfMatchDelete;
    let Some(wrong) = seen.get(&Phase::DeleteWrongEtag) else {
        return no_scratch_object(c, seen);
    };
    match answer(wrong) {
        Answer::Refused => {}
        Answer::Applied => {
            return silent(c, wrong, "DELETE with If-Match and a wrong ETag was ignored and the object deleted: this store's conditions cannot be trusted");
        }
        Answer::Unsupported => {
            return result(c, Verdict::Fail, Some(wrong), "DELETE with If-Match answered NotImplemented (neither strategy deletes conditionally: this alone is safe)");
        }
        _ => return unclear(c, wrong, "DELETE with If-Match and a wrong ETag"),
    }
    let Some(right) = seen.get(&Phase::DeleteRightEtag) else {
        return no_scratch_object(c, seen);
    };
    match answer(right) {
        Answer::Applied => result(
            c,
            Verdict::Pass,
            Some(wrong),
            "a wrong ETag refused, the right one accepted",
        ),
        // The PUT probe showed the store wants the ETag unquoted: the
        // same reason refused this one.
        Answer::Refused
            if seen
                .get(&Phase::PutRightEtag)
                .is_some_and(|put| unquoted_only(seen, put))
                && right.status == Some(412) =>
        {
            result(
                c,
                Verdict::Fail,
                Some(right),
                "DELETE with If-Match and the object's own quoted ETag was refused with 412: \
                 a store that matches If-Match only on an unquoted ETag, as DigitalOcean Spaces does",
            )
        }
        Answer::Refused | Answer::NotFound => result(
            c,
            Verdict::Fail,
            Some(right),
            "DELETE with If-Match and the object's own ETag was refused",
        ),
        Answer::Unsupported => result(
            c,
            Verdict::Fail,
            Some(right),
            "DELETE with If-Match and the right ETag answered NotImplemented",
        ),
        Answer::Unclear => unclear(c, right, "DELETE with If-Match and the right ETag"),
    }
}

fn server_dates(seen: &Probes) -> CapabilityResult {
    let c = Capability::ServerDates;
    let without: Vec<String> = seen
        .iter()
        // Error replies may come from a proxy in front of the store.
        .filter(|(_, s)| matches!(s.status, Some(200..=399)) && s.date_ms.is_none())
        .map(|(p, s)| {
            let why = if s.has_date_header {
                "unreadable"
            } else {
                "none"
            };
            format!("{} ({why})", p.label())
        })
        .collect();
    let Some(get) = seen
        .get(&Phase::GetOtherEtag)
        .filter(|g| g.status == Some(200))
    else {
        let evidence = seen.get(&Phase::GetOtherEtag);
        let detail = match evidence {
            Some(g) => format!(
                "not probed: the scratch object was not read ({})",
                described(g)
            ),
            None => "not probed: the scratch object was not read".into(),
        };
        return result(c, Verdict::Unknown, evidence, detail);
    };
    if !without.is_empty() {
        return result(
            c,
            Verdict::Fail,
            Some(get),
            format!(
                "replies without a readable Date header: {}; the server expiry clock needs it",
                crate::text::join(&without, ", ")
            ),
        );
    }
    let (Some(date), Some(modified)) = (get.date_ms, get.last_modified_ms) else {
        return result(
            c,
            Verdict::Fail,
            Some(get),
            "a GET reply without a readable Last-Modified header; the server expiry clock needs it",
        );
    };
    // Every write to a happened after the first reply's Date and before this one.
    let first = seen
        .get(&Phase::CreateFirst)
        .and_then(|s| s.date_ms)
        .unwrap_or(0);
    if modified.saturating_add(2_000) < first || modified > date.saturating_add(1_000) {
        return result(c, Verdict::Fail, Some(get), format!(
            "Last-Modified ({modified} ms) is not on the clock of Date ({first}..{date} ms): the server expiry clock compares the two"
        ));
    }
    result(
        c,
        Verdict::Pass,
        Some(get),
        "Date on every reply, Last-Modified on reads, on the same clock",
    )
}

fn list_start_after(seen: &Probes) -> CapabilityResult {
    let c = Capability::ListStartAfter;
    let Some(list) = seen.get(&Phase::ListAfter) else {
        return result(
            c,
            Verdict::Unknown,
            seen.get(&Phase::CreateSecond),
            "not probed: the two scratch objects were not both surely created",
        );
    };
    let (a, b) = match (&list.listed, list.status) {
        (Some(Ok(found)), _) => *found,
        (Some(Err(reason)), _) => {
            return result(
                c,
                Verdict::Fail,
                Some(list),
                format!("the LIST reply could not be read: {reason}"),
            );
        }
        (None, Some(501)) => return result(c, Verdict::Fail, Some(list), "LIST answered 501"),
        (None, _) => return unclear(c, list, "LIST with start-after"),
    };
    match (a, b) {
        (false, true) => result(
            c,
            Verdict::Pass,
            Some(list),
            "the listing started after the start-after key",
        ),
        (true, _) => result(
            c,
            Verdict::Fail,
            Some(list),
            "start-after was ignored: the listing included the start-after key itself",
        ),
        (false, false) => result(
            c,
            Verdict::Fail,
            Some(list),
            "the listing missed an object written before it",
        ),
    }
}

fn conditional_get(seen: &Probes) -> CapabilityResult {
    let c = Capability::ConditionalGet;
    let Some(other) = seen.get(&Phase::GetOtherEtag) else {
        return no_scratch_object(c, seen);
    };
    match other.status {
        Some(200) => {}
        Some(304) => return silent(c, other, "304 Not Modified for an ETag the object does not have: a follower would keep a stale view of the lock"),
        _ => return unclear(c, other, "GET with If-None-Match and another ETag"),
    }
    let Some(same) = seen.get(&Phase::GetSameEtag) else {
        return no_scratch_object(c, seen);
    };
    match same.status {
        Some(304) => result(c, Verdict::Pass, Some(same), "304 for the object's ETag, the object for any other"),
        Some(200) => result(c, Verdict::Fail, Some(same), "If-None-Match on GET is ignored: followers read the whole lock object on every look (safe, costs more)"),
        _ => unclear(c, same, "GET with If-None-Match and the object's ETag"),
    }
}

fn payload_hash(seen: &Probes) -> CapabilityResult {
    let c = Capability::PayloadHash;
    let Some(put) = seen.get(&Phase::WrongHash) else {
        return result(c, Verdict::Unknown, None, "not probed");
    };
    match put.status {
        Some(400 | 403) => result(c, Verdict::Pass, Some(put), "a body whose x-amz-content-sha256 did not match was refused"),
        Some(200..=299) => result(c, Verdict::Fail, Some(put), "a body whose x-amz-content-sha256 did not match was stored: the store does not check payload hashes (safe for locks; rely on TLS for integrity)"),
        _ => unclear(c, put, "a PUT with a wrong payload hash"),
    }
}

fn clock_offset(offset: &OffsetBounds) -> CapabilityResult {
    let c = Capability::ClockOffset;
    let Some(o) = offset.estimate() else {
        return result(
            c,
            Verdict::Unknown,
            None,
            "no reply carried a readable Date",
        );
    };
    let measured = format!(
        "this machine's clock is {} ms {} the store's (± {} ms)",
        o.offset_ms.unsigned_abs(),
        if o.offset_ms >= 0 {
            "ahead of"
        } else {
            "behind"
        },
        o.uncertainty_ms
    );
    if o.worst_ms() <= HOLDER_MAX_OFFSET_MS {
        return result(c, Verdict::Pass, None, measured);
    }
    let signing = if o.offset_ms.unsigned_abs() > SIGNING_MAX_OFFSET_MS {
        "; over 15 minutes, so requests are signed on the store's clock after a refusal"
    } else {
        ""
    };
    result(c, Verdict::Fail, None, format!(
        "{measured}: more than {HOLDER_MAX_OFFSET_MS} ms, too far for the holder expiry clock{signing}"
    ))
}
