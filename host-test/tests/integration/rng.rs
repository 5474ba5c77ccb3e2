//! Seeds for randomized tests, so a failing run can be replayed: every test
//! prints its seed, and `S3LEASE_SEED` overrides it. Only the plan is
//! replayable; thread timing is not. The generator is the crate's.

pub use s3_lease::testing::rng::Rng;
use std::time::{SystemTime, UNIX_EPOCH};

/// A generator seeded from `S3LEASE_SEED` (decimal), else the clock; the
/// seed is printed with `test` so the output says how to replay it.
pub fn seeded(test: &str) -> Rng {
    let seed = match std::env::var("S3LEASE_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("S3LEASE_SEED must be a u64, got {s:?}")),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    println!("{test}: seed {seed} (replay with S3LEASE_SEED={seed})");
    Rng::new(seed)
}
