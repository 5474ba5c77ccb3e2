//! Runs protocol operations over an `Io`: the only place where requests meet
//! clocks, sleeps and randomness. The component supplies a wasi `Io`; tests
//! supply an in-memory store with a fake clock.

use crate::prelude::*;

use crate::error::Error;
use crate::lease::Lease;
use crate::protocol::{AcquireOutcome, Operation, Step};
use crate::stores::s3::{Endpoint, S3Request, S3Response};
use crate::strategy::single_object::semaphore::SlotOutcome;
use core::future::Future;

/// What a store's requests, clocks, sleeps and randomness come through.
/// `send` and `sleep_ms` are futures so that one driver serves both
/// builds: the WASI 0.2 transport and the test models finish them before
/// they are first polled (see `ready`); the WASI 0.3 transport suspends
/// the calling task on them, so other calls into the instance run meanwhile.
pub trait Io {
    /// Sends one request (signing it on the way) and reads the reply.
    fn send(&mut self, request: &S3Request) -> impl Future<Output = Result<S3Response, Error>>;
    /// Wall clock, ms since the Unix epoch: lease expiry is written in it.
    fn now_ms(&mut self) -> u64;
    /// Monotonic clock, ms: deadlines are measured in it.
    fn monotonic_ms(&mut self) -> u64;
    fn sleep_ms(&mut self, ms: u64) -> impl Future<Output = ()>;
    fn random_u64(&mut self) -> u64;
    /// The endpoint the requests go to and its store, as configured: a
    /// reply that shows it is not that store ends the operation with a
    /// configuration error naming it (`s3::not_the_store`). `None` checks
    /// nothing.
    fn endpoint(&self) -> Option<Endpoint>;
    /// Sends the requests at once, so they race at the store, and reads
    /// every reply (in the requests' order). The default sends them one
    /// after another: right for stores applied one request at a time (the
    /// test models); the wasi transports overlap them.
    fn send_all(
        &mut self,
        requests: &[S3Request],
    ) -> impl Future<Output = Vec<Result<S3Response, Error>>> {
        async move {
            let mut replies = Vec::with_capacity(requests.len());
            for request in requests {
                replies.push(self.send(request).await);
            }
            replies
        }
    }
    /// The server refused our signing time and told its own (`Date`):
    /// sign later requests on its clock. Lease times are not affected.
    fn correct_signing_clock(&mut self, _server_ms: u64) {}
}

/// What a wrapping `Io` (`Wrapped`) does with the requests sent through
/// it. The clocks, sleeps and randomness are the wrapped `Io`'s.
pub trait Sends<I: Io> {
    fn send(
        &mut self,
        io: &mut I,
        request: &S3Request,
    ) -> impl Future<Output = Result<S3Response, Error>>;
    /// Racing requests; by default sent one after another through `send`.
    fn send_all(
        &mut self,
        io: &mut I,
        requests: &[S3Request],
    ) -> impl Future<Output = Vec<Result<S3Response, Error>>> {
        async move {
            let mut replies = Vec::with_capacity(requests.len());
            for request in requests {
                replies.push(self.send(io, request).await);
            }
            replies
        }
    }
}

/// An `Io` that is `io` with its requests going through `sends`: the one
/// forwarding wrapper (a renew deadline here, the tests' interceptors and
/// racing stores in `testing`).
pub struct Wrapped<'a, I: Io, S> {
    pub io: &'a mut I,
    pub sends: S,
}

impl<I: Io, S: Sends<I>> Io for Wrapped<'_, I, S> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        self.sends.send(self.io, request).await
    }
    async fn send_all(&mut self, requests: &[S3Request]) -> Vec<Result<S3Response, Error>> {
        self.sends.send_all(self.io, requests).await
    }
    fn now_ms(&mut self) -> u64 {
        self.io.now_ms()
    }
    fn monotonic_ms(&mut self) -> u64 {
        self.io.monotonic_ms()
    }
    async fn sleep_ms(&mut self, ms: u64) {
        self.io.sleep_ms(ms).await;
    }
    fn random_u64(&mut self) -> u64 {
        self.io.random_u64()
    }
    fn endpoint(&self) -> Option<Endpoint> {
        self.io.endpoint()
    }
    fn correct_signing_clock(&mut self, server_ms: u64) {
        self.io.correct_signing_clock(server_ms);
    }
}

/// An `Io` whose requests must all end by `until_ms` on the monotonic
/// clock: each goes out bounded by the time left (`S3Request::within_ms`),
/// and none goes out once it has passed. An elector's leader sends through
/// one bounded by its renew deadline, as client-go bounds a renew by
/// RenewDeadline, so a step never outlives its leadership on a host that
/// honours request timeouts. (Hosts that do not are covered by the caller's
/// own watchdog: see `elector::Status::leading_until_ms`.)
///
/// With `until_ms` `None` it passes requests through as they are: the
/// component sends a client's calls through one too, so that the client's
/// async code is built for one `Io` type, not two (14 KB of component,
/// docs/size.md).
pub type Within<'a, I> = Wrapped<'a, I, Deadline>;

impl<'a, I: Io> Within<'a, I> {
    pub fn new(io: &'a mut I, until_ms: Option<u64>) -> Self {
        Wrapped {
            io,
            sends: Deadline { until_ms },
        }
    }
}

/// The end, on the monotonic clock, that a `Within`'s requests are bounded by.
pub struct Deadline {
    pub until_ms: Option<u64>,
}

impl Deadline {
    /// The time left for a request, or the error of one not sent.
    fn left_ms<I: Io>(&self, io: &mut I) -> Option<Result<u32, Error>> {
        let until_ms = self.until_ms?;
        let left = until_ms.saturating_sub(io.monotonic_ms());
        if left == 0 {
            return Some(Err(Error::Transport(
                "not sent: the renew deadline had passed".into(),
            )));
        }
        Some(Ok(u32::try_from(left).unwrap_or(u32::MAX)))
    }
}

fn bounded(request: &S3Request, left: u32) -> S3Request {
    let mut bounded = request.clone();
    bounded.within_ms = Some(request.within_ms.map_or(left, |w| w.min(left)));
    bounded
}

impl<I: Io> Sends<I> for Deadline {
    async fn send(&mut self, io: &mut I, request: &S3Request) -> Result<S3Response, Error> {
        match self.left_ms(io) {
            None => io.send(request).await,
            Some(Err(not_sent)) => Err(not_sent),
            Some(Ok(left)) => io.send(&bounded(request, left)).await,
        }
    }
    async fn send_all(
        &mut self,
        io: &mut I,
        requests: &[S3Request],
    ) -> Vec<Result<S3Response, Error>> {
        match self.left_ms(io) {
            None => io.send_all(requests).await,
            Some(Err(not_sent)) => requests.iter().map(|_| Err(not_sent.clone())).collect(),
            Some(Ok(left)) => {
                let bounded: Vec<S3Request> = requests.iter().map(|r| bounded(r, left)).collect();
                io.send_all(&bounded).await
            }
        }
    }
}

pub async fn run<O: Operation>(io: &mut impl Io, mut op: O) -> Result<O::Output, Error> {
    let now = io.now_ms();
    let mut step = op.start(now);
    loop {
        match step {
            Step::Done(result) => return result,
            Step::Send(request) => {
                let response = send_correcting_skew(io, &request).await;
                let now = io.now_ms();
                step = match response {
                    Ok(response) => match not_the_store(io, &request, &response) {
                        Some(wrong_endpoint) => return Err(wrong_endpoint),
                        None => op.on_response(response, now),
                    },
                    Err(error) => op.on_transport_error(error, now),
                };
            }
            // Once each, no retries: a race is judged on what each writer got.
            Step::SendAll(requests) => {
                let replies = io.send_all(&requests).await;
                let wrong_endpoint = requests.iter().zip(&replies).find_map(|(request, reply)| {
                    reply
                        .as_ref()
                        .ok()
                        .and_then(|reply| not_the_store(io, request, reply))
                });
                if let Some(wrong_endpoint) = wrong_endpoint {
                    return Err(wrong_endpoint);
                }
                let now = io.now_ms();
                step = op.on_replies(replies, now);
            }
        }
    }
}

/// The configuration error of a reply that shows the endpoint is not the
/// configured store: the operation ends on it at once, whatever it was
/// doing (a write's recovery would only ask the same wrong server again),
/// and the caller's retries stop on it (`Error::is_transient`).
fn not_the_store(io: &impl Io, request: &S3Request, reply: &S3Response) -> Option<Error> {
    crate::stores::s3::not_the_store(&io.endpoint()?, request, reply)
}

/// Sends a request; if the server refuses its signing time as skewed (403
/// `RequestTimeTooSkewed`: our wall clock is over 15 minutes off the
/// server's), adopts the server's `Date` for signing and sends it once more,
/// as the AWS SDKs do. A request refused for its time was not applied.
async fn send_correcting_skew(io: &mut impl Io, request: &S3Request) -> Result<S3Response, Error> {
    let response = send_retrying_throttled(io, request).await?;
    if !response.is_clock_skew() {
        return Ok(response);
    }
    match response.header("date").and_then(crate::http_date::parse_ms) {
        Some(server_ms) => {
            io.correct_signing_clock(server_ms);
            io.send(request).await
        }
        None => Ok(response),
    }
}

/// Throttled requests (429: a store's throughput and rate limits) are
/// sent again at most this many times, after pauses of 50, 100 and 200 ms
/// (jittered in their upper half): under 0.4 s in all, so a renew keeps
/// most of its margin. A throttled request was refused, never applied.
/// Each resend still goes through the caller's `Io`, so an elector's
/// renew deadline (`Within`) bounds it like any request.
pub const THROTTLE_RETRIES: u32 = 3;
const THROTTLE_FIRST_PAUSE_MS: u64 = 50;

async fn send_retrying_throttled(
    io: &mut impl Io,
    request: &S3Request,
) -> Result<S3Response, Error> {
    let mut response = io.send(request).await?;
    for attempt in 0..THROTTLE_RETRIES {
        if response.status != 429 {
            break;
        }
        let cap = THROTTLE_FIRST_PAUSE_MS << attempt;
        let pause = cap / 2 + io.random_u64() % (cap / 2 + 1);
        io.sleep_ms(pause).await;
        response = io.send(request).await?;
    }
    Ok(response)
}

/// The waiting schedule every waiter shares (the host's too).
pub use s3_lease_keep::wait::{backoff_ms, fair_poll_ms};
use s3_lease_keep::wait::{Missed, Wait};

/// Attempts until granted or until `timeout_ms` has passed on the monotonic
/// clock. Transient failures (transport, 5xx, 409) are retried within the
/// deadline; the last one is returned if the deadline passes on it.
/// `try_once` is one try-acquire of the client's strategy, on `client`. A lock is waited
/// for as a slot of a semaphore is by a caller that is not fair
/// (`acquire_slot`), with nothing to leave on giving up.
pub async fn acquire<C, I: Io>(
    client: &mut C,
    io: &mut I,
    key: &str,
    timeout_ms: u64,
    mut try_once: impl AsyncFnMut(&mut C, &mut I) -> Result<AcquireOutcome, Error>,
) -> Result<Lease, Error> {
    let as_slot = async |client: &mut C, io: &mut I| {
        try_once(client, io).await.map(|outcome| match outcome {
            AcquireOutcome::Granted(lease) => SlotOutcome::Granted(lease),
            AcquireOutcome::Held(seen) => SlotOutcome::Full(seen.map(Box::new)),
        })
    };
    acquire_slot(client, io, key, timeout_ms, 0, as_slot, async |_, _| {}).await
}

/// `acquire` for a semaphore's slot: attempts until granted or until
/// `timeout_ms` passed. A waiter in the queue looks every `poll_ms`; one
/// without a place backs off as `acquire` does. On giving up (deadline or
/// a lasting error) it calls `leave`, so a place in the queue it holds
/// blocks nobody for its ttl.
pub async fn acquire_slot<C, I: Io>(
    client: &mut C,
    io: &mut I,
    key: &str,
    timeout_ms: u64,
    poll_ms: u64,
    mut try_once: impl AsyncFnMut(&mut C, &mut I) -> Result<SlotOutcome, Error>,
    mut leave: impl AsyncFnMut(&mut C, &mut I),
) -> Result<Lease, Error> {
    let mut wait = Wait::new(io.monotonic_ms(), timeout_ms);
    let mut holder = None;
    loop {
        let mut last_error = None;
        let missed = match try_once(client, io).await {
            Ok(SlotOutcome::Granted(lease)) => return Ok(lease),
            Ok(SlotOutcome::Queued { state, .. }) => {
                holder = Some(state);
                Missed::Queued
            }
            Ok(SlotOutcome::Full(seen)) => {
                // On the clock that judges the expiry (the server's, for
                // epoch-objects), never ours against theirs.
                let expires_in_ms = seen.as_ref().map(|s| s.expires_in_ms);
                if let Some(s) = seen {
                    holder = Some(s);
                }
                Missed::Held { expires_in_ms }
            }
            Ok(SlotOutcome::Rewritten(_) | SlotOutcome::Left) => Missed::Undecided,
            Err(e) if e.is_transient() => {
                last_error = Some(e);
                Missed::Undecided
            }
            Err(e) => {
                leave(client, io).await;
                return Err(e);
            }
        };
        let now = io.monotonic_ms();
        if wait.is_over(now) {
            leave(client, io).await;
            return Err(last_error.unwrap_or(Error::Timeout {
                key: key.to_string(),
                waited_ms: wait.waited_ms(now),
                holder,
            }));
        }
        let random = io.random_u64();
        let pause = wait.pause_ms(missed, now, random, poll_ms);
        io.sleep_ms(pause).await;
    }
}
