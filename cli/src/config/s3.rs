//! An S3 bucket (AWS's own, or any S3-compatible store): the default store.

use super::{missing, CliStore, StoreFlags};
use crate::exit::Failure;
use s3_lease_host::StoreConfig;

pub(crate) const STORE: CliStore = CliStore {
    name: "s3",
    check,
    endpoint_vars: &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
    keys_hint: "the keys as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or a profile)",
    help: "\
S3 is configured as for the AWS CLI: AWS_ENDPOINT_URL (or --endpoint),
AWS_REGION (or --region), and credentials from the AWS chain, in order:
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN; the AWS_PROFILE
profile in ~/.aws/config and ~/.aws/credentials (keys, credential_process,
role_arn, SSO); web identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN);
ECS/EKS container credentials; EC2 instance metadata. Temporary credentials
are refreshed before they expire, and once more if S3 calls them expired.
S3LEASE_ENDPOINT and S3LEASE_REGION, when set, win over the AWS variables
(not over the flags): `run` and `elect` set them (and S3LEASE_BUCKET, ...)
for the command, so a nested s3-lease finds the same locks, and leave the
command's AWS variables as they were.",
    child_env,
};

fn check(flags: &StoreFlags) -> Result<(), Failure> {
    match flags.bucket {
        Some(_) => Ok(()),
        None => Err(missing(
            "no bucket: pass --bucket or set S3LEASE_BUCKET (or name another --store)",
        )),
    }
}

/// Bucket, endpoint and region are the shared settings'.
fn child_env(_: &StoreConfig, _: Option<&str>, _: &mut Vec<(String, String)>) {}
