//! Each row of the dialect table is recognised, by its endpoint's host and
//! by its reply headers, and behaves as the row says.

use super::*;
use crate::capability::Capability;
use crate::testing::response;

fn dialect(name: &str) -> &'static Dialect {
    DIALECTS.iter().find(|d| d.name == name).unwrap()
}

/// A failed result of the preflight, as `name_store` sees one.
fn failed(status: u16, code: &str, silent: bool) -> CapabilityResult {
    CapabilityResult {
        capability: Capability::IfNoneMatchExisting,
        verdict: Verdict::Fail,
        status: Some(status),
        code: code.into(),
        detail: "found".into(),
        silent,
    }
}

#[test]
fn every_row_is_recognised_by_each_of_its_domains_and_reply_headers() {
    for d in DIALECTS {
        for domain in d.domains {
            for host in [
                format!("bucket.{domain}"),
                format!("Region.{}:443", domain.to_ascii_uppercase()),
                format!("{domain}."),
            ] {
                assert_eq!(of_host(&host).map(|d| d.name), Some(d.name), "{host}");
            }
            // Only the domain itself, or a name under it.
            assert_eq!(of_host(&format!("not{domain}")), None, "{domain}");
            assert_eq!(of_host(&format!("{domain}.example.com")), None, "{domain}");
        }
        for header in d.reply_headers {
            let name = format!("{header}{}", if header.ends_with('-') { "x" } else { "" });
            let reply = response(200, &[(&name.to_ascii_uppercase(), "v")], "");
            assert_eq!(of_reply(&reply).map(|d| d.name), Some(d.name), "{name}");
        }
    }
    for plain in [
        "127.0.0.1:8333",
        "[::1]:9000",
        "minio.internal",
        "localhost",
    ] {
        assert_eq!(of_host(plain), None, "{plain}");
    }
    let plain = response(200, &[("x-amz-request-id", "r"), ("etag", "\"e\"")], "");
    assert_eq!(of_reply(&plain), None);
}

#[test]
fn the_rows_say_what_the_known_dialects_do() {
    let tigris = dialect("Tigris");
    assert_eq!(of_host("t3.storage.dev"), Some(tigris));
    assert_eq!(of_host("fly.storage.tigris.dev"), Some(tigris));
    assert_eq!(
        tigris.conditional_write_header,
        Some(("x-tigris-consistent", "true"))
    );
    assert_eq!(
        of_host("storage.googleapis.com").map(|d| d.conditions),
        Some(Conditions::Ignored)
    );
    assert_eq!(
        of_host("nyc3.digitaloceanspaces.com").map(|d| d.conditions),
        Some(Conditions::IfMatchUnquotedOnly)
    );
    for host in [
        "s3.us-east-1.amazonaws.com",
        "acct.r2.cloudflarestorage.com",
    ] {
        let d = of_host(host).unwrap();
        assert_eq!(d.conditions, Conditions::Honoured, "{host}");
        assert_eq!(d.conditional_write_header, None, "{host}");
    }
    for host in [
        "s3.us-west-004.backblazeb2.com",
        "oss-cn-hangzhou.aliyuncs.com",
    ] {
        assert_eq!(
            of_host(host).map(|d| d.conditions),
            Some(Conditions::NotImplemented),
            "{host}"
        );
    }
}

#[test]
fn a_report_names_a_dialect_beside_the_behaviour_its_row_gives_it() {
    for d in DIALECTS {
        let mut results = [failed(200, "", true), failed(501, "NotImplemented", false)];
        name_store(&mut results, Some(d));
        let [silent, refused] = &results;
        match d.conditions {
            Conditions::Ignored => {
                assert!(silent.detail.starts_with(&format!("this is {}", d.name)));
                assert_eq!(refused.detail, "found", "{}", d.name);
            }
            Conditions::NotImplemented => {
                assert_eq!(silent.detail, "found", "{}", d.name);
                assert!(refused.detail.contains(&format!("({} answers so", d.name)));
            }
            Conditions::Honoured | Conditions::IfMatchUnquotedOnly => {
                assert_eq!(
                    (silent.detail.as_str(), refused.detail.as_str()),
                    ("found", "found")
                );
            }
        }
    }
    let mut results = [failed(200, "", true)];
    name_store(&mut results, None);
    assert_eq!(results[0].detail, "found");
}
