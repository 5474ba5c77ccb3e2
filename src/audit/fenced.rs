//! `verify --fenced PREFIX`: each fenced object under a prefix whose lock
//! is the key's must carry a token some grant of the key recorded, and on
//! a versioned bucket its versions' tokens must never fall (`versions`).
//! The objects are listed (on a store that lists fenced objects: see
//! `Profile::lists_fenced_objects`) and each is read with a HEAD for its token and lock. On
//! S3 the prefix's versions are listed as well (ListObjectVersions), and
//! each version of an object that has more than one is read with a HEAD
//! of its version id: a bucket that never versioned lists each object
//! once, so there it costs the listing's pages and nothing more. Knowing
//! whether the bucket versions would take a read of its configuration
//! (`GET /?versioning`, another permission), and would not say whether it
//! did before: the listing shows what is there.

use crate::prelude::*;

use alloc::collections::BTreeMap;

use super::names::Kind;
use super::read::Log;
use super::verify::{Finding, FindingKind};
use super::versions::FencedVersion;
use crate::error::Error;
use crate::fenced::{META_LOCK, META_TOKEN};
use crate::protocol::{Operation, Step};
use crate::stores::s3::{self, ListedVersion, Method, S3Request, S3Response, VersionMarker};

/// Error replies to a HEAD are small.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Objects examined at most in one verify, and versions as many: a bound
/// on its requests.
pub const MAX_FENCED_OBJECTS: usize = 10_000;
/// Pages of the versions listing read at most: a store that pages short
/// (or empty) still ends.
pub const MAX_VERSION_PAGES: usize = 1_000;

/// A fenced object as its HEAD shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fenced {
    pub object_key: String,
    /// `lock_identity` of the lock that fenced it (empty: none).
    pub lock: String,
    /// 0: written without fencing.
    pub token: u64,
}

/// What a scan read: the objects as they are now, and the versions of
/// those that have more than one (S3 only; in the listing's order).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scanned {
    pub objects: Vec<Fenced>,
    pub versions: Vec<FencedVersion>,
}

enum Phase {
    Listing,
    Heading(usize),
    ListingVersions,
    HeadingVersion(usize),
}

/// Lists `prefix` and reads each object's token and lock (and, with
/// `versions`, each version's).
pub struct FencedScan {
    prefix: String,
    versions: bool,
    keys: Vec<String>,
    listed: Vec<ListedVersion>,
    pages: usize,
    marker: Option<VersionMarker>,
    found: Scanned,
    phase: Phase,
}

impl FencedScan {
    /// `versions`: list the prefix's versions too (S3's ListObjectVersions).
    pub fn new(prefix: String, versions: bool) -> Self {
        FencedScan {
            prefix,
            versions,
            keys: Vec::new(),
            listed: Vec::new(),
            pages: 0,
            marker: None,
            found: Scanned::default(),
            phase: Phase::Listing,
        }
    }

    fn head(&mut self, i: usize) -> Step<Scanned> {
        match self.keys.get(i) {
            Some(key) => {
                self.phase = Phase::Heading(i);
                Step::Send(S3Request::new(Method::Head, key, MAX_HEAD_BYTES))
            }
            None if self.versions => {
                self.phase = Phase::ListingVersions;
                Step::Send(s3::versions_request(&self.prefix, None))
            }
            None => Step::Done(Ok(core::mem::take(&mut self.found))),
        }
    }

    fn head_version(&mut self, i: usize) -> Step<Scanned> {
        match self.listed.get(i) {
            Some(v) => {
                self.phase = Phase::HeadingVersion(i);
                let mut req = S3Request::new(Method::Head, &v.key, MAX_HEAD_BYTES);
                req.query = vec![("versionId".into(), v.version_id.clone())];
                Step::Send(req)
            }
            None => Step::Done(Ok(core::mem::take(&mut self.found))),
        }
    }

    fn on_versions_page(&mut self, r: S3Response) -> Step<Scanned> {
        if r.status != 200 {
            return Step::Done(Err(r.into_error()));
        }
        let corrupt = |reason: String| Step::Done(Err(Error::corrupt(&self.prefix, reason)));
        let page = match s3::parse_versions(&r.body) {
            Ok(page) => page,
            Err(reason) => return corrupt(reason),
        };
        self.pages += 1;
        self.listed
            .extend(page.entries.into_iter().filter(|v| !v.delete_marker));
        if page.truncated && self.listed.len() < MAX_FENCED_OBJECTS {
            match page.next {
                None => {
                    return corrupt("a truncated versions listing names no NextKeyMarker".into())
                }
                Some(next) if self.marker.as_ref() == Some(&next) => {
                    return corrupt(format!(
                        "the versions listing does not move on from {:?}",
                        next.key
                    ))
                }
                Some(next) if self.pages < MAX_VERSION_PAGES => {
                    let req = s3::versions_request(&self.prefix, Some(&next));
                    self.marker = Some(next);
                    return Step::Send(req);
                }
                Some(_) => {}
            }
        }
        self.listed.truncate(MAX_FENCED_OBJECTS);
        // Only an object with more than one version has an order to
        // check: an unversioned bucket's objects each list once.
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for v in &self.listed {
            *counts.entry(v.key.as_str()).or_default() += 1;
        }
        let several: Vec<bool> = self
            .listed
            .iter()
            .map(|v| counts[v.key.as_str()] > 1)
            .collect();
        let mut several = several.into_iter();
        self.listed.retain(|_| several.next().unwrap_or(false));
        self.head_version(0)
    }
}

impl Operation for FencedScan {
    type Output = Scanned;

    fn start(&mut self, _now_ms: u64) -> Step<Scanned> {
        Step::Send(s3::list_request(&self.prefix, None))
    }

    fn on_response(&mut self, r: S3Response, _now_ms: u64) -> Step<Scanned> {
        match self.phase {
            Phase::Listing => {
                if r.status != 200 {
                    return Step::Done(Err(r.into_error()));
                }
                let page = match s3::parse_list(&r.body) {
                    Ok(page) => page,
                    Err(reason) => return Step::Done(Err(Error::corrupt(&self.prefix, reason))),
                };
                self.keys.extend(page.keys);
                match page.next_token {
                    Some(token) if page.truncated && self.keys.len() < MAX_FENCED_OBJECTS => {
                        Step::Send(s3::list_continue(&self.prefix, &token))
                    }
                    _ => {
                        self.keys.truncate(MAX_FENCED_OBJECTS);
                        self.head(0)
                    }
                }
            }
            Phase::Heading(i) => {
                if r.status == 200 {
                    self.found.objects.push(Fenced {
                        object_key: self.keys[i].clone(),
                        lock: lock_of(&r),
                        token: token_of(&r),
                    });
                } else if !r.is_missing_object() {
                    return Step::Done(Err(r.into_error()));
                }
                self.head(i + 1)
            }
            Phase::ListingVersions => self.on_versions_page(r),
            Phase::HeadingVersion(i) => {
                // A version deleted since the listing: nothing to order.
                if r.status == 200 {
                    let v = &self.listed[i];
                    self.found.versions.push(FencedVersion {
                        object_key: v.key.clone(),
                        version_id: v.version_id.clone(),
                        last_modified_ms: v.last_modified_ms,
                        lock: lock_of(&r),
                        token: token_of(&r),
                    });
                } else if !r.is_missing_object() {
                    return Step::Done(Err(r.into_error()));
                }
                self.head_version(i + 1)
            }
        }
    }
}

fn lock_of(r: &S3Response) -> String {
    r.header(META_LOCK).unwrap_or_default().to_string()
}

/// 0 when absent or unreadable: written without fencing.
fn token_of(r: &S3Response) -> u64 {
    r.header(META_TOKEN)
        .and_then(|t| t.parse().ok())
        .unwrap_or(0)
}

/// The findings on `objects` of the key whose lock is `lock`: a token no
/// grant in the log recorded (below the log's first token, pruned, it is
/// not judged).
pub fn check(log: &Log, objects: &[Fenced], lock: &str) -> Vec<Finding> {
    objects
        .iter()
        .filter(|o| o.lock == lock && o.token >= log.from.max(1))
        .filter(|o| log.record(o.token, Kind::Grant).is_none())
        .map(|o| Finding {
            kind: FindingKind::FencedUnknownToken,
            token: o.token,
            detail: format!(
                "{:?} was written with token {}, which no grant of the key recorded",
                o.object_key, o.token
            ),
            evidence: vec![o.object_key.clone()],
        })
        .collect()
}
