//! examples/node, as docs/embedding.md runs it (`npm start`: jco
//! transpiles the s3-lease component, Node runs lock.mjs), against the
//! suite's S3 server.

use super::{endpoint, serial};
use compose_test::tools;
use host_test::instance::component_path;
use std::process::Command;

#[test]
fn the_node_example_runs() {
    let _serial = serial();
    tools::jco(); // installed, or a clear message
    let e = endpoint();
    let mut command = Command::new("npm");
    command
        .arg("start")
        .arg("--silent")
        .current_dir(tools::node_example())
        .env("S3LEASE_COMPONENT", component_path())
        .env("AWS_ENDPOINT_URL", &e.url)
        .env("AWS_REGION", &e.region)
        .env("AWS_ACCESS_KEY_ID", &e.access_key_id)
        .env("AWS_SECRET_ACCESS_KEY", &e.secret_access_key)
        .env("S3LEASE_BUCKET", &e.bucket);
    match &e.session_token {
        Some(token) => command.env("AWS_SESSION_TOKEN", token),
        None => command.env_remove("AWS_SESSION_TOKEN"),
    };
    let output = command.output().expect("run npm (Node.js and npm on PATH)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "npm start failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    for expected in [
        "a bad config fails with: invalid-config (bucket)",
        "a bad elector config fails with: invalid-argument",
        "leading with fencing token 1 ",
        "renewed: token 1,",
        "now carries token 1; read back {\"leader\":",
        "released: live=false, token 1 kept for the next holder",
        "renewing a released lease fails with: lost",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    println!("node example:\n{stdout}");
}
