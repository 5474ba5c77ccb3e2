//! One call at a time on a resource. A call holds its client (or elector)
//! across its awaits; in the WASI 0.3 build other calls into the same
//! instance run meanwhile, and those on the same resource wait here for
//! their turn instead of finding it borrowed (a `RefCell` would panic, and
//! a panic traps the instance). Calls on different resources never wait
//! for each other. In the 0.2 build a call never suspends, so no call ever
//! waits.

use crate::prelude::*;

use core::cell::{Cell, RefCell, RefMut};
use core::future::poll_fn;
use core::ops::{Deref, DerefMut};
use core::task::{Poll, Waker};

pub struct Turns<T> {
    value: RefCell<T>,
    taken: Cell<bool>,
    /// Calls waiting for the turn. All are woken when it is given back and
    /// the first to run takes it: a waiter dropped half-way (a cancelled
    /// call) leaves nothing behind that others depend on.
    waiting: RefCell<Vec<Waker>>,
}

impl<T> Turns<T> {
    pub fn new(value: T) -> Self {
        Turns {
            value: RefCell::new(value),
            taken: Cell::new(false),
            waiting: RefCell::new(Vec::new()),
        }
    }

    /// Waits until no other call holds the value, then holds it.
    pub async fn take(&self) -> Turn<'_, T> {
        poll_fn(|cx| {
            if self.taken.get() {
                self.waiting.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            } else {
                self.taken.set(true);
                Poll::Ready(())
            }
        })
        .await;
        Turn {
            owner: self,
            value: self.value.borrow_mut(),
        }
    }

    /// A look between calls' turns, for what needs no I/O (`None` while a
    /// call holds it).
    pub fn peek(&self) -> Option<core::cell::Ref<'_, T>> {
        self.value.try_borrow().ok()
    }
}

pub struct Turn<'a, T> {
    owner: &'a Turns<T>,
    value: RefMut<'a, T>,
}

impl<T> Deref for Turn<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Turn<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        self.owner.taken.set(false);
        for waker in core::mem::take(&mut *self.owner.waiting.borrow_mut()) {
            waker.wake();
        }
    }
}
