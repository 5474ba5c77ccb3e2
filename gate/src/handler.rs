//! The WASI 0.2 gate. A 0.2 guest cannot make an `incoming-request` nor a
//! `response-outparam`, so it passes the ones it was given to the
//! downstream unchanged: no stamped headers (the downstream cannot make
//! fenced writes under the gate's grant), and no way to strip headers a
//! client sent, so a request carrying any of the gate's `s3-lease-*`
//! headers is refused (400) instead. It waits for the key as
//! `s3_lease_keep::gate::Waiting` says, holds it with
//! `s3_lease_keep::gate::Hold`, calls the downstream's `handle` if the hold
//! allows, and releases when that returns (a 0.2 handler has written its
//! body, or handed the outparam back unset, by then). Its calls block: it
//! can neither renew while the downstream runs nor give up on an attempt
//! under way, so it bounds each request to the store by half the wait
//! (100 ms to 10 s). The 400, 502 and 503 are the gate's own answers; the
//! request is not forwarded.

use crate::answer::Answer;
use crate::attempts::{self, Attempted, Judged, Slot};
use crate::bindings::wasi::cli::environment::get_environment;
use crate::bindings::wasi::clocks::{monotonic_clock, wall_clock};
use crate::bindings::wasi::http::incoming_handler as downstream;
use crate::bindings::wasi::http::types::{
    Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};
use crate::bindings::wasi::random::random::get_random_u64;
use crate::seen::{Recent, Seen};
use crate::settings::Settings;
use s3_lease_guest::{Client, Config, Held, Options, SlotAttempt, SlotOptions};
use s3_lease_keep::gate::{Hold, Next, Try, Waiting};
use s3_lease_keep::guard::Timing;
use std::time::Duration;

struct Gate;

crate::bindings::export!(Gate with_types_in crate::bindings);

impl crate::bindings::exports::wasi::http::incoming_handler::Guest for Gate {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        match gate(&request) {
            Ok((held, mut hold, key)) => {
                if !hold.calling(mono_ms()) {
                    let _ = held.into_lease();
                    return send(
                        Answer::lease_lost(&key, "its claim ran out while it was granted"),
                        response_out,
                    );
                }
                downstream::handle(request, response_out);
                hold.finished(mono_ms());
                match hold.poll(mono_ms()) {
                    // A failed release changes nothing sent: the lease lapses.
                    Next::Release => {
                        let _ = held.release();
                    }
                    _ => {
                        let _ = held.into_lease();
                    }
                }
            }
            Err(refused) => {
                send(refused.answer, response_out);
                // After the answer: the client need not wait for it.
                if let Some((client, key, holder_id)) = refused.leave {
                    let _ = client.leave_queue(&key, &holder_id);
                }
            }
        }
    }
}

/// The gate's own answer, and the place in the queue to give up after it.
struct Refused {
    answer: Answer,
    leave: Option<(Client, String, String)>,
}

impl From<Answer> for Refused {
    fn from(answer: Answer) -> Refused {
        Refused {
            answer,
            leave: None,
        }
    }
}

fn mono_ms() -> u64 {
    monotonic_clock::now() / 1_000_000
}

fn wall_ms() -> u64 {
    let now = wall_clock::now();
    now.seconds
        .saturating_mul(1_000)
        .saturating_add(u64::from(now.nanoseconds / 1_000_000))
}

fn sleep_until(ms: u64) {
    monotonic_clock::subscribe_instant(ms.saturating_mul(1_000_000)).block();
}

fn gate(request: &IncomingRequest) -> Result<(Held, Hold, String), Refused> {
    let env = get_environment();
    let settings = crate::settings::settings(&env).map_err(|why| Answer::not_configured(&why))?;
    let config = Config::from_vars(|name| crate::settings::var(&env, name))
        .map_err(|e| Refused::from(Answer::not_configured(&e.to_string())))?;
    let path = request.path_with_query().unwrap_or_default();
    let headers = request.headers();
    if let Some((name, _)) = headers
        .entries()
        .into_iter()
        .find(|(name, _)| crate::answer::is_stamped(name))
    {
        return Err(Answer::stamped_header(&name).into());
    }
    let key = settings
        .key
        .key(&path, |name| headers.get(name))
        .map_err(|why| Refused::from(Answer::no_key(&why)))?;
    drop(headers);
    let bound_ms = request_bound_ms(settings.wait_ms);
    let client = Client::new(&config.with_request_timeout(Duration::from_millis(bound_ms)))
        .map_err(|e| Refused::from(attempts::store_error(&e)))?;
    let (held, hold) = wait_for_key(&client, &settings, &key)?;
    Ok((held, hold, key))
}

/// Each request to the store is bounded by half the wait (100 ms to 10 s):
/// a blocking call cannot be given up on.
fn request_bound_ms(wait_ms: u64) -> u64 {
    (wait_ms / 2).clamp(100, 10_000)
}

/// Waits for the key as `Waiting` says, one blocking attempt at a time. An
/// attempt that answers after the wait plus the margin is given up on as
/// it answers: its grant released, the queue left (after the answer).
fn wait_for_key(client: &Client, settings: &Settings, key: &str) -> Result<(Held, Hold), Refused> {
    let holder_id = settings.holder_id(get_random_u64());
    let options = Options::ttl(Duration::from_millis(settings.ttl_ms))
        .with_metadata("s3-lease-gate")
        .with_holder_id(holder_id.clone());
    let timing = Timing::for_ttl(settings.ttl_ms);
    // A 0.2 instance serves one request: it has seen no holds before.
    let recent = Recent::default();
    let poll_ms = attempts::fair_poll_ms(&recent, settings.ttl_ms);
    let mut waiting = Waiting::new(mono_ms(), settings.wait_ms);
    let mut seen = Seen::default();
    let mut last_error = None;
    let mut queued = false;
    loop {
        match waiting.poll(mono_ms()) {
            Try::Attempt => {
                let outcome = attempt(client, key, &options, settings.fair);
                let now = mono_ms();
                if let Try::GiveUp(_) = waiting.poll(now) {
                    seen.store_slow = true;
                    match attempts::judge(outcome, now, &mut Seen::default(), &mut None) {
                        Judged::Granted(held) => {
                            let _ = held.release();
                        }
                        _ => queued |= settings.fair,
                    }
                    break;
                }
                match attempts::judge(outcome, now, &mut seen, &mut last_error) {
                    Judged::Granted(held) => match waiting.granted(timing, now) {
                        Some(hold) => return Ok((held, hold)),
                        None => {
                            let _ = held.release();
                            break;
                        }
                    },
                    Judged::Missed(missed) => {
                        queued |= missed == s3_lease_keep::wait::Missed::Queued;
                        waiting.missed(now, missed, get_random_u64(), poll_ms);
                    }
                    Judged::Failed(answer) => return Err(answer.into()),
                }
            }
            Try::WakeAt(at) => sleep_until(at),
            Try::GiveUp(_) => break,
        }
    }
    Err(Refused {
        answer: attempts::gave_up(
            key,
            &seen,
            &recent,
            last_error,
            settings.wait_ms,
            waiting.waited_ms(mono_ms()),
            wall_ms(),
        ),
        leave: queued.then(|| (client.clone(), key.to_string(), holder_id)),
    })
}

fn attempt(client: &Client, key: &str, options: &Options, fair: bool) -> Attempted<Held> {
    if fair {
        let slot = SlotOptions::limit(1).fair();
        Attempted::Slot(
            client
                .try_acquire_slot(key, options, &slot)
                .map(|a| match a {
                    SlotAttempt::Granted(held) => Slot::Granted(held),
                    SlotAttempt::Queued(place) => Slot::Queued(place),
                    SlotAttempt::Full(state) => Slot::Full(state),
                }),
        )
    } else {
        Attempted::Plain(client.acquire_with(key, options, Duration::ZERO))
    }
}

/// Sends the gate's own answer. Failures here mean the client is gone.
fn send(answer: Answer, response_out: ResponseOutparam) {
    let Ok(headers) = Fields::from_list(&answer.headers) else {
        return;
    };
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(answer.status);
    let Ok(body) = response.body() else {
        return;
    };
    ResponseOutparam::set(response_out, Ok(response));
    if let Ok(stream) = body.write() {
        for chunk in answer.body.chunks(4096) {
            if stream.blocking_write_and_flush(chunk).is_err() {
                return;
            }
        }
    }
    let _ = OutgoingBody::finish(body, None);
}
