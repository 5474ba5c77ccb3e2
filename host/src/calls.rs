//! The room every part of the API stands on: a client's instances (the
//! pool), the refresher that keeps their credentials fresh, and the one
//! path a call takes (retried once with new credentials when the store
//! refused the old ones). Leases, their scheduler, electors and the close
//! all call through here; nothing here knows of them.

use crate::component::{self, Answer};
use crate::config::StoreConfig;
use crate::credentials::refresh::Refresher;
use crate::credentials::{AccessToken, FetchedCredentials, SharedSource, SharedTokenSource};
use crate::engine::clock::Clock;
use crate::engine::raw::RawInstance;
use crate::engine::runtime::Runtime;
use crate::error::{Error, ErrorStore};
use crate::pool::{MakeOptions, Pool};
use crate::types::{Credential, Credentials, LeaseRecord};
use std::cell::Cell;
use std::sync::{Arc, Weak};

/// A client's instances and credentials, shared by the client, its
/// leases' scheduler and its electors.
pub(crate) struct Calls {
    pub pool: Pool,
    /// The clock every deadline of the client is judged on (its
    /// instances' monotonic clock too).
    pub clock: Clock,
    /// With a credentials source: keeps the instances' credentials fresh.
    refresher: Option<Refresher>,
}

impl Calls {
    /// The pool, its first instance made now (a configuration the
    /// component refuses fails here), and the refresher when the
    /// credentials come from a source. Blocks (use [`blocking`]).
    pub fn open(
        runtime: Runtime,
        config: StoreConfig,
        instances: usize,
        make_options: MakeOptions,
        clock: Clock,
    ) -> Result<Arc<Calls>, Error> {
        let (first, credential) =
            match (config.token_source().cloned(), config.credentials_source()) {
                (Some(source), _) => {
                    let token = source.latest()?;
                    let credential = config.bearer(token.token.clone());
                    (Some(First::Token(source, token)), credential)
                }
                (None, Some(source)) => {
                    let fetched = source.latest()?;
                    let credential = Credential::Aws(fetched.credentials.clone());
                    (Some(First::Aws(source.clone(), fetched)), Some(credential))
                }
                (None, None) => (None, None),
            };
        let store = Arc::new(config.error_store());
        let pool = Pool::new(
            runtime,
            config.clone(),
            credential,
            store,
            instances,
            make_options,
            clock.clone(),
        )?;
        Ok(Arc::new_cyclic(|weak: &Weak<Calls>| {
            let calls = weak.clone();
            // Only a thread that cannot start fails this: the credentials
            // then stay as fetched.
            let refresher = match first {
                Some(First::Aws(source, fetched)) => {
                    let install = move |c: &Credentials| match calls.upgrade() {
                        Some(calls) => calls.pool.set_credential(&Credential::Aws(c.clone())),
                        None => Err(Error::host("the client is gone")),
                    };
                    let (first, expires) = (fetched.credentials, fetched.expires);
                    Refresher::start(source, first, expires, Box::new(install)).ok()
                }
                Some(First::Token(source, token)) => {
                    let bearer = move |token: &String| config.bearer(token.clone());
                    let install = move |token: &String| match (calls.upgrade(), bearer(token)) {
                        (Some(calls), Some(credential)) => calls.pool.set_credential(&credential),
                        (Some(_), None) => Err(Error::host("a bearer token for a store of keys")),
                        (None, _) => Err(Error::host("the client is gone")),
                    };
                    let (first, expires) = (token.token, token.expires);
                    Refresher::start(source, first, expires, Box::new(install)).ok()
                }
                None => None,
            };
            Calls {
                pool,
                clock,
                refresher,
            }
        }))
    }

    /// The store's name as errors name it (`S3`, say).
    pub fn store_name(&self) -> &'static str {
        self.pool.store().name()
    }

    /// Where the store's errors happen, shared by all of them.
    pub fn error_store(&self) -> &Arc<ErrorStore> {
        self.pool.store()
    }

    /// Which instance serves `key`.
    pub fn index_of(&self, key: &str) -> usize {
        self.pool.index_of(key)
    }

    /// Runs one call on instance `index`; if the store refused its
    /// credentials and the source gives other ones, runs it once more with
    /// those (the store applied nothing it refused, so the retry is safe).
    pub async fn call<T: Send + 'static>(
        self: &Arc<Self>,
        index: usize,
        f: impl Fn(&mut RawInstance) -> Answer<T> + Send + Sync + 'static,
    ) -> Result<T, Error> {
        let generation = self.credentials_refreshes();
        let f = Arc::new(f);
        let first = f.clone();
        match self.pool.call_async(index, move |raw| first(raw)).await {
            Err(e) if e.refused_credentials() => {
                if self.renew_credentials(generation).await {
                    self.pool.call_async(index, move |raw| f(raw)).await
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    /// The store refused the credentials of `generation`: fetch new ones
    /// (once per generation; fetching may block, so on a blocking thread)
    /// and put them in. True if the next call carries others.
    pub async fn renew_credentials(self: &Arc<Self>, generation: u64) -> bool {
        let calls = self.clone();
        blocking(move || {
            calls
                .refresher
                .as_ref()
                .is_some_and(|r| r.after_refusal(generation))
        })
        .await
        .unwrap_or(false)
    }

    /// How many times new credentials went in from the client's source.
    pub fn credentials_refreshes(&self) -> u64 {
        self.refresher.as_ref().map_or(0, |r| r.generation())
    }

    /// Why the last refresh of the credentials failed, while it has not
    /// succeeded since.
    pub fn credentials_error(&self) -> Option<String> {
        self.refresher.as_ref().and_then(|r| r.last_error())
    }
}

/// The first credentials a client's refresher starts from, with their
/// source: AWS keys, or a bearer token.
enum First {
    Aws(SharedSource, FetchedCredentials),
    Token(SharedTokenSource, AccessToken),
}

thread_local! {
    /// Set while this thread runs a blocking client's call (`blocking`): work
    /// the async code hands to a blocking thread runs here instead, the
    /// caller's thread being one that may block.
    static ON_A_BLOCKING_CALL: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`, a blocking client's call on this thread (see `blocking`).
pub(crate) fn as_blocking_call<T>(f: impl FnOnce() -> T) -> T {
    let was = ON_A_BLOCKING_CALL.with(|on| on.replace(true));
    let output = f();
    ON_A_BLOCKING_CALL.with(|on| on.set(was));
    output
}

/// Whether this thread runs a blocking client's call.
pub(crate) fn on_a_blocking_call() -> bool {
    ON_A_BLOCKING_CALL.with(Cell::get)
}

/// Runs blocking work (opening instances, fetching credentials) on tokio's
/// blocking threads; in a blocking client's call, on the caller's own
/// thread, which may block (`blocking::Client`), rather than hop to another.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    if on_a_blocking_call() {
        return Ok(f());
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::host(format!("a call's thread ended: {e}")))
}

/// Releases `lease` from a thread of its own: nothing to wait for, and no
/// runtime needed (a drop may happen anywhere).
pub(crate) fn release_in_background(calls: &Weak<Calls>, index: usize, lease: LeaseRecord) {
    if let Some(calls) = calls.upgrade() {
        // Best effort: if it fails, the lease simply runs out.
        calls.pool.send_job(index, move |opener, instance| {
            let _ = opener.run(instance, move |raw| component::release(raw, &lease));
        });
    }
}
