//! A process's credential refresher, run as the host runs it (a thread
//! beside the calls, `host/src/credentials/refresh.rs`):
//! `s3_lease_keep::refresh` says when to fetch; the refresher sleeps until
//! then, re-reading the wall clock each time it wakes (its sleeps are
//! monotonic), fetches from the source (which takes time, and may fail),
//! tells the schedule what came of it, and puts new keys into the client
//! as `set-credentials` does, while calls go on.

use crate::config::check_credentials;
use crate::driver::Io;
use crate::error::Error;
use crate::sigv4::Credentials;
use crate::testing::sim::host::SimIo;
use crate::testing::sim::START_MS;
use s3_lease_keep::refresh::Refresh;

/// How long the host's thread sleeps when nothing expires.
const IDLE_MS: u64 = 3_600_000;

pub async fn run(mut io: SimIo) {
    // The keys the process starts with: fetched before its client was
    // made (a process whose first fetch failed would not have started).
    let fetched_at = io.now_ms();
    io.with(|w, id| w.fetch_began(id, fetched_at));
    let Some((mut current, expires)) = io.with(|w, _| w.source.fetch(START_MS + w.now, true))
    else {
        return;
    };
    if install(&io, &current).is_err() {
        return;
    }
    let mut schedule = Refresh::new(fetched_at, Some(expires));
    loop {
        loop {
            let now = io.now_ms();
            match schedule.due() {
                Some(due) if due <= now => break,
                Some(due) => io.sleep_ms(due - now).await,
                None => io.sleep_ms(IDLE_MS).await,
            }
        }
        let fetched_at = io.now_ms();
        io.with(|w, id| w.fetch_began(id, fetched_at));
        let takes = io.with(|w, _| w.source.fetch_takes_ms());
        io.pause(takes).await;
        let Some((fetched, expires)) = io.with(|w, _| w.source.fetch(START_MS + w.now, false))
        else {
            io.with(|w, _| w.report.credential_fetches_failed += 1);
            schedule.failed(fetched_at);
            continue;
        };
        // As the host: only new keys go in, and keys it cannot put in
        // count as a failed fetch (the old ones stay).
        if fetched != current {
            if install(&io, &fetched).is_err() {
                schedule.failed(fetched_at);
                continue;
            }
            current = fetched;
        }
        schedule.fetched(fetched_at, Some(expires));
    }
}

/// `set-credentials`: checked as the component checks them, then signed
/// with from the process's next request on, even one of a call under way.
fn install(io: &SimIo, credentials: &Credentials) -> Result<(), Error> {
    check_credentials(credentials)?;
    io.with(|w, id| {
        let c = &mut w.hosts[id].credentials;
        c.installed = Some(credentials.clone());
        c.stalled = false;
        w.report.credentials_installed += 1;
    });
    Ok(())
}
