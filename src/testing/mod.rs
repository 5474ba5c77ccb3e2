//! Test support: one in-memory S3 model faithful where locks care, a
//! one-client `Io` over it, and a linearizability checker for the fenced
//! register.

pub mod linearizability;
pub mod model_io;
pub mod s3_model;
pub mod sim;
