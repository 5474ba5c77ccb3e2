//! Bearer tokens, for the stores that take them: where a live client takes
//! fresh ones from (a store's own source in its credentials folder, or the
//! caller's own [`TokenSource`]), and the last one fetched, shared by the
//! clients of one config.

use super::refresh;
use crate::error::Error;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// A bearer token and when it expires. `Debug` never shows the token.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccessToken {
    pub token: String,
    /// `None`: the source did not say.
    pub expires: Option<SystemTime>,
}

impl AccessToken {
    pub fn new(token: impl Into<String>, expires: Option<SystemTime>) -> Self {
        AccessToken {
            token: token.into(),
            expires,
        }
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"<redacted>")
            .field("expires", &self.expires)
            .finish()
    }
}

/// Hands out bearer tokens, a fresh one on every call (a
/// client calls it ahead of expiry, and once after the store refused the
/// old one). Errors must not carry secrets.
pub trait TokenSource: Send + Sync + 'static {
    fn fetch(&self) -> Result<AccessToken, Error>;

    /// Where the tokens come from, for logs (nothing secret).
    fn describe(&self) -> String {
        "a token source".to_string()
    }
}

/// A [`TokenSource`] a client of a store that takes tokens refreshes from,
/// given to that store's builder's `token_source` (compared by identity).
/// It keeps the last token fetched, so that clients connected from one
/// config do not each fetch one again.
#[derive(Clone)]
pub struct SharedTokenSource {
    source: Arc<dyn TokenSource>,
    /// The last fetch, and when it was made.
    last: Arc<Mutex<Option<(SystemTime, AccessToken)>>>,
}

impl SharedTokenSource {
    pub fn new(source: impl TokenSource) -> Self {
        SharedTokenSource {
            source: Arc::new(source),
            last: Arc::default(),
        }
    }

    /// Fetches from the source now, and keeps what it gave.
    pub fn fetch(&self) -> Result<AccessToken, Error> {
        let token = self.source.fetch()?;
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((SystemTime::now(), token.clone()));
        Ok(token)
    }

    /// Where the last token fetched came from, and when it expires
    /// (nothing secret); `None` before the first fetch.
    pub fn last_source(&self) -> Option<(String, Option<SystemTime>)> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let expires = last.as_ref()?.1.expires;
        Some((self.source.describe(), expires))
    }

    /// The last token fetched, unless it is due for a refresh (or there is
    /// none yet): then a fetch.
    pub fn latest(&self) -> Result<AccessToken, Error> {
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match last {
            Some((at, t))
                if refresh::due_at(at, t.expires).is_none_or(|due| due > SystemTime::now()) =>
            {
                Ok(t)
            }
            _ => self.fetch(),
        }
    }
}

impl PartialEq for SharedTokenSource {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.source, &other.source)
    }
}

impl Eq for SharedTokenSource {}

impl fmt::Debug for SharedTokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedTokenSource(..)")
    }
}
