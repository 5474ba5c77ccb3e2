//! The proxy's own tests: each fault seen by a client with timeouts.
use super::*;

/// An HTTP-ish upstream: each chunk it reads comes back as the body of
/// a `200` reply. Stops (all threads joined) when dropped.
struct Upstream {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let acceptor = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut served = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let Ok((mut s, _)) = listener.accept() else {
                        continue;
                    };
                    let stop = stop.clone();
                    served.push(std::thread::spawn(move || {
                        s.set_read_timeout(Some(POLL)).unwrap();
                        let mut buf = [0u8; 4096];
                        while !stop.load(Ordering::SeqCst) {
                            match s.read(&mut buf) {
                                Ok(0) => return,
                                Ok(n) => {
                                    let head =
                                        format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n");
                                    let mut reply = head.into_bytes();
                                    reply.extend_from_slice(&buf[..n]);
                                    if s.write_all(&reply).is_err() {
                                        return;
                                    }
                                }
                                Err(e) if timed_out(&e) => {}
                                Err(_) => return,
                            }
                        }
                    }));
                }
                for s in served {
                    let _ = s.join();
                }
            })
        };
        Upstream {
            addr,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

fn client(proxy: &FaultProxy) -> TcpStream {
    let s = TcpStream::connect_timeout(&proxy.addr(), Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    s
}

fn reply_to(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads until `want` bytes came, the peer closed, or a read timed out.
fn read_some(s: &mut TcpStream, want: usize) -> io::Result<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while got.len() < want {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if timed_out(&e) && !got.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn exchange(s: &mut TcpStream, body: &str) -> io::Result<String> {
    s.write_all(body.as_bytes())?;
    let want = reply_to(body).len();
    Ok(String::from_utf8(read_some(s, want)?).unwrap())
}

#[test]
fn pass_forwards_both_ways() {
    let upstream = Upstream::start();
    let proxy = FaultProxy::start(upstream.addr).unwrap();
    assert!(proxy.url().starts_with("http://127.0.0.1:"));
    assert_eq!(proxy.last_reply(), None);
    let mut s = client(&proxy);
    assert_eq!(exchange(&mut s, "hello").unwrap(), reply_to("hello"));
    assert_eq!(exchange(&mut s, "again").unwrap(), reply_to("again"));
    assert!(proxy.last_reply().is_some());
}

#[test]
fn silent_holds_connections_open_and_forwards_nothing() {
    let upstream = Upstream::start();
    let proxy = FaultProxy::in_front_of(&format!("http://{}/", upstream.addr)).unwrap();
    let mut open = client(&proxy);
    assert_eq!(exchange(&mut open, "before").unwrap(), reply_to("before"));
    proxy.set(Fault::Silent);
    let silent_since = Instant::now();
    // An open connection: the request goes nowhere, no reply, no close.
    open.write_all(b"during").unwrap();
    let err = read_some(&mut open, 1).unwrap_err();
    assert!(timed_out(&err), "{err:?}");
    // A new connection is accepted, and just as silent.
    let mut new = client(&proxy);
    new.write_all(b"new").unwrap();
    let err = read_some(&mut new, 1).unwrap_err();
    assert!(timed_out(&err), "{err:?}");
    assert!(proxy.last_reply().unwrap() < silent_since);
    // Passing again, what was sent meanwhile arrives.
    proxy.set(Fault::Pass);
    let want = reply_to("during");
    assert_eq!(read_some(&mut open, want.len()).unwrap(), want.as_bytes());
    let want = reply_to("new");
    assert_eq!(read_some(&mut new, want.len()).unwrap(), want.as_bytes());
}

#[test]
fn slow_delays_each_reply() {
    let upstream = Upstream::start();
    let proxy = FaultProxy::start(upstream.addr).unwrap();
    let mut s = client(&proxy);
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(exchange(&mut s, "warm").unwrap(), reply_to("warm"));
    proxy.set(Fault::Slow(Duration::from_millis(400)));
    for body in ["one", "two"] {
        let sent = Instant::now();
        assert_eq!(exchange(&mut s, body).unwrap(), reply_to(body));
        let took = sent.elapsed();
        assert!(
            took >= Duration::from_millis(400) && took < Duration::from_millis(1_500),
            "{took:?}"
        );
    }
}

#[test]
fn reset_resets_open_and_new_connections() {
    let upstream = Upstream::start();
    let proxy = FaultProxy::start(upstream.addr).unwrap();
    let mut open = client(&proxy);
    open.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(exchange(&mut open, "hi").unwrap(), reply_to("hi"));
    proxy.set(Fault::Reset);
    let err = read_some(&mut open, 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err:?}");
    // A new one is reset as soon as it is accepted (nothing written:
    // a write could take the reset's error, leaving a plain EOF). The
    // reset can arrive before the first read, even before connect
    // returns: setting the read timeout, or connect itself, then
    // reports it.
    let err = TcpStream::connect_timeout(&proxy.addr(), Duration::from_secs(2))
        .and_then(|mut new| {
            new.set_read_timeout(Some(Duration::from_secs(2)))?;
            read_some(&mut new, 1).map(drop)
        })
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err:?}");
}

#[test]
fn cut_mid_body_sends_the_headers_and_part_of_the_body_then_closes() {
    let upstream = Upstream::start();
    let proxy = FaultProxy::start(upstream.addr).unwrap();
    let body = "0123456789abcdefghij";
    for open_before in [true, false] {
        let mut s = client(&proxy);
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        if open_before {
            assert_eq!(exchange(&mut s, "hi").unwrap(), reply_to("hi"));
        }
        proxy.set(Fault::CutMidBody);
        s.write_all(body.as_bytes()).unwrap();
        // Everything up to the close: a clean EOF, not a timeout.
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        let full = reply_to(body);
        let head = full.len() - body.len();
        assert_eq!(got.len(), head + body.len() / 2, "{got:?}");
        assert_eq!(got, full.as_bytes()[..got.len()]);
        proxy.set(Fault::Pass);
    }
}

#[test]
fn cut_point_is_always_short_of_the_chunk() {
    assert_eq!(cut_point(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\n"), 23);
    assert_eq!(cut_point(b"HTTP/1.1 200 OK\r\n\r\nx"), 19);
    assert_eq!(cut_point(b"HTTP/1.1 2"), 5);
    let long = [b"H\r\n\r\n".as_slice(), &[b'x'; 100]].concat();
    assert_eq!(cut_point(&long), 5 + 16);
}

#[test]
fn dropping_the_proxy_stops_it() {
    let upstream = Upstream::start();
    let proxy = FaultProxy::start(upstream.addr).unwrap();
    let addr = proxy.addr();
    let mut open = client(&proxy);
    open.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    assert_eq!(exchange(&mut open, "hi").unwrap(), reply_to("hi"));
    proxy.set(Fault::Silent);
    let dropping = Instant::now();
    drop(proxy);
    assert!(
        dropping.elapsed() < Duration::from_secs(1),
        "{:?}",
        dropping.elapsed()
    );
    // The open connection is closed, and no new one is accepted.
    let mut buf = [0u8; 16];
    match open.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        other => panic!("expected a close, got {other:?}"),
    }
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
    assert!(refused.is_err(), "{refused:?}");
}
