//! `wac plug`: the s3-lease component fills the function's import of
//! `s3-lease:lease/lease`, giving one component.

use std::path::Path;
use std::process::Command;

/// Runs `wac plug SOCKET --plug PLUG -o OUT` and returns the size of OUT.
pub fn plug(wac: &Path, socket: &Path, plug: &Path, out: &Path) -> u64 {
    let output = Command::new(wac)
        .arg("plug")
        .arg(socket)
        .arg("--plug")
        .arg(plug)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", wac.display()));
    assert!(
        output.status.success(),
        "wac plug failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::metadata(out)
        .unwrap_or_else(|e| panic!("{}: {e}", out.display()))
        .len()
}
