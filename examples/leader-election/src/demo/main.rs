//! The demo (`scripts/demo.sh`; the example to copy is `src/main.rs`).
//! Leader election with the s3-lease component's `elector`: four nodes, each
//! its own instance of the component in wasmtime, each with an elector on the
//! same key. Every node's thread is the elector's timer: it calls `step`,
//! prints what happened, and sleeps the `next-step-in-ms` the step asked for.
//! The leader writes the shared state object with fenced writes while it
//! leads.
//!
//! The story: the first leader's network is cut. It keeps stepping and steps
//! down by itself at its renew deadline; another node takes over only once
//! the lease has lapsed, with a higher fencing token, so there is never a
//! moment with two leaders. The cut node's network comes back: it follows the
//! new leader, and its late write with its old token is refused by S3 itself.
//! Then the new leader resigns and another takes over within about a retry
//! period. Any broken promise exits non-zero.
//!
//! `S3LEASE_STRATEGY=epoch-objects` runs the same story on the other strategy.
//!
//! S3: the usual AWS variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...)
//! and the bucket in `S3LEASE_BUCKET`; `scripts/demo.sh` starts a local
//! SeaweedFS and sets them when `AWS_ENDPOINT_URL` is not set.
//!
//! It uses only the product host, `s3-lease-host`: the component embedded in
//! the binary (or `S3LEASE_COMPONENT`), and HTTP hooks of its own to cut a
//! node's network. Driving an instance call by call and giving it hooks
//! takes the crate's `unstable-raw` feature.

mod network;

use anyhow::{bail, ensure, Context, Result};
use network::NetworkSwitch;
use s3_lease_host::bindings::{
    Config, ElectorConfig, ElectorEvent, Error as LeaseError, Lease, LockState, Role, StopReason,
    Strategy,
};
use s3_lease_host::raw::RawInstance;
use s3_lease_host::{InstanceOptions, Runtime, StoreConfig};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NODES: usize = 4;
const KEY: &str = "leader";
const LEASE_DURATION_MS: u64 = 3_000;
const RENEW_DEADLINE_MS: u64 = 2_000;
const RETRY_PERIOD_MS: u64 = 500;
/// The longest a node sleeps between steps, whatever the elector asked.
const MAX_SLEEP: Duration = Duration::from_millis(1_000);

/// What the main thread asks of a node; each wakes the node's timer at once.
enum Command {
    /// Cut (true) or restore (false) the node's network.
    Cut(bool),
    /// Write the state object with the last lease this node held, long after
    /// it stopped leading.
    StaleWrite,
    Resign,
    Quit,
}

/// A node's role as its last step reported it.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Candidate,
    Leader(u64),
    /// Following this holder id (when known).
    Follower(Option<String>),
}

/// What the nodes report, under one lock, in the order it happened.
struct Board {
    start: Instant,
    roles: Vec<Seen>,
    /// Every grant in order: (node, token, when its step returned).
    grants: Vec<(usize, u64, Instant)>,
    /// Every step-down: (node, reason, when its step returned, time since
    /// the node sent its last successful renew).
    stops: Vec<(usize, StopReason, Instant, Option<Duration>)>,
    /// When each node last sent a renew (or grant) that succeeded, as far
    /// as its own thread can tell: just before the step that returned it.
    last_renew_sent: Vec<Option<Instant>>,
    /// Times two nodes reported themselves leader at once.
    overlaps: Vec<String>,
    /// The stale write's outcome: (node, our token, result).
    stale: Option<(usize, u64, std::result::Result<u64, LeaseError>)>,
    /// When each node's `resign` returned.
    resigned: Vec<Option<Instant>>,
    /// Fenced writes that succeeded: (node, token).
    writes: Vec<(usize, u64)>,
}

impl Board {
    /// Prints one line stamped with the time since the start; under the
    /// board's lock, so lines come out in the order things happened.
    fn say(&self, line: impl AsRef<str>) {
        println!(
            "[{:5.1}s] {}",
            self.start.elapsed().as_secs_f64(),
            line.as_ref()
        );
    }

    fn leaders(&self) -> Vec<usize> {
        (0..self.roles.len())
            .filter(|&i| matches!(self.roles[i], Seen::Leader(_)))
            .collect()
    }

    /// Records a node's role; notes any moment with two leaders.
    fn set_role(&mut self, node: usize, seen: Seen) {
        self.roles[node] = seen;
        let leaders = self.leaders();
        if leaders.len() > 1 {
            let what = format!(
                "two leaders at once at {:.3}s: {:?}",
                self.start.elapsed().as_secs_f64(),
                leaders
                    .iter()
                    .map(|&i| format!("node-{i} {:?}", self.roles[i]))
                    .collect::<Vec<_>>()
            );
            self.say(format!("CHECK FAILED: {what}"));
            self.overlaps.push(what);
        }
    }
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seen::Candidate => write!(f, "a candidate"),
            Seen::Leader(token) => write!(f, "leader with token {token}"),
            Seen::Follower(Some(holder)) => write!(f, "a follower of {holder}"),
            Seen::Follower(None) => write!(f, "a follower"),
        }
    }
}

fn name(node: usize) -> String {
    format!("node-{node}")
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn describe_error(e: &LeaseError) -> String {
    match e {
        LeaseError::Transport(t) => format!("transport: {t}"),
        LeaseError::Fenced(f) => format!(
            "fenced: our token {}, token {} already wrote",
            f.our_token, f.stored_token
        ),
        other => format!("{other:?}"),
    }
}

fn describe_leader(state: &LockState) -> String {
    format!("{} (token {})", state.holder_id, state.token)
}

fn seen_of(role: &Role) -> Seen {
    match role {
        Role::Leader(lease) => Seen::Leader(lease.token),
        Role::Follower(state) => Seen::Follower(state.as_ref().map(|s| s.holder_id.clone())),
        Role::Candidate => Seen::Candidate,
    }
}

/// One node: an instance of the component, its elector, and the timer loop
/// that steps it.
fn run_node(
    runtime: &Runtime,
    config: &Config,
    node: usize,
    commands: Receiver<Command>,
    board: &Mutex<Board>,
) -> Result<()> {
    let me = name(node);
    let network = NetworkSwitch::new(runtime.http().clone());
    let mut instance = runtime.instantiate(InstanceOptions {
        hooks: Some(Box::new(network.clone())),
        ..InstanceOptions::default()
    })?;
    instance
        .open(config)?
        .map_err(|e| anyhow::anyhow!("{me}: config refused: {e:?}"))?;
    let elector = instance
        .elector(&ElectorConfig {
            key: KEY.into(),
            lease_duration_ms: LEASE_DURATION_MS,
            renew_deadline_ms: RENEW_DEADLINE_MS,
            retry_period_ms: RETRY_PERIOD_MS,
            holder_id: Some(me.clone()),
            metadata: Some(format!("{me} serving on 10.0.0.{}:8080", node + 1)),
        })?
        .map_err(|e| anyhow::anyhow!("{me}: elector refused: {e:?}"))?;
    let state_key = format!(
        "{}state.json",
        config.key_prefix.as_deref().unwrap_or_default()
    );
    let mut tick = 0u64;
    let mut write_state = |instance: &mut RawInstance, lease: &Lease| {
        tick += 1;
        let body = format!(
            "{{\"leader\": \"{me}\", \"token\": {}, \"tick\": {tick}}}",
            lease.token
        );
        instance.fenced_put(lease, &state_key, body.as_bytes(), "application/json")
    };

    // The lease of the current (or last) term, to spot renews and, later,
    // to attempt a stale write with it.
    let mut held: Option<Lease> = None;
    let mut leading = false;
    let mut last_error: Option<String> = None;
    let mut sleep = Duration::ZERO;
    loop {
        match commands.recv_timeout(sleep.min(MAX_SLEEP)) {
            Err(RecvTimeoutError::Timeout) => {}
            Ok(Command::Cut(cut)) => {
                network.set_cut(cut);
                let b = board.lock().unwrap();
                if cut {
                    b.say(format!(
                        "{me}: network CUT (no release; it keeps stepping on its own clock)"
                    ));
                } else {
                    b.say(format!("{me}: network back"));
                }
            }
            Ok(Command::StaleWrite) => {
                let stale = held.clone().context("no lease to write with")?;
                let outcome = write_state(&mut instance, &stale)?;
                let mut b = board.lock().unwrap();
                match &outcome {
                    Err(LeaseError::Fenced(f)) => b.say(format!(
                        "{me} writes {state_key} late with its old token {}: S3 refuses it (fenced: token {} already wrote)",
                        f.our_token, f.stored_token
                    )),
                    Ok(w) => b.say(format!(
                        "CHECK FAILED: {me}'s stale write with token {} was ACCEPTED",
                        w.token
                    )),
                    Err(e) => b.say(format!("{me}'s stale write failed: {}", describe_error(e))),
                }
                b.stale = Some((node, stale.token, outcome.map(|w| w.token)));
            }
            Ok(Command::Resign) => {
                // Stop acting as leader first, then release.
                board.lock().unwrap().set_role(node, Seen::Candidate);
                leading = false;
                let result = instance.resign(elector)?;
                let mut b = board.lock().unwrap();
                b.resigned[node] = Some(Instant::now());
                match result {
                    Ok(()) => b.say(format!(
                        "{me} resigns: releases token {}",
                        held.as_ref().map_or(0, |l| l.token)
                    )),
                    Err(e) => b.say(format!("{me} could not release: {}", describe_error(&e))),
                }
            }
            Ok(Command::Quit) | Err(RecvTimeoutError::Disconnected) => break,
        }

        // The hooks log every request the component sends: whether this step
        // attempted anything (a step that is not due sends nothing).
        let sent_before = network.requests_sent();
        let before = Instant::now();
        let step = instance.step(elector)?;
        let now = Instant::now();
        let attempted = network.requests_sent() > sent_before;
        let mut b = board.lock().unwrap();
        let mut wrote_first = false;
        let mut renewed = false;
        for event in &step.events {
            match event {
                ElectorEvent::BecameLeader(lease) => {
                    b.last_renew_sent[node] = Some(before);
                    let previous = b.grants.last().map(|g| (g.0, g.1));
                    b.grants.push((node, lease.token, now));
                    match previous {
                        None => b.say(format!(
                            "{me} becomes leader with fencing token {}",
                            lease.token
                        )),
                        Some((prev, prev_token)) => b.say(format!(
                            "{me} becomes leader with fencing token {} ({} had {prev_token})",
                            lease.token,
                            name(prev)
                        )),
                    }
                    held = Some(lease.clone());
                    leading = true;
                    wrote_first = true;
                }
                ElectorEvent::StoppedLeading(reason) => {
                    let since = b.last_renew_sent[node].map(|t| now - t);
                    b.stops.push((node, *reason, now, since));
                    let why = match reason {
                        StopReason::RenewDeadline => "renew-deadline",
                        StopReason::Lost => "lost",
                        StopReason::Resigned => "resigned",
                    };
                    let after = since
                        .filter(|_| *reason == StopReason::RenewDeadline)
                        .map(|s| format!(", {} after its last successful renew was sent", secs(s)))
                        .unwrap_or_default();
                    b.say(format!("{me} stopped leading ({why}){after}"));
                    leading = false;
                }
                ElectorEvent::LeaderChanged(Some(state)) => {
                    b.say(format!("{me} follows {}", describe_leader(state)))
                }
                // Also what a node reports when it lost a race for a free
                // key: the winner is not known to it yet.
                ElectorEvent::LeaderChanged(None) => b.say(format!(
                    "{me}: leader unknown for now (leader-changed: none)"
                )),
            }
        }
        // A renew that succeeded hands back a new lease (new etag and seal).
        if let Role::Leader(lease) = &step.role {
            if held.as_ref() != Some(lease) {
                held = Some(lease.clone());
                if !wrote_first {
                    b.last_renew_sent[node] = Some(before);
                    renewed = true;
                }
            }
        }
        let seen = seen_of(&step.role);
        if b.roles[node] != seen {
            if step.events.is_empty() {
                b.say(format!("{me} is now {seen}"));
            }
            b.set_role(node, seen);
        }
        match (&step.last_error, &last_error) {
            (Some(e), previous) => {
                let e = describe_error(e);
                if previous.as_ref() != Some(&e) {
                    b.say(format!("{me}: step failed ({e}); it keeps trying"));
                }
                last_error = Some(e);
            }
            (None, Some(_)) if attempted => {
                b.say(format!("{me}: steps succeed again"));
                last_error = None;
            }
            (None, _) => {}
        }
        drop(b);

        // The leader writes right after a grant or a successful renew, with
        // the token of its lease inside the body.
        if leading && step.last_error.is_none() && matches!(step.role, Role::Leader(_)) {
            let lease = held.clone().context("leader without a lease")?;
            if wrote_first || renewed {
                let outcome = write_state(&mut instance, &lease)?;
                let mut b = board.lock().unwrap();
                match outcome {
                    Ok(w) => {
                        b.writes.push((node, w.token));
                        if wrote_first {
                            b.say(format!(
                                "{me} writes {state_key} with token {} (fenced: the object now refuses lower tokens)",
                                w.token
                            ));
                        }
                    }
                    Err(e) => b.say(format!("{me} could not write: {}", describe_error(&e))),
                }
            }
        }
        sleep = Duration::from_millis(step.next_step_in_ms);
    }

    // On the way out a leader resigns, so the key is free at once.
    if leading {
        board.lock().unwrap().set_role(node, Seen::Candidate);
        let result = instance.resign(elector)?;
        let b = board.lock().unwrap();
        match result {
            Ok(()) => b.say(format!(
                "{me} resigns on the way out: releases token {}",
                held.as_ref().map_or(0, |l| l.token)
            )),
            Err(e) => b.say(format!("{me} could not release: {}", describe_error(&e))),
        }
    }
    instance.drop_elector(elector)?;
    Ok(())
}

/// Polls the board until `f` returns something, or `limit` passes.
fn wait_for<T>(
    board: &Mutex<Board>,
    limit: Duration,
    mut f: impl FnMut(&Board) -> Option<T>,
) -> Option<T> {
    let until = Instant::now() + limit;
    loop {
        if let Some(found) = f(&board.lock().unwrap()) {
            return Some(found);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn send(nodes: &[Sender<Command>], node: usize, command: Command) {
    // A node that has gone away reports its own error when joined.
    let _ = nodes[node].send(command);
}

/// The story, told by the main thread; each check that fails ends it.
fn story(board: &Mutex<Board>, nodes: &[Sender<Command>]) -> Result<()> {
    let say = |line: String| board.lock().unwrap().say(line);

    // 1. Someone is elected; the others follow.
    let (first, first_token, _) = wait_for(board, Duration::from_secs(10), |b| {
        b.grants.first().copied()
    })
    .context("nobody was elected within 10 s")?;
    std::thread::sleep(Duration::from_millis(2_000));

    // 2. The leader's network is cut. It must step down by itself at its
    //    renew deadline, before anyone can take over.
    say(format!(
        "cutting {}'s network: it cannot renew, nor release",
        name(first)
    ));
    send(nodes, first, Command::Cut(true));
    let (reason, stopped_at, since) = wait_for(
        board,
        Duration::from_millis(RENEW_DEADLINE_MS + 3_000),
        |b| {
            b.stops
                .iter()
                .find(|s| s.0 == first)
                .map(|s| (s.1, s.2, s.3))
        },
    )
    .with_context(|| format!("{} never stopped leading after its cut", name(first)))?;
    ensure!(
        reason == StopReason::RenewDeadline,
        "{} stopped leading with {reason:?}, not renew-deadline",
        name(first)
    );
    let since = since.context("no renew time recorded")?;
    ensure!(
        since >= Duration::from_millis(RENEW_DEADLINE_MS - 10)
            && since <= Duration::from_millis(RENEW_DEADLINE_MS + 500),
        "{} stepped down {} after its last renew, not at its {RENEW_DEADLINE_MS} ms deadline",
        name(first),
        secs(since)
    );

    // 3. Another node takes over once the lease has lapsed.
    let (second, second_token, took_over_at) = wait_for(board, Duration::from_secs(12), |b| {
        b.grants.iter().find(|g| g.0 != first).copied()
    })
    .context("no takeover within 12 s of the cut leader stepping down")?;
    let last_renew = board.lock().unwrap().last_renew_sent[first].context("no renew")?;
    ensure!(
        took_over_at > stopped_at,
        "{} took over before {} stepped down",
        name(second),
        name(first)
    );
    let lapse = took_over_at - last_renew;
    ensure!(
        lapse >= Duration::from_millis(LEASE_DURATION_MS),
        "{} took over only {} after {}'s last renew, within the {LEASE_DURATION_MS} ms lease",
        name(second),
        secs(lapse),
        name(first)
    );
    say(format!(
        "takeover {} after {} stepped down ({} after its last renew was sent): never two leaders",
        secs(took_over_at - stopped_at),
        name(first),
        secs(lapse)
    ));
    std::thread::sleep(Duration::from_millis(1_000));

    // 4. The cut node comes back and follows; its stale write is refused.
    send(nodes, first, Command::Cut(false));
    let who = name(second);
    wait_for(board, Duration::from_secs(3), |b| {
        (b.roles[first] == Seen::Follower(Some(who.clone()))).then_some(())
    })
    .with_context(|| format!("{} did not follow {} once back", name(first), name(second)))?;
    send(nodes, first, Command::StaleWrite);
    let (_, our, outcome) = wait_for(board, Duration::from_secs(5), |b| b.stale.clone())
        .context("the stale write never came back")?;
    match outcome {
        Err(LeaseError::Fenced(f)) if f.our_token == first_token && f.stored_token > our => {}
        Ok(token) => bail!("S3 accepted the stale write with token {token}"),
        Err(e) => bail!("the stale write failed, but not as fenced: {e:?}"),
    }
    std::thread::sleep(Duration::from_millis(1_000));

    // 5. The new leader resigns; another takes over within a retry period.
    say(format!(
        "asking {} to resign (token {second_token})",
        name(second)
    ));
    send(nodes, second, Command::Resign);
    let resigned_at = wait_for(board, Duration::from_secs(5), |b| b.resigned[second])
        .context("resign never returned")?;
    let (third, _, third_at) = wait_for(board, Duration::from_secs(5), |b| {
        b.grants.iter().find(|g| g.1 > second_token).copied()
    })
    .context("nobody took over within 5 s of the resignation")?;
    let handover = third_at.saturating_duration_since(resigned_at);
    ensure!(
        handover <= Duration::from_millis(3 * RETRY_PERIOD_MS),
        "the handover took {}, more than about a retry period",
        secs(handover)
    );
    say(format!(
        "handover {} after the release (retry period {RETRY_PERIOD_MS} ms)",
        secs(handover)
    ));
    ensure!(third != second, "{} took its own key back", name(second));
    std::thread::sleep(Duration::from_millis(1_000));
    Ok(())
}

fn main() -> Result<()> {
    let bucket = std::env::var("S3LEASE_BUCKET").unwrap_or_else(|_| "s3-lease-demo".into());
    let mut s3 = StoreConfig::from_env(&bucket).context("the S3 configuration")?;
    println!(
        "S3: {} bucket {}",
        s3.endpoint(),
        s3.bucket().unwrap_or_default()
    );
    let runtime = Runtime::new().context("loading the component")?;
    let load = runtime.load_report();
    println!(
        "component: {} bytes, ready in {} ms (compile cache: {:?})",
        load.component_bytes,
        load.elapsed.as_millis(),
        load.cache
    );

    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let prefix = format!("demo/{stamp}/");
    s3.key_prefix = Some(prefix.clone());
    let mut config = s3.wit_config();
    if std::env::var("S3LEASE_STRATEGY").as_deref() == Ok("epoch-objects") {
        config.strategy = Some(Strategy::EpochObjects);
    }
    let strategy = match config.strategy.unwrap_or(Strategy::SingleObject) {
        Strategy::SingleObject => "single-object",
        Strategy::EpochObjects => "epoch-objects",
    };
    println!(
        "{NODES} electors on \"{prefix}{KEY}\" ({strategy}): lease {LEASE_DURATION_MS} ms, renew deadline {RENEW_DEADLINE_MS} ms, retry period {RETRY_PERIOD_MS} ms\n"
    );

    let board = Mutex::new(Board {
        start: Instant::now(),
        roles: vec![Seen::Candidate; NODES],
        grants: Vec::new(),
        stops: Vec::new(),
        last_renew_sent: vec![None; NODES],
        overlaps: Vec::new(),
        stale: None,
        resigned: vec![None; NODES],
        writes: Vec::new(),
    });

    let told = std::thread::scope(|scope| -> Result<()> {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for node in 0..NODES {
            let (tx, rx) = channel();
            senders.push(tx);
            let (runtime, config, board) = (&runtime, &config, &board);
            workers.push(scope.spawn(move || run_node(runtime, config, node, rx, board)));
        }
        let told = story(&board, &senders);
        // Stop every node, whatever happened.
        board.lock().unwrap().say("stopping all nodes");
        for node in 0..NODES {
            send(&senders, node, Command::Quit);
        }
        for (node, w) in workers.into_iter().enumerate() {
            w.join()
                .map_err(|_| anyhow::anyhow!("{} panicked", name(node)))?
                .with_context(|| name(node))?;
        }
        told
    });

    let board = board.into_inner().unwrap();
    if let Err(e) = told {
        for overlap in &board.overlaps {
            eprintln!("two leaders: {overlap}");
        }
        return Err(e.context("the story's checks failed"));
    }
    ensure!(
        board.overlaps.is_empty(),
        "two leaders at once: {:?}",
        board.overlaps
    );
    let tokens: Vec<u64> = board.grants.iter().map(|g| g.1).collect();
    ensure!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "fencing tokens must rise: {tokens:?}"
    );

    // What S3 holds now, read by a fresh instance.
    let mut reader = runtime.instantiate(InstanceOptions::default())?;
    reader
        .open(&config)?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let state_key = format!("{prefix}state.json");
    let stored = reader
        .fenced_get(&state_key)?
        .map_err(|e| anyhow::anyhow!("{e:?}"))?
        .context("state.json is missing")?;
    let last = *tokens.last().context("no grants")?;
    ensure!(
        stored.token == last,
        "state.json was last written with token {}, not the last leader's {last}",
        stored.token
    );

    println!(
        "\nleaders in order: {}",
        board
            .grants
            .iter()
            .map(|g| format!("{} (token {})", name(g.0), g.1))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("fencing tokens rose strictly: {tokens:?}; never two leaders at once");
    println!(
        "fenced writes accepted: {}; the stale one refused",
        board.writes.len()
    );
    println!(
        "{state_key}: {} (token {})",
        String::from_utf8_lossy(&stored.body),
        stored.token
    );
    Ok(())
}
