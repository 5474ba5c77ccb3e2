//! The bounds every layer checks against: how long a lease may last, how
//! large what a caller stores may be, how often an operation re-reads. A
//! leaf: it depends on nothing.

/// How often one operation re-reads after a 409 or a vanished object.
pub const MAX_REREADS: u32 = 3;
pub const MIN_TTL_MS: u64 = 1;
pub const MAX_TTL_MS: u64 = 7 * 24 * 3600 * 1000;
pub const MAX_METADATA_BYTES: usize = 4096;
pub const MAX_HOLDER_ID_BYTES: usize = 256;
/// S3's limit on the full object key.
pub const MAX_OBJECT_KEY_BYTES: usize = 1024;
