//! Runs the async driver where nothing suspends: the WASI 0.2 component
//! (its transport blocks inside `send` and `sleep_ms`) and the tests (their
//! in-memory stores answer at once).

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};

/// Polls `future` once. Over an `Io` that never suspends, every driver
/// future finishes in that one poll; `None` means one suspended, and with
/// no executor behind it nothing would ever wake it.
pub fn now_or_never<F: Future>(future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// `client.try_acquire(&mut io, key, &grant).ready()` in tests, over an
/// `Io` that never suspends.
#[cfg(any(test, feature = "testing"))]
pub trait Ready: Future + Sized {
    fn ready(self) -> Self::Output {
        now_or_never(self).expect("a test's Io suspended: it must answer at once")
    }
}

#[cfg(any(test, feature = "testing"))]
impl<F: Future> Ready for F {}
