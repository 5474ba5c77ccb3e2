//! `s3-lease --store azure-blob --container C`: processes take turns on a
//! key in an Azure container (Azurite), the account from
//! `AZURE_STORAGE_CONNECTION_STRING` as the Azure SDKs read it; `status`
//! reads it, and `preflight` passes it, race included.

use crate::support::{code, text, Scene};
use crate::turns::take_turns;
use host_test::azurite;
use std::process::Command;

/// `s3-lease ARGS` on the test container, no AWS setting that matters.
fn on_azure(scene: &Scene, args: &[&str]) -> Command {
    let azure = azurite::shared();
    let mut c = scene.cmd(args);
    c.env("S3LEASE_STORE", "azure-blob")
        .env("S3LEASE_CONTAINER", &azure.container)
        .env("AZURE_STORAGE_CONNECTION_STRING", azure.connection_string())
        .env_remove("S3LEASE_BUCKET")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY");
    c
}

#[test]
fn processes_take_turns_on_an_azure_key_without_overlap_and_with_tokens_one_to_n() {
    const PROCESSES: usize = 3;
    const RUNS_EACH: usize = 3;
    let scene = Scene::new("azure-turns");
    let by_start = take_turns(&scene, PROCESSES, RUNS_EACH, "0.05", |args| {
        on_azure(&scene, args)
    });
    let mut tokens: Vec<u64> = by_start.iter().map(|run| run.2).collect();
    tokens.sort();
    assert_eq!(
        tokens,
        (1..=(PROCESSES * RUNS_EACH) as u64).collect::<Vec<_>>()
    );
    for pair in by_start.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "token {} started before {} ended",
            pair[1].2,
            pair[0].2
        );
    }
    let out = on_azure(&scene, &["--json", "status", "turns"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        status[0]["token"],
        (PROCESSES * RUNS_EACH) as u64,
        "{status}"
    );
    assert_eq!(status[0]["live"], false, "released: {status}");
}

#[test]
fn azurite_passes_the_preflight_and_a_missing_container_is_a_config_error() {
    let scene = Scene::new("azure-preflight");
    let out = on_azure(&scene, &["preflight"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let table = text(&out.stdout);
    println!("s3-lease --store azure-blob preflight on Azurite:\n{table}");
    assert!(table.contains("this configuration:  safe"), "{table}");
    assert!(table.contains("BlobAlreadyExists"), "{table}");
    let out = on_azure(&scene, &["status", "k"])
        .env_remove("S3LEASE_CONTAINER")
        .output()
        .unwrap();
    assert_ne!(code(&out), 0);
    assert!(
        text(&out.stderr).contains("--container"),
        "{}",
        text(&out.stderr)
    );
}
