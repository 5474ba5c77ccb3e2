//! Between the protocol and the network: a request the protocol emits
//! becomes a signed HTTP request for the configured store, and the store's
//! reply becomes the S3 reply the protocol reads. For S3 the reply is
//! already that; for DynamoDB, Azure and GCS it is translated (see
//! `dynamodb`, `azure`, `gcs`).

use crate::azure;
use crate::config::{ClientConfig, Store};
use crate::dynamodb;
use crate::gcs;
use crate::s3::{
    self, HttpRequest, S3Request, S3Response, NOT_THE_STORE_HEADER, UNREADABLE_HEADER,
};

/// Signs `req` for the configured store at `unix_seconds`.
pub fn prepare(config: &ClientConfig, req: &S3Request, unix_seconds: u64) -> HttpRequest {
    match &config.store {
        Store::S3(bucket) => s3::prepare(config, bucket, req, unix_seconds),
        Store::DynamoDb(table) => dynamodb::prepare(config, table, req, unix_seconds),
        Store::AzureBlob(blob) => azure::prepare(config, blob, req, unix_seconds),
        Store::Gcs(bucket) => gcs::prepare(config, bucket, req, unix_seconds),
    }
}

/// The store's reply to `prepare(req)`, as the protocol reads replies.
pub fn read_reply(config: &ClientConfig, req: &S3Request, reply: S3Response) -> S3Response {
    match &config.store {
        // The translations' own headers mean nothing from a server.
        Store::S3(_) => S3Response {
            headers: reply
                .headers
                .into_iter()
                .filter(|(k, _)| {
                    !k.eq_ignore_ascii_case(UNREADABLE_HEADER)
                        && !k.eq_ignore_ascii_case(NOT_THE_STORE_HEADER)
                })
                .collect(),
            ..reply
        },
        Store::DynamoDb(_) => dynamodb::read_reply(req, reply),
        Store::AzureBlob(_) => azure::read_reply(req, reply),
        Store::Gcs(_) => gcs::read_reply(req, reply),
    }
}
