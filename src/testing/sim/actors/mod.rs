//! What the simulated processes run: the real client (`ClientCore`), the
//! real elector, and the host's machines (`s3_lease_keep`), driven as a
//! host drives them, with the adversaries a deployment has (altered
//! leases, spent leases tried again, writes after a pause).

mod elector;
mod holding;
mod locker;
mod refresher;
mod slots;

use super::host::SimIo;
use super::process::Lane;
use super::setup::ActorKind;
use super::world::World;
use crate::error::Error;
use crate::fenced::Change;
use crate::lease::Lease;
use crate::testing::history::{FencedOp, FencedOutcome};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

pub type Task = Pin<Box<dyn Future<Output = ()>>>;

/// The task of one life of `actor`: its calls, and beside them its
/// credential refresher (polled first, so the first keys are in before
/// the first call).
pub fn spawn(world: &Rc<RefCell<World>>, actor: usize) -> Task {
    let io = |lane| SimIo {
        world: world.clone(),
        actor,
        lane,
    };
    let kind = world.borrow().hosts[actor].kind;
    let calls: Task = match kind {
        ActorKind::Locker => Box::pin(locker::run(io(Lane::Calls), None)),
        ActorKind::PlainOnSemaphore(n) => Box::pin(locker::run(io(Lane::Calls), Some(n))),
        ActorKind::Elector => Box::pin(elector::run(io(Lane::Calls))),
        ActorKind::Slots(n) => Box::pin(slots::run(io(Lane::Calls), n)),
    };
    let refresher: Task = Box::pin(refresher::run(io(Lane::Refresher)));
    Box::pin(beside(refresher, calls))
}

/// Runs `first` and `second` together until `second` ends: each poll
/// polls both (one whose wait is not over just waits on).
async fn beside(first: Task, second: Task) {
    let mut first = Some(first);
    let mut second = second;
    std::future::poll_fn(move |cx| {
        if let Some(f) = first.as_mut() {
            if f.as_mut().poll(cx).is_ready() {
                first = None;
            }
        }
        second.as_mut().poll(cx)
    })
    .await
}

/// An error the injected faults explain: a transport error (a lost reply,
/// a reset, a timeout), a request the store timed out, a 409 that
/// persisted, a 5xx, a throttle, keys refused as expired. Anything else
/// failing an operation is a bug.
pub fn is_injected_fault(e: &Error) -> bool {
    match e {
        Error::Transport(_) | Error::Conflict(_) => true,
        Error::S3(s) if s.code == "ExpiredToken" || s.is_request_timeout() => true,
        Error::S3(s) => matches!(s.status, 409 | 412 | 429 | 501) || s.status >= 500,
        Error::AccessDenied(s) => s.code == "ExpiredTokenException",
        _ => false,
    }
}

/// An error an operation may end with here, or a violation.
pub fn expect_fault(io: &SimIo, what: &str, e: &Error) {
    // A HEAD's reply has no body, so no code: a bare 400 is its keys
    // refused as expired, if the store refused this life's keys before.
    let bare_400 = matches!(e, Error::S3(s) if s.status == 400 && s.code.is_empty());
    let refused = io.with(|w, id| w.hosts[id].credentials.refused > 0);
    let explained = is_injected_fault(e) || (bare_400 && refused);
    if !explained {
        let who = io.with(|w, id| w.who(id));
        io.with(|w, _| {
            w.violated(
                "no call fails but by an injected fault",
                format!("{who}: {what}: {e:?}"),
            )
        });
    }
}

/// A renew or release of `lease` that ended `Lost` must name someone else
/// as the key's holder: a `Lost` whose current holder is the lease's own
/// grant (its holder and token, not released) read the holder's own write
/// (an earlier call's, landed unanswered) as another's, and gave up a
/// lease nobody else can take until it runs out.
pub fn judge_lost(io: &SimIo, what: &str, lease: &Lease, e: &Error) {
    let Error::Lost {
        current: Some(s), ..
    } = e
    else {
        return;
    };
    let own = s.semaphore.is_none()
        && s.record.holder_id == lease.holder_id
        && s.record.token == lease.token
        && s.record.expires_at_ms != 0;
    if own {
        let who = io.with(|w, id| w.who(id));
        io.with(|w, _| {
            w.violated(
                "a lost lease never names its own grant as the holder",
                format!("{who}: {what} of {lease:?}: {e:?}"),
            )
        });
    }
}

/// `lease` with one field changed, as a careless or malicious caller might.
pub fn alter(lease: &Lease, pick: u64) -> Lease {
    let mut l = lease.clone();
    match pick % 8 {
        0 => l.token = l.token.saturating_sub(1).max(1) + u64::from(l.token <= 1),
        1 => l.token += 1,
        2 => l.holder_id.push('x'),
        3 => l.expires_at_ms += 60_000,
        4 => l.metadata.push_str("more"),
        5 => l.etag = format!("\"{}\"", "0".repeat(32)),
        6 => l.ttl_ms = l.ttl_ms.saturating_mul(2).min(crate::limits::MAX_TTL_MS),
        _ => l.acquired_at_ms = l.acquired_at_ms.wrapping_sub(1),
    }
    l
}

/// Uses an altered copy of `lease`: every use must be refused with
/// `invalid-argument` before a request goes out.
pub async fn try_forgery(io: &mut SimIo, core: &crate::client::ClientCore, lease: &Lease) {
    let pick = io.with(|w, _| w.rng.next_u64());
    let forged = alter(lease, pick);
    if forged == *lease {
        return;
    }
    let before = io.requests();
    let mut core = core.clone();
    // Fenced writes are S3's: a DynamoDB client refuses them before
    // looking at the lease.
    let fenced = !io.with(|w, _| w.setup.dynamodb);
    let result = match pick % (2 + u64::from(fenced)) {
        0 => core.rewrite(io, forged.clone(), false).await.map(|_| ()),
        1 => core.rewrite(io, forged.clone(), true).await.map(|_| ()),
        _ => {
            let change = Change::Put {
                body: b"forged".to_vec(),
                content_type: "text/plain".into(),
            };
            core.fenced_write(io, &forged, "data/forged", change, false)
                .await
                .map(|_| ())
        }
    };
    let sent = io.requests() - before;
    let who = io.with(|w, id| w.who(id));
    match result {
        Err(Error::InvalidArgument(_)) if sent == 0 => {
            io.with(|w, _| w.report.forgeries_refused += 1)
        }
        other => io.with(|w, _| {
            w.violated(
                "an altered lease is refused before any request",
                format!("{who}: {forged:?} (from {lease:?}) gave {other:?} after {sent} requests"),
            )
        }),
    }
}

/// A fenced put or delete under `lease` on `key`'s current object.
pub async fn fenced_write(
    io: &mut SimIo,
    core: &mut crate::client::ClientCore,
    key: &str,
    lease: &Lease,
    zombie: bool,
) {
    let (object, value, delete, who, start) = io.with(|w, id| {
        let (object, value) = w.fenced_target(key);
        (object, value, w.rng.chance(0.03), w.who(id), w.now * 1_000)
    });
    let index = io.with(|w, _| {
        w.fenced_started(FencedOp {
            object: object.clone(),
            who,
            token: lease.token,
            value,
            delete,
            zombie,
            start,
            end: u64::MAX,
            outcome: FencedOutcome::Unknown("under way".into()),
        })
    });
    let change = if delete {
        Change::Delete { nonce: value }
    } else {
        Change::Put {
            body: format!("v{value}").into_bytes(),
            content_type: "text/plain".into(),
        }
    };
    let writes_before = io.with(|w, id| w.hosts[id].writes_sent);
    let result = core.fenced_write(io, lease, &object, change, false).await;
    let wrote = io.with(|w, id| w.hosts[id].writes_sent) > writes_before;
    let outcome = match result {
        Ok(_) if delete => FencedOutcome::Deleted,
        Ok(written) => FencedOutcome::Written {
            previous_token: written.previous_token,
        },
        Err(Error::Fenced { stored_token, .. }) => FencedOutcome::Fenced { stored_token },
        Err(e) => {
            expect_fault(io, "a fenced write", &e);
            match wrote {
                true => FencedOutcome::Unknown(format!("{e:?}")),
                false => FencedOutcome::NotSent(format!("{e:?}")),
            }
        }
    };
    io.with(|w, _| w.fenced_finished(index, outcome));
}
