//! SIGINT, SIGTERM and SIGHUP, caught so they can be forwarded to the
//! command's process group (and so waiting can stop cleanly) rather than
//! kill us with the lock held. And Ctrl-Z: SIGTSTP stops the command's
//! group with us (as a shell stops a whole job), SIGCONT resumes it.
//! While we are stopped the lock is not renewed; the guardian (see
//! `tree`) ends the group at the lock's deadline all the same.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, OnceLock};

/// Set by SIGCONT's handler itself (not the signal thread, which may run
/// later than the thread that looks): this process was stopped meanwhile.
static CONTINUED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Whether a SIGCONT came since the last call (see `claim::stall`).
pub fn take_continued() -> bool {
    CONTINUED
        .get()
        .is_some_and(|flag| flag.swap(false, Ordering::SeqCst))
}

/// The signals caught, unless ignored when we started (see `catch`).
const CAUGHT: [i32; 5] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGTSTP,
    libc::SIGCONT,
];

/// Catches the signals of `CAUGHT` that were not ignored when this process
/// started. One ignored then (`nohup`'s SIGHUP; SIGINT in a script's
/// background job) stays ignored, for us and for the command, which
/// inherits an ignored disposition, where a caught one is reset to its
/// default by exec: the user's choice holds for the whole job.
pub fn catch() -> std::io::Result<Receiver<i32>> {
    static WANTED: OnceLock<Vec<i32>> = OnceLock::new();
    let wanted = WANTED.get_or_init(|| CAUGHT.into_iter().filter(|&s| !ignored(s)).collect());
    if CONTINUED.get().is_none() && wanted.contains(&libc::SIGCONT) {
        let flag = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(libc::SIGCONT, flag.clone())?;
        let _ = CONTINUED.set(flag);
    }
    let mut signals = signal_hook::iterator::Signals::new(wanted)?;
    let (tx, rx) = channel();
    std::thread::Builder::new()
        .name("s3-lease-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                match signal {
                    libc::SIGTSTP => {
                        crate::tree::signal_running_group(libc::SIGTSTP);
                        // Then stop ourselves, as SIGTSTP's default would.
                        let _ = signal_hook::low_level::emulate_default_handler(libc::SIGTSTP);
                    }
                    // We run again (after a stop of any kind): so does the
                    // command.
                    libc::SIGCONT => crate::tree::signal_running_group(libc::SIGCONT),
                    _ => {
                        if tx.send(signal).is_err() {
                            break;
                        }
                    }
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

/// Whether `signal` is ignored now (before we catch it: as we were started).
fn ignored(signal: i32) -> bool {
    // SAFETY: sigaction with no new action only reads the current one into
    // `old`, a plain C struct we own; no handler is installed or changed.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}
