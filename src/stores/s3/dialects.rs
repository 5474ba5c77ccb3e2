//! The S3 dialects: stores that speak S3's API with a difference a lock
//! cares about, one row each in `DIALECTS`. The S3 code asks the table
//! (`of_host` when it builds a request, `of_reply` when the preflight
//! names what it found), never a host name itself; adding a dialect is one
//! row and its tests.
//!
//! A dialect is recognised by its endpoint's host when a request is built
//! (what it needs sent), and by its reply headers when the preflight
//! reports (what it is known to do): a store is often reached through a
//! proxy or a custom domain, and the headers are what the store itself
//! adds. A report that says which store it is, and what that store is
//! known to do, tells a user what to do instead of leaving them to decode
//! a 501. A store that matches no row is plain S3 (AWS, SeaweedFS, MinIO).

use crate::prelude::*;

use crate::capability::{CapabilityResult, Verdict};
use crate::stores::s3::S3Response;

/// One S3 dialect: how it is recognised and what differs.
#[derive(Debug, PartialEq, Eq)]
pub struct Dialect {
    /// What reports call it.
    pub name: &'static str,
    /// Its endpoints' domains: a host that is one, or ends in `.` and one.
    pub domains: &'static [&'static str],
    /// Reply headers (name prefixes, any case) only it sends.
    pub reply_headers: &'static [&'static str],
    /// What it does with `If-None-Match` and `If-Match` on writes.
    pub conditions: Conditions,
    /// A header (name, value) each conditional write and delete must carry
    /// for its condition to be judged on the current object; signed.
    pub conditional_write_header: Option<(&'static str, &'static str)>,
}

/// What a dialect does with the conditions of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conditions {
    /// Evaluated atomically, as S3 does: a refused one is 412.
    Honoured,
    /// `If-Match` matched only against the ETag unquoted: the quoted ETag
    /// S3 clients send is refused with 412 (the preflight finds it).
    IfMatchUnquotedOnly,
    /// Ignored, and the losing writer answered 200: a lock on it breaks
    /// without an error.
    Ignored,
    /// Refused as not implemented (501 or `NotImplemented`).
    NotImplemented,
}

/// Every S3 dialect we know of.
pub const DIALECTS: &[Dialect] = &[
    Dialect {
        name: "Amazon S3",
        domains: &["amazonaws.com"],
        reply_headers: &[],
        conditions: Conditions::Honoured,
        conditional_write_header: None,
    },
    // Tigris evaluates a condition on the bucket's leader only when the
    // request carries `X-Tigris-Consistent: true`; without it a
    // conditional write may be judged against a replica's stale copy, and
    // two contenders could both win. Sent only on writes and deletes that
    // carry a condition: the narrowest choice that makes what a lock rests
    // on strongly consistent there. Other stores never see a header they
    // do not know (one we sign is one a strict proxy could refuse), and
    // unconditional requests keep their regional latency. Reads need no
    // header: a stale read only gives a stale ETag, whose conditional
    // write the leader then refuses.
    Dialect {
        name: "Tigris",
        domains: &["storage.dev", "tigris.dev"],
        reply_headers: &[],
        conditions: Conditions::Honoured,
        conditional_write_header: Some(("x-tigris-consistent", "true")),
    },
    Dialect {
        name: "Cloudflare R2",
        domains: &["r2.cloudflarestorage.com"],
        reply_headers: &[],
        conditions: Conditions::Honoured,
        conditional_write_header: None,
    },
    Dialect {
        name: "DigitalOcean Spaces",
        domains: &["digitaloceanspaces.com"],
        reply_headers: &[],
        conditions: Conditions::IfMatchUnquotedOnly,
        conditional_write_header: None,
    },
    Dialect {
        name: "Google Cloud Storage's XML API",
        domains: &["storage.googleapis.com"],
        reply_headers: &["x-goog-", "x-guploader-uploadid"],
        conditions: Conditions::Ignored,
        conditional_write_header: None,
    },
    Dialect {
        name: "Backblaze B2",
        domains: &["backblazeb2.com"],
        reply_headers: &["x-bz-"],
        conditions: Conditions::NotImplemented,
        conditional_write_header: None,
    },
    Dialect {
        name: "Alibaba Cloud OSS",
        domains: &["aliyuncs.com"],
        reply_headers: &["x-oss-request-id"],
        conditions: Conditions::NotImplemented,
        conditional_write_header: None,
    },
];

/// The dialect of an endpoint's `host[:port]`, if it is a known one.
pub fn of_host(authority: &str) -> Option<&'static Dialect> {
    // `host[:port]`; an IPv6 literal has no dialect's name anyway.
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host)
        .to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    DIALECTS.iter().find(|d| {
        d.domains.iter().any(|domain| {
            host == *domain
                || host
                    .strip_suffix(domain)
                    .is_some_and(|rest| rest.ends_with('.'))
        })
    })
}

/// The dialect a reply comes from, when its headers say.
pub fn of_reply(r: &S3Response) -> Option<&'static Dialect> {
    DIALECTS.iter().find(|d| {
        d.reply_headers.iter().any(|prefix| {
            r.headers.iter().any(|(k, _)| {
                k.get(..prefix.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
            })
        })
    })
}

/// The results' reasons, naming `dialect` where what it is known to do is
/// what they found: conditions ignored (the one way a lock breaks without
/// an error), and refusals as not implemented. Anything else keeps its
/// generic reason: a store's name is said only beside the behaviour that
/// identifies it.
pub fn name_store(results: &mut [CapabilityResult], dialect: Option<&'static Dialect>) {
    let Some(dialect) = dialect else { return };
    for r in results.iter_mut() {
        match dialect.conditions {
            Conditions::Ignored if r.silent => {
                r.detail = format!(
                    "this is {} (its replies carry {} headers), which ignores \
                     If-None-Match and If-Match on writes and answers the losing writer 200: \
                     a lock on it is unsafe, use a store that honours conditional writes. \
                     Found: {}",
                    dialect.name,
                    shown_headers(dialect),
                    r.detail
                );
            }
            Conditions::NotImplemented
                if r.verdict == Verdict::Fail
                    && (r.status == Some(501) || r.code == "NotImplemented") =>
            {
                r.detail = format!(
                    "{} ({} answers so: a known store without conditional writes)",
                    r.detail, dialect.name
                );
            }
            Conditions::Honoured
            | Conditions::IfMatchUnquotedOnly
            | Conditions::Ignored
            | Conditions::NotImplemented => {}
        }
    }
}

/// The first header a dialect is named by, as a report shows it (`x-goog-*`).
fn shown_headers(dialect: &Dialect) -> String {
    match dialect.reply_headers.first() {
        Some(prefix) if prefix.ends_with('-') => format!("{prefix}*"),
        Some(name) => (*name).to_string(),
        None => "its".to_string(),
    }
}

#[cfg(test)]
mod tests;
