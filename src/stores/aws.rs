//! What the stores AWS signs for (SigV4) share: a signing region and
//! the keys that sign requests, checked the same way for both.

use crate::error::Error;
use crate::sigv4::Credentials;

pub(crate) fn check_region(region: &str) -> Result<(), Error> {
    if region.is_empty() || region.len() > 64 {
        return Err(Error::invalid_config(
            "region",
            "must be 1 to 64 characters, e.g. us-east-1",
        ));
    }
    if !region
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Error::invalid_config(
            "region",
            format!("{region:?}: only letters, digits, '-' and '_'"),
        ));
    }
    Ok(())
}

/// A store's signing region and keys, checked as the config's are.
pub fn check_signing(region: &str, credentials: &Credentials) -> Result<(), Error> {
    check_region(region)?;
    check_credentials(credentials)
}

/// Installs the keys `set-credential` gives in `slot`, checked first: on a
/// refusal the old ones stay.
pub fn replace_credentials(slot: &mut Credentials, credentials: Credentials) -> Result<(), Error> {
    check_credentials(&credentials)?;
    *slot = credentials;
    Ok(())
}

/// Also checks the credentials of `set-credential`.
pub fn check_credentials(c: &Credentials) -> Result<(), Error> {
    // Reasons never repeat a secret value.
    let printable = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_graphic());
    if !printable(&c.access_key_id) {
        return Err(Error::invalid_config(
            "credentials.access-key-id",
            "must be non-empty printable ASCII without spaces",
        ));
    }
    if !printable(&c.secret_access_key) {
        return Err(Error::invalid_config(
            "credentials.secret-access-key",
            "must be non-empty printable ASCII without spaces",
        ));
    }
    if let Some(token) = &c.session_token {
        if !printable(token) {
            return Err(Error::invalid_config(
                "credentials.session-token",
                "must be non-empty printable ASCII without spaces when set",
            ));
        }
    }
    Ok(())
}
