use super::*;
use crate::args::Cli;
use clap::Parser;

fn cli(args: &[&str]) -> Cli {
    let mut all = vec!["s3-lease"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["status", "k"]);
    Cli::try_parse_from(all).expect("flags parse")
}

#[test]
fn store_gcs_with_a_bucket_and_an_emulators_endpoint() {
    let cli = cli(&[
        "--store",
        "gcs",
        "--bucket",
        "locks",
        "--endpoint",
        "http://127.0.0.1:4443",
    ]);
    assert!(cli.store.kind == Some(StoreArg::Gcs));
    assert_eq!(
        endpoint_in_use(&cli.store),
        Some(("--endpoint", "http://127.0.0.1:4443".to_string()))
    );
    // An http:// endpoint takes no credential: nothing is fetched.
    let config = store_config(&cli.store).unwrap_or_else(|f| panic!("{}", f.message));
    assert_eq!(
        (config.store_name(), config.endpoint(), config.bucket()),
        (
            "Google Cloud Storage",
            "http://127.0.0.1:4443",
            Some("locks")
        )
    );
    let env = child_env(&config, endpoint_in_use(&cli.store).map(|(_, e)| e));
    for pair in [
        ("S3LEASE_BUCKET", "locks"),
        ("S3LEASE_STORE", "gcs"),
        ("S3LEASE_ENDPOINT", "http://127.0.0.1:4443"),
    ] {
        assert!(
            env.iter().any(|(k, v)| (k.as_str(), v.as_str()) == pair),
            "{pair:?} not in {env:?}"
        );
    }
    assert!(!env.iter().any(|(k, _)| k == "S3LEASE_REGION"), "{env:?}");
}

#[test]
fn store_gcs_needs_a_bucket() {
    if std::env::var_os("S3LEASE_BUCKET").is_some() {
        return;
    }
    let failure = store_config(&cli(&["--store", "gcs"]).store).unwrap_err();
    assert_eq!(failure.code, exit::CONFIG);
    assert!(
        failure.message.contains("--store gcs needs --bucket"),
        "{}",
        failure.message
    );
}

#[test]
fn a_gcs_endpoint_with_a_password_is_refused_unshown() {
    let failure = store_config(
        &cli(&[
            "--store",
            "gcs",
            "--bucket",
            "b",
            "--endpoint",
            "http://user:hunter2@127.0.0.1:4443",
        ])
        .store,
    )
    .unwrap_err();
    assert_eq!(failure.code, exit::USAGE);
    assert!(!failure.message.contains("hunter2"), "{}", failure.message);
    assert!(
        failure.message.contains("GOOGLE_APPLICATION_CREDENTIALS"),
        "{}",
        failure.message
    );
}

/// Tokens from a test, an hour long.
struct HourTokens;

impl s3_lease_host::credentials::TokenSource for HourTokens {
    fn fetch(&self) -> Result<s3_lease_host::credentials::AccessToken, s3_lease_host::Error> {
        let expires = std::time::SystemTime::now() + Duration::from_secs(3600);
        Ok(s3_lease_host::credentials::AccessToken::new(
            "ya29.s3cr3t",
            Some(expires),
        ))
    }

    fn describe(&self) -> String {
        "the test's tokens".into()
    }
}

#[test]
fn the_credentials_line_names_where_a_gcs_stores_tokens_come_from() {
    use s3_lease_host::credentials::SharedTokenSource;
    use s3_lease_host::{GcsBuilder, GcsCredential};
    let fixed = GcsBuilder::new("b", GcsCredential::Anonymous).build();
    assert_eq!(credentials_line(&fixed), None);
    let config = GcsBuilder::new("b", GcsCredential::Anonymous)
        .token_source(SharedTokenSource::new(HourTokens))
        .unwrap()
        .build();
    let line = credentials_line(&config).unwrap();
    assert!(
        line.starts_with("credentials from the test's tokens, temporary (expire in 59m")
            && line.ends_with("refreshed before they do")
            && !line.contains("s3cr3t"),
        "{line}"
    );
}

#[test]
fn the_store_flag_takes_gcs_and_the_help_says_how_gcs_is_reached() {
    use clap::CommandFactory;
    let mut command = Cli::command();
    let help = command.render_long_help().to_string();
    for part in [
        "objects in a Google Cloud Storage bucket (gcs",
        "STORAGE_EMULATOR_HOST",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GCE_METADATA_HOST",
        "[possible values: s3, dynamodb, azure-blob, gcs]",
    ] {
        assert!(help.contains(part), "{part:?} not in the help:\n{help}");
    }
}
