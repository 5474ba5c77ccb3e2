//! The client and a held lease: what both builds share. Their calls are in
//! `calls`, from one source for both builds.

use crate::bindings::{RawClient, RawElector};
use crate::config::Config;
use crate::convert;
use crate::error::Error;
use crate::types::{Lease, LockState};
use std::fmt;
use std::rc::Rc;

/// A client of one store and configuration. Cheap to clone: clones share
/// the component's client (on WASI 0.3, calls on one client take turns;
/// give concurrent tasks a `Client::new` each).
#[derive(Clone)]
pub struct Client {
    pub(crate) raw: Rc<RawClient>,
}

impl Client {
    /// Validates the config; no request is sent. `Error::InvalidConfig`
    /// names a refused field.
    pub fn new(config: &Config) -> Result<Client, Error> {
        let raw = RawClient::new(&convert::config(config)).map_err(convert::error)?;
        Ok(Client { raw: Rc::new(raw) })
    }
}

/// Leader election for one key, stepwise (`Client::elector`): call
/// `step` from a timer, or once per invocation, at most every
/// `Step::next_step_in`; each step does at most what is due (one attempt,
/// one renew, or one look). Call `resign` before dropping one that may
/// lead, so the next leader need not wait out the lease.
pub struct Elector {
    pub(crate) raw: RawElector,
}

impl fmt::Debug for Elector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Elector")
    }
}

/// What one attempt at a slot found (`Client::try_acquire_slot`).
#[derive(Debug)]
pub enum SlotAttempt {
    /// A slot: a held lease that renews, releases and fences like a
    /// lock's, and releases its slot on drop.
    Granted(Held),
    /// Waiting in line (fair): the `place`-th live waiter, 1-based.
    /// Attempt again to keep the place; `Client::leave_queue` gives it up.
    Queued(u32),
    /// No slot for this caller now; the state read, when there was one.
    Full(Option<LockState>),
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Client")
    }
}

/// A lease this guest holds: its fenced writes, its renewals, and its
/// release, which happens on drop when `release` was not called (see the
/// crate's documentation for what drop does on each build).
pub struct Held {
    pub(crate) client: Client,
    pub(crate) lease: Lease,
    /// False for a lease another component holds and releases (a gate's,
    /// `from_forwarded`), and once released or detached.
    pub(crate) release_on_drop: bool,
}

impl Held {
    /// A lease acquired elsewhere and forwarded here (a gate's, read with
    /// `Lease::from_headers`): fenced writes under it, renewals, but no
    /// release on drop: its owner releases it. `release` still releases.
    pub fn from_forwarded(client: &Client, lease: Lease) -> Held {
        Held {
            client: client.clone(),
            lease,
            release_on_drop: false,
        }
    }

    /// The fencing token: pass it to whatever the lease protects.
    pub fn token(&self) -> u64 {
        self.lease.token
    }

    pub fn holder(&self) -> &str {
        &self.lease.holder_id
    }

    pub fn key(&self) -> &str {
        &self.lease.key
    }

    /// The sealed grant as it stands (after the last renew).
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Stops managing the lease without releasing it: the caller (or the
    /// component it forwards the lease to) renews and releases it, or it
    /// lapses after its ttl.
    pub fn into_lease(mut self) -> Lease {
        self.release_on_drop = false;
        self.lease.clone()
    }
}

impl fmt::Debug for Held {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Held")
            .field("lease", &self.lease)
            .field("release_on_drop", &self.release_on_drop)
            .finish()
    }
}
