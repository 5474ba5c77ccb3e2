//! The AWS credential chain in the command line: each source alone,
//! none at all, and a `run` that outlives three rotations of instance
//! credentials. Against fakes of AWS's endpoints on loopback
//! (`host_test::aws_fakes`) and a gate that checks temporary credentials
//! as S3 does before SeaweedFS sees the request.

use crate::support::*;
use host_test::aws_fakes::gate::TokenGate;
use host_test::aws_fakes::{CredentialEndpoints, CONTAINER_TOKEN, WEB_IDENTITY_TOKEN};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

struct Fakes {
    gate: Arc<TokenGate>,
    aws: CredentialEndpoints,
}

/// One gate and one set of fakes for the tests that only need credentials
/// to work (long-lived: no rotation while a test runs).
fn fakes() -> &'static Fakes {
    static FAKES: OnceLock<Fakes> = OnceLock::new();
    FAKES.get_or_init(|| start_fakes(Duration::from_secs(3600)))
}

fn start_fakes(lifetime: Duration) -> Fakes {
    let gate = Arc::new(TokenGate::start(host_test::server::shared()).unwrap());
    let aws = CredentialEndpoints::start(gate.clone(), lifetime).unwrap();
    Fakes { gate, aws }
}

/// `s3-lease ARGS` with nothing from our environment but PATH, and `vars`:
/// HOME is an empty directory (no ~/.aws), instance metadata is off unless
/// `vars` sets its endpoint.
fn bare(scene: &Scene, endpoint: &str, vars: &[(&str, String)], args: &[&str]) -> Output {
    bare_cmd(scene, endpoint, vars, args).output().unwrap()
}

fn bare_cmd(scene: &Scene, endpoint: &str, vars: &[(&str, String)], args: &[&str]) -> Command {
    let home = scene.path("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new(bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("S3LEASE_BUCKET", &scene.endpoint.bucket)
        .env("S3LEASE_PREFIX", &scene.prefix)
        .env(
            "S3LEASE_CACHE_DIR",
            std::env::temp_dir().join(format!("s3lease-cli-cache-{}", std::process::id())),
        );
    if !vars
        .iter()
        .any(|(k, _)| *k == "AWS_EC2_METADATA_SERVICE_ENDPOINT")
    {
        c.env("AWS_EC2_METADATA_DISABLED", "true");
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    c.args(args);
    c
}

fn assert_no_secrets(out: &Output, secrets: &[String]) {
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    for s in secrets {
        assert!(
            !all.contains(s.as_str()),
            "a secret leaked into the output:\n{all}"
        );
    }
}

fn write(scene: &Scene, name: &str, body: &str) -> String {
    let path = scene.path(name);
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

#[test]
fn each_source_of_the_chain_is_picked_up_when_it_is_the_only_one() {
    let f = fakes();
    let scene = Scene::new("chain-sources");
    let url = &f.aws.url;
    let static_keys = &scene.endpoint;
    let issued = f.gate.issue(Duration::from_secs(3600));
    let process = write(
        &scene,
        "config-process",
        &format!("[profile p]\ncredential_process = curl -sf {url}/process\n"),
    );
    let static_profile = write(
        &scene,
        "credentials-static",
        &format!(
            "[p]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            static_keys.access_key_id, static_keys.secret_access_key
        ),
    );
    let role_profile = write(
        &scene,
        "config-role",
        "[profile base]\naws_access_key_id = AKIASOURCE\naws_secret_access_key = source-secret\n\
         [profile p]\nrole_arn = arn:aws:iam::123456789012:role/r\nsource_profile = base\n",
    );
    let token_file = write(&scene, "web-identity-token", WEB_IDENTITY_TOKEN);
    let container_token_file = write(&scene, "container-token", CONTAINER_TOKEN);
    let gate = f.gate.url.clone();
    let s = |v: &str| v.to_string();
    // (name, endpoint, variables, which fake must have answered)
    type Case<'a> = (&'a str, String, Vec<(&'a str, String)>, usize);
    let cases: Vec<Case> = vec![
        (
            "environment",
            gate.clone(),
            vec![
                ("AWS_ACCESS_KEY_ID", issued.access_key_id.clone()),
                ("AWS_SECRET_ACCESS_KEY", issued.secret_access_key.clone()),
                ("AWS_SESSION_TOKEN", issued.session_token.clone()),
            ],
            9,
        ),
        (
            "profile with static keys",
            static_keys.url.clone(),
            vec![
                ("AWS_PROFILE", s("p")),
                ("AWS_SHARED_CREDENTIALS_FILE", static_profile.clone()),
                ("AWS_CONFIG_FILE", scene.path("none").display().to_string()),
            ],
            9,
        ),
        (
            "profile with credential_process",
            gate.clone(),
            vec![
                ("AWS_PROFILE", s("p")),
                ("AWS_CONFIG_FILE", process.clone()),
            ],
            3,
        ),
        (
            "profile with role_arn and source_profile",
            gate.clone(),
            vec![
                ("AWS_PROFILE", s("p")),
                ("AWS_CONFIG_FILE", role_profile.clone()),
                ("AWS_ENDPOINT_URL_STS", url.clone()),
            ],
            2,
        ),
        (
            "web identity",
            gate.clone(),
            vec![
                ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file.clone()),
                ("AWS_ROLE_ARN", s("arn:aws:iam::123456789012:role/r")),
                ("AWS_ROLE_SESSION_NAME", s("s3-lease-test")),
                ("AWS_ENDPOINT_URL_STS", url.clone()),
            ],
            2,
        ),
        (
            "container credentials with a token",
            gate.clone(),
            vec![
                (
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    format!("{url}/container/credentials"),
                ),
                ("AWS_CONTAINER_AUTHORIZATION_TOKEN", s(CONTAINER_TOKEN)),
            ],
            1,
        ),
        (
            "container credentials with a token file (EKS Pod Identity)",
            gate.clone(),
            vec![
                (
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    format!("{url}/container/credentials"),
                ),
                (
                    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                    container_token_file.clone(),
                ),
            ],
            1,
        ),
        (
            "instance metadata (IMDSv2)",
            gate.clone(),
            vec![("AWS_EC2_METADATA_SERVICE_ENDPOINT", url.clone())],
            0,
        ),
    ];
    for (i, (name, endpoint, vars, fake)) in cases.into_iter().enumerate() {
        let before = f.aws.served();
        let key = format!("k{i}");
        let out = bare(&scene, &endpoint, &vars, &["acquire", &key, "--ttl", "30s"]);
        assert_eq!(code(&out), 0, "{name}: {}", text(&out.stderr));
        let lease: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(lease["token"].as_u64().unwrap() > 0, "{name}: {lease}");
        let after = f.aws.served();
        let counts = |s: (usize, usize, usize, usize)| [s.0, s.1, s.2, s.3];
        if fake < 4 {
            assert!(
                counts(after)[fake] > counts(before)[fake],
                "{name}: the fake did not answer ({before:?} -> {after:?})"
            );
        }
        let mut secrets = f.gate.secrets();
        secrets.push(static_keys.secret_access_key.clone());
        secrets.push(s(CONTAINER_TOKEN));
        secrets.push(s(WEB_IDENTITY_TOKEN));
        secrets.push(s("source-secret"));
        secrets.extend(f.aws.imds_tokens());
        assert_no_secrets(&out, &secrets);
    }
    assert_eq!(f.gate.refusals(), Vec::<String>::new());
}

#[test]
fn no_credentials_anywhere_is_exit_78_saying_where_it_looked() {
    let scene = Scene::new("chain-none");
    // Instance metadata on a port nobody listens on: looked at, fast.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let started = Instant::now();
    let out = bare(
        &scene,
        &scene.endpoint.url,
        &[("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead)],
        &["acquire", "k"],
    );
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 78, "{stderr}");
    for place in [
        "AWS_ACCESS_KEY_ID",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "instance metadata",
    ] {
        assert!(
            stderr.contains(place),
            "does not say it looked at {place}:\n{stderr}"
        );
    }
    eprintln!(
        "no credentials: exit 78 after {:?}:\n{stderr}",
        started.elapsed()
    );
}

#[test]
fn a_failing_credential_process_says_so_without_its_output() {
    let scene = Scene::new("chain-bad-process");
    let config = write(
        &scene,
        "config",
        "[profile p]\ncredential_process = sh -c 'echo {\"Version\":1,\"AccessKeyId\":\"AKIAX\",\"SecretAccessKey\":\"leaky-secret-value\"'\n",
    );
    let out = bare(
        &scene,
        &scene.endpoint.url,
        &[("AWS_PROFILE", "p".into()), ("AWS_CONFIG_FILE", config)],
        &["acquire", "k"],
    );
    assert_eq!(code(&out), 78, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Profile"),
        "{}",
        text(&out.stderr)
    );
    assert_no_secrets(&out, &["leaky-secret-value".to_string()]);
}

/// Instance credentials that live 6 s and rotate at half-life; each
/// expires (the gate then answers `ExpiredToken`) after it was replaced.
/// A `run` of 16 s under a 4 s lease must see at least three rotations,
/// keep its token, and never have a request refused.
#[test]
fn run_holds_one_lease_across_three_rotations_of_instance_credentials() {
    let f = start_fakes(Duration::from_secs(6));
    let scene = Scene::new("chain-rotation");
    let vars = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", f.aws.url.clone())];
    let started = Instant::now();
    let child = bare_cmd(
        &scene,
        &f.gate.url,
        &vars,
        &[
            "run",
            "job",
            "--ttl",
            "4s",
            "--",
            "sh",
            "-c",
            "sleep 16; echo done",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Watch the lock from outside (static keys, straight to SeaweedFS):
    // one holder, one token, the whole time.
    let mut tokens = Vec::new();
    while started.elapsed() < Duration::from_secs(15) {
        let state = scene.status("job");
        if let Some(token) = state["token"].as_u64() {
            tokens.push(token);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert!(text(&out.stdout).contains("done"));
    assert!(tokens.len() >= 20, "the lock was not seen held: {tokens:?}");
    assert!(
        tokens.windows(2).all(|w| w[0] == w[1]),
        "the token changed: {tokens:?}"
    );
    // No request was refused: each key was replaced before it expired.
    assert_eq!(
        f.gate.refusals(),
        Vec::<String>::new(),
        "a request was refused"
    );
    let keys = f.gate.keys_used();
    assert!(keys.len() >= 4, "fewer than three rotations: {keys:?}");
    assert!(
        stderr.contains("credentials from Ec2InstanceMetadata, temporary"),
        "{stderr}"
    );
    let refreshed = stderr
        .lines()
        .find_map(|l| l.strip_prefix("s3-lease: the credentials were refreshed "))
        .and_then(|l| l.split(' ').next()?.parse::<u32>().ok());
    assert!(refreshed.is_some_and(|n| n >= 3), "{stderr}");
    eprintln!("transcript (instance metadata):\n{stderr}");
    let mut secrets = f.gate.secrets();
    secrets.extend(f.aws.imds_tokens());
    assert_no_secrets(&out, &secrets);
}

#[test]
fn run_on_a_profile_says_where_its_credentials_came_from() {
    let f = fakes();
    let scene = Scene::new("chain-profile-run");
    let config = write(
        &scene,
        "config",
        &format!(
            "[profile deploy]\nregion = eu-west-1\ncredential_process = curl -sf {}/process\n",
            f.aws.url
        ),
    );
    let out = bare(
        &scene,
        &f.gate.url,
        &[
            ("AWS_PROFILE", "deploy".into()),
            ("AWS_CONFIG_FILE", config),
        ],
        &[
            "run",
            "nightly",
            "--ttl",
            "10s",
            "--",
            "echo",
            "report written",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(code(&out), 0, "{stderr}");
    assert!(
        stderr.contains("credentials from Profile, temporary"),
        "{stderr}"
    );
    eprintln!("transcript (profile):\n{}{stderr}", text(&out.stdout));
    assert_no_secrets(&out, &f.gate.secrets());
}

/// `acquire` in one process, `renew` and `release` in later ones (a cron
/// job), each on the instance credentials of its moment: the lease does
/// not depend on them.
#[test]
fn a_lease_stored_by_one_run_renews_in_a_later_one_after_a_rotation() {
    let f = start_fakes(Duration::from_secs(4));
    let scene = Scene::new("chain-cron");
    let vars = [("AWS_EC2_METADATA_SERVICE_ENDPOINT", f.aws.url.clone())];
    let out = bare(
        &scene,
        &f.gate.url,
        &vars,
        &["acquire", "k", "--ttl", "60s"],
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let lease = text(&out.stdout);
    // Past half the lifetime: the fake hands out new keys.
    std::thread::sleep(Duration::from_millis(2_500));
    let mut renew = bare_cmd(&scene, &f.gate.url, &vars, &["renew"]);
    let out = output_with_input(&mut renew, &lease);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let renewed = text(&out.stdout);
    let mut release = bare_cmd(&scene, &f.gate.url, &vars, &["release"]);
    let out = output_with_input(&mut release, &renewed);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let keys = f.gate.keys_used();
    assert!(keys.len() >= 2, "no rotation between the runs: {keys:?}");
    assert_eq!(f.gate.refusals(), Vec::<String>::new());
}
