//! Reading a request's target as the test stores and fakes receive it.

/// `%XX` escapes decoded; anything else (a lone `%` included) kept as is.
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
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

/// A query string's pairs, decoded (a name without `=` has an empty value).
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// The path, and the query's pairs decoded.
pub fn split_target(path_and_query: &str) -> (&str, Vec<(String, String)>) {
    match path_and_query.split_once('?') {
        Some((path, query)) => (path, query_pairs(query)),
        None => (path_and_query, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_escapes_and_keeps_what_is_not_one() {
        assert_eq!(percent_decode("a%2Fb%3D"), "a/b=");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%é"), "%é");
        assert_eq!(
            split_target("/b/k?list-type=2&prefix=a%2F&x"),
            (
                "/b/k",
                vec![
                    ("list-type".into(), "2".into()),
                    ("prefix".into(), "a/".into()),
                    ("x".into(), String::new())
                ]
            )
        );
    }
}
