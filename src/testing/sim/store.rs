//! The store a simulation runs on: the S3 model, or the DynamoDB, Azure or
//! GCS model behind its translation (its clients' requests are the same
//! protocol's; the model answers as the store would, read back as S3 shapes).

use crate::stores::azure::model::{AzureModel, CONTAINER};
use crate::stores::azure::s3_metadata_name;
use crate::stores::dynamodb::decode_item;
use crate::stores::dynamodb::model::DynamoModel;
use crate::stores::gcs::model::{GcsModel, BUCKET};
use crate::stores::s3::model::{Object, S3Model};
use crate::stores::s3::{S3Request, S3Response};

/// The DynamoDB simulation's table.
pub const TABLE: &str = "sim-table";

#[allow(clippy::large_enum_variant)] // one per simulation
pub enum SimStore {
    S3(S3Model),
    DynamoDb(DynamoModel),
    Azure(AzureModel),
    Gcs(GcsModel),
}

impl SimStore {
    pub fn handle(&mut self, request: &S3Request) -> S3Response {
        match self {
            SimStore::S3(m) => m.handle(request),
            SimStore::DynamoDb(m) => m.handle(request),
            SimStore::Azure(m) => m.handle(request),
            SimStore::Gcs(m) => m.handle(request),
        }
    }

    pub fn set_now(&mut self, now_ms: u64) {
        match self {
            SimStore::S3(m) => m.now_ms = now_ms,
            SimStore::DynamoDb(m) => m.now_ms = now_ms,
            SimStore::Azure(m) => m.now_ms = now_ms,
            SimStore::Gcs(m) => m.now_ms = now_ms,
        }
    }

    pub fn s3(&mut self) -> Option<&mut S3Model> {
        match self {
            SimStore::S3(m) => Some(m),
            SimStore::DynamoDb(_) | SimStore::Azure(_) | SimStore::Gcs(_) => None,
        }
    }

    /// The next conditional write meets a conflict: S3's 409, or
    /// DynamoDB's `TransactionConflictException`, or Azure's 503
    /// `ServerBusy` or GCS's 503 `backendError` (they have no 409 for
    /// racing writes). None is applied.
    pub fn inject_conflict(&mut self) {
        match self {
            SimStore::S3(m) => m.conflicts = 1,
            SimStore::DynamoDb(m) => m.conflict_next = 1,
            SimStore::Azure(m) => m.busy_next = 1,
            SimStore::Gcs(m) => m.busy_next = 1,
        }
    }

    /// The store's answer to `request` signed with keys past their
    /// expiry: S3's 400 `ExpiredToken`, or DynamoDB's
    /// `ExpiredTokenException` (read back as a 403). Nothing is applied.
    /// Never asked of Azure or GCS: their simulations' keys last the run.
    pub fn refuse_expired_token(&mut self, request: &S3Request) -> S3Response {
        match self {
            SimStore::S3(m) => m.expired_token_next = 1,
            SimStore::DynamoDb(m) => m.expired_token_next = 1,
            SimStore::Azure(_) | SimStore::Gcs(_) => {}
        }
        let answer = self.handle(request);
        match self {
            SimStore::S3(m) => m.expired_token_next = 0,
            SimStore::DynamoDb(m) => m.expired_token_next = 0,
            SimStore::Azure(_) | SimStore::Gcs(_) => {}
        }
        answer
    }

    pub fn clear_conflicts(&mut self) {
        match self {
            SimStore::S3(m) => m.conflicts = 0,
            SimStore::DynamoDb(m) => m.conflict_next = 0,
            SimStore::Azure(m) => m.busy_next = 0,
            SimStore::Gcs(m) => m.busy_next = 0,
        }
    }

    /// What is stored under `key`, as an S3 object: a DynamoDB item's
    /// lock object, with its version as the ETag (and no time of its own).
    pub fn object(&self, key: &str) -> Option<Object> {
        match self {
            SimStore::S3(m) => m.object(key).cloned(),
            SimStore::DynamoDb(m) => {
                let (etag, body) = decode_item(m.items.get(key)?).ok()?;
                Some(Object {
                    body,
                    etag,
                    last_modified_ms: m.now_ms,
                    content_type: "application/json".into(),
                    metadata: Vec::new(),
                })
            }
            // Its metadata under S3's names, as the client reads them.
            SimStore::Azure(m) => {
                let blob = m.containers.get(CONTAINER)?.get(key)?;
                Some(Object {
                    body: blob.body.clone(),
                    etag: blob.etag.clone(),
                    last_modified_ms: blob.last_modified_ms,
                    content_type: blob.content_type.clone(),
                    metadata: blob
                        .metadata
                        .iter()
                        .filter_map(|(k, v)| Some((s3_metadata_name(k)?, v.clone())))
                        .collect(),
                })
            }
            // Its generation as the ETag and its metadata under S3's
            // names, as the client reads them.
            SimStore::Gcs(m) => {
                let object = m.buckets.get(BUCKET)?.get(key)?;
                Some(Object {
                    body: object.body.clone(),
                    etag: crate::stores::gcs::etag_of(&object.generation.to_string()),
                    last_modified_ms: object.updated_ms - object.updated_ms % 1000,
                    content_type: object.content_type.clone(),
                    metadata: object
                        .metadata
                        .iter()
                        .map(|(k, v)| (crate::stores::gcs::s3_metadata_name(k), v.clone()))
                        .collect(),
                })
            }
        }
    }

    pub fn new_azure(now_ms: u64) -> SimStore {
        SimStore::Azure(AzureModel::new(now_ms))
    }

    /// GCS, its limit of about one write a second per object enforced
    /// (429) when `rate_limited`.
    pub fn new_gcs(now_ms: u64, rate_limited: bool) -> SimStore {
        let mut model = GcsModel::new(now_ms);
        model.rate_limit = rate_limited;
        SimStore::Gcs(model)
    }

    pub fn new_dynamodb(now_ms: u64) -> SimStore {
        let mut table = DynamoModel::new(TABLE, now_ms);
        // TTL on, swept as early as DynamoDB may: no lock item may go.
        table.sweeper = true;
        SimStore::DynamoDb(table)
    }
}
