//! `s3-lease audit verify`'s exit codes with their evidence: 82 when the
//! store shows two holders of one token (a lock object rewritten behind
//! the log's back), 83 when a record is gone and nothing explains its
//! token. (Exit 0 after turn-taking: `turns`, on every store.)

use crate::support::{code, output_with_input, text, Scene};
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
