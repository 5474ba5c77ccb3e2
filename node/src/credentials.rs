//! `credentials:` as a function: an AWS SDK v3 credential provider (an
//! async function returning `{ accessKeyId, secretAccessKey, sessionToken,
//! expiration }`), as the host's `CredentialsSource`. The host calls it
//! when the client connects, again before the credentials expire, and once
//! after the store refused them; always from a thread of its own, so the
//! call is queued to the JavaScript thread and its Promise awaited there.

use napi::bindgen_prelude::{Promise, Status};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use s3_lease_host::{Credentials, CredentialsSource, Error, FetchedCredentials};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

/// What the package's JavaScript hands back from the provider (it
/// normalises the SDK's shape: `expiration` a `Date` there, milliseconds
/// here).
#[napi(object)]
pub struct ProvidedCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
    pub expiration_ms: Option<f64>,
}

/// The JavaScript function: called with no argument, returning a Promise.
/// Weak: it never keeps the process alive by itself.
pub type ProviderFn = ThreadsafeFunction<(), Promise<ProvidedCredentials>, (), Status, false, true>;

/// How long one call of the provider may take (an SDK provider assuming a
/// role or reading instance metadata answers in well under this).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub struct JsProvider {
    call: ProviderFn,
}

impl JsProvider {
    pub fn new(call: ProviderFn) -> Self {
        JsProvider { call }
    }
}

impl CredentialsSource for JsProvider {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        let (tx, rx) = mpsc::sync_channel(1);
        let queued = self.call.call_with_return_value(
            (),
            ThreadsafeFunctionCallMode::NonBlocking,
            move |returned: napi::Result<Promise<ProvidedCredentials>>, _env| {
                match returned {
                    // Awaited on the addon's runtime, not on this thread.
                    Ok(promise) => {
                        napi::bindgen_prelude::spawn(async move {
                            let _ = tx.send(promise.await);
                        });
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
                Ok(())
            },
        );
        if queued != Status::Ok {
            return Err(Error::credentials_failed(format!(
                "the credentials provider could not be called ({queued}): its JavaScript \
                 environment is ending"
            )));
        }
        let provided = match rx.recv_timeout(CALL_TIMEOUT) {
            Ok(Ok(provided)) => provided,
            // The provider's own error: its message, as the SDK's
            // providers word theirs (they name no secret).
            Ok(Err(e)) => {
                return Err(Error::credentials_failed(format!(
                    "the credentials provider failed: {}",
                    e.reason
                )))
            }
            Err(_) => {
                return Err(Error::credentials_failed(format!(
                    "the credentials provider did not answer within {} s",
                    CALL_TIMEOUT.as_secs()
                )))
            }
        };
        let mut credentials = Credentials::new(provided.access_key_id, provided.secret_access_key);
        credentials.session_token = provided.session_token.filter(|t| !t.is_empty());
        let expires = provided
            .expiration_ms
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms as u64));
        Ok(FetchedCredentials::new(
            credentials,
            expires,
            "credentials provider",
        ))
    }
}
