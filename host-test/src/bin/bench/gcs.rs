//! The same four operations on a Google Cloud Storage bucket, in the same
//! run as on the other stores: the bucket `S3LEASE_BENCH_GCS_BUCKET` names
//! (with Application Default Credentials, or `STORAGE_EMULATOR_HOST`),
//! else a bucket on a fake-gcs-server started here.

use anyhow::{Context, Result};
use host_test::fake_gcs::FakeGcs;
use s3_lease_host::{GcsBuilder, GcsCredential, StoreConfig};

/// Where the GCS figures come from, and the server to keep alive.
pub struct Bucket {
    pub config: StoreConfig,
    pub what: String,
    _server: Option<FakeGcs>,
}

pub fn bucket(prefix: &str) -> Result<Bucket> {
    if let Ok(name) = std::env::var("S3LEASE_BENCH_GCS_BUCKET") {
        let mut config = StoreConfig::from_gcs_vars(&name, |var| {
            std::env::var(var).ok().filter(|v| !v.is_empty())
        })
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        config.key_prefix = Some(prefix.to_string());
        let what = format!("bucket {name} at {}", config.endpoint());
        return Ok(Bucket {
            config,
            what,
            _server: None,
        });
    }
    let server = FakeGcs::start().context("starting fake-gcs-server for the GCS figures")?;
    // The bare server, not the tests' front: these operations send no
    // conditional DELETE (the one condition the front stands in for), and
    // the front would run in this process, its work counted as the client's.
    let endpoint = &server.endpoint;
    let mut config = GcsBuilder::new(endpoint.bucket.clone(), GcsCredential::Anonymous)
        .endpoint(endpoint.bare_url.clone())
        .build();
    config.key_prefix = Some(prefix.to_string());
    Ok(Bucket {
        what: format!("fake-gcs-server at {}", endpoint.bare_url),
        config,
        _server: Some(server),
    })
}
