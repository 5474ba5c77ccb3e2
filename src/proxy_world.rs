//! Keeps the component's imports inside the `wasi:http/proxy` world, so hosts
//! that offer only that world (edge platforms, `wasmtime serve`) can load it.
//!
//! Rust's std on wasm32-wasip2 links wasi-libc, and two of its paths reach
//! WASI interfaces the proxy world lacks: the panic hook reads
//! `RUST_BACKTRACE` (`getenv` → `wasi:cli/environment`, and `_Exit` on a
//! failed allocation → `wasi:cli/exit`), and writing the panic message to
//! stderr asks whether stdio is a terminal (the five `wasi:cli/terminal-*`
//! interfaces). The code stays linked even though the component never reads
//! its environment nor cares about terminals.
//!
//! wasi-libc calls each WASI function through an undefined symbol that the
//! linker turns into an import. Defining those symbols here resolves them
//! inside the module instead, so the imports vanish: the environment is
//! empty, stdio is never a terminal, and exit traps. Should a toolchain
//! rename them, the imports come back and
//! `host-test/tests/integration/component_shape.rs` fails by name.
//!
//! (The third, `wasi:random/insecure-seed`, was std's `HashMap` seeding:
//! `client.rs` keeps no hash map.)

/// `wasi:cli/environment.get-environment`: an empty list (pointer, length).
#[no_mangle]
unsafe extern "C" fn __wasm_import_environment_get_environment(ret: *mut [usize; 2]) {
    // SAFETY: wasi-libc passes a pointer to its own (pointer, length) pair.
    unsafe { ret.write([0, 0]) }
}

/// `wasi:cli/exit.exit`: nothing to return to, so trap.
#[no_mangle]
extern "C" fn __wasm_import_exit_exit(_status: u32) {
    core::arch::wasm32::unreachable()
}

/// `wasi:cli/terminal-stdin.get-terminal-stdin` and friends: `none`, not a
/// terminal. The return area is an `option<handle>`: discriminant byte first.
#[no_mangle]
unsafe extern "C" fn __wasm_import_terminal_stdin_get_terminal_stdin(ret: *mut u8) {
    // SAFETY: wasi-libc passes a pointer to its own option's return area.
    unsafe { ret.write(0) }
}

#[no_mangle]
unsafe extern "C" fn __wasm_import_terminal_stdout_get_terminal_stdout(ret: *mut u8) {
    // SAFETY: as above.
    unsafe { ret.write(0) }
}

#[no_mangle]
unsafe extern "C" fn __wasm_import_terminal_stderr_get_terminal_stderr(ret: *mut u8) {
    // SAFETY: as above.
    unsafe { ret.write(0) }
}

/// Drops of terminal handles, which the functions above never hand out.
#[no_mangle]
extern "C" fn __wasm_import_terminal_input_terminal_input_drop(_handle: u32) {}

#[no_mangle]
extern "C" fn __wasm_import_terminal_output_terminal_output_drop(_handle: u32) {}
