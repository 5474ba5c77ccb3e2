//! The Rust snippets of `README.md` and `docs/`, compiled (host-test's
//! build script wraps each marked block in a function; see build.rs). The
//! snippets call a few functions the prose leaves to the reader (`work`,
//! `run_report`, `backup`): `placeholders` stands in for them.

mod placeholders {
    pub use s3_lease_host::{ElectorConfig, Role};
    pub use std::time::Duration;

    /// The work a lease guards.
    pub async fn work(_token: u64) {}
    pub async fn backup(_token: u64) -> anyhow::Result<()> {
        Ok(())
    }
    pub fn run_report(_token: u64) -> anyhow::Result<()> {
        Ok(())
    }
}

include!(concat!(env!("OUT_DIR"), "/doc_snippets.rs"));

/// The build found the snippets it should have (a marker the build script
/// stopped recognising would otherwise compile nothing, silently).
#[test]
fn the_documents_snippets_compile() {
    let compiled = include_str!(concat!(env!("OUT_DIR"), "/doc_snippets.rs"))
        .matches("fn snippet(")
        .count();
    assert!(compiled >= 7, "only {compiled} snippets compiled");
}
