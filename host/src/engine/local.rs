//! Each thread's own single-threaded tokio runtime, on which the thread
//! runs the component's calls and their HTTP.
//!
//! A renew used to cross four threads: the caller's task handed it to an
//! instance's worker (where the wasm runs), wasmtime-wasi's runtime ran the
//! send, the HTTP runtime's thread ran the connection, and the reply came
//! back the same way; every hop was a futex wake, a context switch and an
//! epoll turn, and the profile put 69% of a renew's CPU in the kernel.
//! Here the call (wasm on a fiber, `call_async`), the wasi:http task it
//! spawns and the keep-alive connection it uses all run on the calling
//! thread, in one `block_on`: a request is a write and an epoll wait on the
//! thread that made it.
//!
//! The runtime is made on the thread's first call and lives until the
//! thread ends (an instance's worker ends it itself, see [`end_thread`]).
//! Connections pooled for it (`engine::http`) are driven only while the
//! thread is inside [`block_on`]: an instance's worker waits for its next
//! call inside one too, so its idle connections still see a server close
//! them.

use std::cell::RefCell;
use std::future::Future;

thread_local! {
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

/// Runs `future` to its end on this thread's runtime, driving the tasks
/// and connections it made there.
///
/// # Panics
/// From inside async code (a runtime's task), as any `block_on` does; and
/// if the thread's runtime cannot be made (the process is out of file
/// descriptors for its epoll instance).
pub fn block_on<F: Future>(future: F) -> F::Output {
    // The runtime is taken out while it runs, so a `block_on` nested inside
    // this one (which tokio would refuse anyway) cannot alias it.
    let runtime = RUNTIME
        .with(|slot| slot.borrow_mut().take())
        .unwrap_or_else(new_runtime);
    let put_back = PutBack(Some(runtime));
    let runtime = put_back.0.as_ref().expect("held until dropped");
    runtime.block_on(future)
}

/// Shuts this thread's runtime down now, not in the thread's exit (where
/// tokio's own thread-locals may already be gone).
pub fn end_thread() {
    if let Some(runtime) = RUNTIME.with(|slot| slot.borrow_mut().take()) {
        runtime.shutdown_background();
    }
}

fn new_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a thread's runtime (an epoll instance and a timer)")
}

/// Returns the runtime to its slot when the `block_on` ends, by return or
/// by unwinding (a trap's panic is caught above it, and the thread goes
/// on with the same runtime).
struct PutBack(Option<tokio::runtime::Runtime>);

impl Drop for PutBack {
    fn drop(&mut self) {
        let mut runtime = self.0.take();
        // During the thread's exit the slot is gone (and a nested
        // `block_on` may have filled it): the runtime is then shut down
        // here rather than dropped in a destructor.
        let _ = RUNTIME.try_with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.is_none() {
                *slot = runtime.take();
            }
        });
        if let Some(runtime) = runtime {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_spawned_in_a_call_run_on_the_calling_thread() {
        let caller = std::thread::current().id();
        let ran_on = block_on(async { tokio::spawn(async { std::thread::current().id() }).await });
        assert_eq!(ran_on.unwrap(), caller);
    }

    #[test]
    fn the_runtime_outlives_a_panic_inside_it() {
        let panicked = std::panic::catch_unwind(|| block_on(async { panic!("a trap") }));
        assert!(panicked.is_err());
        assert_eq!(block_on(async { 7 }), 7);
        end_thread();
        assert_eq!(block_on(async { 8 }), 8, "a new runtime after the end");
        end_thread();
    }

    #[test]
    fn a_thread_may_exit_with_its_runtime() {
        std::thread::spawn(|| {
            block_on(async { tokio::time::sleep(std::time::Duration::from_millis(1)).await })
        })
        .join()
        .unwrap();
    }
}
