//! Which lock a request takes: its key comes from the request's path (a
//! template such as `/counters/{name}`) or from one of its headers. Plain
//! Rust, tested natively.

/// Where the key comes from (`S3LEASE_GATE_KEY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `path:/counters/{name}`: the template's segments must match the
    /// path's first segments (a literal exactly, `{...}` any valid name);
    /// the key is those path segments joined by `/`, so
    /// `/counters/a/increment` takes `counters/a`.
    Path(Vec<Segment>),
    /// `header:x-tenant`: the key is the header's value, prefixed by the
    /// header's name (`x-tenant/acme`), so keys of two gates configured on
    /// different headers never meet by accident.
    Header(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Literal(String),
    Variable,
}

/// Longest name a path segment or a header value may be.
pub const MAX_PART_LEN: usize = 128;

impl KeySource {
    /// Parses `S3LEASE_GATE_KEY`.
    pub fn parse(text: &str) -> Result<KeySource, String> {
        if let Some(template) = text.strip_prefix("path:") {
            let rest = template
                .strip_prefix('/')
                .ok_or("a path template starts with /")?;
            let segments: Vec<Segment> = rest
                .split('/')
                .map(|s| {
                    if s.starts_with('{') && s.ends_with('}') && s.len() > 2 {
                        Ok(Segment::Variable)
                    } else {
                        check_part(s)
                            .map(|()| Segment::Literal(s.to_string()))
                            .map_err(|why| format!("path template segment {s:?}: {why}"))
                    }
                })
                .collect::<Result<_, _>>()?;
            if !segments.contains(&Segment::Variable) {
                return Err("a path template names at least one {variable}".into());
            }
            Ok(KeySource::Path(segments))
        } else if let Some(name) = text.strip_prefix("header:") {
            let name = name.trim().to_ascii_lowercase();
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(format!("{name:?} is not a header name"));
            }
            Ok(KeySource::Header(name))
        } else {
            Err("S3LEASE_GATE_KEY is path:/template/{name} or header:<name>".into())
        }
    }

    /// The key of a request with this path (`path-with-query`) and
    /// header lookup; `Err` says why there is none (the gate's 400).
    pub fn key(
        &self,
        path_with_query: &str,
        header: impl Fn(&str) -> Option<Vec<u8>>,
    ) -> Result<String, String> {
        match self {
            KeySource::Path(template) => {
                let path = path_with_query
                    .split_once('?')
                    .map_or(path_with_query, |(p, _)| p);
                let rest = path.strip_prefix('/').ok_or("the path is not absolute")?;
                let mut parts = rest.split('/');
                let mut key = Vec::with_capacity(template.len());
                for segment in template {
                    let part = parts
                        .next()
                        .ok_or("the path is shorter than the key's template")?;
                    match segment {
                        Segment::Literal(l) if l == part => {}
                        Segment::Literal(l) => {
                            return Err(format!("the path does not match the template at {l:?}"))
                        }
                        Segment::Variable => {
                            check_part(part).map_err(|why| format!("path segment: {why}"))?
                        }
                    }
                    key.push(part);
                }
                Ok(key.join("/"))
            }
            KeySource::Header(name) => {
                let value = header(name).ok_or_else(|| format!("no {name} header"))?;
                let value = String::from_utf8(value)
                    .map_err(|_| format!("the {name} header is not text"))?;
                check_part(&value).map_err(|why| format!("the {name} header: {why}"))?;
                Ok(format!("{name}/{value}"))
            }
        }
    }
}

/// A part of a key: 1 to 128 of `A-Z a-z 0-9 . _ -`, not `.` or `..`. Keys
/// become part of S3 object names, so nothing that could climb or hide a
/// path (a `%2F` is refused, not decoded).
fn check_part(part: &str) -> Result<(), &'static str> {
    if part.is_empty() || part.len() > MAX_PART_LEN {
        return Err("1 to 128 characters");
    }
    if part == "." || part == ".." {
        return Err("not . or ..");
    }
    if !part
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    {
        return Err("only A-Z a-z 0-9 . _ -");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<Vec<u8>> {
        None
    }

    #[test]
    fn a_path_template_takes_the_matching_prefix() {
        let source = KeySource::parse("path:/counters/{name}").unwrap();
        assert_eq!(source.key("/counters/a", none), Ok("counters/a".into()));
        assert_eq!(
            source.key("/counters/a/increment?x=1", none),
            Ok("counters/a".into())
        );
        for bad in [
            "/counters",
            "/counters/",
            "/other/a",
            "/counters/..",
            "/counters/a%2Fb",
            "counters/a",
        ] {
            assert!(source.key(bad, none).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_header_names_the_key_under_its_name() {
        let source = KeySource::parse("header:X-Tenant").unwrap();
        let tenant = |v: &'static [u8]| move |n: &str| (n == "x-tenant").then(|| v.to_vec());
        assert_eq!(source.key("/", tenant(b"acme")), Ok("x-tenant/acme".into()));
        assert!(source.key("/", none).is_err());
        assert!(source.key("/", tenant(b"a/b")).is_err());
        assert!(source.key("/", tenant(b"\xff")).is_err());
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
}
