//! A DynamoDB table (`--store dynamodb --table NAME`).

use super::{missing, CliStore, StoreFlags};
use crate::exit::Failure;
use clap::Args;
use s3_lease_host::StoreConfig;

/// The variable `--table` is read from, and the setting the host reads.
pub(crate) const TABLE_VAR: &str = "S3LEASE_TABLE";

/// DynamoDB's own flag.
#[derive(Args)]
pub(crate) struct TableFlag {
    /// The DynamoDB table of `--store dynamodb`: partition key `key`
    /// (string). Its TTL never removes a lock item (not on `token`).
    #[arg(long, env = TABLE_VAR, global = true)]
    pub(crate) table: Option<String>,
}

pub(crate) const STORE: CliStore = CliStore {
    name: "dynamodb",
    check,
    endpoint_vars: &["AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL"],
    keys_hint: "the keys as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile)",
    // Configured as S3 is (the AWS chain), said in S3's paragraph.
    help: "",
    child_env,
};

fn check(flags: &StoreFlags) -> Result<(), Failure> {
    match flags.table.table {
        Some(_) => Ok(()),
        None => Err(missing(
            "no table: --store dynamodb needs --table NAME (or S3LEASE_TABLE)",
        )),
    }
}

fn child_env(config: &StoreConfig, _: Option<&str>, env: &mut Vec<(String, String)>) {
    if let Some(table) = config.table() {
        env.push((TABLE_VAR.into(), table.to_string()));
    }
}
