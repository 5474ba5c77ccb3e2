//! The WASI 0.3 gate. For each request: derive its key; wait for the key
//! (`s3_lease_keep::gate::Waiting`: attempts on the shared schedule, each a
//! task of its own, so the answer comes at the wait plus the margin however
//! slow the store is); then forward a new request (the incoming method,
//! path, headers and body, the client's own `s3-lease-*` headers stripped
//! and the gate's stamped) and relay the downstream's response, both
//! through streams of the gate's own. A keeper task does what the hold
//! (`s3_lease_keep::gate::Hold`) says: renews from before the downstream is
//! called until the response body has ended (a slow head and a slow body
//! alike), cuts forwarding off when the claim runs out, and releases once
//! the exchange is over. Nothing is forwarded without the claim.

use crate::answer::{self, Answer};
use crate::attempts::{self, Attempted, Judged, Slot};
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::clocks::{monotonic_clock, system_clock};
use crate::bindings::wasi::http::handler as downstream;
use crate::bindings::wasi::http::types::{ErrorCode, Fields, Request, Response};
use crate::bindings::wasi::random::random::get_random_u64;
use crate::bindings::{wit_future, wit_stream};
use crate::seen::{Recent, Seen};
use crate::settings::Settings;
use s3_lease_guest::{Client, Config, Error, Held, Options, SlotAttempt, SlotOptions};
use s3_lease_keep::gate::{Hold, Next, Try, Waiting};
use s3_lease_keep::guard::Timing;
use std::cell::{Cell, RefCell};
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Poll, Waker};

struct Gate;

crate::bindings::export!(Gate with_types_in crate::bindings::generated);

thread_local! {
    /// The holds this instance saw from grant to release: the pace of
    /// `Retry-After` and of the fair queue's looks.
    static RECENT: RefCell<Recent> = RefCell::new(Recent::default());
}

impl crate::bindings::exports::wasi::http::handler::Guest for Gate {
    async fn handle(request: Request) -> Result<Response, ErrorCode> {
        let env = get_environment();
        let settings = match crate::settings::settings(&env) {
            Ok(s) => s,
            Err(why) => return Ok(response(Answer::not_configured(&why))),
        };
        let config = match Config::from_vars(|name| crate::settings::var(&env, name)) {
            Ok(c) => c,
            Err(e) => return Ok(response(Answer::not_configured(&e.to_string()))),
        };
        let headers = request.get_headers();
        let path = request.get_path_with_query().unwrap_or_default();
        let key = match settings.key.key(&path, |name| headers.get(name)) {
            Ok(key) => key,
            Err(why) => return Ok(response(Answer::no_key(&why))),
        };
        drop(headers);
        // A client per request: calls on one client take turns, and
        // requests for different keys must not.
        let client = match Client::new(&config) {
            Ok(c) => c,
            Err(e) => return Ok(response(attempts::store_error(&e))),
        };
        let (held, hold) = match wait_for_key(&client, &settings, &key).await {
            Ok(granted) => granted,
            Err(answer) => return Ok(response(answer)),
        };
        Ok(forward(request, held, hold, &key).await)
    }
}

fn mono_ms() -> u64 {
    monotonic_clock::now() / 1_000_000
}

fn wall_ms() -> u64 {
    let now = system_clock::now();
    u64::try_from(now.seconds)
        .unwrap_or(0)
        .saturating_mul(1_000)
        .saturating_add(u64::from(now.nanoseconds / 1_000_000))
}

/// Sleeps until the monotonic instant `ms`; forever for `u64::MAX`.
async fn sleep_until(ms: u64) {
    if ms == u64::MAX {
        std::future::pending::<()>().await;
    }
    monotonic_clock::wait_until(ms.saturating_mul(1_000_000)).await;
}

enum Either<A, B> {
    Left(A),
    Right(B),
}

/// Whichever of `a` and `b` is ready first (`a` if both are).
async fn first_of<A: Future, B: Future>(a: A, b: B) -> Either<A::Output, B::Output> {
    let (mut a, mut b) = (pin!(a), pin!(b));
    poll_fn(|cx| {
        if let Poll::Ready(x) = a.as_mut().poll(cx) {
            return Poll::Ready(Either::Left(x));
        }
        b.as_mut().poll(cx).map(Either::Right)
    })
    .await
}

/// A value one task hands to another.
struct Handoff<T> {
    value: RefCell<Option<T>>,
    waker: RefCell<Option<Waker>>,
}

impl<T> Handoff<T> {
    fn new() -> Rc<Self> {
        Rc::new(Handoff {
            value: RefCell::new(None),
            waker: RefCell::new(None),
        })
    }

    fn put(&self, value: T) {
        *self.value.borrow_mut() = Some(value);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    async fn take(&self) -> T {
        poll_fn(|cx| match self.value.borrow_mut().take() {
            Some(v) => Poll::Ready(v),
            None => {
                *self.waker.borrow_mut() = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }
}

type Outcome = Attempted<Held>;

/// One attempt: `acquire` with no wait (a miss names the holder), or a
/// fair slot's `try-acquire-slot`.
async fn attempt(client: &Client, key: &str, options: &Options, fair: bool) -> Outcome {
    if fair {
        let slot = SlotOptions::limit(1).fair();
        Attempted::Slot(
            client
                .try_acquire_slot(key, options, &slot)
                .await
                .map(|a| match a {
                    SlotAttempt::Granted(held) => Slot::Granted(held),
                    SlotAttempt::Queued(place) => Slot::Queued(place),
                    SlotAttempt::Full(state) => Slot::Full(state),
                }),
        )
    } else {
        Attempted::Plain(
            client
                .acquire_with(key, options, std::time::Duration::ZERO)
                .await,
        )
    }
}

/// Waits for the key as `Waiting` says. Each attempt runs as a task of its
/// own: one still under way at the wait plus the margin is given up on, and
/// releases what it grants (or leaves the queue it joined) when it ends.
async fn wait_for_key(
    client: &Client,
    settings: &Settings,
    key: &str,
) -> Result<(Held, Hold), Answer> {
    let holder_id = settings.holder_id(get_random_u64());
    let options = Options::ttl(std::time::Duration::from_millis(settings.ttl_ms))
        .with_metadata("s3-lease-gate")
        .with_holder_id(holder_id.clone());
    let timing = Timing::for_ttl(settings.ttl_ms);
    let fair = settings.fair;
    let poll_ms = RECENT.with(|r| attempts::fair_poll_ms(&r.borrow(), settings.ttl_ms));
    let mut waiting = Waiting::new(mono_ms(), settings.wait_ms);
    let mut seen = Seen::default();
    let mut last_error = None;
    let mut queued = false;
    loop {
        match waiting.poll(mono_ms()) {
            Try::Attempt => {
                let handoff = Handoff::new();
                let abandoned = Rc::new(Cell::new(false));
                {
                    let (client, key, options) = (client.clone(), key.to_string(), options.clone());
                    let (handoff, abandoned) = (handoff.clone(), abandoned.clone());
                    wit_bindgen::spawn_local(async move {
                        let outcome = attempt(&client, &key, &options, fair).await;
                        if abandoned.get() {
                            clean_up(&client, &key, &options, outcome, fair).await;
                        } else {
                            handoff.put(outcome);
                        }
                    });
                }
                let outcome =
                    match first_of(handoff.take(), sleep_until(waiting.give_up_at())).await {
                        Either::Left(outcome) => outcome,
                        Either::Right(()) => {
                            abandoned.set(true);
                            seen.store_slow = true;
                            let _ = waiting.poll(mono_ms());
                            break;
                        }
                    };
                let now = mono_ms();
                match attempts::judge(outcome, now, &mut seen, &mut last_error) {
                    Judged::Granted(held) => match waiting.granted(timing, now) {
                        Some(hold) => return Ok((held, hold)),
                        None => {
                            let _ = held.release().await;
                            break;
                        }
                    },
                    Judged::Missed(missed) => {
                        queued |= missed == s3_lease_keep::wait::Missed::Queued;
                        waiting.missed(now, missed, get_random_u64(), poll_ms);
                    }
                    Judged::Failed(answer) => return Err(answer),
                }
            }
            Try::WakeAt(at) => sleep_until(at).await,
            Try::GiveUp(_) => break,
        }
    }
    if queued && !seen.store_slow {
        // Our place would hold others up for its ttl: give it up, after
        // answering (a given-up attempt leaves by itself).
        let (client, key) = (client.clone(), key.to_string());
        wit_bindgen::spawn_local(async move {
            let _ = client.leave_queue(&key, &holder_id).await;
        });
    }
    let answer = RECENT.with(|r| {
        attempts::gave_up(
            key,
            &seen,
            &r.borrow(),
            last_error,
            settings.wait_ms,
            waiting.waited_ms(mono_ms()),
            wall_ms(),
        )
    });
    Err(answer)
}

/// What an attempt given up on leaves behind: its grant released, its
/// place in the queue left (best effort: else they lapse after the ttl).
async fn clean_up(client: &Client, key: &str, options: &Options, outcome: Outcome, fair: bool) {
    match outcome {
        Attempted::Plain(Ok(held)) | Attempted::Slot(Ok(Slot::Granted(held))) => {
            let _ = held.release().await;
        }
        _ if fair => {
            if let Some(holder_id) = &options.holder_id {
                let _ = client.leave_queue(key, holder_id).await;
            }
        }
        _ => {}
    }
}

/// A granted request's hold, shared by the keeper, the relays and the
/// handler (one thread: no borrow spans an await).
struct Forwarding {
    hold: RefCell<Hold>,
    /// Bumped whenever the exchange moves on or forwarding is cut off.
    moves: Cell<u64>,
    wakers: RefCell<Vec<Waker>>,
}

impl Forwarding {
    fn moved(&self) {
        self.moves.set(self.moves.get() + 1);
        for w in self.wakers.borrow_mut().drain(..) {
            w.wake();
        }
    }

    /// Ready once something moves after now.
    async fn next_move(&self) {
        let from = self.moves.get();
        poll_fn(|cx| {
            if self.moves.get() != from {
                Poll::Ready(())
            } else {
                self.wakers.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await
    }

    fn may_forward(&self) -> bool {
        self.hold.borrow().may_forward(mono_ms())
    }

    /// Ready once forwarding may no longer go on.
    async fn stopped(&self) {
        while self.may_forward() {
            let until = self.hold.borrow().held_until(mono_ms()).unwrap_or(0);
            let _ = first_of(self.next_move(), sleep_until(until)).await;
        }
    }

    /// The exchange is over (or forwarding stopped).
    fn finished(&self) {
        self.hold.borrow_mut().finished(mono_ms());
        self.moved();
    }
}

/// Forwards the request and relays the response while the hold says so.
async fn forward(incoming: Request, held: Held, hold: Hold, key: &str) -> Response {
    let stamped: Vec<(String, Vec<u8>)> = held
        .lease()
        .header_values()
        .into_iter()
        .map(|(name, value)| (name.to_string(), value.into_bytes()))
        .collect();
    let gate = Rc::new(Forwarding {
        hold: RefCell::new(hold),
        moves: Cell::new(0),
        wakers: RefCell::new(Vec::new()),
    });
    wit_bindgen::spawn_local(keep(held, gate.clone(), mono_ms()));
    if !gate.hold.borrow_mut().calling(mono_ms()) {
        gate.finished();
        return response(Answer::lease_lost(
            key,
            "its claim ran out while it was granted",
        ));
    }
    let forwarded = match forward_request(incoming, stamped, gate.clone()) {
        Ok(r) => r,
        Err(code) => {
            gate.finished();
            return response(Answer::downstream_failed(&format!("{code:?}")));
        }
    };
    let mut call = Box::pin(downstream::handle(forwarded));
    match first_of(&mut call, gate.stopped()).await {
        Either::Left(Ok(reply)) => {
            if gate.hold.borrow_mut().head(mono_ms()) {
                gate.moved();
                return relay(reply, gate);
            }
            gate.finished();
            response(Answer::lease_lost(key, "it ran out before the head"))
        }
        Either::Left(Err(code)) => {
            gate.finished();
            response(Answer::downstream_failed(&format!("{code:?}")))
        }
        Either::Right(()) => {
            // The downstream still works on it: its answer, when it comes,
            // is dropped; its fenced writes under the stamped lease meet
            // the next holder's token.
            wit_bindgen::spawn_local(async move {
                let _ = call.await;
            });
            gate.finished();
            response(Answer::lease_lost(key, "it ran out before the head"))
        }
    }
}

/// The keeper: renews, cuts off and releases as the hold says.
async fn keep(mut held: Held, gate: Rc<Forwarding>, granted_at: u64) {
    loop {
        let next = gate.hold.borrow_mut().poll(mono_ms());
        match next {
            Next::Renew => {
                let result = {
                    let mut renewing = pin!(held.renew());
                    // The claim runs out at its time whatever the renew
                    // does: look at the hold then too.
                    loop {
                        let until = gate.hold.borrow().held_until(mono_ms()).unwrap_or(u64::MAX);
                        match first_of(renewing.as_mut(), sleep_until(until)).await {
                            Either::Left(result) => break result,
                            Either::Right(()) => {
                                let next = gate.hold.borrow_mut().poll(mono_ms());
                                if let Next::CutOff(_) = next {
                                    gate.moved();
                                }
                            }
                        }
                    }
                };
                let now = mono_ms();
                let mut hold = gate.hold.borrow_mut();
                match result {
                    Ok(()) => hold.renewed(now),
                    Err(Error::Lost { .. }) => hold.renew_refused(now),
                    Err(e) => hold.renew_failed(now, attempts::transient(&e)),
                }
            }
            Next::WakeAt(at) => {
                let _ = first_of(gate.next_move(), sleep_until(at)).await;
            }
            // The relays and the handler see it through `may_forward`.
            Next::CutOff(_) => gate.moved(),
            Next::Release => {
                let hold_ms = mono_ms().saturating_sub(granted_at);
                RECENT.with(|r| r.borrow_mut().record(hold_ms));
                // A failed release changes nothing sent: the lease lapses.
                let _ = held.release().await;
                return;
            }
            Next::Done => {
                // Not held (lost, or run out): nothing to give back.
                let _ = held.into_lease();
                return;
            }
        }
    }
}

/// The request the downstream gets: the incoming one's method, path,
/// scheme, authority, headers (less any `s3-lease-*` the client sent)
/// plus the gate's, and its body and trailers, relayed chunk by chunk
/// while the hold allows (cut off, the body ends in an error).
fn forward_request(
    incoming: Request,
    stamped: Vec<(String, Vec<u8>)>,
    gate: Rc<Forwarding>,
) -> Result<Request, ErrorCode> {
    let mut headers: Vec<(String, Vec<u8>)> = incoming
        .get_headers()
        .copy_all()
        .into_iter()
        .filter(|(name, _)| !answer::is_stamped(name))
        .collect();
    headers.extend(stamped);
    let fields = Fields::from_list(&headers)
        .map_err(|e| ErrorCode::InternalError(Some(format!("forwarded headers: {e:?}"))))?;
    let (method, path, scheme, authority) = (
        incoming.get_method(),
        incoming.get_path_with_query(),
        incoming.get_scheme(),
        incoming.get_authority(),
    );
    let (consumed_tx, consumed_rx) = wit_future::new(|| Ok(()));
    let (from, trailers_in) = Request::consume_body(incoming, consumed_rx);
    let (to, body) = wit_stream::new();
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    let (request, transmitted) = Request::new(fields, Some(body), trailers, None);
    let refused = |what: &str| ErrorCode::InternalError(Some(format!("forwarded {what}")));
    request
        .set_method(&method)
        .map_err(|()| refused("method"))?;
    request
        .set_path_with_query(path.as_deref())
        .map_err(|()| refused("path"))?;
    request
        .set_scheme(scheme.as_ref())
        .map_err(|()| refused("scheme"))?;
    request
        .set_authority(authority.as_deref())
        .map_err(|()| refused("authority"))?;
    wit_bindgen::spawn_local(async move {
        let trailers = match pipe(from, to, &gate).await {
            Piped::Complete => trailers_in.await,
            Piped::CutOff => Err(cut_off()),
            Piped::ReaderGone => Ok(None),
        };
        let _ = trailers_tx.write(trailers).await;
        // Whether the downstream read the body to its end is what the host
        // asked of the incoming request's.
        let _ = consumed_tx.write(transmitted.await).await;
    });
    Ok(request)
}

fn cut_off() -> ErrorCode {
    ErrorCode::InternalError(Some(
        "the lease gate's lease ended: nothing more is forwarded".into(),
    ))
}

enum Piped {
    /// The source ended.
    Complete,
    /// The hold stopped it.
    CutOff,
    /// Its reader is gone (the downstream, or the client, stopped reading).
    ReaderGone,
}

/// Copies `from` to `to` chunk by chunk while the hold allows.
async fn pipe(
    mut from: wit_bindgen::StreamReader<u8>,
    mut to: wit_bindgen::StreamWriter<u8>,
    gate: &Forwarding,
) -> Piped {
    loop {
        if !gate.may_forward() {
            return Piped::CutOff;
        }
        let (result, chunk) =
            match first_of(from.read(Vec::with_capacity(16 * 1024)), gate.stopped()).await {
                Either::Left(read) => read,
                Either::Right(()) => return Piped::CutOff,
            };
        if chunk.is_empty() {
            if matches!(result, wit_bindgen::StreamResult::Complete(_)) {
                continue;
            }
            return Piped::Complete;
        }
        if !gate.may_forward() {
            return Piped::CutOff;
        }
        match first_of(to.write_all(chunk), gate.stopped()).await {
            Either::Left(rest) if rest.is_empty() => {}
            Either::Left(_) => return Piped::ReaderGone,
            Either::Right(()) => return Piped::CutOff,
        }
    }
}

/// The downstream's response, relayed: its status and headers now, its
/// body and trailers by a task that forwards them chunk by chunk while
/// the hold allows, then says the exchange is over (the keeper releases).
fn relay(reply: Response, gate: Rc<Forwarding>) -> Response {
    let status = reply.get_status_code();
    // A copy, not the response's own (a child of it): the response is
    // consumed next.
    let headers =
        Fields::from_list(&reply.get_headers().copy_all()).unwrap_or_else(|_| Fields::new());
    let (done_tx, done_rx) = wit_future::new(|| Ok(()));
    let (from, trailers_in) = Response::consume_body(reply, done_rx);
    let (to, body) = wit_stream::new();
    let (trailers_tx, trailers) = wit_future::new(|| Ok(None));
    let (relayed, sent) = Response::new(headers, Some(body), trailers);
    let _ = relayed.set_status_code(status);
    wit_bindgen::spawn_local(async move {
        match pipe(from, to, &gate).await {
            Piped::Complete => {
                let _ = trailers_tx.write(trailers_in.await).await;
                let outcome = sent.await;
                let _ = done_tx.write(outcome).await;
            }
            // The host closes the client's connection at once on an error
            // in the trailers: the client sees the body cut short.
            Piped::CutOff => {
                let _ = trailers_tx.write(Err(cut_off())).await;
                let _ = done_tx.write(Err(cut_off())).await;
            }
            // The client is gone: stop reading the downstream's body.
            Piped::ReaderGone => {}
        }
        gate.finished();
    });
    relayed
}

/// The gate's own answer as a 0.3 response; its body is written by a task,
/// as the host reads the stream only after `handle` has returned.
fn response(answer: Answer) -> Response {
    let headers = Fields::from_list(&answer.headers).unwrap_or_else(|_| Fields::new());
    let (mut body_writer, body) = wit_stream::new();
    let (_, trailers) = wit_future::new(|| Ok(None));
    let (response, _sent) = Response::new(headers, Some(body), trailers);
    let _ = response.set_status_code(answer.status);
    wit_bindgen::spawn_local(async move {
        let _ = body_writer.write_all(answer.body).await;
    });
    response
}
