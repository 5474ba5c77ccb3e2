use super::*;
use crate::credentials::{CredentialsSource, FetchedCredentials};
use crate::error::ErrorKind;
use crate::types::Credentials;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::credentials::vars as settings;

const KEYS: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", "AKID"),
    ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
];

fn given(pairs: &[(&str, &str)]) -> Result<StoreConfig, Error> {
    let all: Vec<(&str, &str)> = pairs.iter().chain(KEYS.iter()).copied().collect();
    StoreConfig::from_settings(settings(&all), AwsKeys::Given)
}

#[test]
fn the_command_lines_endpoint_and_region_win_over_the_aws_sdks() {
    let aws_only = [
        ("S3LEASE_BUCKET", "locks"),
        ("AWS_ENDPOINT_URL", "http://127.0.0.1:1"),
        ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2"),
        ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:3"),
        ("AWS_REGION", "us-west-2"),
    ];
    let c = given(&aws_only).unwrap();
    assert_eq!(
        (c.bucket(), c.endpoint(), c.region()),
        (Some("locks"), "http://127.0.0.1:2", Some("us-west-2"))
    );
    let mut ours = aws_only.to_vec();
    ours.extend([
        ("S3LEASE_ENDPOINT", "http://127.0.0.1:9"),
        ("S3LEASE_REGION", "eu-west-1"),
    ]);
    let c = given(&ours).unwrap();
    assert_eq!(
        (c.endpoint(), c.region()),
        ("http://127.0.0.1:9", Some("eu-west-1"))
    );
    ours.extend([("S3LEASE_STORE", "dynamodb"), ("S3LEASE_TABLE", "t")]);
    let t = given(&ours).unwrap();
    assert_eq!(
        (t.table(), t.endpoint(), t.region()),
        (Some("t"), "http://127.0.0.1:9", Some("eu-west-1"))
    );
    // Empty is unset, as the command line reads its variables.
    let c = given(&[("S3LEASE_BUCKET", "locks"), ("S3LEASE_ENDPOINT", "")]).unwrap();
    assert_eq!(c.endpoint(), "https://s3.us-east-1.amazonaws.com");
}

#[test]
fn the_clients_own_settings_are_read_by_their_contract_names() {
    let c = given(&[
        ("S3LEASE_BUCKET", "locks"),
        ("S3LEASE_PREFIX", "jobs/"),
        ("S3LEASE_STRATEGY", "epoch-objects"),
        ("S3LEASE_EXPIRY_CLOCK", "holder"),
        ("S3LEASE_CHECK_STORE", "Yes"),
        ("S3LEASE_AUDIT", "1"),
    ])
    .unwrap();
    assert_eq!(c.audit, Some(true));
    assert_eq!(c.key_prefix.as_deref(), Some("jobs/"));
    assert_eq!(c.strategy, Some(Strategy::EpochObjects));
    assert_eq!(c.expiry_clock, Some(ExpiryClock::Holder));
    assert_eq!(c.preflight, Some(true));
    for (no, prefix) in [("off", ""), ("0", "")] {
        let c = given(&[
            ("S3LEASE_BUCKET", "locks"),
            ("S3LEASE_CHECK_STORE", no),
            ("S3LEASE_PREFIX", prefix),
        ])
        .unwrap();
        assert_eq!((c.preflight, c.key_prefix), (Some(false), None));
    }
    let plain = given(&[("S3LEASE_BUCKET", "locks")]).unwrap();
    assert_eq!(
        (
            plain.strategy,
            plain.expiry_clock,
            plain.preflight,
            plain.audit
        ),
        (None, None, None, None)
    );
}

#[test]
fn a_value_none_takes_is_refused_naming_its_variable() {
    for (name, value) in [
        ("S3LEASE_STRATEGY", "fastest"),
        ("S3LEASE_EXPIRY_CLOCK", "sundial"),
        ("S3LEASE_CHECK_STORE", "maybe"),
        ("S3LEASE_AUDIT", "sometimes"),
        ("S3LEASE_STORE", "floppy"),
    ] {
        let e = given(&[("S3LEASE_BUCKET", "locks"), (name, value)]).unwrap_err();
        assert_eq!(
            (e.kind(), e.field()),
            (ErrorKind::InvalidConfig, Some(name)),
            "{e}"
        );
        assert!(e.to_string().contains(value), "{e}");
    }
    // Given keys are the settings' own, not the environment's.
    let e = StoreConfig::from_settings(settings(&[("S3LEASE_BUCKET", "b")]), AwsKeys::Given)
        .unwrap_err();
    assert_eq!(e.field(), Some("AWS_ACCESS_KEY_ID"), "{e}");
}

/// Fixed keys, counting how often they are asked for.
struct Counted(Arc<AtomicUsize>);

impl CredentialsSource for Counted {
    fn fetch(&self) -> Result<FetchedCredentials, Error> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(FetchedCredentials::new(
            Credentials::new("AKIDSOURCE", "from-source"),
            None,
            "the test's",
        ))
    }
}

#[test]
fn a_source_gives_the_first_keys_on_aws_stores_and_is_refused_unasked_on_the_others() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let source = SharedSource::new(Counted(fetches.clone()));
    let bucket = settings(&[
        ("S3LEASE_BUCKET", "locks"),
        ("S3LEASE_ENDPOINT", "http://127.0.0.1:9"),
    ]);
    let c = StoreConfig::from_settings(&bucket, AwsKeys::Source(source.clone())).unwrap();
    assert_eq!(c.credentials_source(), Some(&source));
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    for store in [
        &[
            ("S3LEASE_STORE", "gcs"),
            ("S3LEASE_BUCKET", "b"),
            ("S3LEASE_ENDPOINT", "http://127.0.0.1:9"),
        ][..],
        &[
            ("S3LEASE_STORE", "azure-blob"),
            ("S3LEASE_CONTAINER", "c"),
            ("AZURE_STORAGE_ACCOUNT", "acct"),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=1"),
        ][..],
    ] {
        let e = StoreConfig::from_settings(settings(store), AwsKeys::Source(source.clone()))
            .unwrap_err();
        assert_eq!(e.field(), Some("credentials"), "{e}");
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "asked for nothing");
}
