//! How `--serve` takes connections without taking what the lease needs
//! (descriptors for its reconnects to the store, a core for its renews):
//!
//! - At most `MAX_CONNECTIONS` at once (a few scrapers and probes need a
//!   handful), and never more than an eighth of the descriptor limit.
//! - None accepted into the last quarter of the descriptor limit, however
//!   the process came to use the rest (counted in `/proc/self/fd` before
//!   each connection is served).
//! - Past either, a connection is answered `503` at once and closed. Up to
//!   `LINGERING` of them at a time are given `LINGER` to send their
//!   request first, so that the close is clean (a close with a request
//!   unread is a reset, which can discard the `503` before it is read);
//!   the others are refused on the accepting task, keeping nothing. A
//!   probe behind a flood of refused connections is answered in turn
//!   without delay. (A client that reconnects in a loop costs us an
//!   accept, a read, a write and a close each time: work that it drives,
//!   not a loop of ours.)
//! - A request's head must arrive within `HEADER_TIMEOUT`, and an idle
//!   keep-alive connection is closed after it (hyper's header read timeout
//!   covers both); any connection is closed after `CONNECTION_LIMIT`,
//!   whatever it does (a client that never reads its reply).
//! - An accept that fails (EMFILE: descriptors spent) is retried after a
//!   backoff that doubles up to a second, never at once.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// The most connections served at once.
pub const MAX_CONNECTIONS: u64 = 64;
/// A request's head, and the wait for the next one on a kept-alive
/// connection, within this.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection's whole life, whatever it does.
pub const CONNECTION_LIMIT: Duration = Duration::from_secs(30);
/// Refused connections given time to send their request, at once.
const LINGERING: usize = 8;
/// How long each of those is given.
const LINGER: Duration = Duration::from_millis(100);
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_MOST: Duration = Duration::from_secs(1);

const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 72\r\n\r\ntoo many connections to s3-lease's status server; try again in a moment\n";

/// What the status server may take, from the process's descriptor limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once.
    pub connections: u64,
    /// The descriptor limit (`None`: unknown or unlimited).
    pub descriptors: Option<u64>,
}

impl Limits {
    pub fn new(descriptors: Option<u64>) -> Limits {
        Limits {
            connections: descriptors.map_or(MAX_CONNECTIONS, |d| (d / 8).clamp(1, MAX_CONNECTIONS)),
            descriptors,
        }
    }

    /// From this process's soft `RLIMIT_NOFILE`.
    pub fn of_this_process() -> Limits {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        Limits::new(limit.current)
    }

    /// Whether one more connection leaves the lease its quarter of the
    /// descriptors, `open` being in use now (the new one among them).
    pub fn room(&self, open: Option<u64>) -> bool {
        match (self.descriptors, open) {
            (Some(limit), Some(open)) => open <= limit - limit / 4,
            _ => true,
        }
    }
}

/// Descriptors this process has open (Linux; `None` elsewhere).
fn open_descriptors() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    // The directory's own descriptor is among them.
    Some((entries.count() as u64).saturating_sub(1))
}

/// The pause before retrying a failed accept: doubling, reset by a success.
#[derive(Debug, Default)]
pub struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    pub fn failed(&mut self) -> Duration {
        let pause = self.next.unwrap_or(BACKOFF_FIRST);
        self.next = Some((pause * 2).min(BACKOFF_MOST));
        pause
    }

    pub fn succeeded(&mut self) {
        self.next = None;
    }
}

/// Accepts connections for ever, serving each with `serve` within the
/// limits above.
pub async fn accept_forever<F, Fut>(listener: TcpListener, limits: Limits, serve: F)
where
    F: Fn(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(
        usize::try_from(limits.connections).unwrap_or(usize::MAX),
    ));
    let lingering = Arc::new(Semaphore::new(LINGERING));
    let mut backoff = Backoff::default();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                backoff.succeeded();
                stream
            }
            Err(_) => {
                tokio::time::sleep(backoff.failed()).await;
                continue;
            }
        };
        let permit = match permits.clone().try_acquire_owned() {
            Ok(permit) if limits.room(open_descriptors()) => permit,
            _ => {
                match lingering.clone().try_acquire_owned() {
                    Ok(lingers) => {
                        tokio::spawn(async move {
                            let _ = tokio::time::timeout(LINGER, stream.readable()).await;
                            refuse(stream);
                            drop(lingers);
                        });
                    }
                    Err(_) => refuse(stream),
                }
                continue;
            }
        };
        let serving = serve(stream);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(CONNECTION_LIMIT, serving).await;
            drop(permit);
        });
    }
}

/// `503` to a connection past the limit, then closed. What it already
/// sent (its request, usually) is read and dropped first, so that the
/// close is a clean one rather than a reset that could discard the reply.
fn refuse(stream: TcpStream) {
    let mut buf = [0u8; 1024];
    while matches!(stream.try_read(&mut buf), Ok(n) if n > 0) {}
    let _ = stream.try_write(BUSY);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_an_eighth_of_the_descriptors_at_most() {
        assert_eq!(Limits::new(None).connections, MAX_CONNECTIONS);
        assert_eq!(Limits::new(Some(1_048_576)).connections, MAX_CONNECTIONS);
        assert_eq!(Limits::new(Some(256)).connections, 32);
        assert_eq!(Limits::new(Some(4)).connections, 1);
    }

    #[test]
    fn the_last_quarter_of_the_descriptors_is_the_leases() {
        let limits = Limits::new(Some(256));
        assert!(limits.room(Some(40)));
        assert!(limits.room(Some(192)));
        assert!(!limits.room(Some(193)));
        assert!(Limits::new(None).room(Some(10_000)));
        assert!(limits.room(None));
    }

    #[test]
    fn failed_accepts_back_off_to_a_second() {
        let mut b = Backoff::default();
        let pauses: Vec<u64> = (0..9).map(|_| b.failed().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1_000, 1_000]);
        b.succeeded();
        assert_eq!(b.failed(), BACKOFF_FIRST);
    }

    #[test]
    fn the_busy_reply_is_well_formed() {
        let text = std::str::from_utf8(BUSY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
    }
}
