//! `s3-lease --store azure-blob --container C`: processes take turns on a
//! key in an Azure container (Azurite), the account from
//! `AZURE_STORAGE_CONNECTION_STRING` as the Azure SDKs read it; `status`
//! reads it, and `preflight` passes it, race included.

use crate::support::{code, text, Scene};
use crate::turns::turns_on_a_fresh_key;
use host_test::azurite;
use std::process::Command;

/// `s3-lease ARGS` on the test container, no AWS keys.
fn on_azure(scene: &Scene, args: &[&str]) -> Command {
    let azure = azurite::shared();
    let mut c = scene.on_store(
        args,
        &[
            ("S3LEASE_STORE", "azure-blob"),
            ("S3LEASE_CONTAINER", &azure.container),
            (
                "AZURE_STORAGE_CONNECTION_STRING",
                &azure.connection_string(),
            ),
        ],
    );
    c.env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY");
    c
}

#[test]
fn processes_take_turns_on_an_azure_key_without_overlap_and_with_tokens_one_to_n() {
    let scene = Scene::new("azure-turns");
    turns_on_a_fresh_key(&scene, 3, 3, |args| on_azure(&scene, args));
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
