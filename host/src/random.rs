//! Randomness the host needs: jitter for backoffs, and holder ids.

/// std's per-process random keys: no dependency, and plenty for jitter
/// and for ids that need only be unlikely to repeat.
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    hasher.finish()
}
