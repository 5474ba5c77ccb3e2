//! The preflight reads the bucket's lifecycle rules and names, in a note,
//! each that deletes objects under the client's key prefix (lock objects,
//! the seal key, the keys' token floors), against the real servers where
//! they keep a lifecycle configuration: SeaweedFS's
//! PutBucketLifecycleConfiguration, fake-gcs-server's bucket `lifecycle`.
//! Each rule is put on a bucket of the test's own (a bucket has one
//! lifecycle configuration: on the suite's shared bucket, every other
//! test's preflight would read it), scoped to the test's prefix, and
//! removed afterwards.

use super::*;
use host_test::bindings::PreflightReport;
use host_test::fake_gcs;
use s3_lease::stores::s3::{Method, S3Request};

fn preflight(config: &host_test::bindings::Config) -> PreflightReport {
    let mut i = opened_with(config);
    i.preflight()
        .expect("no trap")
        .unwrap_or_else(|e| panic!("preflight failed: {e:?}"))
}

fn lifecycle_notes(report: &PreflightReport) -> Vec<&String> {
    report
        .notes
        .iter()
        .filter(|n| n.starts_with("lifecycle:"))
        .collect()
}

fn lifecycle_request(method: Method, body: &str) -> S3Request {
    let mut req = S3Request::new(method, "", 64 * 1024);
    req.query = vec![("lifecycle".into(), String::new())];
    if body.is_empty() {
        req
    } else {
        req.body("application/xml", body.as_bytes().to_vec())
    }
}

#[test]
fn seaweedfs_a_rule_that_expires_the_key_prefix_is_named_in_the_preflight() {
    let prefix = fresh_prefix("lifecycle-rule");
    let mut own = endpoint().clone();
    own.bucket = format!("lifecycle-{}", std::process::id());
    let admin = own.admin().unwrap();
    admin.create_bucket().unwrap();
    let before = admin.send(lifecycle_request(Method::Get, "")).unwrap();
    println!(
        "GET ?lifecycle before: {} {}",
        before.status,
        String::from_utf8_lossy(&before.body)
    );
    // Without a rule of ours, no note names this prefix.
    let clean = preflight(&own.config(&prefix));
    assert!(
        lifecycle_notes(&clean)
            .iter()
            .all(|n| !n.contains(&format!("{prefix:?}")) || n.contains("could not read")),
        "{:?}",
        clean.notes
    );
    let rule = format!(
        "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Rule>\
         <ID>expire-locks</ID><Filter><Prefix>{prefix}</Prefix></Filter><Status>Enabled</Status>\
         <Expiration><Days>30</Days></Expiration></Rule></LifecycleConfiguration>"
    );
    let put = admin.send(lifecycle_request(Method::Put, &rule)).unwrap();
    println!(
        "PUT ?lifecycle: {} {}",
        put.status,
        String::from_utf8_lossy(&put.body)
    );
    if !(200..300).contains(&put.status) {
        // This server keeps no lifecycle rules: the warning is shown on
        // the models (`preflight::lifecycle`).
        assert!(lifecycle_notes(&clean).len() <= 1, "{:?}", clean.notes);
        return;
    }
    let report = preflight(&own.config(&prefix));
    let _ = admin.send(lifecycle_request(Method::Delete, ""));
    let notes = lifecycle_notes(&report);
    assert!(
        notes.iter().any(|n| n.contains("\"expire-locks\"")
            && n.contains("idle lock objects, the seal key, the keys' token floors")),
        "{:?}",
        report.notes
    );
}

#[test]
fn fake_gcs_a_delete_rule_over_the_key_prefix_is_named_in_the_preflight() {
    let gcs = fake_gcs::endpoint();
    let bucket = format!("lifecycle-{}", fresh_prefix("b").replace(['/', '.'], "-"));
    let bucket = bucket.trim_end_matches('-').to_lowercase();
    gcs.create_bucket(&bucket).unwrap();
    let rule = serde_json::json!({ "lifecycle": { "rule": [
        { "action": { "type": "Delete" }, "condition": { "age": 30, "matchesPrefix": ["locks/"] } }
    ]}});
    let patched = fake_gcs::send(
        &gcs.bare_url,
        "PATCH",
        &format!("/storage/v1/b/{bucket}"),
        &[("content-type", "application/json")],
        rule.to_string().as_bytes(),
    )
    .unwrap();
    let read = fake_gcs::send(
        &gcs.bare_url,
        "GET",
        &format!("/storage/v1/b/{bucket}?fields=lifecycle"),
        &[],
        b"",
    )
    .unwrap();
    println!(
        "PATCH lifecycle: {} {}; read back: {} {}",
        patched.status,
        patched.text(),
        read.status,
        read.text()
    );
    let mut config = gcs.config("locks/");
    config.gcs_mut().bucket = bucket;
    let report = preflight(&config);
    let notes = lifecycle_notes(&report);
    if read.text().contains("matchesPrefix") {
        assert!(
            notes
                .iter()
                .any(|n| n.contains("\"rule 1\" (delete at age 30 days, prefix locks/)")),
            "{:?}",
            report.notes
        );
    } else {
        // The fake keeps no lifecycle: nothing to name, and nothing unreadable.
        assert!(notes.is_empty(), "{:?}", report.notes);
    }
}
