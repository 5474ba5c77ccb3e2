//! Standard output that ends quietly when its reader goes away
//! (`s3-lease status | head -1`, `s3-lease preflight --json | head -c0`),
//! as Unix tools do.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with EPIPE, and
//! `println!` panics on it. Restoring SIGPIPE's default would end the
//! process at the write instead, but `run` and `elect` hold leases: they
//! must stop their command and release whatever their own stdout does, so
//! the signal stays ignored and the writes here take the error instead.
//! Once the reader is gone, further output is dropped and the command ends
//! as it would have (the preflight's verdict, a status's 0), with nothing
//! said: the reader chose to stop reading. Whether it read everything first
//! is a race between it and us that a status cannot report reliably (GNU
//! tools' 141 under `set -o pipefail` is that race's well-known symptom).
//! A lease is different: `acquire` and `renew` print the only copy, so one
//! printed to nobody is released, and they exit `PIPE_CLOSED`.

use std::fmt::Arguments;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// 128 + SIGPIPE: what a shell reports for a process the signal ended.
pub const PIPE_CLOSED: i32 = 141;

static CLOSED: AtomicBool = AtomicBool::new(false);
/// A write that failed otherwise (a full disk, say): reported at exit.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// `println!`, minus the panic: output after stdout is gone is dropped.
macro_rules! say {
    () => { $crate::out::write_line(format_args!("")) };
    ($($arg:tt)*) => { $crate::out::write_line(format_args!($($arg)*)) };
}
pub(crate) use say;

pub fn write_line(line: Arguments) {
    write_with(|out| {
        out.write_fmt(line)?;
        out.write_all(b"\n")?;
        out.flush()
    });
}

/// Raw bytes (`fenced get`'s body), flushed.
pub fn write_bytes(bytes: &[u8]) {
    write_with(|out| {
        out.write_all(bytes)?;
        out.flush()
    });
}

fn write_with(write: impl FnOnce(&mut std::io::StdoutLock) -> std::io::Result<()>) {
    if closed() {
        return;
    }
    if let Err(e) = write(&mut std::io::stdout().lock()) {
        CLOSED.store(true, Ordering::SeqCst);
        if e.kind() != ErrorKind::BrokenPipe {
            let mut failed = FAILED.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert_with(|| e.to_string());
        }
    }
}

/// Stdout can take no more: its reader went away (or a write failed).
pub fn closed() -> bool {
    CLOSED.load(Ordering::SeqCst)
}

/// Why a write to stdout failed, other than its reader going away.
pub fn failure() -> Option<String> {
    FAILED.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
