//! An Azure Blob Storage endpoint for tests: Azurite (npm, Microsoft's
//! emulator), from `S3LEASE_AZURITE` or the workspace's
//! `host-test/azurite/node_modules/azurite/dist/src/blob/main.js`
//! (installed by `scripts/setup.sh`), started with node on a free loopback
//! port, its blobs in memory, and watched so that it stops when this
//! process ends. It checks Shared Key signatures, and answers conditional
//! writes as Azure does (409 `BlobAlreadyExists`, 412 `ConditionNotMet`).

use crate::admin::Admin;
use crate::bindings::{config_of, AddressingStyle, AzureCredential, AzureStore, Config, Store};
use crate::watchdog::{self, free_port, fresh_dir, listening, Server};
use anyhow::{bail, Result};
use s3_lease::config::{Addressing, ClientConfig, RawConfig};
use s3_lease::stores::s3::{Method, S3Request};
use std::ffi::OsStr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

pub use s3_lease_host::credentials::azure::{DEV_ACCOUNT, DEV_KEY};

/// Azurite's blob service: `S3LEASE_AZURITE`, else setup.sh's install.
pub fn azurite_path() -> PathBuf {
    crate::env_or_workspace_path(
        "S3LEASE_AZURITE",
        "host-test/azurite/node_modules/azurite/dist/src/blob/main.js",
    )
}

/// An Azure account's blob endpoint and its key.
#[derive(Debug, Clone)]
pub struct AzureEndpoint {
    /// `http://127.0.0.1:<port>`: the account goes first in every path.
    pub url: String,
    pub account: String,
    pub key: String,
    /// The container the tests' locks live in.
    pub container: String,
}

impl AzureEndpoint {
    /// The connection string the Azure SDKs (and our host) read.
    pub fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={}/{};",
            self.account, self.key, self.url, self.account
        )
    }

    /// The crate's validated config for `container`: what the admin calls
    /// sign with.
    pub fn client_config(&self, container: &str) -> Result<ClientConfig> {
        let credential = s3_lease::stores::AzureCredential::shared_key(&self.key)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        ClientConfig::validate(RawConfig::of(s3_lease::config::Store::AzureBlob(
            s3_lease::stores::AzureBlob {
                endpoint: self.url.clone(),
                addressing: Addressing::Path,
                account: self.account.clone(),
                container: container.to_string(),
                credential,
            },
        )))
        .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// Raw Blob calls on `container`, outside the component.
    pub fn admin(&self) -> Result<Admin> {
        Admin::new(self.client_config(&self.container)?)
    }

    /// The component's config, keys under `key_prefix`, signed with the
    /// account key.
    pub fn config(&self, key_prefix: &str) -> Config {
        self.config_with(key_prefix, AzureCredential::SharedKey(self.key.clone()))
    }

    pub fn config_with(&self, key_prefix: &str, credential: AzureCredential) -> Config {
        let store = Store::AzureBlob(AzureStore {
            endpoint: self.url.clone(),
            addressing: AddressingStyle::Path,
            account: self.account.clone(),
            container: self.container.clone(),
            credential,
        });
        config_of(store, key_prefix)
    }

    /// The host crate's config, from the variables a user's program reads.
    pub fn host_config(&self, key_prefix: &str) -> Result<s3_lease_host::StoreConfig> {
        let mut c =
            s3_lease_host::StoreConfig::from_azure_vars(&self.container, |name| match name {
                "AZURE_STORAGE_CONNECTION_STRING" => Some(self.connection_string()),
                _ => None,
            })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        c.key_prefix = Some(key_prefix.to_string());
        Ok(c)
    }

    /// Creates the container (Create Container); an existing one is fine.
    pub fn create_container(&self) -> Result<()> {
        let mut req = S3Request::new(Method::Put, "", 64 * 1024);
        req.query = vec![("restype".into(), "container".into())];
        let r = self.admin()?.send(req)?;
        match r.status {
            200 | 201 => Ok(()),
            409 if r.s3_error().code == "ContainerAlreadyExists" => Ok(()),
            _ => bail!("creating container {}: {}", self.container, r.s3_error()),
        }
    }
}

/// A running Azurite; stopped when dropped or when this process exits.
pub struct Azurite {
    pub endpoint: AzureEndpoint,
    _server: Server,
}

impl Azurite {
    pub fn start() -> Result<Azurite> {
        let port = free_port()?.to_string();
        // In memory (so no --location: its own directory is the working
        // one), no access log, any API version.
        let main = azurite_path();
        let command: [&OsStr; 10] = [
            "node".as_ref(),
            main.as_ref(),
            "--blobHost".as_ref(),
            "127.0.0.1".as_ref(),
            "--blobPort".as_ref(),
            port.as_ref(),
            "--inMemoryPersistence".as_ref(),
            "--skipApiVersionCheck".as_ref(),
            "--silent".as_ref(),
            "--disableTelemetry".as_ref(),
        ];
        let hint = "run scripts/test.sh (it installs it), or set S3LEASE_AZURITE";
        let server = watchdog::spawn("Azurite", fresh_dir("azurite")?, &main, hint, &command)?;
        let endpoint = AzureEndpoint {
            url: format!("http://127.0.0.1:{port}"),
            account: DEV_ACCOUNT.into(),
            key: DEV_KEY.into(),
            container: "s3-lease-test".into(),
        };
        let every = Duration::from_millis(100);
        server.wait_ready(Duration::from_secs(30), every, || listening(&endpoint.url))?;
        endpoint.create_container()?;
        Ok(Azurite {
            endpoint,
            _server: server,
        })
    }
}

/// The Azurite shared by all tests of this process: started once.
pub fn shared() -> &'static AzureEndpoint {
    static SHARED: OnceLock<Azurite> = OnceLock::new();
    &SHARED
        .get_or_init(|| Azurite::start().unwrap_or_else(|e| panic!("no Azurite: {e:#}")))
        .endpoint
}
