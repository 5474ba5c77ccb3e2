//! Leader election with the s3-lease component: four nodes, each its own
//! instance of the component in wasmtime, campaign for one key. The leader
//! renews and writes the shared state object with fenced writes. It is then
//! paused without a word (a GC pause, a frozen VM), and another node takes
//! over once the lease lapses, with a higher fencing token. The paused node
//! wakes up still holding its old lease and tries to write: S3 itself refuses
//! it. The new leader steps down politely (release), and the next takes over
//! at once.
//!
//! `S3LEASE_STRATEGY=epoch-objects` runs the same story on the other strategy.
//!
//! S3: `AWS_ENDPOINT_URL` and friends when set, else a local SeaweedFS that
//! this program starts and stops.

use anyhow::{Context, Result};
use host_test::bindings::Config;
use host_test::bindings::{Error as LeaseError, Lease, Options, Strategy};
use host_test::instance::component_path;
use host_test::server::{Endpoint, SeaweedFs};
use host_test::Harness;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NODES: usize = 4;
const TTL_MS: u64 = 3_000;
const RENEW_EVERY: Duration = Duration::from_millis(1_000);
const POLL_EVERY: Duration = Duration::from_millis(400);

/// What the main thread tells a node, and what nodes report back.
#[derive(Default)]
struct Board {
    /// (node, token) of the current leader, as last announced.
    leader: Option<(usize, u64)>,
    /// Every grant in order: (node, token).
    history: Vec<(usize, u64)>,
    /// Fenced writes S3 refused: (node, our token, stored token).
    refused: Vec<(usize, u64, u64)>,
}

struct Node {
    id: usize,
    /// Frozen: sends nothing, keeps its lease in memory.
    paused: AtomicBool,
    step_down: AtomicBool,
    quit: AtomicBool,
}

fn say(start: Instant, line: String) {
    println!("[{:5.1}s] {line}", start.elapsed().as_secs_f64());
}

fn run_node(
    harness: &Harness,
    config: &Config,
    node: &Node,
    board: &Mutex<Board>,
    start: Instant,
) -> Result<()> {
    let mut instance = harness.instance()?;
    instance
        .open(config)?
        .map_err(|e| anyhow::anyhow!("config refused: {e:?}"))?;
    let state_key = format!(
        "{}state.json",
        config.key_prefix.as_deref().unwrap_or_default()
    );
    let write_state = |instance: &mut host_test::Instance, lease: &Lease, tick: u64| {
        let body = format!(
            "{{\"leader\": \"node-{}\", \"token\": {}, \"tick\": {tick}}}",
            node.id, lease.token
        );
        instance.fenced_put(lease, &state_key, body.as_bytes(), "application/json")
    };
    let mut tick = 0;
    let name = format!("node-{}", node.id);
    let options = Options {
        ttl_ms: TTL_MS,
        holder_id: Some(name.clone()),
        metadata: Some(format!("{name} serving on 10.0.0.{}:8080", node.id + 1)),
    };
    let mut lease: Option<Lease> = None;
    while !node.quit.load(Ordering::Relaxed) {
        if node.paused.load(Ordering::Relaxed) {
            // A paused leader sends nothing at all: no renew, no release.
            std::thread::sleep(Duration::from_millis(50));
            if !node.paused.load(Ordering::Relaxed) {
                if let Some(stale) = lease.take() {
                    // It wakes believing it still leads, and writes.
                    match write_state(&mut instance, &stale, tick)? {
                        Err(LeaseError::Fenced(f)) => {
                            say(start, format!(
                                "{name} wakes up and writes with token {}: S3 refuses it (fenced: token {} already wrote)",
                                f.our_token, f.stored_token
                            ));
                            board.lock().unwrap().refused.push((
                                node.id,
                                f.our_token,
                                f.stored_token,
                            ));
                        }
                        other => say(start, format!("{name} wakes up and writes: {other:?}")),
                    }
                }
            }
            continue;
        }
        match lease.take() {
            Some(held) if node.step_down.swap(false, Ordering::Relaxed) => {
                instance
                    .release(&held)?
                    .map_err(|e| anyhow::anyhow!("{e:?}"))?;
                say(
                    start,
                    format!("{name} steps down and releases token {}", held.token),
                );
                // Sit out a moment so someone else wins.
                std::thread::sleep(Duration::from_millis(1_500));
            }
            Some(held) => {
                std::thread::sleep(RENEW_EVERY);
                match instance.renew(&held)? {
                    Ok(renewed) => {
                        tick += 1;
                        if let Err(e) = write_state(&mut instance, &renewed, tick)? {
                            say(start, format!("{name} could not write: {e:?}"));
                        }
                        lease = Some(renewed);
                    }
                    Err(LeaseError::Lost(_)) => say(start, format!("{name} lost its lease")),
                    Err(e) => say(start, format!("{name} could not renew: {e:?}")),
                }
            }
            None => match instance.try_acquire("leader", &options)? {
                Ok(Some(won)) => {
                    let mut b = board.lock().unwrap();
                    let before = b.leader.replace((node.id, won.token));
                    b.history.push((node.id, won.token));
                    drop(b);
                    match before {
                            None => say(start, format!("{name} is the leader with fencing token {}", won.token)),
                            Some((prev, prev_token)) => say(
                                start,
                                format!(
                                    "{name} takes over with fencing token {} (node-{prev} had {prev_token})",
                                    won.token
                                ),
                            ),
                        }
                    tick += 1;
                    match write_state(&mut instance, &won, tick)? {
                        Ok(w) => say(start, format!(
                            "{name} writes {state_key} with token {} (fenced: the object now refuses lower tokens)",
                            w.token
                        )),
                        Err(e) => say(start, format!("{name} could not write: {e:?}")),
                    }
                    lease = Some(won);
                }
                Ok(None) => std::thread::sleep(POLL_EVERY),
                Err(e) => {
                    say(start, format!("{name}: {e:?}"));
                    std::thread::sleep(POLL_EVERY);
                }
            },
        }
    }
    // A paused node never cleans up; the others release on the way out.
    if let Some(held) = lease.filter(|_| !node.paused.load(Ordering::Relaxed)) {
        instance
            .release(&held)?
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    Ok(())
}

fn current_leader(board: &Mutex<Board>) -> Option<(usize, u64)> {
    board.lock().unwrap().leader
}

fn wait_for_new_leader(
    board: &Mutex<Board>,
    old: Option<(usize, u64)>,
    limit: Duration,
) -> Option<(usize, u64)> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        let now = current_leader(board);
        if now.is_some() && now != old {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn main() -> Result<()> {
    let (endpoint, _server) = match Endpoint::from_env() {
        Some(env) => {
            let e = env?;
            println!("S3: {} bucket {}", e.url, e.bucket);
            e.admin()?.create_bucket()?;
            (e, None)
        }
        None => {
            println!("S3: no AWS_ENDPOINT_URL; starting a local SeaweedFS");
            let server = SeaweedFs::start()?;
            println!("S3: SeaweedFS at {}", server.endpoint.url);
            (server.endpoint.clone(), Some(server))
        }
    };
    let loaded = Instant::now();
    let harness = Harness::load(&component_path()).context("loading the component")?;
    println!(
        "component: {} loaded in {} ms; {NODES} instances campaign for \"leader\" (ttl {TTL_MS} ms)\n",
        component_path().display(),
        loaded.elapsed().as_millis()
    );

    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let prefix = format!("demo/{stamp}/");
    let mut config = endpoint.config(&prefix);
    if std::env::var("S3LEASE_STRATEGY").as_deref() == Ok("epoch-objects") {
        config.strategy = Some(Strategy::EpochObjects);
    }
    println!(
        "strategy: {:?}\n",
        config.strategy.unwrap_or(Strategy::SingleObject)
    );
    let board = Mutex::new(Board::default());
    let nodes: Vec<Arc<Node>> = (0..NODES)
        .map(|id| {
            Arc::new(Node {
                id,
                paused: AtomicBool::new(false),
                step_down: AtomicBool::new(false),
                quit: AtomicBool::new(false),
            })
        })
        .collect();
    let start = Instant::now();

    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = nodes
            .iter()
            .map(|node| {
                let (harness, config, board) = (&harness, &config, &board);
                scope.spawn(move || run_node(harness, config, node, board, start))
            })
            .collect();

        let first = wait_for_new_leader(&board, None, Duration::from_secs(20))
            .context("nobody was elected")?;
        std::thread::sleep(Duration::from_secs(3));
        say(
            start,
            format!(
                "pausing node-{} (no release: the others must wait out its ttl)",
                first.0
            ),
        );
        nodes[first.0].paused.store(true, Ordering::Relaxed);
        let second = wait_for_new_leader(&board, Some(first), Duration::from_secs(20))
            .context("no takeover")?;
        std::thread::sleep(Duration::from_secs(2));
        say(start, format!("node-{} wakes from its pause", first.0));
        nodes[first.0].paused.store(false, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(500));
        say(start, format!("asking node-{} to step down", second.0));
        nodes[second.0].step_down.store(true, Ordering::Relaxed);
        let third = wait_for_new_leader(&board, Some(second), Duration::from_secs(20))
            .context("no handover")?;
        std::thread::sleep(Duration::from_secs(1));

        for node in &nodes {
            node.quit.store(true, Ordering::Relaxed);
        }
        for w in workers {
            w.join().map_err(|_| anyhow::anyhow!("a node panicked"))??;
        }
        let board = board.lock().unwrap();
        let history = &board.history;
        let tokens: Vec<u64> = history.iter().map(|h| h.1).collect();
        println!(
            "\nleaders in order: {:?}",
            history
                .iter()
                .map(|h| format!("node-{} (token {})", h.0, h.1))
                .collect::<Vec<_>>()
        );
        anyhow::ensure!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "fencing tokens must rise: {tokens:?}"
        );
        println!(
            "fencing tokens rose strictly: {tokens:?}; final leader node-{} with token {}",
            third.0, third.1
        );
        anyhow::ensure!(
            board
                .refused
                .iter()
                .any(|r| r.0 == first.0 && r.1 == first.1),
            "the paused leader's stale write must have been refused: {:?}",
            board.refused
        );
        println!(
            "stale writes S3 refused: {:?}",
            board
                .refused
                .iter()
                .map(|r| format!("node-{} with token {} (stored {})", r.0, r.1, r.2))
                .collect::<Vec<_>>()
        );
        Ok(())
    })?;
    Ok(())
}
