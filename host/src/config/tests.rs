use super::*;
use crate::config::{AzureCredential, GcsCredential};
use crate::credentials::{FetchedCredentials, StaticCredentials};
use crate::engine::bindings::{self as wit, Store as WitStore};
use crate::error::Error;
use crate::types::{Addressing, Credentials};

use crate::credentials::vars;

fn addressing(c: &StoreConfig) -> Addressing {
    match &c.store {
        Store::S3(s3) => s3.addressing,
        Store::AzureBlob(azure) if azure.path_style => Addressing::Path,
        Store::AzureBlob(_) | Store::DynamoDb(_) | Store::Gcs(_) => Addressing::VirtualHosted,
    }
}

/// The WIT record the component is given for `c`.
fn to_wit(c: &StoreConfig) -> wit::Config {
    crate::component::config(c, None)
}

/// The AWS keys of an S3 or DynamoDB config's WIT record.
#[cfg(feature = "aws-sdk-config")]
fn aws_keys(c: &wit::Config) -> &wit::AwsCredentials {
    match &c.store {
        WitStore::S3(s) => &s.credentials,
        WitStore::Dynamodb(s) => &s.credentials,
        other => panic!("not an AWS store: {other:?}"),
    }
}

/// A GCS config's WIT credential.
fn gcs_credential(c: &StoreConfig) -> wit::GcsCredential {
    match to_wit(c).store {
        WitStore::Gcs(s) => s.credential,
        other => panic!("not a GCS store: {other:?}"),
    }
}

#[cfg(feature = "aws-sdk-config")]
#[test]
fn takes_region_endpoint_and_credentials_from_an_sdk_config() {
    use aws_credential_types::provider::SharedCredentialsProvider;
    let sdk = aws_config::SdkConfig::builder()
        .region(aws_config::Region::new("eu-west-1"))
        .endpoint_url("http://127.0.0.1:9000")
        .credentials_provider(SharedCredentialsProvider::new(
            aws_credential_types::Credentials::new(
                "AKIDSDK",
                "s3cr3t-value",
                Some("t0ken-value".into()),
                None,
                "test",
            ),
        ))
        .build();
    let c = S3Builder::from_sdk_config(&sdk, "locks").unwrap().build();
    assert_eq!(
        (c.region(), c.endpoint(), addressing(&c)),
        (Some("eu-west-1"), "http://127.0.0.1:9000", Addressing::Path)
    );
    let wit = to_wit(&c);
    assert_eq!(aws_keys(&wit).access_key_id, "AKIDSDK");
    assert_eq!(aws_keys(&wit).session_token.as_deref(), Some("t0ken-value"));
    assert!(
        c.credentials_source().is_some(),
        "refreshed from the provider"
    );
    let text = format!("{c:?}");
    assert!(
        !text.contains("s3cr3t") && !text.contains("t0ken"),
        "{text}"
    );

    let d = DynamoDbBuilder::from_sdk_config(&sdk, "locks")
        .unwrap()
        .build();
    assert_eq!(d.table(), Some("locks"));
    let bare = aws_config::SdkConfig::builder().build();
    let e = S3Builder::from_sdk_config(&bare, "locks").unwrap_err();
    assert_eq!(e.kind(), crate::error::ErrorKind::InvalidConfig);
}

#[test]
fn builds_from_keys_in_hand() {
    let c = S3Builder::new("locks", "us-west-2", Credentials::new("AKID", "secret"))
        .build()
        .with_key_prefix("locks/")
        .with_request_timeout(Duration::from_secs(3));
    assert_eq!(c.endpoint(), "https://s3.us-west-2.amazonaws.com");
    assert_eq!(addressing(&c), Addressing::VirtualHosted);
    assert_eq!(to_wit(&c).request_timeout_ms, Some(3_000));
    let d = DynamoDbBuilder::new("locks", "us-west-2", Credentials::new("AKID", "secret")).build();
    assert_eq!(d.endpoint(), "https://dynamodb.us-west-2.amazonaws.com");
}

#[test]
fn reads_the_aws_variables() {
    let c = StoreConfig::from_vars(
        "locks",
        vars(&[
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9000"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t-value"),
            ("AWS_SESSION_TOKEN", "t0ken-value"),
            ("S3LEASE_SEAL_KEY", "se4l-key-value"),
        ]),
    )
    .unwrap();
    assert_eq!(c.endpoint(), "http://127.0.0.1:9000");
    assert_eq!(c.region(), Some("eu-west-1"));
    assert_eq!(addressing(&c), Addressing::Path);
    assert_eq!(c.seal_key.as_deref(), Some("se4l-key-value"));
    assert_eq!(to_wit(&c).seal_key.as_deref(), Some("se4l-key-value"));
    let debug = format!("{c:?}");
    assert!(
        !debug.contains("s3cr3t") && !debug.contains("t0ken") && !debug.contains("se4l"),
        "{debug}"
    );

    let aws = StoreConfig::from_vars(
        "b",
        vars(&[("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")]),
    )
    .unwrap();
    assert_eq!(aws.endpoint(), "https://s3.us-east-1.amazonaws.com");
    assert_eq!(addressing(&aws), Addressing::VirtualHosted);
    assert_eq!(aws.seal_key, None);
}

#[test]
fn a_dynamodb_store_takes_its_table_and_its_endpoint() {
    let keys = [("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "s")];
    let with = |extra: &[(&str, &str)]| {
        let mut all = keys.to_vec();
        all.extend_from_slice(extra);
        StoreConfig::from_vars("", vars(&all))
    };
    let c = with(&[("S3LEASE_STORE", "dynamodb"), ("S3LEASE_TABLE", "locks")]).unwrap();
    assert_eq!(c.endpoint(), "https://dynamodb.us-east-1.amazonaws.com");
    let WitStore::Dynamodb(table) = to_wit(&c).store else {
        panic!("not a DynamoDB store")
    };
    assert_eq!(table.table, "locks");
    let c = with(&[
        ("S3LEASE_STORE", "dynamodb"),
        ("S3LEASE_TABLE", "locks"),
        ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1"),
        ("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:2"),
    ])
    .unwrap();
    assert_eq!(c.endpoint(), "http://127.0.0.1:2");
    let err = with(&[("S3LEASE_STORE", "dynamodb")]).unwrap_err();
    assert!(err.to_string().contains("S3LEASE_TABLE"), "{err}");
    let err = with(&[("S3LEASE_STORE", "redis")]).unwrap_err();
    assert!(err.to_string().contains("S3LEASE_STORE"), "{err}");
    let c = with(&[
        ("S3LEASE_STORE", "azure-blob"),
        ("S3LEASE_CONTAINER", "locks"),
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            "UseDevelopmentStorage=true",
        ),
    ])
    .unwrap();
    assert_eq!(
        (c.endpoint(), addressing(&c)),
        ("http://127.0.0.1:10000", Addressing::Path)
    );
    match to_wit(&c).store {
        WitStore::AzureBlob(b) => {
            assert_eq!(
                (b.account.as_str(), b.container.as_str()),
                ("devstoreaccount1", "locks")
            )
        }
        other => panic!("{other:?}"),
    }
    let err = with(&[("S3LEASE_STORE", "azure-blob")]).unwrap_err();
    assert!(err.to_string().contains("S3LEASE_CONTAINER"), "{err}");
    assert!(matches!(to_wit(&with(&[]).unwrap()).store, WitStore::S3(_)));
}

#[test]
fn builds_an_azure_container_and_shows_none_of_its_secrets() {
    for credential in [
        AzureCredential::AccountKey("s3cr3t-key".into()),
        AzureCredential::Sas("sv=1&sig=s3cr3t-sas".into()),
        AzureCredential::BearerToken("s3cr3t-token".into()),
    ] {
        let c = AzureBlobBuilder::new("acct", "locks", credential.clone())
            .build()
            .with_key_prefix("locks/");
        assert_eq!(c.endpoint(), "https://acct.blob.core.windows.net");
        assert_eq!(addressing(&c), Addressing::VirtualHosted);
        let WitStore::AzureBlob(b) = to_wit(&c).store else {
            panic!("not an Azure store")
        };
        assert_eq!(
            (b.account.as_str(), b.container.as_str()),
            ("acct", "locks")
        );
        assert_eq!(
            wit::Credential::Azure(b.credential),
            crate::component::credential(&Credential::Azure(credential.clone()))
        );
        let text = format!("{c:?} {credential:?}");
        assert!(!text.contains("s3cr3t"), "{text}");
    }
    let local = AzureBlobBuilder::new("devstoreaccount1", "c", AzureCredential::Sas("x".into()))
        .endpoint("http://127.0.0.1:10000")
        .build();
    assert_eq!(addressing(&local), Addressing::Path);
}

/// Tokens handed out by a test: each fetch a new one.
struct Counter(std::sync::atomic::AtomicU32);

impl crate::credentials::TokenSource for Counter {
    fn fetch(&self) -> Result<crate::credentials::AccessToken, Error> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(crate::credentials::AccessToken::new(
            format!("s3cr3t-token-{n}"),
            None,
        ))
    }
}

#[test]
fn a_token_source_gives_the_first_token() {
    let source = SharedTokenSource::new(Counter(0.into()));
    let c = AzureBlobBuilder::new("acct", "c", AzureCredential::BearerToken(String::new()))
        .token_source(source.clone())
        .unwrap()
        .build();
    let Store::AzureBlob(blob) = &c.store else {
        panic!("not an Azure store")
    };
    assert_eq!(
        blob.credential,
        AzureCredential::BearerToken("s3cr3t-token-0".into())
    );
    assert_eq!(c.token_source(), Some(&source));
    let text = format!("{c:?} {source:?} {:?}", source.latest().unwrap());
    assert!(!text.contains("s3cr3t"), "{text}");
}

#[test]
fn a_config_holds_one_store_and_answers_for_that_one() {
    let keys = || Credentials::new("a", "s");
    let s3 = S3Builder::new("b", "us-east-1", keys()).build();
    let table = DynamoDbBuilder::new("t", "us-east-1", keys()).build();
    let azure = AzureBlobBuilder::new("acct", "c", AzureCredential::Sas("x".into())).build();
    fn names(c: &StoreConfig) -> [Option<&str>; 4] {
        [c.bucket(), c.table(), c.container(), c.region()]
    }
    assert_eq!(names(&s3), [Some("b"), None, None, Some("us-east-1")]);
    assert_eq!(names(&table), [None, Some("t"), None, Some("us-east-1")]);
    assert_eq!(names(&azure), [None, None, Some("c"), None]);
    let moved = azure.with_endpoint("http://127.0.0.1:10000");
    assert_eq!(
        (moved.endpoint(), addressing(&moved)),
        ("http://127.0.0.1:10000", Addressing::Path)
    );
}

#[test]
fn a_missing_credential_names_its_variable() {
    let err = StoreConfig::from_vars("b", vars(&[("AWS_ACCESS_KEY_ID", "a")])).unwrap_err();
    assert!(err.to_string().contains("AWS_SECRET_ACCESS_KEY"), "{err}");
}

#[test]
fn debug_of_credentials_their_source_and_a_config_shows_no_secret() {
    let fetched = FetchedCredentials {
        credentials: Credentials::new("ASIAVISIBLE", "s3cr3t-value")
            .with_session_token("t0ken-value"),
        expires: None,
        source: "Ec2InstanceMetadata".into(),
    };
    let source = SharedSource::new(StaticCredentials(fetched.credentials.clone()));
    source.fetch().unwrap();
    let config = S3Builder::new("b", "us-east-1", fetched.credentials.clone())
        .credentials_source(source.clone())
        .unwrap()
        .build();
    let text = format!(
        "{fetched:?} {config:?} {source:?} {:?}",
        source.last_source()
    );
    assert!(text.contains("ASIAVISIBLE"), "{text}");
    assert!(
        !text.contains("s3cr3t") && !text.contains("t0ken"),
        "{text}"
    );
}

#[test]
fn errors_name_each_stores_bucket_table_or_container_and_no_secret() {
    use crate::config::AzureCredential;
    use crate::config::{AzureBlobBuilder, DynamoDbBuilder, S3Builder};
    let s3 = S3Builder::new("b", "us-east-1", Credentials::new("AKID", "secret"))
        .endpoint("http://127.0.0.1:9000")
        .build()
        .error_store();
    assert_eq!(
        (s3.name(), s3.endpoint(), s3.bucket()),
        ("S3", "http://127.0.0.1:9000", "b")
    );
    let table = DynamoDbBuilder::new("locks", "us-east-1", Credentials::new("AKID", "secret"))
        .endpoint("http://127.0.0.1:8000")
        .build()
        .error_store();
    assert_eq!((table.name(), table.bucket()), ("DynamoDB", "locks"));
    let container = AzureBlobBuilder::new("acct", "jobs", AzureCredential::Sas("sv=1".into()))
        .endpoint("http://user:hunter2@127.0.0.1:10000/?sv=2022-11-02&sig=S3CR3TSIG")
        .build()
        .error_store();
    assert_eq!(
        (container.name(), container.endpoint(), container.bucket()),
        ("Azure Blob Storage", "http://127.0.0.1:10000/", "jobs")
    );
}

#[test]
fn builds_a_gcs_bucket_and_shows_none_of_its_token() {
    let c = GcsBuilder::new("locks", GcsCredential::BearerToken("ya29.s3cr3t".into())).build();
    assert_eq!(
        (c.store_name(), c.endpoint(), c.bucket(), c.region()),
        (
            "Google Cloud Storage",
            "https://storage.googleapis.com",
            Some("locks"),
            None
        )
    );
    assert_eq!((c.table(), c.container()), (None, None));
    let WitStore::Gcs(wit) = to_wit(&c).store else {
        panic!("not a GCS store")
    };
    assert_eq!(
        (wit.bucket.as_str(), wit.endpoint.as_str()),
        ("locks", "https://storage.googleapis.com")
    );
    assert_eq!(
        wit.credential,
        wit::GcsCredential::Bearer("ya29.s3cr3t".into())
    );
    let text = format!("{c:?}");
    assert!(
        !text.contains("s3cr3t") && text.contains("BearerToken(<redacted>)"),
        "{text}"
    );
    let emulator = c.with_endpoint("http://127.0.0.1:4443");
    assert_eq!(emulator.endpoint(), "http://127.0.0.1:4443");
    let errors = emulator.error_store();
    assert_eq!(
        (errors.name(), errors.endpoint(), errors.bucket()),
        ("Google Cloud Storage", "http://127.0.0.1:4443", "locks")
    );
    let anonymous = GcsBuilder::new("b", GcsCredential::Anonymous).build();
    assert_eq!(gcs_credential(&anonymous), wit::GcsCredential::Anonymous);
}

#[test]
fn a_gcs_token_source_gives_the_first_token() {
    let source = SharedTokenSource::new(Counter(0.into()));
    let c = GcsBuilder::new("b", GcsCredential::Anonymous)
        .token_source(source.clone())
        .unwrap()
        .build();
    assert_eq!(
        gcs_credential(&c),
        wit::GcsCredential::Bearer("s3cr3t-token-0".into())
    );
    assert_eq!(c.token_source(), Some(&source));
    assert!(!format!("{c:?}").contains("s3cr3t"));
}

#[test]
fn gcs_from_the_variables_as_googles_libraries_read_them() {
    let gcs = |pairs: &[(&str, &str)]| {
        let mut all = vec![("S3LEASE_STORE", "gcs")];
        all.extend_from_slice(pairs);
        StoreConfig::from_vars("", vars(&all))
    };
    // The emulator's host: plain http, no credential, the bucket from
    // S3LEASE_BUCKET.
    let c = gcs(&[
        ("STORAGE_EMULATOR_HOST", "127.0.0.1:4443"),
        ("S3LEASE_BUCKET", "locks"),
        ("S3LEASE_SEAL_KEY", "seal"),
    ])
    .unwrap();
    assert_eq!(
        (c.store_name(), c.endpoint(), c.bucket()),
        (
            "Google Cloud Storage",
            "http://127.0.0.1:4443",
            Some("locks")
        )
    );
    assert_eq!(gcs_credential(&c), wit::GcsCredential::Anonymous);
    assert_eq!(
        (c.token_source(), c.seal_key.as_deref()),
        (None, Some("seal"))
    );
    let c = gcs(&[("STORAGE_EMULATOR_HOST", "http://localhost:9023/")]).map(|_| ());
    assert!(c.unwrap_err().to_string().contains("S3LEASE_BUCKET"));
    // The bucket given wins; an http:// endpoint of our own takes no token.
    let c = StoreConfig::from_vars(
        "given",
        vars(&[
            ("S3LEASE_STORE", "GCS"),
            ("S3LEASE_BUCKET", "other"),
            ("S3LEASE_ENDPOINT", "http://127.0.0.1:4443"),
        ]),
    )
    .unwrap();
    assert_eq!(
        (c.bucket(), c.endpoint()),
        (Some("given"), "http://127.0.0.1:4443")
    );
    assert_eq!(c.token_source(), None);
    // An https:// endpoint, or GCS itself: Application Default Credentials
    // (here a key file that is not there, so the error names it).
    for endpoint in [Some("https://storage.example.test"), None] {
        let mut pairs = vec![
            ("S3LEASE_BUCKET", "locks"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/sa.json"),
        ];
        pairs.extend(endpoint.map(|e| ("S3LEASE_ENDPOINT", e)));
        let e = gcs(&pairs).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/sa.json"), "{e}");
    }
    let e = gcs(&[
        ("S3LEASE_BUCKET", "b"),
        ("S3LEASE_ENDPOINT", "storage.example.test"),
    ]);
    assert!(e.unwrap_err().to_string().contains("S3LEASE_ENDPOINT"));
    let e = StoreConfig::from_vars(
        "b",
        vars(&[
            ("S3LEASE_STORE", "gcp"),
            ("AWS_ACCESS_KEY_ID", "a"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
        ]),
    )
    .unwrap_err();
    assert!(e.to_string().contains("`gcs`"), "{e}");
}

#[test]
fn a_config_read_from_variables_takes_a_credentials_source_on_aws_stores_only() {
    let source = SharedSource::new(StaticCredentials(Credentials::new(
        "AKIDSOURCE",
        "from-source",
    )));
    let s3 = StoreConfig::from_vars(
        "b",
        vars(&[
            ("AWS_ACCESS_KEY_ID", "AKIDFIRST"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
        ]),
    )
    .unwrap()
    .with_credentials_source(source.clone())
    .unwrap();
    assert_eq!(s3.credentials_source(), Some(&source));
    let WitStore::S3(bucket) = to_wit(&s3).store else {
        panic!("not an S3 store: {s3:?}");
    };
    assert_eq!(bucket.credentials.access_key_id, "AKIDSOURCE");
    let table = StoreConfig::from_vars(
        "",
        vars(&[
            ("S3LEASE_STORE", "dynamodb"),
            ("S3LEASE_TABLE", "locks"),
            ("AWS_ACCESS_KEY_ID", "AKIDFIRST"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
        ]),
    )
    .unwrap()
    .with_credentials_source(source.clone())
    .unwrap();
    assert_eq!(table.credentials_source(), Some(&source));
    let azure = StoreConfig::from_vars(
        "",
        vars(&[
            ("S3LEASE_STORE", "azure-blob"),
            ("S3LEASE_CONTAINER", "locks"),
            ("AZURE_STORAGE_ACCOUNT", "acct"),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=1"),
        ]),
    )
    .unwrap();
    let refused = azure.with_credentials_source(source).unwrap_err();
    assert_eq!(
        (refused.kind(), refused.field()),
        (crate::error::ErrorKind::InvalidConfig, Some("credentials"))
    );
}
