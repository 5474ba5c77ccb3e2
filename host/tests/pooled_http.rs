//! Pooled HTTP keeps a connection per instance for many requests (an
//! instance's calls and their requests run on its own thread, and so does
//! its connection); wasmtime's default opens one per request. Counted on a loopback server that answers every
//! request like S3 does for a missing key, and counts the connections it
//! accepts.

use s3_lease_host::blocking::Client;
use s3_lease_host::{
    ClientOptions, CompileCache, ComponentSource, Runtime, RuntimeOptions, StoreConfig,
};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const REQUESTS: usize = 20;
const INSTANCES: usize = 2;

struct Counts {
    connections: AtomicUsize,
    requests: AtomicUsize,
}

/// A keep-alive HTTP/1.1 server: 404 NoSuchKey to everything.
fn serve() -> (String, Arc<Counts>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let counts = Arc::new(Counts {
        connections: AtomicUsize::new(0),
        requests: AtomicUsize::new(0),
    });
    let c = counts.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            c.connections.fetch_add(1, Ordering::SeqCst);
            let c = c.clone();
            std::thread::spawn(move || answer_all(stream, &c));
        }
    });
    (url, counts)
}

fn answer_all(stream: TcpStream, counts: &Counts) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        counts.requests.fetch_add(1, Ordering::SeqCst);
        let xml = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>none</Message><RequestId>r1</RequestId></Error>";
        let reply = format!(
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\nDate: Sun, 22 Nov 2026 12:00:00 GMT\r\nContent-Length: {}\r\n\r\n{xml}",
            xml.len()
        );
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// One test at a time: the thread count below is the process's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn client_of(url: &str, pooled_http: bool, instances: usize) -> Client {
    let runtime = Runtime::with_options(
        RuntimeOptions::default()
            .source(ComponentSource::from_env())
            .cache(CompileCache::from_env())
            .pooled_http(pooled_http),
    )
    .unwrap();
    let config = StoreConfig::from_vars("bucket", |name| match name {
        "AWS_ENDPOINT_URL" => Some(url.to_string()),
        "AWS_ACCESS_KEY_ID" => Some("AKIDTEST".into()),
        "AWS_SECRET_ACCESS_KEY" => Some("secret-for-the-test".into()),
        _ => None,
    })
    .unwrap();
    let options = ClientOptions::default().instances(instances);
    Client::connect_with(&runtime, &config, options).unwrap()
}

fn connections_for(pooled_http: bool) -> (usize, usize) {
    let (url, counts) = serve();
    let client = client_of(&url, pooled_http, INSTANCES);
    for i in 0..REQUESTS {
        // Distinct keys: nothing cached, one GET each.
        assert_eq!(client.inspect(&format!("key-{i}")).unwrap(), None);
    }
    (
        counts.connections.load(Ordering::SeqCst),
        counts.requests.load(Ordering::SeqCst),
    )
}

#[test]
fn pooled_http_reuses_one_connection_where_the_default_opens_one_per_request() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (pooled, pooled_requests) = connections_for(true);
    let (per_request, requests) = connections_for(false);
    println!(
        "{REQUESTS} inspects: pooled {pooled} connection(s) for {pooled_requests} requests; \
         default {per_request} for {requests}"
    );
    assert_eq!((pooled_requests, requests), (REQUESTS, REQUESTS));
    assert!(
        (1..=INSTANCES).contains(&pooled),
        "pooled: a keep-alive connection per instance at most, {pooled} for {INSTANCES} instances"
    );
    assert_eq!(per_request, REQUESTS, "default: one connection per request");
}

/// The instances' worker threads (`s3-lease-0`, `s3-lease-1`, ...) now
/// alive in this process.
#[cfg(target_os = "linux")]
fn worker_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .filter(|name| {
            name.trim()
                .strip_prefix("s3-lease-")
                .is_some_and(|n| n.parse::<usize>().is_ok())
        })
        .count()
}

/// A client starts an instance's thread with the instance's first call: a
/// process that takes one lock (the command line) starts one, not eight.
#[cfg(target_os = "linux")]
#[test]
fn a_client_starts_a_worker_thread_per_instance_it_uses() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (url, _counts) = serve();
    // Workers of clients the other test dropped may still be ending.
    assert_eq!(workers_within(TEN_SECONDS, 0), 0, "workers left over");
    let client = client_of(&url, true, 8);
    assert_eq!(client.inspect("one-key").unwrap(), None);
    assert_eq!(client.inspect("one-key").unwrap(), None);
    assert_eq!(worker_threads(), 1, "one key's calls, one thread");
    for i in 0..40 {
        assert_eq!(client.inspect(&format!("key-{i}")).unwrap(), None);
    }
    assert_eq!(worker_threads(), 8, "forty keys spread over all eight");
    drop(client);
    // The workers end once their pool is gone.
    assert_eq!(
        workers_within(TEN_SECONDS, 0),
        0,
        "the workers ended with their client"
    );
}

#[cfg(target_os = "linux")]
const TEN_SECONDS: std::time::Duration = std::time::Duration::from_secs(10);

/// The worker threads alive once there are `expected` of them, or when
/// `limit` has passed (threads end a little after their pool).
#[cfg(target_os = "linux")]
fn workers_within(limit: std::time::Duration, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let alive = worker_threads();
        if alive == expected || std::time::Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
