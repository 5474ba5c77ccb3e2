//! Every line the command line writes to stderr goes through here: handed
//! to a thread of its own through a bounded queue, so that no caller ever
//! waits on stderr, and nothing it does to stderr can panic.
//!
//! The paths that must act (signal the command's group, release, step
//! down; the guardian's SIGTERM and SIGKILL) run on threads that write
//! nothing themselves: a stderr that is a pipe whose reader is gone (`|
//! head`, a restarted log shipper), a pipe nobody reads (a stuck shipper, a
//! terminal paused with Ctrl-S), a full disk (`/dev/full`) or a closed
//! descriptor changes when nothing acts. Lines are best effort: a line the
//! queue has no room for is dropped, and so is one whose write fails
//! (EPIPE, EIO, ENOSPC, EAGAIN on a descriptor someone made non-blocking,
//! anything else); they are counted, and once stderr takes lines again a
//! note says how many were lost. (A closed descriptor 2 never reaches us:
//! Rust's runtime opens `/dev/null` on it before `main`.)

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Lines waiting for the writer; past this, new ones are dropped. (A
/// process says a few lines a minute; a burst of failed requests is held
/// back to one line a second before it gets here.)
const QUEUE: usize = 256;

/// How a note about lost lines reads, given how many.
pub type Note = fn(u64) -> String;

/// A writer thread and the queue to it.
pub struct Lines {
    /// `None` when no thread could be started: every line is dropped.
    queue: Option<SyncSender<String>>,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    /// Lines queued, and lines the writer is done with (written or not).
    queued: AtomicU64,
    done: AtomicU64,
    /// Lines lost: no room in the queue, or their write failed.
    lost: AtomicU64,
}

impl Lines {
    /// Starts the writer thread, writing to `target`; `note` words the
    /// line that says how many were lost.
    pub fn start(target: impl Write + Send + 'static, note: Note) -> Lines {
        let counts = Arc::new(Counts::default());
        let (tx, rx) = sync_channel(QUEUE);
        let writer_counts = counts.clone();
        let started = std::thread::Builder::new()
            .name("s3-lease-stderr".into())
            .spawn(move || write_all(rx, target, note, &writer_counts));
        Lines {
            queue: started.ok().map(|_| tx),
            counts,
        }
    }

    /// Hands `line` (without its newline) to the writer, or drops it.
    /// Never blocks, never fails.
    pub fn send(&self, line: String) {
        let sent = self
            .queue
            .as_ref()
            .is_some_and(|queue| queue.try_send(line).is_ok());
        if sent {
            self.counts.queued.fetch_add(1, Ordering::SeqCst);
        } else {
            self.counts.lost.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Waits, at most `limit`, until the writer is done with every line
    /// queued so far (for the last lines before the process exits); true
    /// if it was.
    pub fn flush(&self, limit: Duration) -> bool {
        let started = Instant::now();
        let queued = self.counts.queued.load(Ordering::SeqCst);
        while self.counts.done.load(Ordering::SeqCst) < queued {
            if started.elapsed() >= limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    }

    /// Lines lost so far.
    #[cfg(test)]
    pub fn lost(&self) -> u64 {
        self.counts.lost.load(Ordering::SeqCst)
    }
}

/// The writer thread: each line in turn; whenever the queue runs empty
/// after lines were lost, a note of how many (they were lost after the
/// lines written before it).
fn write_all(rx: Receiver<String>, mut target: impl Write, note: Note, counts: &Counts) {
    let mut reported = 0;
    let mut next = rx.recv().ok();
    while let Some(line) = next {
        if !write_line(&mut target, line) {
            counts.lost.fetch_add(1, Ordering::SeqCst);
        }
        next = rx.try_recv().ok();
        if next.is_none() {
            let lost = counts.lost.load(Ordering::SeqCst);
            if lost > reported && write_line(&mut target, note(lost - reported)) {
                reported = lost;
            }
        }
        // Counted once the note is written too: `flush` waits for both.
        counts.done.fetch_add(1, Ordering::SeqCst);
        if next.is_none() {
            next = rx.recv().ok();
        }
    }
}

/// One line, in one write where the target takes it whole (a pipe takes up
/// to 4 KiB at once, so lines from two processes do not interleave).
fn write_line(target: &mut dyn Write, line: String) -> bool {
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    target
        .write_all(&bytes)
        .and_then(|()| target.flush())
        .is_ok()
}

/// The process's stderr writer.
static STDERR: OnceLock<Lines> = OnceLock::new();

fn stderr() -> &'static Lines {
    STDERR.get_or_init(|| Lines::start(std::io::stderr(), lost_lines))
}

/// Starts the process's stderr writer with `note` for its notes (before
/// any line; later, the writer keeps the note it started with).
pub fn init(note: Note) {
    let _ = STDERR.set(Lines::start(std::io::stderr(), note));
}

/// Writes `line` to stderr at best effort, never blocking (see the module).
pub fn line(line: String) {
    stderr().send(line);
}

/// Before the process exits: waits at most `limit` for the lines queued.
pub fn flush(limit: Duration) {
    if let Some(lines) = STDERR.get() {
        lines.flush(limit);
    }
}

/// The note a human reads.
pub fn lost_lines(lost: u64) -> String {
    format!("s3-lease: {lost} lines to stderr were lost (it took no more)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A target that blocks every write until `open` is set, keeping what
    /// it was given.
    #[derive(Clone, Default)]
    struct Gate {
        open: Arc<Mutex<bool>>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            while !*self.open.lock().unwrap() {
                std::thread::sleep(Duration::from_millis(1));
            }
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn note(lost: u64) -> String {
        format!("lost {lost}")
    }

    #[test]
    fn a_stuck_target_never_blocks_the_sender_and_lost_lines_are_counted() {
        let gate = Gate::default();
        let lines = Lines::start(gate.clone(), note);
        let started = Instant::now();
        for i in 0..10_000 {
            lines.send(format!("line {i}"));
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "sending took {:?}",
            started.elapsed()
        );
        assert!(!lines.flush(Duration::from_millis(50)), "nothing written");
        // The writer holds one line in its write; the queue holds QUEUE.
        let lost = lines.lost();
        assert!((10_000 - QUEUE as u64 - 1..=10_000 - QUEUE as u64).contains(&lost));
        *gate.open.lock().unwrap() = true;
        assert!(lines.flush(Duration::from_secs(10)));
        lines.send("after".into());
        assert!(lines.flush(Duration::from_secs(10)));
        let written = String::from_utf8(gate.written.lock().unwrap().clone()).unwrap();
        let written: Vec<&str> = written.lines().collect();
        assert_eq!(written[0], "line 0");
        assert_eq!(written.len(), 10_000 - lost as usize + 1 + 1, "{written:?}");
        assert_eq!(written[written.len() - 2], format!("lost {lost}"));
        assert_eq!(written[written.len() - 1], "after");
    }

    /// Fails every write, as a pipe whose reader is gone does.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn failed_writes_are_lost_lines_not_panics() {
        let lines = Lines::start(Broken, note);
        for i in 0..10 {
            lines.send(format!("line {i}"));
        }
        assert!(lines.flush(Duration::from_secs(10)));
        assert_eq!(lines.lost(), 10);
    }

    /// `eprintln!` panics when stderr fails and blocks when it is stuck;
    /// every line goes through `line` instead. Comments may name them.
    #[test]
    fn no_print_macro_is_left_in_the_command_line() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let macros = ["eprintln", "println", "eprint", "print", "dbg"].map(|m| format!("{m}!("));
        let mut found = Vec::new();
        let mut dirs = vec![src];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.trim_start();
                    if code.starts_with("//") {
                        continue;
                    }
                    // `print!(` is also the end of `eprint!(`: whole words.
                    let hit = macros.iter().any(|m| {
                        code.match_indices(m.as_str()).any(|(at, _)| {
                            !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
                        })
                    });
                    if hit {
                        found.push(format!("{}:{}: {}", path.display(), n + 1, code));
                    }
                }
            }
        }
        assert!(found.is_empty(), "print macros left:\n{}", found.join("\n"));
    }
}
