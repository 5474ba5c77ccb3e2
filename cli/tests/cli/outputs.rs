//! Exit codes, JSON output and error messages.

use crate::support::{code, text, Scene};
use serde_json::Value;

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(bytes)))
}

#[test]
fn run_passes_the_commands_status_and_environment_through() {
    let scene = Scene::new("status");
    let out = scene.run(&[
        "run",
        "k",
        "--holder",
        "me",
        "--",
        "sh",
        "-c",
        r#"echo "$S3LEASE_KEY $S3LEASE_TOKEN $S3LEASE_HOLDER"; exit 3"#,
    ]);
    assert_eq!(code(&out), 3, "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "k 1 me");
    let out = scene.run(&["run", "k", "--", "no-such-command-s3lease"]);
    assert_eq!(code(&out), 127, "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot start"),
        "{}",
        text(&out.stderr)
    );
    let state = scene.status("k");
    assert_eq!(
        state["live"], false,
        "released after a failed start: {state}"
    );
}

#[test]
fn scripts_acquire_renew_release_and_write_fenced_through_json() {
    let scene = Scene::new("script");
    let out = scene.run(&["acquire", "k", "--ttl", "60s", "--holder", "script-a"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let first = text(&out.stdout);
    assert_eq!(json(first.as_bytes())["token"], 1);

    // Held: one attempt, or a wait that runs out, exit 75 naming the holder.
    let out = scene.run(&["acquire", "k", "--holder", "script-b"]);
    assert_eq!(code(&out), 75);
    assert!(
        text(&out.stderr).contains("script-a"),
        "{}",
        text(&out.stderr)
    );
    let out = scene.run(&[
        "run", "k", "--wait", "1s", "--holder", "script-b", "--", "true",
    ]);
    assert_eq!(code(&out), 75);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("held by script-a"), "{stderr}");
    assert!(
        stderr.contains("waiting for k"),
        "a line while waiting: {stderr}"
    );
    let out = scene.run(&["--quiet", "run", "k", "--wait", "1s", "--", "true"]);
    assert_eq!(code(&out), 75);
    assert!(
        !text(&out.stderr).contains("waiting for"),
        "{}",
        text(&out.stderr)
    );

    let out = scene.run_with_input(&["renew"], &first);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert!(json(&out.stdout)["etag"] != json(first.as_bytes())["etag"]);
    // An older copy of the same grant (its holder and token, unreleased) is
    // still this holder's lease: a script that kept it renews it.
    let out = scene.run_with_input(&["renew"], &first);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let renewed = text(&out.stdout);

    // An altered lease is refused before any request.
    let mut forged = json(renewed.as_bytes());
    forged["token"] = 99.into();
    let out = scene.run_with_input(&["renew"], &forged.to_string());
    assert_eq!(code(&out), 65, "{}", text(&out.stderr));
    let out = scene.run_with_input(&["renew"], "not json");
    assert_eq!(code(&out), 65, "{}", text(&out.stderr));

    std::fs::write(scene.path("lease-1"), &renewed).unwrap();
    let lease_1 = scene.path("lease-1").display().to_string();
    let out = scene.run_with_input(
        &[
            "--json",
            "fenced",
            "put",
            "data",
            "--lease",
            &lease_1,
            "--content-type",
            "text/plain",
        ],
        "one",
    );
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    assert_eq!(json(&out.stdout)["token"], 1);
    let out = scene.run(&["release", "--lease", &lease_1]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    // A released lease is spent: renewing it is a lost lease.
    let out = scene.run(&["renew", "--lease", &lease_1]);
    assert_eq!(
        code(&out),
        79,
        "a spent lease is lost: {}",
        text(&out.stderr)
    );

    // A newer holder writes; the older lease is fenced out (exit 80).
    // `run` hands its command the lease: a nested `s3-lease fenced put` uses it.
    let out = scene.run(&[
        "run",
        "k",
        "--",
        "sh",
        "-c",
        "printf two | s3-lease fenced put data",
    ]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let out = scene.run_with_input(&["fenced", "put", "data", "--lease", &lease_1], "stale");
    assert_eq!(code(&out), 80, "{}", text(&out.stderr));
    let out = scene.run(&["--json", "fenced", "get", "data"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let got = json(&out.stdout);
    assert_eq!(
        (got["body"].as_str(), got["token"].as_u64()),
        (Some("two"), Some(2)),
        "{got}"
    );
    let out = scene.run(&["fenced", "get", "data"]);
    assert_eq!(out.stdout, b"two");
    let out = scene.run(&["fenced", "get", "absent"]);
    assert_eq!(code(&out), 66);

    let out = scene.run(&["--json", "status", "k", "never"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let all = json(&out.stdout);
    assert_eq!(
        (all[0]["token"].as_u64(), all[0]["live"].as_bool()),
        (Some(2), Some(false)),
        "{all}"
    );
    assert_eq!(all[1]["token"], Value::Null);
    let out = scene.run(&["status", "k"]);
    let table = text(&out.stdout);
    assert!(
        table.starts_with("KEY") && table.contains("HOLDER") && table.contains("TOKEN"),
        "{table}"
    );
}

#[test]
fn bad_flags_and_missing_credentials_say_what_is_wrong() {
    let scene = Scene::new("errors");
    let out = scene.run(&["status", "k", "--no-such-flag"]);
    assert_eq!(code(&out), 64);
    assert!(
        text(&out.stderr).contains("--no-such-flag"),
        "{}",
        text(&out.stderr)
    );
    let out = scene.run(&["run", "k"]);
    assert_eq!(
        code(&out),
        64,
        "run without a command: {}",
        text(&out.stderr)
    );
    let out = scene.run(&["run", "k", "--ttl", "soon", "--", "true"]);
    assert_eq!(code(&out), 64);
    assert!(text(&out.stderr).contains("soon"), "{}", text(&out.stderr));

    let out = scene
        .cmd(&["status", "k"])
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .unwrap();
    assert_eq!(code(&out), 78);
    assert!(
        text(&out.stderr).contains("AWS_SECRET_ACCESS_KEY"),
        "{}",
        text(&out.stderr)
    );
    let out = scene
        .cmd(&["--json", "status", "k"])
        .env_remove("S3LEASE_BUCKET")
        .output()
        .unwrap();
    assert_eq!(code(&out), 78);
    let error = json(&out.stderr);
    assert_eq!(error["exit_code"], 78);
    assert!(
        error["error"].as_str().unwrap().contains("bucket"),
        "{error}"
    );

    let out = scene
        .cmd(&["status", "k"])
        .env("AWS_SECRET_ACCESS_KEY", "wrong-secret-s3lease")
        .output()
        .unwrap();
    assert_eq!(code(&out), 77, "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("wrong-secret-s3lease"),
        "secrets never appear"
    );
}

/// Every argument and flag of every command says what it is in `--help`,
/// and `acquire` promises no renewal it does not make.
#[test]
fn help_describes_every_argument_and_flag() {
    let commands: [&[&str]; 12] = [
        &["run"],
        &["elect"],
        &["acquire"],
        &["renew"],
        &["release"],
        &["status"],
        &["fenced", "put"],
        &["fenced", "get"],
        &["fenced", "delete"],
        &["preflight"],
        &["version"],
        &[],
    ];
    for command in commands {
        let mut args = command.to_vec();
        args.push("--help");
        let out = std::process::Command::new(crate::support::bin())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{args:?}");
        let help = text(&out.stdout);
        let bare: Vec<&str> = help
            .lines()
            .filter(|line| {
                let t = line.trim();
                let named = t.starts_with('<') || t.starts_with('[') || t.starts_with('-');
                // A name alone on its line: no description follows it.
                let alone = t
                    .split_whitespace()
                    .all(|w| w.starts_with(['<', '[', '-']) || w.ends_with(','));
                line.starts_with("  ") && named && alone
            })
            .collect();
        assert!(
            bare.is_empty(),
            "{args:?}: no description for {bare:?}\n{help}"
        );
    }
    let out = std::process::Command::new(crate::support::bin())
        .args(["acquire", "--help"])
        .output()
        .unwrap();
    let help = text(&out.stdout);
    assert!(!help.contains("renewed every ttl/6 while held"), "{help}");
}

/// A `--wait` (or `--kill-after`) too long for the clock to count is a
/// wait for ever, not a crash: the run (or acquire) goes ahead (here at
/// once, the key being free).
#[test]
fn a_wait_too_long_for_the_clock_waits_for_ever() {
    let scene = Scene::new("wait-max");
    const MAX: &str = "18446744073709551615";
    for args in [
        &["run", "k", "--wait", MAX, "--", "true"][..],
        &["run", "k", "--limit", "2", "--wait", MAX, "--", "true"],
        &["run", "k", "--kill-after", MAX, "--", "true"],
        &[
            "run",
            "k",
            "--limit",
            "2",
            "--kill-after",
            MAX,
            "--",
            "true",
        ],
        &["acquire", "a", "--wait", MAX],
        &["acquire", "s", "--limit", "2", "--wait", MAX],
    ] {
        let out = scene.run(args);
        assert_eq!(code(&out), 0, "{args:?}: {}", text(&out.stderr));
    }
    // Held for a few seconds: each waits, then goes ahead.
    for key in ["held-run", "held-slot", "held-acquire"] {
        let out = scene.run(&["acquire", key, "--ttl", "1s", "--holder", "first"]);
        assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    }
    std::thread::scope(|s| {
        for args in [
            // A short ttl: a waiter looks every ttl/6.
            &[
                "run", "held-run", "--ttl", "2s", "--wait", MAX, "--", "true",
            ][..],
            &[
                "run",
                "held-slot",
                "--ttl",
                "2s",
                "--limit",
                "1",
                "--wait",
                MAX,
                "--",
                "true",
            ],
            &["acquire", "held-acquire", "--ttl", "2s", "--wait", MAX],
        ] {
            let scene = &scene;
            s.spawn(move || {
                let out = scene.run(args);
                assert_eq!(code(&out), 0, "{args:?}: {}", text(&out.stderr));
            });
        }
    });
}

/// The command's environment is the user's, plus `S3LEASE_*`: `run` sets
/// no AWS variable (the AWS SDKs and CLI read `AWS_ENDPOINT_URL` for every
/// service, so the job's own AWS calls would go to the lock store), and a
/// nested `s3-lease` still finds the store, through `S3LEASE_ENDPOINT`.
#[test]
fn run_leaves_the_commands_aws_environment_as_it_was() {
    let scene = Scene::new("child-env");
    let job = r#"echo "endpoint=${AWS_ENDPOINT_URL-unset} region=${AWS_REGION-unset}"
s3-lease --json status k"#;
    // No AWS endpoint or region in the user's environment: the store given
    // by flags.
    let mut cmd = scene.cmd(&[
        "run",
        "k",
        "--holder",
        "env-a",
        "--endpoint",
        &scene.endpoint.url,
        "--region",
        &scene.endpoint.region,
        "--",
        "sh",
        "-c",
        job,
    ]);
    cmd.env_remove("AWS_ENDPOINT_URL").env_remove("AWS_REGION");
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let (first, nested) = stdout.split_once('\n').unwrap();
    assert_eq!(first, "endpoint=unset region=unset");
    let nested = json(nested.as_bytes());
    assert_eq!(nested[0]["holder_id"], "env-a", "{nested}");

    // The user's own AWS endpoint (for their job's AWS calls) stays theirs,
    // whatever store the locks are on.
    let theirs = "http://127.0.0.1:9/not-the-lock-store";
    let mut cmd = scene.cmd(&[
        "run",
        "k",
        "--holder",
        "env-b",
        "--endpoint",
        &scene.endpoint.url,
        "--",
        "sh",
        "-c",
        job,
    ]);
    cmd.env("AWS_ENDPOINT_URL", theirs)
        .env("AWS_REGION", "eu-west-3");
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let (first, nested) = stdout.split_once('\n').unwrap();
    assert_eq!(first, format!("endpoint={theirs} region=eu-west-3"));
    assert_eq!(json(nested.as_bytes())[0]["holder_id"], "env-b");
}

/// `SigIgn` and `SigBlk` of the command `command` runs (it must end with
/// `sh -c`), as hex masks: those of `grep`, which the shell execs, so that
/// they are the command's own (a shell's mask while it forks is not).
fn signal_masks(mut command: std::process::Command, file: &std::path::Path) -> (u64, u64) {
    let job = format!(
        "exec grep -E '^Sig(Ign|Blk):' /proc/self/status > {}",
        file.display()
    );
    let out = command.arg(job).output().unwrap();
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let status = std::fs::read_to_string(file).unwrap();
    let mask = |name: &str| {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    };
    (mask("SigIgn:"), mask("SigBlk:"))
}

fn bit(signal: i32) -> u64 {
    1 << (signal - 1)
}

/// Rust ignores SIGPIPE for its own process, and `s3-lease` catches SIGINT,
/// SIGTERM, SIGHUP, SIGTSTP and SIGCONT; the command it runs gets the
/// dispositions and signal mask it would have had run directly: SIGPIPE's
/// default (so `cmd | head` ends it as usual), nothing blocked. A signal
/// the user had ignored (`nohup`'s SIGHUP, a script's background job's
/// SIGINT) stays ignored for the command too.
#[test]
fn run_gives_its_command_the_signal_dispositions_it_would_have_had() {
    let scene = Scene::new("signal-masks");
    let mut direct = std::process::Command::new("sh");
    direct.arg("-c");
    let (ignored, blocked) = signal_masks(direct, &scene.path("direct"));
    assert_eq!(ignored & bit(libc::SIGPIPE), 0, "the test's own baseline");
    let runs: [&[&str]; 3] = [
        &["run", "k", "--", "sh", "-c"],
        &["elect", "k", "--", "sh", "-c"],
        &["run", "k", "--limit", "1", "--", "sh", "-c"],
    ];
    for (n, args) in runs.iter().enumerate() {
        let masks = signal_masks(scene.cmd(args), &scene.path(&format!("under-{n}")));
        assert_eq!(masks, (ignored, blocked), "{args:?}: SigIgn, SigBlk");
    }
    // Under nohup, SIGHUP is ignored: for the command too.
    let nohup = crate::support::through("nohup", &[], &scene.cmd(runs[0]));
    let (under_nohup, _) = signal_masks(nohup, &scene.path("nohup"));
    assert_eq!(under_nohup, ignored | bit(libc::SIGHUP), "under nohup");
}

/// A holder id is read from the store, where whoever could take the lock
/// wrote it: `status` prints it escaped for a terminal (no escape sequence
/// reaches it), and exact in JSON. `--holder` refuses control characters.
#[test]
fn holder_ids_from_the_store_reach_terminals_escaped() {
    let scene = Scene::new("escapes");
    let hostile = "evil\u{1b}]0;owned\u{7}\u{1b}[2J\r\nforged\u{202e}";
    // Another client writes the lock object raw.
    let out = scene.run(&["acquire", "k", "--ttl", "60s", "--holder", "plain"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let admin = scene.endpoint.admin().unwrap();
    let object = format!("{}k", scene.prefix);
    let (body, _etag) = admin.get(&object).unwrap().expect("the lock object");
    let mut record: Value = serde_json::from_slice(&body).unwrap();
    record["holder"] = hostile.into();
    admin.put(&object, record.to_string().as_bytes()).unwrap();

    let escaped = "evil\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x0aforged\\u{202e}";
    let out = scene.run(&["status", "k"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains(escaped), "{table:?}");
    assert!(
        !table.contains('\u{1b}') && !table.contains('\r'),
        "{table:?}"
    );
    assert_eq!(table.lines().count(), 2, "{table:?}");
    // Exact in JSON.
    assert_eq!(scene.status("k")["holder_id"], hostile);
    // And in the lines of a waiter, and the error it ends with.
    let out = scene.run(&["run", "k", "--wait", "1s", "--", "true"]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(escaped), "{stderr:?}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    let out = scene.run(&["acquire", "k"]);
    assert_eq!(code(&out), 75, "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains('\u{1b}'),
        "{:?}",
        text(&out.stderr)
    );
    let mut watch = scene.cmd(&["elect", "k", "--watch"]);
    let mut child = watch.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.contains(escaped), "{first:?}");
    // Refused where we take a lock.
    let out = scene.run(&["run", "other", "--holder", hostile, "--", "true"]);
    assert_eq!(code(&out), 64, "{}", text(&out.stderr));
}

/// Runs `command` with stdout a pipe whose read end is closed before the
/// process starts (so its first write fails with EPIPE, as under
/// `| head -c0`); returns the status and stderr.
fn run_with_stdout_closed(mut command: std::process::Command) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = command
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (code(&out), text(&out.stderr))
}

/// Commands that print end quietly when their reader has gone, as Unix
/// tools do: no panic, no error; a report or a status exits as it would
/// have (the reader chose to stop reading). A lease printed to nobody is
/// released, and `acquire` exits 141 (128 + SIGPIPE): nobody got it.
#[test]
fn commands_end_quietly_when_their_stdout_is_closed() {
    let scene = Scene::new("epipe");
    let (status, stderr) = run_with_stdout_closed(scene.cmd(&["--json", "preflight"]));
    assert_eq!((status, stderr.as_str()), (0, ""), "preflight --json");
    for args in [
        &["status", "k"][..],
        &["--json", "status", "k"],
        &["version"],
    ] {
        let (status, stderr) = run_with_stdout_closed(scene.cmd(args));
        assert_eq!((status, stderr.as_str()), (0, ""), "{args:?}");
    }

    let (status, stderr) = run_with_stdout_closed(scene.cmd(&["acquire", "k", "--ttl", "60s"]));
    assert_eq!((status, stderr.as_str()), (141, ""), "acquire");
    let state = scene.status("k");
    assert_eq!(
        state["live"], false,
        "the undelivered lease is released: {state}"
    );
    assert_eq!(state["token"], 1, "{state}");

    // renew: the renewed lease (the only valid copy) is released too.
    let out = scene.run(&["acquire", "k", "--ttl", "60s"]);
    assert_eq!(code(&out), 0, "{}", text(&out.stderr));
    let mut renew = scene.cmd(&["renew"]);
    renew.stdin(std::fs::File::open(write_file(&scene, "lease", &out.stdout)).unwrap());
    let (status, stderr) = run_with_stdout_closed(renew);
    assert_eq!((status, stderr.as_str()), (141, ""), "renew");
    assert_eq!(scene.status("k")["live"], false);

    // run shares its stdout with CMD, which gets SIGPIPE as usual (its
    // default is restored for it): run passes that status on, 128 + 13,
    // and releases the key.
    let (status, stderr) =
        run_with_stdout_closed(scene.cmd(&["--quiet", "run", "k", "--", "sh", "-c", "echo lost"]));
    assert_eq!((status, stderr.as_str()), (141, ""), "run");
    assert_eq!(scene.status("k")["live"], false);

    // elect --watch stops watching once nobody reads the changes.
    let mut watch = scene.cmd(&["elect", "k", "--watch", "--every", "50ms"]);
    watch.stdin(std::process::Stdio::null());
    let (status, stderr) = run_with_stdout_closed(watch);
    assert_eq!((status, stderr.as_str()), (0, ""), "elect --watch");
}

fn write_file(scene: &Scene, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = scene.path(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The `S3LEASE_*` variables in the environment `command` (run or elect)
/// gives its CMD that the caller's environment did not have: the ones
/// s3-lease sets.
fn variables_set_for_the_command(scene: &Scene, command: &str) -> Vec<String> {
    let mut cmd = scene.cmd(&[
        command,
        "k",
        "--bucket",
        &scene.endpoint.bucket,
        "--prefix",
        &scene.prefix,
        "--endpoint",
        &scene.endpoint.url,
        "--region",
        &scene.endpoint.region,
        "--strategy",
        "single-object",
        "--expiry-clock",
        "server",
        "--",
        "env",
    ]);
    cmd.env_remove("S3LEASE_BUCKET")
        .env_remove("S3LEASE_PREFIX");
    let mut inherited: std::collections::BTreeSet<String> = std::env::vars_os()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    for (k, v) in cmd.get_envs() {
        let k = k.to_string_lossy().into_owned();
        if v.is_some() {
            inherited.insert(k);
        } else {
            inherited.remove(&k);
        }
    }
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{command}: {}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name.to_string()))
        .filter(|name| name.starts_with("S3LEASE_") && !inherited.contains(name))
        .collect()
}

/// `run --help` and `elect --help` name every variable they set for the
/// command (read from what the command really gets), the fencing hand-off
/// among them.
#[test]
fn help_names_every_variable_run_and_elect_give_the_command() {
    let scene = Scene::new("help-env");
    for command in ["run", "elect"] {
        let set = variables_set_for_the_command(&scene, command);
        for handed in [
            "S3LEASE_KEY",
            "S3LEASE_TOKEN",
            "S3LEASE_HOLDER",
            "S3LEASE_LEASE",
        ] {
            assert!(set.iter().any(|s| s == handed), "{command}: {set:?}");
        }
        let out = std::process::Command::new(crate::support::bin())
            .args([command, "--help"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{command} --help");
        let help = text(&out.stdout);
        // Its own section: the flags' `[env: …]` name other variables.
        let (_, section) = help
            .split_once("CMD's environment")
            .unwrap_or_else(|| panic!("{command} --help names no environment:\n{help}"));
        let unnamed: Vec<&String> = set
            .iter()
            .filter(|name| !section.contains(name.as_str()))
            .collect();
        assert!(
            unnamed.is_empty(),
            "{command} --help does not name {unnamed:?}:\n{help}"
        );
    }
}
