//! The shared protocol layer, below both strategies: an operation is a state
//! machine, free of I/O, that emits `S3Request`s and consumes `S3Response`s;
//! a driver (the wasi:http one in the component, an in-memory store in the
//! tests) carries them. Time comes in as an argument with every step.
//!
//! The strategies' operations (`strategy::single_object`,
//! `strategy::epoch`), the fenced writes and the store preflight are all
//! `Operation`s; `driver` runs them.

use crate::prelude::*;

use crate::error::Error;
use crate::lease::Lease;
use crate::lock_object::LockState;
use crate::stores::s3::{S3Request, S3Response};

/// What an operation wants next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<T> {
    Send(S3Request),
    /// These requests at once, racing each other (the preflight's race:
    /// see `preflight::race`); their replies come back together, in order.
    SendAll(Vec<S3Request>),
    Done(Result<T, Error>),
}

/// A protocol operation: `start`, then one `on_response` per `Send`, one
/// `on_replies` per `SendAll`.
pub trait Operation {
    type Output;
    fn start(&mut self, now_ms: u64) -> Step<Self::Output>;
    fn on_response(&mut self, response: S3Response, now_ms: u64) -> Step<Self::Output>;
    /// The request got no reply: refused, timed out, or cut off, maybe
    /// after the server applied it. Operations that write override this to
    /// find out whether their write landed.
    fn on_transport_error(&mut self, error: Error, _now_ms: u64) -> Step<Self::Output> {
        Step::Done(Err(error))
    }
    /// The replies to a `SendAll`, in its order. Only operations that send
    /// batches override it.
    fn on_replies(
        &mut self,
        _replies: Vec<Result<S3Response, Error>>,
        _now_ms: u64,
    ) -> Step<Self::Output> {
        Step::Done(Err(Error::InvalidArgument(
            "this operation sends no batch of requests".into(),
        )))
    }
}

/// An operation borrowed: run it, then ask it what it saw (a grant's
/// evidence for the grant log).
impl<O: Operation> Operation for &mut O {
    type Output = O::Output;
    fn start(&mut self, now_ms: u64) -> Step<Self::Output> {
        (**self).start(now_ms)
    }
    fn on_response(&mut self, response: S3Response, now_ms: u64) -> Step<Self::Output> {
        (**self).on_response(response, now_ms)
    }
    fn on_transport_error(&mut self, error: Error, now_ms: u64) -> Step<Self::Output> {
        (**self).on_transport_error(error, now_ms)
    }
    fn on_replies(
        &mut self,
        replies: Vec<Result<S3Response, Error>>,
        now_ms: u64,
    ) -> Step<Self::Output> {
        (**self).on_replies(replies, now_ms)
    }
}

/// What a try-acquire of either strategy found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcquireOutcome {
    Granted(Lease),
    /// Someone else holds it: the state seen, when the loss was to a live
    /// holder we read (a lost write race reports `None`).
    Held(Option<LockState>),
}

/// A reply to a write that may or may not have been applied: the request
/// went out, and no clear answer came back (a 5xx after the body was sent;
/// a request the store or a proxy timed out, which should have applied
/// nothing, but is read back all the same; transport errors arrive
/// through `on_transport_error`).
pub fn is_ambiguous(r: &S3Response) -> bool {
    (r.status >= 500 && r.status != 501)
        || r.status == 408
        || (r.status == 400 && r.s3_error().is_request_timeout())
}
