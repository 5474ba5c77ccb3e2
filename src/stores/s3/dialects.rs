//! Stores that are S3-compatible but not quite, named from their replies:
//! a report that says which store it is, and what that store is known to
//! do, tells a user what to do instead of leaving them to decode a 501.
//!
//! Told apart by reply headers, not by host name: a store is often
//! reached through a proxy or a custom domain, and the headers are what
//! the store itself adds.

use crate::preflight::{CapabilityResult, Verdict};
use crate::stores::s3::S3Response;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnownStore {
    /// Google Cloud Storage's XML API (`storage.googleapis.com`): it
    /// ignores `If-None-Match` and `If-Match` on writes and answers the
    /// losing writer 200.
    GcsXml,
    /// Backblaze B2's S3-compatible API: 501 to conditional writes.
    BackblazeB2,
    /// Alibaba Cloud OSS: `NotImplemented` to conditional writes.
    AlibabaOss,
}

impl KnownStore {
    /// The store a reply comes from, when its headers say.
    pub fn of(r: &S3Response) -> Option<KnownStore> {
        let named = |prefix: &str| {
            r.headers.iter().any(|(k, _)| {
                k.get(..prefix.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
            })
        };
        if named("x-goog-") || r.header("x-guploader-uploadid").is_some() {
            Some(KnownStore::GcsXml)
        } else if named("x-bz-") {
            Some(KnownStore::BackblazeB2)
        } else if r.header("x-oss-request-id").is_some() {
            Some(KnownStore::AlibabaOss)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            KnownStore::GcsXml => "Google Cloud Storage's XML API",
            KnownStore::BackblazeB2 => "Backblaze B2",
            KnownStore::AlibabaOss => "Alibaba Cloud OSS",
        }
    }
}

/// The results' reasons, naming `store` where what it is known to do
/// is what they found: GCS's silent failures (the one S3-compatible
/// endpoint where a lock breaks without an error), and B2's and OSS's
/// refusals as not implemented. Anything else keeps its generic reason:
/// a store's name is said only beside the behaviour that identifies it.
pub fn name_store(results: &mut [CapabilityResult], store: Option<KnownStore>) {
    let Some(store) = store else { return };
    for r in results.iter_mut() {
        match store {
            KnownStore::GcsXml if r.silent => {
                r.detail = format!(
                    "this is {} (its replies carry x-goog-* headers), which ignores \
                     If-None-Match and If-Match on writes and answers the losing writer 200: \
                     a lock on it is unsafe, use a store that honours conditional writes. \
                     Found: {}",
                    store.name(),
                    r.detail
                );
            }
            KnownStore::BackblazeB2 | KnownStore::AlibabaOss
                if r.verdict == Verdict::Fail
                    && (r.status == Some(501) || r.code == "NotImplemented") =>
            {
                r.detail = format!(
                    "{} ({} answers so: a known store without conditional writes)",
                    r.detail,
                    store.name()
                );
            }
            _ => {}
        }
    }
}
