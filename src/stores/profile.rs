//! What a store is and does, as the rest of the core asks it: each store's
//! folder fills one `Profile`, and generic code reads its capabilities
//! rather than which store it is.

use crate::prelude::*;

/// What a store is and does, as the protocol needs to know it: one
/// constant per store (its `PROFILE`), so the rest of the core asks what a
/// store does rather than which store it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The store's name in the contract (`s3`, ...).
    pub name: &'static str,
    /// Lists keys by `start-after`: the epoch-objects strategy.
    pub lists_keys: bool,
    /// Records when it wrote (`Last-Modified`): the `server` expiry clock,
    /// the default where there is one.
    pub records_write_times: bool,
    /// Holds the objects a fenced write writes.
    pub holds_objects: bool,
    /// A write's condition checks the lease's token itself (no read first).
    pub condition_checks_token: bool,
    /// The shortest time between two writes of one object it takes, in ms
    /// (0: none).
    pub min_write_interval_ms: u64,
    /// Keeps a token floor beside each lock object (`strategy::floor`): an
    /// object store, whose lock object's deletion would restart its tokens;
    /// a store whose item keeps its counter itself needs none.
    pub keeps_token_floor: bool,
    /// Its replies are S3's own, judged by S3's shapes (`s3::not_the_store`);
    /// a store whose replies are translated into S3's judges them in its
    /// translation.
    pub replies_as_s3: bool,
    /// What a reply that is not the store's says the endpoint is not, and
    /// where the right one is.
    pub wrong_endpoint_hint: &'static str,
    /// Lists the objects fenced writes wrote (`audit verify --fenced`).
    pub lists_fenced_objects: bool,
    /// Lists every version of an object, not only the current one.
    pub lists_versions: bool,
    /// Where it checks a declared digest of a write's body (the
    /// preflight's payload-hash probe), `None` for a store that takes no
    /// digest of its own.
    pub payload_hash: Option<&'static str>,
    /// How its rules that delete objects are read (the preflight's note).
    pub lifecycle: LifecycleRules,
}

/// One lifecycle rule, as far as it concerns s3-lease's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleRule {
    pub name: String,
    /// What it does to an object it matches, for the note.
    pub action: String,
    /// Object names it matches start with one of these (`[""]`: all).
    pub prefixes: Vec<String>,
    /// And end with one of these (empty: any).
    pub suffixes: Vec<String>,
}

/// How a store's lifecycle rules (rules that delete objects by age or
/// name) are read, for the preflight's notes on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LifecycleRules {
    /// S3's GetBucketLifecycleConfiguration, as XML.
    Xml,
    /// The bucket's metadata, its `lifecycle` field as JSON.
    BucketJson,
    /// Kept where the client's credentials cannot read them: the note
    /// says what to check by hand (the key prefix is appended).
    Unreadable(&'static str),
    /// None to read: the store deletes nothing by rule, or its checks
    /// of its own find what would (a table's TTL).
    Nothing,
}
