//! A Google Cloud Storage bucket (`--store gcs --bucket NAME`).

use super::{missing, CliStore, StoreFlags, ENDPOINT_VAR};
use crate::exit::Failure;
use s3_lease_host::StoreConfig;

pub(crate) const STORE: CliStore = CliStore {
    name: "gcs",
    check,
    // The AWS tools' endpoint is not Google's: no AWS variable is read.
    // An emulator's STORAGE_EMULATOR_HOST is read by the host.
    endpoint_vars: &[],
    keys_hint: "the credentials as GOOGLE_APPLICATION_CREDENTIALS (or gcloud's)",
    help: "\
Google Cloud Storage (--store gcs --bucket NAME) is reached as Google's
client libraries reach it: an emulator at STORAGE_EMULATOR_HOST
(host:port, no credential sent), or at --endpoint (or S3LEASE_ENDPOINT;
an http:// endpoint gets no credential, an https:// one the tokens below);
else storage.googleapis.com with Application Default Credentials, in
order: the file GOOGLE_APPLICATION_CREDENTIALS names (a service-account key
or user credentials); gcloud's (`gcloud auth application-default login`,
in CLOUDSDK_CONFIG or ~/.config/gcloud); the metadata server of a Google
Cloud machine (GCE_METADATA_HOST to move it). Access tokens are refreshed
before they expire.",
    child_env,
};

fn check(flags: &StoreFlags) -> Result<(), Failure> {
    match flags.bucket {
        Some(_) => Ok(()),
        None => Err(missing(
            "no bucket: --store gcs needs --bucket NAME (or S3LEASE_BUCKET)",
        )),
    }
}

/// The endpoint, if given (there is no region to carry it); an emulator's
/// STORAGE_EMULATOR_HOST and the credentials' variables are inherited.
fn child_env(_: &StoreConfig, endpoint: Option<&str>, env: &mut Vec<(String, String)>) {
    if let Some(endpoint) = endpoint {
        env.push((ENDPOINT_VAR.into(), endpoint.to_string()));
    }
}
