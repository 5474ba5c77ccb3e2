//! A TCP proxy on loopback in front of one upstream (SeaweedFS's S3 port),
//! that a test makes misbehave at any moment: one per client process, so a
//! fault hits that process only.
//!
//! [`FaultProxy::set`] takes effect at once (within [`POLL`]) on the
//! connections already open and on new ones:
//!
//! - [`Fault::Pass`]: bytes go both ways.
//! - [`Fault::Silent`]: nothing goes either way; connections are still
//!   accepted and held open, nothing is refused or reset (a network that
//!   went silent). Bytes sent meanwhile are delivered if it passes again.
//! - [`Fault::Slow`]: each chunk of a reply is held this long first.
//! - [`Fault::Reset`]: connections are reset (RST: `SO_LINGER` 0, then
//!   close), those open and each new one.
//! - [`Fault::CutMidBody`]: the next reply on each connection is cut short
//!   ([`cut_point`]: its headers and part of its body), then the
//!   connection is closed.
//!
//! Plain threads: one accepting, two per connection (one per direction),
//! each waking every [`POLL`] to see the fault and whether the proxy was
//! dropped; dropping the handle stops and joins them all.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the proxy does to the bytes, from now on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Pass,
    Silent,
    Slow(Duration),
    Reset,
    CutMidBody,
}

/// How soon a change of fault (or the drop of the handle) is seen.
pub const POLL: Duration = Duration::from_millis(20);

/// A running proxy; stopped (every thread joined) when dropped.
pub struct FaultProxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    upstream: SocketAddr,
    fault: Mutex<Fault>,
    stop: AtomicBool,
    /// When the proxy last began passing reply bytes on to the client.
    last_reply: Mutex<Option<Instant>>,
    connections: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn fault(&self) -> Fault {
        *lock(&self.fault)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

impl FaultProxy {
    /// A proxy on `127.0.0.1:0` passing everything to `upstream`.
    pub fn start(upstream: impl ToSocketAddrs) -> io::Result<FaultProxy> {
        let upstream = upstream.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(ErrorKind::InvalidInput, "the upstream has no address")
        })?;
        let listener = TcpListener::bind(("127.0.0.1", 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            fault: Mutex::new(Fault::Pass),
            stop: AtomicBool::new(false),
            last_reply: Mutex::new(None),
            connections: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name(format!("fault-proxy-{}", addr.port()))
                .spawn(move || accept(&shared, listener))?
        };
        Ok(FaultProxy {
            shared,
            addr,
            acceptor: Some(acceptor),
        })
    }

    /// A proxy in front of the `host:port` of an `http://` endpoint URL.
    pub fn in_front_of(url: &str) -> io::Result<FaultProxy> {
        let authority = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                io::Error::new(
                    ErrorKind::InvalidInput,
                    format!("not an http://host:port endpoint: {url}"),
                )
            })?;
        FaultProxy::start(authority)
    }

    /// `http://127.0.0.1:PORT`: the endpoint to give the client instead.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// From now on, for the connections open and the new ones.
    /// Changes the fault. Under the reply record's lock, which a reply
    /// chunk holds from its last look at the fault until it is recorded:
    /// once this returns, every reply that passed before it is in
    /// [`FaultProxy::last_reply`], and none passes after it while silent.
    pub fn set(&self, fault: Fault) {
        let _record = lock(&self.shared.last_reply);
        *lock(&self.shared.fault) = fault;
    }

    pub fn fault(&self) -> Fault {
        self.shared.fault()
    }

    /// When the proxy last began passing reply bytes on to the client
    /// (`None`: never): no reply reached it later than this.
    pub fn last_reply(&self) -> Option<Instant> {
        *lock(&self.shared.last_reply)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the acceptor from `accept`; it sees `stop` and returns.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        let connections = std::mem::take(&mut *lock(&self.shared.connections));
        for connection in connections {
            let _ = connection.join();
        }
    }
}

fn accept(shared: &Arc<Shared>, listener: TcpListener) {
    while !shared.stopped() {
        let client = match listener.accept() {
            Ok((client, _)) => client,
            Err(_) => {
                std::thread::sleep(POLL);
                continue;
            }
        };
        if shared.stopped() {
            return;
        }
        let spawned = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("fault-proxy-conn".into())
                .spawn(move || connection(&shared, client))
        };
        let mut connections = lock(&shared.connections);
        connections.retain(|c| !c.is_finished());
        if let Ok(handle) = spawned {
            connections.push(handle);
        }
    }
}

/// One connection: the reply direction on this thread, the request
/// direction on another; both streams are closed when both are done.
fn connection(shared: &Arc<Shared>, client: TcpStream) {
    if shared.fault() == Fault::Reset {
        reset(&client, None);
        return;
    }
    let Ok(upstream) = TcpStream::connect_timeout(&shared.upstream, Duration::from_secs(5)) else {
        return;
    };
    let pair = (|| -> io::Result<_> {
        for s in [&client, &upstream] {
            s.set_read_timeout(Some(POLL))?;
            s.set_write_timeout(Some(POLL))?;
            s.set_nodelay(true)?;
        }
        Ok(Conn {
            client: client.try_clone()?,
            upstream: upstream.try_clone()?,
            ended: AtomicBool::new(false),
        })
    })();
    let Ok(conn) = pair else { return };
    let conn = Arc::new(conn);
    let requests = {
        let (shared, conn) = (shared.clone(), conn.clone());
        std::thread::Builder::new()
            .name("fault-proxy-up".into())
            .spawn(move || {
                let (mut from, mut to) = (&conn.client, &conn.upstream);
                pump(&shared, &conn, &mut from, &mut to, Direction::Request);
            })
    };
    {
        let (mut from, mut to) = (&conn.upstream, &conn.client);
        pump(shared, &conn, &mut from, &mut to, Direction::Reply);
    }
    if let Ok(requests) = requests {
        let _ = requests.join();
    }
    // The last handles on both sockets close here (with RST if reset).
}

struct Conn {
    client: TcpStream,
    upstream: TcpStream,
    /// Set by the direction that ended the connection, for the other.
    ended: AtomicBool,
}

impl Conn {
    fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Closes both ways now (FIN), for both directions.
    fn close(&self) {
        self.ended.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.upstream.shutdown(Shutdown::Both);
    }

    /// RST when the sockets are closed (no shutdown: that would send FIN).
    fn reset(&self) {
        self.ended.store(true, Ordering::SeqCst);
        reset(&self.client, Some(&self.upstream));
    }
}

/// `SO_LINGER` 0 on the sockets: their close sends RST, not FIN.
fn reset(client: &TcpStream, upstream: Option<&TcpStream>) {
    for s in std::iter::once(client).chain(upstream) {
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt(2) on the fd of a live TcpStream (borrowed, so
        // open for the whole call), with a pointer to an initialized
        // `linger` that outlives the call and its exact size.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast::<libc::c_void>(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Client to upstream.
    Request,
    /// Upstream to client: the one `Slow` and `CutMidBody` act on.
    Reply,
}

fn timed_out(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Moves chunks `from` → `to` under the current fault until either side
/// closes, the connection is reset or cut, or the proxy is dropped.
fn pump(
    shared: &Shared,
    conn: &Conn,
    from: &mut &TcpStream,
    to: &mut &TcpStream,
    direction: Direction,
) {
    let mut buf = vec![0u8; 16 * 1024];
    // A chunk read but not passed on yet (held while silent); and whether
    // it has already had its `Slow` delay.
    let mut held: Option<(Vec<u8>, bool)> = None;
    loop {
        if shared.stopped() || conn.ended() {
            return;
        }
        match shared.fault() {
            Fault::Reset => return conn.reset(),
            // Read nothing: what was sent waits in the kernel's buffers.
            Fault::Silent => {
                std::thread::sleep(POLL);
                continue;
            }
            _ => {}
        }
        let (chunk, delayed) = match held.take() {
            Some(held) => held,
            None => match from.read(&mut buf) {
                Ok(0) => {
                    // Half-close, as the peer did: the other way may go on.
                    let _ = to.shutdown(Shutdown::Write);
                    return;
                }
                Ok(n) => (buf[..n].to_vec(), false),
                Err(e) if timed_out(&e) => continue,
                Err(_) => return conn.close(),
            },
        };
        // The fault now, which may have changed during the read.
        let reply = direction == Direction::Reply;
        match shared.fault() {
            Fault::Reset => return conn.reset(),
            Fault::Silent => {
                held = Some((chunk, delayed));
                continue;
            }
            Fault::Slow(delay) if reply && !delayed => {
                if !sleep_unless_stopped(shared, conn, delay) {
                    return;
                }
                // Looked at again: the fault may have changed meanwhile.
                held = Some((chunk, true));
                continue;
            }
            Fault::CutMidBody if reply => {
                let _ = write_all(shared, conn, to, &chunk[..cut_point(&chunk)]);
                return conn.close();
            }
            _ => {}
        }
        if reply {
            // Recorded before the write, and with the fault looked at again
            // under the record's lock (which `set` takes): a test that makes
            // the proxy silent and then reads the last reply never misses
            // one the client is about to get, which would let a renew the
            // test did not count keep a leader past the deadline it checks.
            let mut record = lock(&shared.last_reply);
            if shared.fault() == Fault::Silent {
                held = Some((chunk, delayed));
                continue;
            }
            *record = Some(Instant::now());
        }
        if write_all(shared, conn, to, &chunk).is_err() {
            return conn.close();
        }
    }
}

/// How much of a reply's chunk `CutMidBody` passes on, always less than
/// all of it: the headers and half the body bytes that came with them (at
/// most 16); with no body bytes, the headers without their closing blank
/// line; with no end of headers in the chunk, its first half.
pub fn cut_point(chunk: &[u8]) -> usize {
    match chunk.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(at) => {
            let head = at + 4;
            let body = chunk.len() - head;
            if body > 0 {
                head + (body / 2).min(16)
            } else {
                at + 2
            }
        }
        None => chunk.len() / 2,
    }
}

/// Sleeps `delay` in slices; false if the proxy stopped or the connection
/// ended meanwhile.
fn sleep_unless_stopped(shared: &Shared, conn: &Conn, delay: Duration) -> bool {
    let until = Instant::now() + delay;
    loop {
        if shared.stopped() || conn.ended() {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(POLL));
    }
}

/// `write_all` that gives up when the proxy stops or the connection ends
/// (each write times out after `POLL`, so a peer that reads nothing cannot
/// hold this thread).
fn write_all(shared: &Shared, conn: &Conn, to: &mut &TcpStream, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        if shared.stopped() || conn.ended() {
            return Err(ErrorKind::ConnectionAborted.into());
        }
        match to.write(data) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if timed_out(&e) || e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
