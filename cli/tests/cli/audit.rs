//! `s3-lease audit verify`'s exit codes with their evidence: 82 when the
//! store shows two holders of one token (a lock object rewritten behind
//! the log's back), 83 when a record is gone and nothing explains its
//! token; `--fenced PREFIX`: objects written under the lock pass, a
//! forged one whose token no grant recorded is reported (83), and on a
//! versioned bucket a version forged with an earlier grant's token after
//! a later one's is reported (82). (Exit 0 after turn-taking: `turns`, on
//! every store.)

use crate::support::{code, output_with_input, text, Scene};
use host_test::server::shared;
use s3_lease::fenced::{META_LOCK, META_TOKEN};
use s3_lease::stores::s3::{Method, S3Request};
use serde_json::Value;

fn record(scene: &Scene, key: &str, token: u64) -> String {
    format!(
        "{}.s3-lease-audit/{key}/{token:020}.grant.json",
        scene.prefix
    )
}

#[test]
fn verify_exits_82_for_a_token_held_by_another_than_its_record_names() {
    let scene = Scene::new("audit-82");
    let out = scene
        .cmd(&["--audit", "acquire", "k", "--holder", "first"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // Token 1's lock object, rewritten for another holder: the store let a
    // second grant of token 1 land (as a racing store does).
    let admin = scene.endpoint.admin().unwrap();
    let object = format!("{}k", scene.prefix);
    let (body, _) = admin.get(&object).unwrap().expect("the lock object");
    let mut lock: Value = serde_json::from_slice(&body).unwrap();
    lock["holder"] = "second".into();
    admin.put(&object, lock.to_string().as_bytes()).unwrap();

    let out = scene.cmd(&["audit", "verify", "k"]).output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(code(&out), 82, "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("token-repeated at token 1"), "{stdout}");
    assert!(stdout.contains(&record(&scene, "k", 1)), "{stdout}");
    let out = scene
        .cmd(&["--json", "audit", "verify", "k"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 82);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["overlapped"], true, "{report}");
    assert_eq!(report["findings"][0]["kind"], "token-repeated", "{report}");
}

#[test]
fn verify_exits_83_for_a_token_no_record_explains() {
    let scene = Scene::new("audit-83");
    let out = scene.cmd(&["--audit", "acquire", "k"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let released = output_with_input(&mut scene.cmd(&["--audit", "release"]), &text(&out.stdout));
    assert_eq!(code(&released), 0, "{}", text(&released.stderr));
    let out = scene.cmd(&["--audit", "acquire", "k"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = scene.cmd(&["audit", "verify", "k"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));
    // Both grants' records gone: token 2 is held now, nothing names 1.
    let admin = scene.endpoint.admin().unwrap();
    for token in [1, 2] {
        admin.delete(&record(&scene, "k", token)).unwrap();
    }
    let out = scene.cmd(&["audit", "verify", "k"]).output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(code(&out), 83, "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("unexplained-gap at token 1"), "{stdout}");
    assert!(
        text(&out.stderr).contains("does not prove"),
        "{}",
        text(&out.stderr)
    );
}

/// Two holders in turn each write a fenced object under `data/`: verify
/// with `--fenced` proves them. Then an object fenced by the same lock
/// with a token no grant recorded (written around the lock, its metadata
/// forged): 83, naming the object and its token.
#[test]
fn verify_fenced_passes_objects_written_under_the_lock_and_exits_83_for_a_forged_token() {
    let scene = Scene::new("audit-fenced");
    let data = format!("{}data/", scene.prefix);
    for (holder, object) in [("first", "a"), ("second", "b")] {
        let out = scene
            .cmd(&["--audit", "acquire", "k", "--holder", holder])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
        let lease = text(&out.stdout);
        let file = scene.dir.join(format!("{holder}.lease"));
        std::fs::write(&file, &lease).unwrap();
        let put = output_with_input(
            &mut scene.cmd(&[
                "fenced",
                "put",
                &format!("{data}{object}"),
                "--lease",
                file.to_str().unwrap(),
            ]),
            "written under the lock",
        );
        assert_eq!(code(&put), 0, "{}", text(&put.stderr));
        let released = output_with_input(&mut scene.cmd(&["--audit", "release"]), &lease);
        assert_eq!(code(&released), 0, "{}", text(&released.stderr));
    }
    let out = scene
        .cmd(&["audit", "verify", "k", "--fenced", &data])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));

    // Fenced by the key's lock (its identity as the real write stored it)
    // with token 7: the key granted 1 and 2 only.
    let admin = scene.endpoint.admin().unwrap();
    let head = admin
        .send(S3Request::new(
            Method::Head,
            &format!("{data}a"),
            usize::MAX,
        ))
        .unwrap();
    let lock = head.header(META_LOCK).expect("the fenced object's lock");
    assert_eq!(head.header(META_TOKEN), Some("1"));
    let forged = format!("{data}forged");
    let put = admin
        .send(
            S3Request::new(Method::Put, &forged, usize::MAX)
                .header(META_LOCK, lock)
                .header(META_TOKEN, "7")
                .body("text/plain", b"written around the lock".to_vec()),
        )
        .unwrap();
    assert_eq!(put.status, 200, "{:?}", put.s3_error());

    let out = scene
        .cmd(&["audit", "verify", "k", "--fenced", &data])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(code(&out), 83, "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("fenced-unknown-token at token 7"),
        "{stdout}"
    );
    assert!(stdout.contains(&forged), "{stdout}");
    let out = scene
        .cmd(&["--json", "audit", "verify", "k", "--fenced", &data])
        .output()
        .unwrap();
    assert_eq!(code(&out), 83);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["overlapped"], false, "{report}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report}");
    assert_eq!(findings[0]["kind"], "fenced-unknown-token", "{report}");
    assert_eq!(findings[0]["token"], 7, "{report}");
    assert_eq!(findings[0]["evidence"][0], forged.as_str(), "{report}");
}

/// `holder` acquires `k`, writes `object` fenced, releases.
fn fenced_turn(scene: &Scene, holder: &str, object: &str) {
    let out = scene
        .cmd(&["--audit", "acquire", "k", "--holder", holder])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease = text(&out.stdout);
    let file = scene.dir.join(format!("{holder}.lease"));
    std::fs::write(&file, &lease).unwrap();
    let put = output_with_input(
        &mut scene.cmd(&["fenced", "put", object, "--lease", file.to_str().unwrap()]),
        holder,
    );
    assert_eq!(code(&put), 0, "{}", text(&put.stderr));
    let released = output_with_input(&mut scene.cmd(&["--audit", "release"]), &lease);
    assert_eq!(code(&released), 0, "{}", text(&released.stderr));
}

/// A versioned bucket of the test's own: two holders in turn write one
/// fenced object (its versions carry tokens 1, then 2), which verify
/// proves. Then a version written around the fence with the first grant's
/// token: its token fell below the version before it (82), and the
/// finding names both versions and tokens.
#[test]
fn verify_fenced_on_a_versioned_bucket_exits_82_for_a_version_whose_token_fell() {
    let mut endpoint = shared().clone();
    endpoint.bucket = format!(
        "versioned-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    );
    let admin = endpoint.admin().unwrap();
    admin.create_bucket().unwrap();
    let mut versioning = S3Request::new(Method::Put, "", usize::MAX).body(
        "application/xml",
        b"<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
          <Status>Enabled</Status></VersioningConfiguration>"
            .to_vec(),
    );
    versioning.query = vec![("versioning".into(), String::new())];
    let r = admin.send(versioning).unwrap();
    assert_eq!(r.status, 200, "{:?}", r.s3_error());

    let scene = Scene::on(endpoint, "audit-versions");
    let object = format!("{}data/a", scene.prefix);
    let data = format!("{}data/", scene.prefix);
    fenced_turn(&scene, "first", &object);
    fenced_turn(&scene, "second", &object);
    let out = scene
        .cmd(&["audit", "verify", "k", "--fenced", &data])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}{}", text(&out.stdout), text(&out.stderr));

    let head = admin
        .send(S3Request::new(Method::Head, &object, usize::MAX))
        .unwrap();
    assert_eq!(head.header(META_TOKEN), Some("2"));
    let newer = head
        .header("x-amz-version-id")
        .expect("a version id")
        .to_string();
    let lock = head.header(META_LOCK).expect("the fenced object's lock");
    let put = admin
        .send(
            S3Request::new(Method::Put, &object, usize::MAX)
                .header(META_LOCK, lock)
                .header(META_TOKEN, "1")
                .body("text/plain", b"written around the fence".to_vec()),
        )
        .unwrap();
    assert_eq!(put.status, 200, "{:?}", put.s3_error());
    let forged = put
        .header("x-amz-version-id")
        .expect("a version id")
        .to_string();
    assert_ne!(forged, newer);

    let out = scene
        .cmd(&["--json", "audit", "verify", "k", "--fenced", &data])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(code(&out), 82, "{report}{}", text(&out.stderr));
    assert_eq!(report["overlapped"], true, "{report}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report}");
    assert_eq!(findings[0]["kind"], "fenced-token-fell", "{report}");
    assert_eq!(findings[0]["token"], 1, "{report}");
    assert_eq!(
        findings[0]["evidence"],
        serde_json::json!([
            format!("{object}?versionId={newer}"),
            format!("{object}?versionId={forged}")
        ]),
        "{report}"
    );
    let detail = findings[0]["detail"].as_str().unwrap();
    assert!(detail.contains("token 1, below token 2"), "{detail}");
}
