//! A real store that must fail the preflight: s3s-fs 0.14 ignores `If-Match`
//! on DELETE. Installed by `scripts/setup.sh`; skipped (loudly) only when it
//! is absent outside CI.

use super::preflight::{print, result};
use super::*;
use host_test::bindings::{Capability, Error as E, Verdict};
use host_test::s3s_fs::{self, S3sFs};

/// The server, or `None` (after saying so loudly) when the binary is
/// absent and this is not CI.
fn server() -> Option<S3sFs> {
    let bin = s3s_fs::binary();
    if !bin.exists() {
        let why = format!(
            "s3s-fs is not installed at {} (scripts/setup.sh installs it)",
            bin.display()
        );
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{why}; under CI=true it must run");
        }
        eprintln!("\n!!!!!!!! SKIPPED the s3s-fs preflight test: {why} !!!!!!!!\n");
        return None;
    }
    Some(S3sFs::start().unwrap_or_else(|e| panic!("{e:#}")))
}

#[test]
fn s3s_fs_fails_the_preflight_and_the_option_refuses_to_grant_on_it() {
    let Some(server) = server() else { return };
    let prefix = fresh_prefix("s3s-fs");
    let mut i = opened_with(&server.endpoint.config(&prefix));
    let report = i.preflight().expect("no trap").expect("a report");
    print("s3s-fs 0.14.1", &report);
    let delete = result(&report, Capability::IfMatchDelete);
    assert_eq!(
        (delete.verdict, delete.silent),
        (Verdict::Fail, true),
        "{delete:?}"
    );
    assert!(report.safe_strategies.is_empty());
    assert!(!report.config_safe);

    let mut config = server.endpoint.config(&prefix);
    config.preflight = Some(true);
    let mut guarded = opened_with(&config);
    match expect_err(guarded.try_acquire("k", &options(30_000))) {
        E::StoreUnsafe(r) => assert!(r.silent, "{r:?}"),
        other => panic!("expected store-unsafe, got {other:?}"),
    }
}
