use super::*;
use crate::config::Store;

fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    |name| {
        pairs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    }
}

#[test]
fn debug_never_shows_a_credential() {
    for c in [
        AzureCredential::AccountKey("secret-key".into()),
        AzureCredential::Sas("sig=secret-key".into()),
        AzureCredential::BearerToken("secret-key".into()),
    ] {
        assert!(!format!("{c:?}").contains("secret-key"), "{c:?}");
    }
}

#[test]
fn an_account_with_a_key_or_a_sas() {
    let a = from_vars(&vars(&[
        ("AZURE_STORAGE_ACCOUNT", "acct"),
        ("AZURE_STORAGE_KEY", "a2V5"),
    ]))
    .unwrap();
    assert_eq!(a.endpoint, "https://acct.blob.core.windows.net");
    assert!(!a.path_style);
    assert_eq!(a.credential, AzureCredential::AccountKey("a2V5".into()));
    let a = from_vars(&vars(&[
        ("AZURE_STORAGE_ACCOUNT", "acct"),
        ("AZURE_STORAGE_SAS_TOKEN", "?sig=x"),
    ]))
    .unwrap();
    assert_eq!(a.credential, AzureCredential::Sas("?sig=x".into()));
}

#[test]
fn missing_variables_are_named() {
    let missing = |pairs: &[(&str, &str)]| match from_vars(&vars(pairs)) {
        Err(Error::MissingEnv { name }) => name,
        other => panic!("{:?}", other.map(|a| a.account)),
    };
    assert_eq!(missing(&[]), "AZURE_STORAGE_ACCOUNT");
    assert_eq!(
        missing(&[("AZURE_STORAGE_ACCOUNT", "acct")]),
        "AZURE_STORAGE_KEY"
    );
}

#[test]
fn connection_strings_as_the_host_crate_reads_them() {
    let a = from_connection_string("UseDevelopmentStorage=true").unwrap();
    assert_eq!(
        (a.endpoint.as_str(), a.path_style, a.account.as_str()),
        ("http://127.0.0.1:10000", true, DEV_ACCOUNT)
    );
    let a = from_connection_string(
        "AccountName=acct;SharedAccessSignature=sv=1&sig=a%2Bb;EndpointSuffix=core.chinacloudapi.cn",
    )
    .unwrap();
    assert_eq!(a.endpoint, "https://acct.blob.core.chinacloudapi.cn");
    assert_eq!(a.credential, AzureCredential::Sas("sv=1&sig=a%2Bb".into()));
    for bad in [
        "AccountKey=secret-key-value",
        "AccountName=a",
        "AccountName=a;AccountKey=secret-key-value;BlobEndpoint=http://h/other",
        "secret-key-value",
    ] {
        let e = from_connection_string(bad).err().unwrap();
        assert!(!format!("{e} {e:?}").contains("secret-key-value"), "{e}");
    }
}

fn from(vars: &[(&str, &str)]) -> Result<Config, Error> {
    Config::from_vars(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    })
}

#[test]
fn azure_blob_reads_the_host_crates_variables() {
    let vars = [
        ("S3LEASE_STORE", "azure-blob"),
        ("S3LEASE_CONTAINER", "locks"),
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            "UseDevelopmentStorage=true",
        ),
        ("S3LEASE_KEY_PREFIX", "p/"),
    ];
    let c = from(&vars).unwrap();
    assert_eq!(c.key_prefix(), "p/");
    match c.store {
        Store::AzureBlob {
            endpoint,
            addressing,
            account,
            container,
            ..
        } => assert_eq!(
            (&*endpoint, addressing, &*account, &*container),
            (
                "http://127.0.0.1:10000",
                Addressing::Path,
                "devstoreaccount1",
                "locks"
            )
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        from(&vars[..1]),
        Err(Error::MissingEnv {
            name: "S3LEASE_CONTAINER"
        })
    );
}

#[test]
fn azure_blob_by_hand_is_virtual_hosted_and_hides_its_credential() {
    let c = Config::azure_blob(
        "acct",
        "locks",
        AzureCredential::AccountKey("very-secret".into()),
    );
    assert_eq!(c.endpoint(), "https://acct.blob.core.windows.net");
    assert!(matches!(
        c.store,
        Store::AzureBlob {
            addressing: Addressing::VirtualHosted,
            ..
        }
    ));
    let shown = format!("{c:?}");
    assert!(!shown.contains("very-secret"), "{shown}");
    assert!(shown.contains("locks"), "{shown}");
}
