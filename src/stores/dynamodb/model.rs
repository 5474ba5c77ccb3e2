//! An in-memory DynamoDB table, faithful where locks care: items keyed by
//! one string partition key, GetItem (always the latest item, as a
//! consistent read is), PutItem, UpdateItem and DeleteItem with the
//! condition expressions lock clients send (`attribute_not_exists`,
//! `attribute_exists`, `a = :v`, `AND`), `ConditionalCheckFailedException`
//! on a failed one, DescribeTable and DescribeTimeToLive, and the TTL
//! sweeper (`sweep`, or before every call with `sweeper`). Errors come as
//! DynamoDB sends them: JSON with `__type`, the request id in
//! `x-amzn-RequestId`. Each call is applied whole, one at a time.
//!
//! `handle` takes a request the protocol emits and answers as the
//! `dynamodb` translation would read the reply: the store the simulation
//! and unit tests run DynamoDB clients against.

use crate::stores::dynamodb::{self, KEY_ATTRIBUTE};
use crate::stores::s3::{S3Request, S3Response};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub type Item = Map<String, Value>;

pub struct DynamoModel {
    pub table: String,
    /// The table clients name in their calls (`handle` translates their
    /// requests as their transport would): this one, unless a test has
    /// them name a table that does not exist.
    pub client_table: String,
    pub items: BTreeMap<String, Item>,
    /// The attribute the table's TTL is enabled on, if any.
    pub ttl_attribute: Option<String>,
    /// The TTL sweeper runs before every call: DynamoDB may delete an
    /// item at any time once its TTL has passed, and the earliest is the
    /// harshest test.
    pub sweeper: bool,
    /// The partition key's name: `key`, unless a test builds a table the
    /// locks cannot use.
    pub key_attribute: String,
    pub now_ms: u64,
    /// The next this many calls are refused as throttled.
    pub throttle_next: u32,
    /// The next this many writes are refused with
    /// `TransactionConflictException` (a transaction held the item).
    pub conflict_next: u32,
    /// The next this many calls are refused with `ExpiredTokenException`,
    /// as DynamoDB answers a call signed with temporary keys past their
    /// expiry.
    pub expired_token_next: u32,
    /// Calls that reached the table, by operation.
    pub calls: Vec<String>,
    next_request_id: u64,
}

impl DynamoModel {
    pub fn new(table: &str, now_ms: u64) -> Self {
        DynamoModel {
            table: table.to_string(),
            client_table: table.to_string(),
            items: BTreeMap::new(),
            ttl_attribute: Some(dynamodb::EXPIRY_ATTRIBUTE.to_string()),
            sweeper: false,
            key_attribute: KEY_ATTRIBUTE.to_string(),
            now_ms,
            throttle_next: 0,
            conflict_next: 0,
            expired_token_next: 0,
            calls: Vec::new(),
            next_request_id: 1,
        }
    }

    pub fn advance(&mut self, ms: u64) {
        self.now_ms = self.now_ms.saturating_add(ms);
    }

    /// DynamoDB's TTL sweeper: deletes every item whose TTL attribute, a
    /// number of seconds since 1970, is below the table's clock. DynamoDB
    /// ignores an attribute of another type, and so does the model; it
    /// also skips times more than five years past, which the model sweeps
    /// too (sweeping more is the harsher test). Returns the keys swept.
    pub fn sweep(&mut self) -> Vec<String> {
        let Some(attribute) = self.ttl_attribute.clone() else {
            return Vec::new();
        };
        let now_s = self.now_ms / 1000;
        let expired = |item: &Item| {
            item.get(&attribute)
                .and_then(|v| v.get("N"))
                .and_then(Value::as_str)
                .and_then(|n| n.split('.').next())
                .and_then(|whole| whole.parse::<u64>().ok())
                .is_some_and(|at_s| at_s < now_s)
        };
        let swept: Vec<String> = self
            .items
            .iter()
            .filter(|(_, item)| expired(item))
            .map(|(key, _)| key.clone())
            .collect();
        for key in &swept {
            self.items.remove(key);
        }
        swept
    }

    /// A protocol request of a client of this table, translated, applied,
    /// and its reply read back.
    pub fn handle(&mut self, req: &S3Request) -> S3Response {
        let (operation, body) = dynamodb::translate(&self.client_table, req);
        let reply = self.call(&operation, &body);
        let mut reply = dynamodb::read_reply(req, reply);
        if reply.body.len() > req.max_response_bytes.saturating_mul(2) + 8192 {
            reply.body_too_large = Some(reply.body.len() as u64);
            reply.body.clear();
        }
        reply
    }

    /// One DynamoDB call, as the HTTP reply DynamoDB would send.
    pub fn call(&mut self, operation: &str, body: &[u8]) -> S3Response {
        if self.sweeper {
            self.sweep();
        }
        self.calls.push(operation.to_string());
        let request_id = format!("MODEL{:010}", self.next_request_id);
        self.next_request_id += 1;
        let outcome = if self.expired_token_next > 0 {
            self.expired_token_next -= 1;
            Err((
                "ExpiredTokenException",
                400,
                "The security token included in the request is expired".to_string(),
            ))
        } else if self.throttle_next > 0 {
            self.throttle_next -= 1;
            Err((
                "ProvisionedThroughputExceededException",
                400,
                "throughput exceeded".to_string(),
            ))
        } else {
            match serde_json::from_slice::<Value>(body) {
                Ok(Value::Object(input)) => self.apply(operation, &input),
                _ => Err((
                    "SerializationException",
                    400,
                    "body is not a JSON object".into(),
                )),
            }
        };
        let (status, body) = match outcome {
            Ok(value) => (200, value),
            Err((code, status, message)) => (
                status,
                json!({ "__type": format!("com.amazonaws.dynamodb.v20120810#{code}"), "message": message }),
            ),
        };
        S3Response {
            status,
            headers: vec![
                ("x-amzn-requestid".into(), request_id),
                (
                    "date".into(),
                    crate::stores::s3::model::http_date(self.now_ms),
                ),
                ("content-type".into(), dynamodb::CONTENT_TYPE.into()),
            ],
            body: serde_json::to_vec(&body).unwrap_or_default(),
            body_too_large: None,
        }
    }

    fn apply(&mut self, operation: &str, input: &Item) -> Result<Value, Refusal> {
        let table = input.get("TableName").and_then(Value::as_str).unwrap_or("");
        if table != self.table {
            return Err((
                "ResourceNotFoundException",
                400,
                "Requested resource not found".into(),
            ));
        }
        match operation {
            "GetItem" => {
                let key = key_of(input.get("Key"))?;
                Ok(match self.items.get(&key) {
                    Some(item) => json!({ "Item": item }),
                    None => json!({}),
                })
            }
            "PutItem" => {
                let item = match input.get("Item") {
                    Some(Value::Object(item)) => item.clone(),
                    _ => return Err(validation("PutItem needs an Item")),
                };
                let key = key_of(Some(&Value::Object(item.clone())))?;
                self.check(input, &key)?;
                self.items.insert(key, item);
                Ok(json!({}))
            }
            "UpdateItem" => {
                let key = key_of(input.get("Key"))?;
                self.check(input, &key)?;
                let mut item = self.items.get(&key).cloned().unwrap_or_else(|| {
                    let mut m = Map::new();
                    m.insert(KEY_ATTRIBUTE.into(), json!({ "S": key }));
                    m
                });
                apply_set(&mut item, input)?;
                self.items.insert(key, item);
                Ok(json!({}))
            }
            "DeleteItem" => {
                let key = key_of(input.get("Key"))?;
                self.check(input, &key)?;
                self.items.remove(&key);
                Ok(json!({}))
            }
            "DescribeTable" => Ok(json!({ "Table": {
                "TableName": self.table,
                "TableStatus": "ACTIVE",
                "KeySchema": [{ "AttributeName": self.key_attribute, "KeyType": "HASH" }],
                "AttributeDefinitions": [{ "AttributeName": self.key_attribute, "AttributeType": "S" }],
            }})),
            "DescribeTimeToLive" => {
                Ok(json!({ "TimeToLiveDescription": match &self.ttl_attribute {
                    Some(a) => json!({ "TimeToLiveStatus": "ENABLED", "AttributeName": a }),
                    None => json!({ "TimeToLiveStatus": "DISABLED" }),
                }}))
            }
            other => Err((
                "UnknownOperationException",
                400,
                format!("{other} is not modelled"),
            )),
        }
    }

    /// Evaluates the call's `ConditionExpression` against the item now.
    fn check(&self, input: &Item, key: &str) -> Result<(), Refusal> {
        let Some(expression) = input.get("ConditionExpression").and_then(Value::as_str) else {
            return Ok(());
        };
        let item = self.items.get(key);
        for clause in expression.split(" AND ") {
            if !holds(clause.trim(), item, input)? {
                return Err((
                    "ConditionalCheckFailedException",
                    400,
                    "The conditional request failed".into(),
                ));
            }
        }
        Ok(())
    }
}

/// A refusal: DynamoDB's error code, the HTTP status, the message.
type Refusal = (&'static str, u16, String);

fn validation(message: &str) -> Refusal {
    ("ValidationException", 400, message.to_string())
}

fn key_of(key: Option<&Value>) -> Result<String, Refusal> {
    key.and_then(|k| k.get(KEY_ATTRIBUTE))
        .and_then(|v| v.get("S"))
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .ok_or_else(|| validation("The provided key element does not match the schema"))
}

/// An expression's attribute name (`#n` resolved) or value (`:v`).
fn name(token: &str, input: &Item) -> String {
    match token.strip_prefix('#') {
        Some(_) => input
            .get("ExpressionAttributeNames")
            .and_then(|n| n.get(token))
            .and_then(Value::as_str)
            .unwrap_or(token)
            .to_string(),
        None => token.to_string(),
    }
}

fn value<'a>(token: &str, input: &'a Item) -> Option<&'a Value> {
    input
        .get("ExpressionAttributeValues")
        .and_then(|v| v.get(token))
}

fn holds(clause: &str, item: Option<&Item>, input: &Item) -> Result<bool, Refusal> {
    let inner = |prefix: &str| {
        clause
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(')'))
            .map(|n| name(n.trim(), input))
    };
    if let Some(attribute) = inner("attribute_not_exists(") {
        return Ok(item.is_none_or(|i| !i.contains_key(&attribute)));
    }
    if let Some(attribute) = inner("attribute_exists(") {
        return Ok(item.is_some_and(|i| i.contains_key(&attribute)));
    }
    if let Some((left, right)) = clause.split_once(" = ") {
        let attribute = name(left.trim(), input);
        let wanted = value(right.trim(), input)
            .ok_or_else(|| validation("an expression value is not defined"))?;
        return Ok(item.and_then(|i| i.get(&attribute)) == Some(wanted));
    }
    Err(validation("condition expression not modelled"))
}

/// `SET a = :x, #b = :y` of an UpdateItem.
fn apply_set(item: &mut Item, input: &Item) -> Result<(), Refusal> {
    let expression = input
        .get("UpdateExpression")
        .and_then(Value::as_str)
        .ok_or_else(|| validation("UpdateItem needs an UpdateExpression"))?;
    let assignments = expression
        .trim()
        .strip_prefix("SET ")
        .ok_or_else(|| validation("only SET is modelled"))?;
    for assignment in assignments.split(',') {
        let (left, right) = assignment
            .split_once('=')
            .ok_or_else(|| validation("SET needs a = :v"))?;
        let v = value(right.trim(), input)
            .ok_or_else(|| validation("an expression value is not defined"))?;
        item.insert(name(left.trim(), input), v.clone());
    }
    Ok(())
}

impl crate::testing::model_io::Model for DynamoModel {
    fn handle(&mut self, request: &S3Request) -> S3Response {
        DynamoModel::handle(self, request)
    }
    fn advance(&mut self, ms: u64) {
        DynamoModel::advance(self, ms);
    }
    fn now_ms(&self) -> u64 {
        self.now_ms
    }
    fn store_kind(&self) -> &'static crate::stores::profile::Profile {
        &crate::stores::dynamodb::PROFILE
    }
}

/// One client talking to the DynamoDB model: the `Io` of unit tests.
pub type DynamoIo = crate::testing::model_io::ModelIo<DynamoModel>;

impl DynamoIo {
    /// A client of an empty table `table` whose clock reads `now_ms`.
    /// (Not `new`: `ModelIo::new` is the S3 model's.)
    pub fn with_table(table: &str, now_ms: u64) -> Self {
        crate::testing::model_io::ModelIo::of(DynamoModel::new(table, now_ms))
    }
}
