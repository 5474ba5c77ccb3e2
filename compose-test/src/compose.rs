//! `wac plug`: the s3-lease component fills the function's import of
//! `s3-lease:lease/lease`, giving one component; and the lease gate in
//! front of a function, in two plugs.

use std::path::Path;
use std::process::Command;

/// Runs `wac plug SOCKET --plug PLUG -o OUT` and returns the size of OUT.
pub fn plug(wac: &Path, socket: &Path, plug: &Path, out: &Path) -> u64 {
    plug_all(wac, socket, &[plug], out)
}

/// The lease gate in front of `function`, each with an s3-lease of its
/// own: a function that imports s3-lease (for fenced writes) first gets
/// its plug (`OUT-function.wasm` beside OUT), then the gate gets
/// that function's handler and s3-lease in one plug; a function that
/// imports no s3-lease is plugged into the gate as it is (wac plugs only
/// the imports a plug's exports match).
///
/// ```sh
/// wac plug function.wasm --plug s3_lease.wasm -o function-composed.wasm
/// wac plug gate.wasm --plug function-composed.wasm --plug s3_lease.wasm -o out.wasm
/// ```
pub fn gate(wac: &Path, gate: &Path, function: &Path, s3_lease: &Path, out: &Path) -> u64 {
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    let composed = out.with_file_name(format!("{stem}-function.wasm"));
    let function = match Command::new(wac)
        .arg("plug")
        .arg(function)
        .arg("--plug")
        .arg(s3_lease)
        .arg("-o")
        .arg(&composed)
        .output()
    {
        Ok(o) if o.status.success() => composed,
        // The function takes no lease of its own.
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("no matching imports") => {
            function.to_path_buf()
        }
        Ok(o) => panic!(
            "wac plug failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!("run {}: {e}", wac.display()),
    };
    plug_all(wac, gate, &[&function, s3_lease], out)
}

/// Runs `wac plug SOCKET --plug P1 --plug P2 ... -o OUT` and returns the size of OUT.
pub fn plug_all(wac: &Path, socket: &Path, plugs: &[&Path], out: &Path) -> u64 {
    let mut command = Command::new(wac);
    command.arg("plug").arg(socket);
    for plug in plugs {
        command.arg("--plug").arg(plug);
    }
    let output = command
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
