//! Leader election with the s3-lease component: four nodes, each its own
//! instance of the component in wasmtime, campaign for one key. The leader
//! renews; it is then stopped without a word (a crash), and another node
//! takes over once the lease lapses, with a higher fencing token; that leader
//! steps down politely (release), and the next takes over at once.
//!
//! S3: `AWS_ENDPOINT_URL` and friends when set, else a local SeaweedFS that
//! this program starts and stops.

use anyhow::{Context, Result};
use host_test::bindings::{Error as LeaseError, Lease, Options};
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
}

struct Node {
    id: usize,
    crash: AtomicBool,
    step_down: AtomicBool,
    quit: AtomicBool,
}

fn say(start: Instant, line: String) {
    println!("[{:5.1}s] {line}", start.elapsed().as_secs_f64());
}

fn run_node(
    harness: &Harness,
    endpoint: &Endpoint,
    prefix: &str,
    node: &Node,
    board: &Mutex<Board>,
    start: Instant,
) -> Result<()> {
    let mut instance = harness.instance()?;
    instance
        .open(&endpoint.config(prefix))?
        .map_err(|e| anyhow::anyhow!("config refused: {e:?}"))?;
    let name = format!("node-{}", node.id);
    let options = Options {
        ttl_ms: TTL_MS,
        holder_id: Some(name.clone()),
        metadata: Some(format!("{name} serving on 10.0.0.{}:8080", node.id + 1)),
    };
    let mut lease: Option<Lease> = None;
    while !node.quit.load(Ordering::Relaxed) {
        if node.crash.load(Ordering::Relaxed) {
            // A crashed leader sends nothing at all: no renew, no release.
            std::thread::sleep(POLL_EVERY);
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
                    Ok(renewed) => lease = Some(renewed),
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
    // A crashed node never cleans up; the others release on the way out.
    if let Some(held) = lease.filter(|_| !node.crash.load(Ordering::Relaxed)) {
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
    let board = Mutex::new(Board::default());
    let nodes: Vec<Arc<Node>> = (0..NODES)
        .map(|id| {
            Arc::new(Node {
                id,
                crash: AtomicBool::new(false),
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
                let (harness, endpoint, prefix, board) = (&harness, &endpoint, &prefix, &board);
                scope.spawn(move || run_node(harness, endpoint, prefix, node, board, start))
            })
            .collect();

        let first = wait_for_new_leader(&board, None, Duration::from_secs(20))
            .context("nobody was elected")?;
        std::thread::sleep(Duration::from_secs(3));
        say(
            start,
            format!(
                "stopping node-{} (no release: the others must wait out its ttl)",
                first.0
            ),
        );
        nodes[first.0].crash.store(true, Ordering::Relaxed);
        let second = wait_for_new_leader(&board, Some(first), Duration::from_secs(20))
            .context("no takeover")?;
        std::thread::sleep(Duration::from_secs(2));
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
        let history = &board.lock().unwrap().history;
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
        Ok(())
    })?;
    Ok(())
}
