//! Keeps a live client's credentials fresh: a thread that fetches new ones
//! ahead of expiry and installs them, and one fetch on demand after the
//! store refused the old ones.

use super::{FetchedCredentials, SharedSource};
use crate::bindings::Credentials;
use crate::Error;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// How far ahead of expiry the SDKs refresh (at most).
const LEAD: Duration = Duration::from_secs(5 * 60);
/// The longest wait between attempts after a failed refresh.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// When credentials fetched at `fetched` that expire at `expires` are due
/// for a refresh: five minutes ahead, or a quarter of their lifetime ahead
/// when that is less (short-lived credentials). `None`: they do not expire.
pub(crate) fn due_at(fetched: SystemTime, expires: Option<SystemTime>) -> Option<SystemTime> {
    let expires = expires?;
    let lifetime = expires.duration_since(fetched).unwrap_or_default();
    Some(expires - LEAD.min(lifetime / 4))
}

/// Puts credentials into the client's instance; an error once the client
/// is gone.
pub(crate) type Install = Box<dyn Fn(&Credentials) -> Result<(), Error> + Send + Sync>;

/// Owned by a client (and its clones); dropping the last stops the thread.
pub(crate) struct Refresher {
    shared: Arc<Shared>,
}

struct Shared {
    source: SharedSource,
    install: Install,
    state: Mutex<State>,
    wake: Condvar,
    /// One fetch-and-install at a time (the thread, or a refused call).
    fetching: Mutex<()>,
}

struct State {
    current: Credentials,
    /// When the thread fetches next.
    due: Option<SystemTime>,
    /// When the credentials in now stop working.
    expires: Option<SystemTime>,
    /// Bumped whenever new credentials are installed.
    generation: u64,
    last_error: Option<String>,
    stop: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fetches, and installs what is new. True if new credentials went in.
    fn refresh(&self) -> Result<bool, Error> {
        let fetched_at = SystemTime::now();
        let fetched: FetchedCredentials = self.source.fetch()?;
        let changed = !same(&self.lock().current, &fetched.credentials);
        if changed {
            (self.install)(&fetched.credentials)?;
        }
        let mut state = self.lock();
        state.due = due_at(fetched_at, fetched.expires);
        state.expires = fetched.expires;
        state.last_error = None;
        if changed {
            state.current = fetched.credentials;
            state.generation += 1;
        }
        Ok(changed)
    }
}

impl Refresher {
    /// Starts refreshing `first` (already installed) from `source`.
    pub(crate) fn start(
        source: SharedSource,
        first: FetchedCredentials,
        install: Install,
    ) -> Result<Self, Error> {
        let shared = Arc::new(Shared {
            source,
            install,
            state: Mutex::new(State {
                current: first.credentials,
                due: due_at(SystemTime::now(), first.expires),
                expires: first.expires,
                generation: 0,
                last_error: None,
                stop: false,
            }),
            wake: Condvar::new(),
            fetching: Mutex::new(()),
        });
        let thread = shared.clone();
        std::thread::Builder::new()
            .name("s3-lease-credentials".into())
            .spawn(move || refresh_until_stopped(&thread))
            .map_err(|e| Error::Host(e.into()))?;
        Ok(Refresher { shared })
    }

    /// Which credentials are in: pass it to [`Refresher::after_refusal`].
    pub(crate) fn generation(&self) -> u64 {
        self.shared.lock().generation
    }

    /// The store refused the credentials of `generation`: unless newer ones
    /// went in meanwhile, fetch now. True if a retry will carry other
    /// credentials than the refused ones.
    pub(crate) fn after_refusal(&self, generation: u64) -> bool {
        let _one = self
            .shared
            .fetching
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if self.generation() != generation {
            return true;
        }
        match self.shared.refresh() {
            Ok(changed) => changed,
            Err(e) => {
                self.shared.lock().last_error = Some(e.to_string());
                false
            }
        }
    }

    /// Why the last refresh failed, while it has not succeeded since.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.shared.lock().last_error.clone()
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_all();
    }
}

fn same(a: &Credentials, b: &Credentials) -> bool {
    a.access_key_id == b.access_key_id
        && a.secret_access_key == b.secret_access_key
        && a.session_token == b.session_token
}

fn refresh_until_stopped(shared: &Shared) {
    loop {
        let mut state = shared.lock();
        loop {
            if state.stop {
                return;
            }
            let now = SystemTime::now();
            let wait = match state.due {
                Some(due) if due <= now => break,
                Some(due) => due.duration_since(now).unwrap_or_default(),
                None => Duration::from_secs(3600),
            };
            state = shared
                .wake
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(state);
        let _one = shared.fetching.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = shared.refresh() {
            // Try again soon, more often as expiry nears; the old
            // credentials stay in until then.
            let mut state = shared.lock();
            state.last_error = Some(e.to_string());
            let left = state
                .expires
                .and_then(|d| d.duration_since(SystemTime::now()).ok())
                .unwrap_or_default();
            let retry = (left / 4).clamp(Duration::from_secs(1), MAX_RETRY);
            state.due = Some(SystemTime::now() + retry);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshes_five_minutes_ahead_or_a_quarter_of_a_short_life() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let hour = t0 + Duration::from_secs(3600);
        assert_eq!(due_at(t0, Some(hour)), Some(hour - LEAD));
        let minute = t0 + Duration::from_secs(60);
        assert_eq!(due_at(t0, Some(minute)), Some(t0 + Duration::from_secs(45)));
        assert_eq!(due_at(t0, None), None);
        // Already expired: due now (at expiry), not in the past by more.
        assert_eq!(due_at(minute, Some(t0)), Some(t0));
    }
}
