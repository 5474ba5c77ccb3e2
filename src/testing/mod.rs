//! Test support: one in-memory S3 model faithful where locks care, and a
//! linearizability checker for the fenced register.

pub mod linearizability;
pub mod s3_model;
