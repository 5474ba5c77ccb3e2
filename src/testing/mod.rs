//! Test support: one in-memory S3 model faithful where locks care, a
//! one-client `Io` over it, and a linearizability checker for the fenced
//! register.

pub mod linearizability;
pub mod model_io;
pub mod s3_model;
pub mod sim;

/// A write id no other call in this process gets: tests that reuse one id
/// across operations would make an operation "recognise" another's write.
pub fn write_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("test-{:012}", NEXT.fetch_add(1, Ordering::Relaxed))
}
