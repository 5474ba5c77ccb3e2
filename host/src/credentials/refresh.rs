//! Keeps a live client's credentials (AWS keys, or a bearer token)
//! fresh: a thread that fetches new ones ahead of expiry and installs them,
//! and one fetch on demand after the store refused the old ones. When to
//! fetch is `s3_lease_keep::refresh` (paced, whatever a source hands out);
//! the thread only sleeps until then and fetches.

use super::{FetchedCredentials, SharedSource, SharedTokenSource};
use crate::error::Error;
use crate::types::Credentials;
use s3_lease_keep::refresh::{self, Refresh};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// When credentials fetched at `fetched` that expire at `expires` are due
/// for a refresh (see `s3_lease_keep::refresh::due_at`).
pub(crate) fn due_at(fetched: SystemTime, expires: Option<SystemTime>) -> Option<SystemTime> {
    refresh::due_at(wall_ms(fetched), expires.map(wall_ms)).map(wall_time)
}

fn wall_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn wall_time(ms: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
}

/// What a refresher fetches: AWS credentials from a [`SharedSource`], or
/// bearer tokens from a [`SharedTokenSource`].
pub(crate) trait Fetch: Send + Sync + 'static {
    type Secret: Clone + PartialEq + Send + 'static;
    /// A fresh secret, and when it expires.
    fn fetch(&self) -> Result<(Self::Secret, Option<SystemTime>), Error>;
}

impl Fetch for SharedSource {
    type Secret = Credentials;
    fn fetch(&self) -> Result<(Credentials, Option<SystemTime>), Error> {
        let fetched: FetchedCredentials = SharedSource::fetch(self)?;
        Ok((fetched.credentials, fetched.expires))
    }
}

impl Fetch for SharedTokenSource {
    type Secret = String;
    fn fetch(&self) -> Result<(String, Option<SystemTime>), Error> {
        let token = SharedTokenSource::fetch(self)?;
        Ok((token.token, token.expires))
    }
}

/// Puts a fresh secret into the client's instances; an error once the
/// client is gone.
pub(crate) type Install<T> = Box<dyn Fn(&T) -> Result<(), Error> + Send + Sync>;

/// Owned by a client (and its clones); dropping the last stops the thread.
pub(crate) struct Refresher {
    shared: Arc<dyn Control>,
}

/// A refresher's state, whatever it fetches.
trait Control: Send + Sync {
    fn generation(&self) -> u64;
    fn last_error(&self) -> Option<String>;
    /// Fetches, and installs what is new. True if something new went in.
    fn refresh(&self) -> Result<bool, Error>;
    /// One fetch-and-install at a time (the thread, or a refused call).
    fn fetching(&self) -> MutexGuard<'_, ()>;
    /// May a refused call's fetch go now (see `Refresh::on_demand`)?
    fn on_demand(&self) -> bool;
    fn stop(&self);
}

struct Shared<F: Fetch> {
    source: F,
    install: Install<F::Secret>,
    state: Mutex<State<F::Secret>>,
    wake: Condvar,
    fetching: Mutex<()>,
}

struct State<T> {
    current: T,
    /// When the thread fetches next.
    schedule: Refresh,
    /// Bumped whenever a new secret is installed.
    generation: u64,
    last_error: Option<String>,
    stop: bool,
}

impl<F: Fetch> Shared<F> {
    fn lock(&self) -> MutexGuard<'_, State<F::Secret>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<F: Fetch> Control for Shared<F> {
    fn generation(&self) -> u64 {
        self.lock().generation
    }

    fn last_error(&self) -> Option<String> {
        self.lock().last_error.clone()
    }

    fn refresh(&self) -> Result<bool, Error> {
        let fetched_at = wall_ms(SystemTime::now());
        let (fresh, expires) = match self.source.fetch() {
            Ok(fetched) => fetched,
            Err(e) => {
                let mut state = self.lock();
                state.schedule.failed(fetched_at);
                state.last_error = Some(e.to_string());
                return Err(e);
            }
        };
        let changed = self.lock().current != fresh;
        if changed {
            if let Err(e) = (self.install)(&fresh) {
                let mut state = self.lock();
                state.schedule.failed(fetched_at);
                state.last_error = Some(e.to_string());
                return Err(e);
            }
        }
        let mut state = self.lock();
        state.schedule.fetched(fetched_at, expires.map(wall_ms));
        state.last_error = None;
        if changed {
            state.current = fresh;
            state.generation += 1;
        }
        Ok(changed)
    }

    fn fetching(&self) -> MutexGuard<'_, ()> {
        self.fetching.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn on_demand(&self) -> bool {
        self.lock().schedule.on_demand(wall_ms(SystemTime::now()))
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
    }
}

impl Refresher {
    /// Starts refreshing `first` (already installed, expiring at
    /// `expires`) from `source`.
    pub(crate) fn start<F: Fetch>(
        source: F,
        first: F::Secret,
        expires: Option<SystemTime>,
        install: Install<F::Secret>,
    ) -> Result<Self, Error> {
        let shared = Arc::new(Shared {
            source,
            install,
            state: Mutex::new(State {
                current: first,
                schedule: Refresh::new(wall_ms(SystemTime::now()), expires.map(wall_ms)),
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
            .map_err(Error::host)?;
        Ok(Refresher { shared })
    }

    /// Which credentials are in: pass it to [`Refresher::after_refusal`].
    pub(crate) fn generation(&self) -> u64 {
        self.shared.generation()
    }

    /// The store refused the credentials of `generation`: unless newer ones
    /// went in meanwhile, fetch now (at most once a second). True if a
    /// retry will carry other credentials than the refused ones.
    pub(crate) fn after_refusal(&self, generation: u64) -> bool {
        let _one = self.shared.fetching();
        if self.generation() != generation {
            return true;
        }
        // Paced: a source that keeps handing out refused credentials would
        // otherwise be asked once per refused call.
        if !self.shared.on_demand() {
            return false;
        }
        self.shared.refresh().unwrap_or(false)
    }

    /// Why the last refresh failed, while it has not succeeded since.
    pub(crate) fn last_error(&self) -> Option<String> {
        self.shared.last_error()
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.shared.stop();
    }
}

/// The refresher's driver: sleeps until the schedule's next fetch, fetches.
fn refresh_until_stopped<F: Fetch>(shared: &Shared<F>) {
    loop {
        let mut state = shared.lock();
        loop {
            if state.stop {
                return;
            }
            let now = wall_ms(SystemTime::now());
            let wait = match state.schedule.due() {
                Some(due) if due <= now => break,
                Some(due) => Duration::from_millis(due - now),
                None => Duration::from_secs(3600),
            };
            state = shared
                .wake
                .wait_timeout(state, wait)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(state);
        let _one = shared.fetching();
        // A failure is recorded, and the old credentials stay in until a
        // fetch succeeds; the schedule says when to try again.
        let _ = shared.refresh();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::CredentialsSource;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Hands out credentials that expired an hour ago, and counts fetches.
    struct Expired(Arc<AtomicU64>);

    impl CredentialsSource for Expired {
        fn fetch(&self) -> Result<FetchedCredentials, Error> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Ok(FetchedCredentials {
                credentials: Credentials::new("AKID", "secret"),
                expires: Some(SystemTime::now() - Duration::from_secs(3600)),
                source: "test".into(),
            })
        }
    }

    /// A source of credentials already expired made the thread fetch
    /// hundreds of thousands of times a second: every fetch is paced now.
    #[test]
    fn a_source_of_expired_credentials_is_fetched_from_at_a_paced_rate() {
        let fetches = Arc::new(AtomicU64::new(0));
        let source = SharedSource::new(Expired(fetches.clone()));
        let first = source.fetch().expect("fetch");
        let refresher = Refresher::start(
            source,
            first.credentials,
            first.expires,
            Box::new(|_: &Credentials| Ok(())),
        )
        .expect("start");
        std::thread::sleep(Duration::from_millis(1_500));
        drop(refresher);
        let n = fetches.load(Ordering::Relaxed);
        assert!((1..=4).contains(&n), "{n} fetches in 1.5 s");
    }
}
