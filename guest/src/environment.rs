//! The component's environment, read through `wasi:cli/environment` (the
//! crate's world imports it: 0.2.12, or 0.3.0 with `wasip3`).

use crate::bindings::get_environment;
use crate::config::Config;
use crate::error::Error;

/// One variable of the component's environment; `None` when unset.
pub fn var(name: &str) -> Option<String> {
    get_environment()
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

impl Config {
    /// The config from the component's environment: the variables of
    /// [`Config::from_vars`], read once each.
    pub fn from_env() -> Result<Config, Error> {
        let env = get_environment();
        Config::from_vars(|name| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }
}
