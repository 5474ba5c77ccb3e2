//! A DynamoDB store's configuration: the table, the signing region and
//! keys. Checked here, at construction, so every request can be built and
//! signed without failing.

use crate::prelude::*;

use crate::error::Error;
use crate::sigv4::Credentials;
use crate::stores::aws::{check_signing, replace_credentials};
use crate::stores::profile::{LifecycleRules, Profile};

/// What DynamoDB is and does (see `Profile`): it lists no keys, stamps no
/// time on an item, holds no fenced objects, and its PutItem condition
/// checks a lease's token.
pub const PROFILE: Profile = Profile {
    name: "dynamodb",
    lists_keys: false,
    records_write_times: false,
    holds_objects: false,
    condition_checks_token: true,
    min_write_interval_ms: 0,
    keeps_token_floor: false,
    replies_as_s3: false,
    wrong_endpoint_hint: "not a DynamoDB endpoint",
    lists_fenced_objects: false,
    lists_versions: false,
    payload_hash: None,
    lifecycle: LifecycleRules::Nothing,
};

/// Where the locks are kept on DynamoDB (the WIT `dynamodb-store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamoDbTable {
    /// DynamoDB's endpoint, or a local one's.
    pub endpoint: String,
    /// The signing region, e.g. `us-east-1`.
    pub region: String,
    pub table: String,
    pub credentials: Credentials,
}

impl DynamoDbTable {
    pub(crate) fn check(&self) -> Result<(), Error> {
        check_table(&self.table)?;
        check_signing(&self.region, &self.credentials)
    }

    pub(crate) fn set_credentials(&mut self, credentials: Credentials) -> Result<(), Error> {
        replace_credentials(&mut self.credentials, credentials)
    }
}

fn check_table(table: &str) -> Result<(), Error> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if !(3..=255).contains(&table.len()) || !table.chars().all(allowed) {
        return Err(Error::invalid_config(
            "store.dynamodb",
            format!("table {table:?}: must be 3 to 255 of letters, digits, '_', '-' and '.'"),
        ));
    }
    Ok(())
}
