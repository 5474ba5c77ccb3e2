//! `wasmtime serve` from wasmtime-cli 48.0.8's library: the same command,
//! flags and behaviour as the `wasmtime` binary's, e.g.
//!
//! ```sh
//! wasmtime-serve -Scli --env S3LEASE_BUCKET=b --addr 127.0.0.1:8080 composed.wasm
//! ```

use clap::Parser;
use wasmtime_cli::commands::ServeCommand;

fn main() {
    if let Err(e) = ServeCommand::parse().execute() {
        eprintln!("Error: {e:?}");
        std::process::exit(1);
    }
}
