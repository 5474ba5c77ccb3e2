//! Leader election with s3-lease, the part to copy: connect, elect, do the
//! leader's work fenced by its token, step down on Ctrl-C.
//!
//! Run two or more (`cargo run -p leader-election`), with S3 from the usual
//! AWS variables and the bucket in `S3LEASE_BUCKET`: one leads and writes
//! the state object every second; stop it (Ctrl-C) and another takes over
//! with a higher token, which the state object then requires. The demo
//! (`scripts/demo.sh`, `src/demo/`) plays a whole failover story.

use anyhow::{Context, Result};
use s3_lease_host::{Client, ElectorConfig, Role, Runtime, StoreConfig};
use std::time::Duration;

const STATE: &str = "leader-election/state.json";

#[tokio::main]
async fn main() -> Result<()> {
    let bucket = std::env::var("S3LEASE_BUCKET").context("S3LEASE_BUCKET: the bucket")?;
    let runtime = Runtime::new().context("loading the component")?;
    let client = Client::connect(&runtime, &StoreConfig::from_env(&bucket)?).await?;
    let elector = client.elect(&ElectorConfig::new("leader-election")).await?;
    let mut role = elector.watch_role();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        tokio::select! {
            _ = &mut ctrl_c => break,
            changed = role.changed() => {
                changed.context("the elector stopped")?;
                println!("role: {}", describe(&role.borrow()));
            }
            _ = tick.tick() => {
                // The leader's work: every write carries the lease's token,
                // so a leader that lost its lease unknowingly is refused by
                // the store once a newer leader has written.
                let lease = match &*role.borrow() {
                    Role::Leader(lease) => Some(lease.clone()),
                    _ => None,
                };
                if let Some(lease) = lease {
                    let body = format!("{{\"leader\":\"{}\",\"token\":{}}}", lease.holder_id, lease.token);
                    match client.fenced_put(&lease, STATE, body.into_bytes(), "application/json").await {
                        Ok(_) => println!("wrote {STATE} with token {}", lease.token),
                        Err(e) => println!("write refused: {e}"),
                    }
                }
            }
        }
    }
    // Step down at once, so that another node need not wait out the lease.
    elector.resign().await?;
    client.close(Duration::from_secs(5)).await;
    Ok(())
}

fn describe(role: &Role) -> String {
    match role {
        Role::Leader(lease) => format!("leader with token {}", lease.token),
        Role::Follower(state) => {
            let holder = state.as_ref().and_then(|s| s.holder_id.as_deref());
            format!("following {}", holder.unwrap_or("another node"))
        }
        _ => "candidate".to_string(),
    }
}
