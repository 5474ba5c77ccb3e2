//! A DynamoDB endpoint for tests and the benchmark: dynalite (npm, an
//! in-memory DynamoDB), from `S3LEASE_DYNALITE` or the workspace's
//! `host-test/dynalite/node_modules/dynalite/cli.js` (installed by
//! `scripts/setup.sh`), started with node on a free loopback port and
//! watched so that it stops when this process ends.
//!
//! dynalite checks no signatures (any keys work; SigV4 for DynamoDB is
//! checked against botocore instead), has no TTL (`UpdateTimeToLive` is an
//! unknown operation, `DescribeTimeToLive` says `DISABLED`), and never
//! throttles. Its conditional writes are atomic: in 200 twenty-way races of
//! conditional PutItem, exactly one won each.

use crate::admin::Admin;
use crate::bindings::{config_of, AwsCredentials, Config, DynamodbStore, Store};
use crate::watchdog::{self, free_port, fresh_dir, Server};
use anyhow::{bail, Result};
use s3_lease::config::{ClientConfig, RawConfig};
use s3_lease::stores::dynamodb;
use serde_json::json;
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// dynalite's `cli.js`: `S3LEASE_DYNALITE`, else setup.sh's install.
pub fn dynalite_path() -> PathBuf {
    crate::env_or_workspace_path(
        "S3LEASE_DYNALITE",
        "host-test/dynalite/node_modules/dynalite/cli.js",
    )
}

/// A DynamoDB endpoint and the keys to reach it (any, for dynalite).
#[derive(Debug, Clone)]
pub struct DynamoEndpoint {
    pub url: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

impl DynamoEndpoint {
    /// The crate's validated config for `table`: what the admin calls sign with.
    pub fn client_config(&self, table: &str) -> Result<ClientConfig> {
        ClientConfig::validate(RawConfig::of(s3_lease::config::Store::DynamoDb(
            s3_lease::stores::DynamoDbTable {
                endpoint: self.url.clone(),
                region: self.region.clone(),
                table: table.to_string(),
                credentials: s3_lease::sigv4::Credentials {
                    access_key_id: self.access_key_id.clone(),
                    secret_access_key: self.secret_access_key.clone(),
                    session_token: None,
                },
            },
        )))
        .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// Raw DynamoDB calls on `table`, outside the component.
    pub fn admin(&self, table: &str) -> Result<Admin> {
        Admin::new(self.client_config(table)?)
    }

    /// The component's config for `table`, keys under `key_prefix`.
    pub fn config(&self, table: &str, key_prefix: &str) -> Config {
        let store = Store::Dynamodb(DynamodbStore {
            endpoint: self.url.clone(),
            region: self.region.clone(),
            table: table.to_string(),
            credentials: AwsCredentials {
                access_key_id: self.access_key_id.clone(),
                secret_access_key: self.secret_access_key.clone(),
                session_token: None,
            },
        });
        config_of(store, key_prefix)
    }

    /// The host crate's config for `table`, from the variables a user's
    /// program reads.
    pub fn host_config(&self, table: &str, key_prefix: &str) -> Result<s3_lease_host::StoreConfig> {
        let mut c = s3_lease_host::StoreConfig::from_vars("", |name| match name {
            "S3LEASE_STORE" => Some("dynamodb".into()),
            "S3LEASE_TABLE" => Some(table.to_string()),
            "AWS_ENDPOINT_URL_DYNAMODB" => Some(self.url.clone()),
            "AWS_REGION" => Some(self.region.clone()),
            "AWS_ACCESS_KEY_ID" => Some(self.access_key_id.clone()),
            "AWS_SECRET_ACCESS_KEY" => Some(self.secret_access_key.clone()),
            _ => None,
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        c.key_prefix = Some(key_prefix.to_string());
        Ok(c)
    }

    /// Creates `table` (partition key `key`, string; on demand) and waits
    /// until it is ACTIVE. An existing one is fine.
    pub fn create_table(&self, table: &str) -> Result<()> {
        let admin = self.admin(table)?;
        let create = dynamodb::call(
            "CreateTable",
            &json!({
                "TableName": table,
                "KeySchema": [{ "AttributeName": "key", "KeyType": "HASH" }],
                "AttributeDefinitions": [{ "AttributeName": "key", "AttributeType": "S" }],
                "BillingMode": "PAY_PER_REQUEST",
            }),
            64 * 1024,
        );
        let r = admin.send(create)?;
        if r.status != 200 && r.s3_error().code != "ResourceInUseException" {
            bail!("CreateTable {table}: {}", r.s3_error());
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let r = admin.send(dynamodb::call(
                "DescribeTable",
                &json!({ "TableName": table }),
                64 * 1024,
            ))?;
            let status = serde_json::from_slice::<serde_json::Value>(&r.body)
                .ok()
                .and_then(|v| v["Table"]["TableStatus"].as_str().map(str::to_string));
            if status.as_deref() == Some("ACTIVE") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("table {table} not ACTIVE after 30 s: {status:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A new table of its own for one test: `<hint>-<n>`, created.
    pub fn fresh_table(&self, hint: &str) -> Result<String> {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let table = format!("{hint}-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.create_table(&table)?;
        Ok(table)
    }
}

/// A running dynalite; stopped when dropped or when this process exits.
pub struct Dynalite {
    pub endpoint: DynamoEndpoint,
    _server: Server,
}

impl Dynalite {
    pub fn start() -> Result<Dynalite> {
        let port = free_port()?.to_string();
        // Tables become ACTIVE at once (dynalite's default is 500 ms).
        let cli = dynalite_path();
        let command: [&OsStr; 12] = [
            "node".as_ref(),
            cli.as_ref(),
            "--host".as_ref(),
            "127.0.0.1".as_ref(),
            "--port".as_ref(),
            port.as_ref(),
            "--createTableMs".as_ref(),
            "0".as_ref(),
            "--deleteTableMs".as_ref(),
            "0".as_ref(),
            "--updateTableMs".as_ref(),
            "0".as_ref(),
        ];
        let hint = "run scripts/test.sh (it installs it), or set S3LEASE_DYNALITE";
        let server = watchdog::spawn("dynalite", fresh_dir("dynalite")?, &cli, hint, &command)?;
        let endpoint = DynamoEndpoint {
            url: format!("http://127.0.0.1:{port}"),
            region: "us-east-1".into(),
            access_key_id: "DYNALITEKEY".into(),
            secret_access_key: "dynalite-secret".into(),
        };
        let admin = endpoint.admin("ready-check")?;
        let every = Duration::from_millis(100);
        server.wait_ready(Duration::from_secs(30), every, || {
            let r = admin.send(dynamodb::call("ListTables", &json!({}), 64 * 1024))?;
            match r.status {
                200 => Ok(()),
                status => bail!("ListTables answered {status}"),
            }
        })?;
        Ok(Dynalite {
            endpoint,
            _server: server,
        })
    }
}

/// The dynalite shared by all tests of this process: started once.
pub fn shared() -> &'static DynamoEndpoint {
    static SHARED: OnceLock<Dynalite> = OnceLock::new();
    &SHARED
        .get_or_init(|| Dynalite::start().unwrap_or_else(|e| panic!("no dynalite: {e:#}")))
        .endpoint
}
