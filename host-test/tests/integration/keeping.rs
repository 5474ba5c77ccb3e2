//! A client keeping leases over its whole life: its scheduler holds one
//! entry per lease however often they renew, it keeps renewing whatever
//! runtime the client was connected on, a close releases everything held,
//! and no order of drops and runtime shutdowns panics.

use super::{acquire_options as options, endpoint, fresh_prefix, harness};
use s3_lease_host::{Client, ClientStats, LeaseStatus};
use std::time::{Duration, Instant};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn client(prefix: &str) -> Client {
    let config = endpoint().host_config(prefix).unwrap();
    Client::connect(harness().runtime(), &config).await.unwrap()
}

/// 20 leases at ttl 300 ms (a renew every 90 ms each) held for 3 s: the
/// scheduler never holds more entries than the leases it keeps, and the
/// renews flow. (The old scheduler pushed two entries for each one it
/// took out, so its heap grew with every renew.)
#[test]
fn the_scheduler_holds_one_entry_per_lease_however_often_they_renew() {
    let _ = (endpoint(), harness());
    runtime().block_on(async {
        let prefix = fresh_prefix("keeping-entries");
        let c = client(&prefix).await;
        let mut leases = Vec::new();
        for i in 0..20 {
            let lease = c.try_acquire(&format!("k{i}"), &options(300)).await;
            leases.push(lease.unwrap().expect("free"));
        }
        let start = Instant::now();
        let mut most = ClientStats::default();
        while start.elapsed() < Duration::from_secs(3) {
            let stats = c.stats();
            assert!(
                stats.scheduled_entries <= stats.leases_kept && stats.leases_kept <= 20,
                "more entries than leases: {stats:?}"
            );
            most.scheduled_entries = most.scheduled_entries.max(stats.scheduled_entries);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let stats = c.stats();
        // About 33 renews a lease in 3 s; a loaded machine sends fewer.
        assert!(stats.renews_sent >= 20 * 10, "renews stalled: {stats:?}");
        let held = leases.iter().filter(|l| l.is_held()).count();
        for lease in leases.iter().filter(|l| !l.is_held()) {
            eprintln!("keeping: lost {:?}", lease.lost_reason());
        }
        eprintln!(
            "keeping: {held}/20 held after 3 s, {stats:?}, most entries {}",
            most.scheduled_entries
        );
        drop(leases);
    });
}
