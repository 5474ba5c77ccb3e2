//! A DynamoDB table for `Config`: its builder (the table takes AWS keys,
//! as S3 does, and `Config::from_vars` reads it beside S3's variables).

use super::{Config, Credentials, Store};

impl Config {
    /// A DynamoDB table on AWS itself:
    /// `https://dynamodb.<region>.amazonaws.com`; `with_endpoint` for a
    /// local one.
    pub fn dynamodb(
        region: impl Into<String>,
        table: impl Into<String>,
        credentials: Credentials,
    ) -> Config {
        let region = region.into();
        Config::of(Store::DynamoDb {
            endpoint: format!("https://dynamodb.{region}.amazonaws.com"),
            region,
            table: table.into(),
            credentials,
        })
    }
}
