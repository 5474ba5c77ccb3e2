//! A tokio runtime owned by a part of the host (the HTTP sender's, an AWS
//! credential source's, the blocking facade's), shut down without waiting when dropped.
//!
//! Dropping a tokio runtime waits for its blocking threads, and tokio
//! panics if that drop happens where blocking is not allowed: in async
//! code, or in a runtime's own shutdown as it drops a task that held the
//! last reference ("Cannot drop a runtime in a context where blocking is
//! not allowed"). Such an owner is dropped wherever its last reference
//! goes: in a caller's task, on the lease scheduler's thread, in a runtime
//! shutting down. Shut down in the background, it never panics there, and
//! nobody waits on its work any more (its owner is gone).

use std::ops::Deref;

#[derive(Debug)]
pub(crate) struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl OwnRuntime {
    pub fn new(runtime: tokio::runtime::Runtime) -> OwnRuntime {
        OwnRuntime(Some(runtime))
    }
}

impl Deref for OwnRuntime {
    type Target = tokio::runtime::Runtime;

    fn deref(&self) -> &tokio::runtime::Runtime {
        // Taken only by the drop below.
        self.0.as_ref().expect("a runtime until dropped")
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> OwnRuntime {
        OwnRuntime::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        )
    }

    /// Dropped in async code, and in a task dropped by a runtime's own
    /// shutdown: no panic (a plain runtime panics in both).
    #[test]
    fn dropping_it_in_async_code_or_in_a_runtime_shutdown_never_panics() {
        let outer = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (inner, held) = (own(), own());
        std::thread::spawn(move || {
            outer.block_on(async move { drop(inner) });
            outer.spawn(async move {
                let _held = held;
                std::future::pending::<()>().await
            });
            drop(outer);
        })
        .join()
        .expect("no panic");
    }
}
