//! SIGINT and SIGTERM, caught so they can be forwarded to the command (and
//! so waiting can stop cleanly) rather than kill us with the lock held.

use std::sync::mpsc::{channel, Receiver};

pub fn catch() -> std::io::Result<Receiver<i32>> {
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])?;
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

/// Sends `signal` to process `pid` (the command we started).
pub fn send(pid: u32, signal: i32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) takes plain integers; a pid that has exited
        // (and not been reaped: we reap it ourselves) is still ours.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGKILL => "SIGKILL",
        _ => "a signal",
    }
}
