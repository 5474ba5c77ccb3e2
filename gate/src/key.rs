//! Which lock a request takes: its key comes from the request's path (a
//! template such as `/counters/{name}`) or from one of its headers. Plain
//! Rust, tested natively.
//!
//! The gate forwards the request as it came, so the function behind it
//! reads the path and headers itself, through its own router. Whatever
//! such a router could read as another key than the one the gate locked
//! is refused: a key header sent other than exactly once; in the path, an
//! encoded `/`, `\`, `.` or `%`, a `\`, an empty segment (`//`), a `.` or
//! `..` segment (also with `;parameters`), anything outside printable
//! ASCII, a `#`; in the key's own segments, anything but
//! `A-Z a-z 0-9 . _ -` and a trailing `.`. Case is normalised instead: the
//! key is lowercased, so `/counters/A` and `/counters/a` (one counter to
//! a case-insensitive router) take one lock.

/// Where the key comes from (`S3LEASE_GATE_KEY`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// `path:/counters/{name}`: the template's segments must match the
    /// path's first segments (a literal exactly, `{...}` any valid name);
    /// the key is those path segments joined by `/`, lowercased, so
    /// `/counters/A/increment` takes `counters/a`.
    Path(Vec<Segment>),
    /// `header:x-tenant`: the key is the header's one value, lowercased
    /// and prefixed by the header's name (`x-tenant/acme`), so keys of two
    /// gates configured on different headers never meet by accident.
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

    /// The key of a request with this path (`path-with-query`) and these
    /// header values (`header(name)`: every value the request sent under
    /// that name, in order); `Err` says why there is none (the gate's 400).
    pub fn key(
        &self,
        path_with_query: &str,
        header: impl Fn(&str) -> Vec<Vec<u8>>,
    ) -> Result<String, String> {
        match self {
            KeySource::Path(template) => path_key(template, path_with_query),
            KeySource::Header(name) => {
                let values = header(name);
                let [value] = values.as_slice() else {
                    return Err(format!(
                        "the {name} header is sent {} times: the key's header is sent exactly once",
                        values.len()
                    ));
                };
                let value = std::str::from_utf8(value)
                    .map_err(|_| format!("the {name} header is not text"))?;
                check_part(value).map_err(|why| format!("the {name} header: {why}"))?;
                Ok(format!("{name}/{}", value.to_ascii_lowercase()))
            }
        }
    }
}

fn path_key(template: &[Segment], path_with_query: &str) -> Result<String, String> {
    let path = path_with_query
        .split_once('?')
        .map_or(path_with_query, |(p, _)| p);
    let rest = path.strip_prefix('/').ok_or("the path is not absolute")?;
    if let Some(c) = path.chars().find(|c| !(' '..='~').contains(c) || *c == '#') {
        return Err(format!(
            "the path holds {c:?}: only printable ASCII, and no #"
        ));
    }
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.len() < template.len() {
        return Err("the path is shorter than the key's template".into());
    }
    let mut key = Vec::with_capacity(template.len());
    for (segment, part) in template.iter().zip(&segments) {
        match segment {
            Segment::Literal(l) if l == part => {}
            Segment::Literal(l) => {
                return Err(format!("the path does not match the template at {l:?}"))
            }
            Segment::Variable => {
                check_part(part).map_err(|why| format!("path segment: {why}"))?;
                if part.ends_with('.') {
                    return Err("path segment: no trailing . (some servers drop it)".into());
                }
            }
        }
        key.push(part.to_ascii_lowercase());
    }
    // The rest is the function's, but nothing in it may move a router's
    // reading of the key's segments: a trailing `/` is the only empty
    // segment it may have.
    let after = &segments[template.len()..];
    for (i, part) in after.iter().enumerate() {
        if part.is_empty() && i + 1 < after.len() {
            return Err("the path has an empty segment (//)".into());
        }
        check_rest(part)?;
    }
    Ok(key.join("/"))
}

/// A segment after the key's: nothing a router could decode into a
/// separator, a dot segment or another percent-escape.
fn check_rest(part: &str) -> Result<(), String> {
    if part.contains('\\') {
        return Err("the path holds a \\ (some routers read it as /)".into());
    }
    let decoded = percent_decode(part).ok_or("the path holds a malformed %-escape")?;
    if let Some(b) = decoded
        .iter()
        .find(|b| !(0x20..0x7f).contains(*b) || b"/\\%".contains(b))
    {
        return Err(format!(
            "the path encodes {:?}: no encoded /, \\, % or anything outside printable ASCII",
            char::from(*b)
        ));
    }
    // `..;x` is `..` to routers that strip path parameters.
    let bare = decoded.split(|b| *b == b';').next().unwrap_or(&[]);
    if bare == b"." || bare == b".." {
        return Err("the path has a . or .. segment".into());
    }
    Ok(())
}

/// `%XX` decoded; `None` for a `%` without two hex digits.
fn percent_decode(part: &str) -> Option<Vec<u8>> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
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
mod tests;
