//! The `s3-lease` binary, run as a user would, against a real S3 server.

mod audit;
mod azure;
mod broken_stderr;
mod credentials;
mod dynamodb;
mod exit_codes;
mod failover;
mod faults;
mod formats;
mod gcs;
mod install;
mod loss_causes;
mod observability;
mod outputs;
mod precompiled;
mod preflight;
mod process_tree;
mod request_log;
mod semaphores;
mod serve_limits;
mod stops;
mod support;
mod turns;
