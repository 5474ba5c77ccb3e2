use super::*;

fn s3() -> Arc<ErrorStore> {
    Arc::new(ErrorStore::new(
        "S3",
        "bucket",
        "http://127.0.0.1:9000",
        "b",
    ))
}

fn reply(kind: ErrorKind, store: &Arc<ErrorStore>, status: u16, code: &str) -> Error {
    Error::new(
        kind,
        Some(store.clone()),
        Detail::Reply(Reply {
            status,
            code: code.into(),
            message: "the message".into(),
            request_id: "req-1".into(),
        }),
    )
}

#[test]
fn each_store_error_names_its_bucket_and_endpoint() {
    let store = s3();
    let errors = [
        reply(ErrorKind::AccessDenied, &store, 403, "AccessDenied"),
        reply(ErrorKind::NoSuchStore, &store, 404, "NoSuchBucket"),
        reply(ErrorKind::Store, &store, 500, "InternalError"),
        reply(ErrorKind::Conflict, &store, 409, "OperationAborted"),
        reply(ErrorKind::ClockSkewed, &store, 403, "RequestTimeTooSkewed"),
        Error::transport("connection refused").with_store(&store),
    ];
    for e in errors {
        let text = e.to_string();
        assert!(text.contains("`b`"), "{text}");
        assert!(text.contains("http://127.0.0.1:9000"), "{text}");
        assert!(text.contains("S3"), "{text}");
        assert_eq!(e.bucket(), Some("b"));
        assert_eq!(e.endpoint(), Some("http://127.0.0.1:9000"));
        assert_eq!(e.store().map(ErrorStore::name), Some("S3"));
    }
    assert_eq!(
        reply(ErrorKind::NoSuchStore, &store, 404, "NoSuchBucket").to_string(),
        "no such bucket `b` at http://127.0.0.1:9000 (S3): 404 NoSuchBucket: the message \
         (request id req-1)"
    );
    assert_eq!(
        Error::transport("connection refused")
            .with_store(&store)
            .to_string(),
        "the request did not complete: connection refused (S3 endpoint \
         http://127.0.0.1:9000, bucket `b`)"
    );
}

#[test]
fn a_timeout_names_the_bucket_and_the_key() {
    let e = crate::component::timeout("jobs/nightly", Duration::from_millis(1500), None)
        .with_store(&s3());
    assert_eq!(
        e.to_string(),
        "gave up on jobs/nightly in bucket `b` after 1500 ms"
    );
}

#[test]
fn dynamodb_names_its_table_and_azure_its_container() {
    let table = Arc::new(ErrorStore::new(
        "DynamoDB",
        "table",
        "http://127.0.0.1:8000",
        "locks",
    ));
    let text = reply(
        ErrorKind::NoSuchStore,
        &table,
        400,
        "ResourceNotFoundException",
    )
    .to_string();
    assert!(
        text.starts_with("no such table `locks` at http://127.0.0.1:8000 (DynamoDB)"),
        "{text}"
    );
    let text = reply(
        ErrorKind::AccessDenied,
        &table,
        400,
        "AccessDeniedException",
    )
    .to_string();
    assert!(
        text.contains("table `locks`") && text.contains("http://127.0.0.1:8000"),
        "{text}"
    );

    let container = Arc::new(ErrorStore::new(
        "Azure Blob Storage",
        "container",
        "https://acct.blob.core.windows.net",
        "jobs",
    ));
    let text = reply(ErrorKind::NoSuchStore, &container, 404, "ContainerNotFound").to_string();
    assert!(
        text.starts_with(
            "no such container `jobs` at https://acct.blob.core.windows.net (Azure Blob Storage)"
        ),
        "{text}"
    );
}

#[test]
fn a_sas_token_or_password_in_the_endpoint_never_shows() {
    let store = Arc::new(ErrorStore::new(
        "Azure Blob Storage",
        "container",
        "http://user:hunter2@127.0.0.1:10000/?sv=2022-11-02&sig=S3CR3TSIG#frag",
        "jobs",
    ));
    assert_eq!(store.endpoint(), "http://127.0.0.1:10000/");
    let errors = [
        reply(ErrorKind::AccessDenied, &store, 403, "AuthenticationFailed"),
        reply(ErrorKind::NoSuchStore, &store, 404, "ContainerNotFound"),
        reply(ErrorKind::Store, &store, 500, "InternalError"),
        Error::transport("connection refused").with_store(&store),
    ];
    for e in errors {
        for text in [e.to_string(), format!("{e:?}"), format!("{e:#?}")] {
            assert!(text.contains("127.0.0.1:10000"), "{text}");
            for secret in ["S3CR3TSIG", "sig=", "sv=2022", "hunter2", "frag"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
        }
    }
}

#[test]
fn without_secrets_keeps_the_rest_of_a_url() {
    assert_eq!(
        without_secrets("https://h.example/p/q"),
        "https://h.example/p/q"
    );
    assert_eq!(
        without_secrets("https://h.example?sig=x"),
        "https://h.example"
    );
    assert_eq!(
        without_secrets("https://u@h.example/a@b"),
        "https://h.example/a@b"
    );
    assert_eq!(without_secrets("h.example:9000"), "h.example:9000");
}

#[test]
fn a_request_the_store_timed_out_is_transient_and_no_other_400_is() {
    let store = s3();
    for (status, code) in [(400, "RequestTimeout"), (408, ""), (408, "Http408")] {
        let e = reply(ErrorKind::Store, &store, status, code);
        assert!(e.is_transient(), "{status} {code}");
    }
    for (status, code) in [(400, "InvalidArgument"), (400, ""), (404, "NoSuchKey")] {
        let e = reply(ErrorKind::Store, &store, status, code);
        assert!(!e.is_transient(), "{status} {code}");
    }
}

#[test]
fn an_error_stays_small() {
    // Boxed detail plus a shared store: errors are cheap to return.
    assert!(std::mem::size_of::<Error>() <= 3 * std::mem::size_of::<usize>());
}
