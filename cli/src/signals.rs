//! SIGINT, SIGTERM and SIGHUP, caught so they can be forwarded to the
//! command's process group (and so waiting can stop cleanly) rather than
//! kill us with the lock held.

use std::sync::mpsc::{channel, Receiver};

pub fn catch() -> std::io::Result<Receiver<i32>> {
    let mut signals =
        signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("s3-lease-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if tx.send(signal).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}

pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}
