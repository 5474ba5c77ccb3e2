use super::*;
use proptest::prelude::*;

fn none(_: &str) -> Vec<Vec<u8>> {
    Vec::new()
}

#[test]
fn a_path_template_takes_the_matching_prefix_lowercased() {
    let source = KeySource::parse("path:/counters/{name}").unwrap();
    assert_eq!(source.key("/counters/a", none), Ok("counters/a".into()));
    assert_eq!(source.key("/counters/A", none), Ok("counters/a".into()));
    assert_eq!(
        source.key("/counters/a/increment?x=1", none),
        Ok("counters/a".into())
    );
    assert_eq!(source.key("/counters/a/", none), Ok("counters/a".into()));
    assert_eq!(
        source.key("/counters/a/files/caf%20e;v=1", none),
        Ok("counters/a".into())
    );
    for bad in [
        "/counters",
        "/counters/",
        "/other/a",
        "/Counters/a",
        "/counters/..",
        "/counters/a.",
        "/counters/a%2Fb",
        "/counters/%61",
        "counters/a",
        "//counters/a",
        "/counters//a",
        "/counters/a//x",
        "/counters/a/../b",
        "/counters/a/./x",
        "/counters/a/%2e%2e/b",
        "/counters/a/%2E./b",
        "/counters/a/..;x/b",
        "/counters/a/%2e%2e;/b",
        "/counters/a/x%2fy",
        "/counters/a/x%5cy",
        "/counters/a/x\\..\\b",
        "/counters/a/%252e%252e/b",
        "/counters/a/%zz",
        "/counters/a/\u{e9}",
        "/counters/a/%c3%a9",
        "/counters/a/x%00",
        "/counters/a#/../b",
    ] {
        assert!(source.key(bad, none).is_err(), "{bad:?}");
    }
}

#[test]
fn a_header_names_the_key_under_its_name_and_is_sent_once() {
    let source = KeySource::parse("header:X-Tenant").unwrap();
    let tenant = |values: &'static [&'static [u8]]| {
        move |n: &str| {
            if n == "x-tenant" {
                values.iter().map(|v| v.to_vec()).collect()
            } else {
                Vec::new()
            }
        }
    };
    assert_eq!(
        source.key("/", tenant(&[b"acme"])),
        Ok("x-tenant/acme".into())
    );
    assert_eq!(
        source.key("/", tenant(&[b"ACME"])),
        Ok("x-tenant/acme".into())
    );
    assert!(source.key("/", none).unwrap_err().contains("0 times"));
    // The first value locked, every value forwarded: refused.
    let twice = source.key("/", tenant(&[b"decoy", b"acme"])).unwrap_err();
    assert!(twice.contains("2 times"), "{twice}");
    assert!(source.key("/", tenant(&[b"a/b"])).is_err());
    assert!(source.key("/", tenant(&[b"decoy, acme"])).is_err());
    assert!(source.key("/", tenant(&[b"\xff"])).is_err());
}

#[test]
fn bad_settings_are_refused() {
    for bad in [
        "",
        "path:",
        "path:counters/{n}",
        "path:/counters",
        "path:/a b/{n}",
        "header:",
        "header:a b",
        "query:x",
    ] {
        assert!(KeySource::parse(bad).is_err(), "{bad:?}");
    }
}

/// How a downstream's router might read a path: each flag a normalisation
/// some router applies before matching its routes.
#[derive(Debug, Clone, Copy)]
struct Router {
    decode: u8,
    backslash_is_slash: bool,
    strip_params: bool,
    strip_trailing_dots: bool,
    merge_slashes: bool,
    remove_dot_segments: bool,
}

fn decode_once(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Router {
    /// The path's segments as this router matches them.
    fn segments(&self, path_with_query: &str) -> Vec<String> {
        let mut path = path_with_query
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .to_string();
        for _ in 0..self.decode {
            path = decode_once(&path);
        }
        if self.backslash_is_slash {
            path = path.replace('\\', "/");
        }
        let mut segments: Vec<String> = path
            .trim_start_matches(|c| c == '/' && self.merge_slashes)
            .strip_prefix('/')
            .unwrap_or(&path)
            .split('/')
            .map(|s| {
                let mut s = s.to_string();
                if self.strip_params {
                    s = s.split(';').next().unwrap_or("").to_string();
                }
                if self.strip_trailing_dots && s != "." && s != ".." {
                    s = s.trim_end_matches('.').to_string();
                }
                s
            })
            .collect();
        if self.merge_slashes {
            segments.retain(|s| !s.is_empty());
        }
        if self.remove_dot_segments {
            let mut out: Vec<String> = Vec::new();
            for s in segments {
                match s.as_str() {
                    "." => {}
                    ".." => {
                        out.pop();
                    }
                    _ => out.push(s),
                }
            }
            segments = out;
        }
        segments
    }
}

fn router() -> impl Strategy<Value = Router> {
    (0u8..3, any::<[bool; 5]>()).prop_map(|(decode, f)| Router {
        decode,
        backslash_is_slash: f[0],
        strip_params: f[1],
        strip_trailing_dots: f[2],
        merge_slashes: f[3],
        remove_dot_segments: f[4],
    })
}

const PIECES: &[&str] = &[
    "keys", "KEYS", "a", "A", "b", "acme", ".", "..", "", "%2e", "%2E%2e", "%2f", "%2F", "%5c",
    "\\", "%25", "%252e", ";", "..;", "a;b", "a.", "a..", "~", "%41", "x-y", "%00", "\u{e9}",
    "a b", "#", "?", "%3f", "1",
];

fn path() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(prop::sample::select(PIECES), 1..7),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(pieces, keys_first, query)| {
            let mut path = String::new();
            if keys_first {
                path.push_str("/keys");
            }
            for p in pieces {
                path.push('/');
                path.push_str(p);
            }
            if query {
                path.push_str("?q=/../x");
            }
            path
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    /// Any path the gate accepts, every router reads as the gate's key
    /// (the gate's is the router's, lowercased: it locks at least as
    /// coarsely as any router reads), and for the same route.
    #[test]
    fn an_accepted_path_is_the_same_key_to_every_router(path in path(), router in router()) {
        let template = KeySource::parse("path:/keys/{name}").unwrap();
        if let Ok(key) = template.key(&path, none) {
            let segments = router.segments(&path);
            prop_assert!(segments.len() >= 2, "{path:?} to {router:?}: {segments:?}");
            prop_assert_eq!(&segments[0], "keys", "{:?} to {:?}", path, router);
            let read = format!("keys/{}", segments[1].to_ascii_lowercase());
            prop_assert_eq!(read, key, "{:?} to {:?}: {:?}", path, router, segments);
        }
    }

    /// A key header is accepted only when sent exactly once, as a valid
    /// name; its key is that value, lowercased.
    #[test]
    fn a_key_header_is_accepted_only_once(
        values in prop::collection::vec(prop::sample::select(PIECES), 0..4)
    ) {
        let source = KeySource::parse("header:x-tenant").unwrap();
        let sent: Vec<Vec<u8>> = values.iter().map(|v| v.as_bytes().to_vec()).collect();
        let got = source.key("/", |n| if n == "x-tenant" { sent.clone() } else { Vec::new() });
        match (values.as_slice(), &got) {
            ([one], Ok(key)) => {
                prop_assert_eq!(key, &format!("x-tenant/{}", one.to_ascii_lowercase()));
                prop_assert!(check_part(one).is_ok());
            }
            ([one], Err(_)) => prop_assert!(check_part(one).is_err()),
            (_, got) => prop_assert!(got.is_err(), "{values:?}: {got:?}"),
        }
    }
}
