//! The little XML S3 speaks to us: flat error bodies and LIST entries,
//! read one element at a time, and the error bodies translations write.

use crate::prelude::*;

/// `text` escaped for an XML element's content or an attribute.
pub fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An S3 error body (`<Error>` with its `Code`, `Message` and
/// `RequestId`), as `S3Response::s3_error` reads it: what a store
/// translation makes of its store's error.
pub fn error_body(code: &str, message: &str, request_id: &str) -> Vec<u8> {
    format!(
        "<Error><Code>{}</Code><Message>{}</Message><RequestId>{}</RequestId></Error>",
        xml_escape(code),
        xml_escape(message),
        xml_escape(request_id)
    )
    .into_bytes()
}

/// The text of the first `<tag>…</tag>`, XML entities decoded. S3 error
/// bodies are flat, and LIST entries are read one at a time, so this is all
/// the XML we need.
pub fn xml_text(body: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = body.find(&open)? + open.len();
    let len = body[start..].find(&close)?;
    Some(decode_entities(&body[start..start + len]))
}

/// Decodes XML's five named entities and numeric references (`&#34;`,
/// `&#x22;`); anything else is kept as it is.
pub(super) fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let tail = &rest[amp..];
        let decoded = tail.find(';').and_then(|semi| {
            let name = &tail[1..semi];
            let c = match name {
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                "amp" => Some('&'),
                _ => name
                    .strip_prefix("#x")
                    .map(|hex| u32::from_str_radix(hex, 16))
                    .or_else(|| name.strip_prefix('#').map(str::parse::<u32>))
                    .and_then(Result::ok)
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, semi + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

pub(super) fn snippet(body: &str) -> String {
    let flat = crate::text::join(body.split_whitespace(), " ");
    let mut cut: String = flat.chars().take(200).collect();
    if cut.len() < flat.len() {
        cut.push('…');
    }
    cut
}
