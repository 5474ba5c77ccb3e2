use super::*;

fn lease() -> Lease {
    Lease {
        key: "counters/a".into(),
        token: u64::MAX,
        holder_id: "gate-1 ünïcode,\r\n%".into(),
        etag: "\"0123abcd\"".into(),
        expires_at_ms: 1_795_355_601_131,
        acquired_at_ms: 1_795_355_591_131,
        ttl_ms: 10_000,
        metadata: "{\"a\": \"b\"}\u{0}\u{7f}".into(),
        seal: "v3.0123456789abcdef0123456789abcdef".into(),
    }
}

fn header<'a>(headers: &'a [(&'static str, String)]) -> impl Fn(&str) -> Option<&'a str> {
    |name| {
        headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[test]
fn a_lease_round_trips() {
    let l = lease();
    let value = l.to_header_value();
    assert!(value.starts_with("v1."));
    assert!(value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)));
    assert_eq!(Lease::from_header_value(&value), Ok(l.clone()));
    assert_eq!(Lease::from_header_value(&format!(" {value}\t")), Ok(l));
}

#[test]
fn the_three_headers_round_trip_and_are_valid_header_values() {
    let l = lease();
    let stamped = l.header_values();
    for (_, value) in &stamped {
        assert!(value.bytes().all(|b| (b'!'..=b'~').contains(&b)), "{value}");
    }
    assert_eq!(stamped[1].1, u64::MAX.to_string());
    assert_eq!(parse_holder(&stamped[2].1), Ok(l.holder_id.clone()));
    assert_eq!(Lease::from_headers(header(&stamped)), Ok(l));
}

#[test]
fn headers_that_disagree_with_the_lease_are_refused() {
    let mut stamped = lease().header_values();
    stamped[1].1 = "7".into();
    let e = Lease::from_headers(header(&stamped)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidHeader { name: TOKEN, .. }),
        "{e:?}"
    );
    let mut stamped = lease().header_values();
    stamped[2].1 = "someone-else".into();
    let e = Lease::from_headers(header(&stamped)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidHeader { name: HOLDER, .. }),
        "{e:?}"
    );
    let e = Lease::from_headers(|_| None).unwrap_err();
    assert!(
        matches!(e, Error::InvalidHeader { name: LEASE, .. }),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "header s3-lease-lease: is missing");
}

#[test]
fn garbage_is_an_error_naming_the_header() {
    let field_missing = URL_SAFE_NO_PAD.encode(r#"{"key":"a","token":1}"#);
    let wrong_type = URL_SAFE_NO_PAD.encode(
        r#"{"key":"a","token":-1,"holder-id":"h","etag":"e","expires-at-ms":1,"acquired-at-ms":1,"ttl-ms":1,"metadata":"","seal":"s"}"#,
    );
    let long = format!("v1.{}", "A".repeat(MAX_LEASE_VALUE_LEN));
    let garbage = [
        String::new(),
        "v1.".into(),
        "v2.e30".into(),
        "e30".into(),
        "v1.e30=".into(),
        "v1.!!!!".into(),
        "v1.e30".into(), // {}
        "v1.W10".into(), // []
        format!("v1.{}", URL_SAFE_NO_PAD.encode("not json")),
        format!("v1.{}", URL_SAFE_NO_PAD.encode([0xff, 0xfe, 0x00])),
        format!("v1.{field_missing}"),
        format!("v1.{wrong_type}"),
        long,
    ];
    for value in &garbage {
        let e = Lease::from_header_value(value).unwrap_err();
        assert!(
            matches!(e, Error::InvalidHeader { name: LEASE, .. }),
            "{value:?}: {e:?}"
        );
    }
    for token in ["", "-1", "+1", "1.0", "0x10", "18446744073709551616", "１"] {
        assert!(parse_token(token).is_err(), "{token:?}");
    }
    assert_eq!(parse_token(" 42 "), Ok(42));
    for holder in ["%", "%4", "%zz", "%FF", "%C3"] {
        assert!(parse_holder(holder).is_err(), "{holder:?}");
    }
}

/// Random bytes and random mutations of a real value: every one is read
/// without a panic.
#[test]
fn random_input_never_panics() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let good = lease().to_header_value();
    for _ in 0..5_000 {
        let len = (next() % 96) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let text = String::from_utf8_lossy(&bytes);
        let _ = Lease::from_header_value(&text);
        let _ = Lease::from_header_value(&format!("v1.{text}"));
        let _ = parse_token(&text);
        let _ = parse_holder(&text);

        let mut mutated = good.clone().into_bytes();
        let at = (next() as usize) % mutated.len();
        mutated[at] = b"AZaz09-_.%=+/ "[(next() % 14) as usize];
        // A mutation may still decode to some record: the component's seal
        // refuses that one. Here it is only read, without a panic.
        if let Ok(text) = String::from_utf8(mutated) {
            let _ = Lease::from_header_value(&text);
        }
    }
}

/// The header's JSON names the fields as the contract's `record lease`
/// does, every one of them.
#[test]
fn the_json_uses_the_wit_field_names() {
    let wit = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../wit/lease.wit"));
    let record = &wit[wit.find("record lease {").expect("the lease record")..];
    let record = &record[..record.find("\n    }").expect("its end")];
    let mut wit_fields: Vec<&str> = record
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter_map(|l| l.trim().split_once(':').map(|(name, _)| name))
        .collect();
    let value = lease().to_header_value();
    let json: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&value[3..]).unwrap()).unwrap();
    let mut json_fields: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    wit_fields.sort_unstable();
    json_fields.sort_unstable();
    assert_eq!(json_fields, wit_fields);
}

#[test]
fn holder_ids_escape_to_plain_header_values_and_back() {
    assert_eq!(escape_holder("host-1_a.b"), "host-1_a.b");
    assert_eq!(escape_holder("50%é"), "50%25%C3%A9");
    assert_eq!(escape_holder("a \"b\"\\"), "a%20%22b%22%5C");
    let id = "gate 1\n\"quoted\"\\ ü%";
    assert_eq!(parse_holder(&escape_holder(id)).unwrap(), id);
}
