//! An Azure Blob Storage container (`--store azure-blob --container NAME`).

use super::{missing, CliStore, StoreFlags};
use crate::exit::Failure;
use clap::Args;
use s3_lease_host::StoreConfig;

/// The variable `--container` is read from, and the setting the host reads.
pub(crate) const CONTAINER_VAR: &str = "S3LEASE_CONTAINER";

/// Azure Blob Storage's own flag.
#[derive(Args)]
pub(crate) struct ContainerFlag {
    /// The Azure container of `--store azure-blob`.
    #[arg(long, env = CONTAINER_VAR, global = true)]
    pub(crate) container: Option<String>,
}

pub(crate) const STORE: CliStore = CliStore {
    name: "azure-blob",
    check,
    // The account's endpoint comes from its connection string (or
    // --endpoint), not from an AWS variable.
    endpoint_vars: &[],
    keys_hint: "the account's key as AZURE_STORAGE_KEY (or a connection string)",
    // Its variables are in `--store`'s own help.
    help: "",
    child_env,
};

fn check(flags: &StoreFlags) -> Result<(), Failure> {
    match flags.container.container {
        Some(_) => Ok(()),
        None => Err(missing(
            "no container: --store azure-blob needs --container NAME (or S3LEASE_CONTAINER)",
        )),
    }
}

/// The account's credentials are the environment's, inherited.
fn child_env(config: &StoreConfig, _: Option<&str>, env: &mut Vec<(String, String)>) {
    if let Some(container) = config.container() {
        env.push((CONTAINER_VAR.into(), container.to_string()));
    }
}
