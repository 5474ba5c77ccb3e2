//! Every relative link in `README.md` and `docs/` resolves: the file or
//! directory it names exists, and an anchor into a markdown file names one
//! of its headings, as GitHub renders them. Links inside fenced code blocks
//! and inline code spans are not links and are skipped; `http://`,
//! `https://` and `mailto:` targets are not checked (no network here).
//! Also keeps the README a front door: at most 300 lines.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 300;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[path = "support/documents.rs"]
mod documents;

/// Is this line a code fence (three or more backticks or tildes)? Returns
/// its character and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let trimmed = line.trim_start();
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let c = trimmed.chars().next()?;
    if c != '`' && c != '~' {
        return None;
    }
    let n = trimmed.chars().take_while(|&x| x == c).count();
    (n >= 3).then_some((c, n))
}

/// The text outside fenced code blocks, line by line; lines inside a fence
/// (and the fences themselves) become empty, so line numbers stay.
fn outside_fences(text: &str) -> Vec<String> {
    let mut open: Option<(char, usize)> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        match (open, fence(line)) {
            (None, Some(f)) => {
                open = Some(f);
                lines.push(String::new());
            }
            (Some((c, n)), Some((c2, n2)))
                if c == c2 && n2 >= n && {
                    let rest = line.trim_start().trim_start_matches(c);
                    rest.trim().is_empty()
                } =>
            {
                open = None;
                lines.push(String::new());
            }
            (Some(_), _) => lines.push(String::new()),
            (None, None) => lines.push(line.to_string()),
        }
    }
    lines
}

/// Blanks out inline code spans (a run of N backticks up to the next run of
/// exactly N, within one paragraph), keeping newlines so that line numbers
/// stay. A run with no closing run is literal text.
fn strip_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let run_at = |i: usize| chars[i..].iter().take_while(|&&c| c == '`').count();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '\n' && chars.get(j + 1) == Some(&'\n') {
                break; // a blank line ends the paragraph
            }
            if chars[j] == '`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                for c in &mut out[i..j + n] {
                    if *c != '\n' {
                        *c = ' ';
                    }
                }
                i = j + n;
            }
            None => i += n,
        }
    }
    out.into_iter().collect()
}

/// A link found in a document: its 1-based line and its target as written.
struct Link {
    line: usize,
    target: String,
}

/// Inline links and images `[text](target "title")` and reference
/// definitions `[label]: target`, outside code.
fn links(text: &str) -> Vec<Link> {
    let prose = strip_code_spans(&outside_fences(text).join("\n"));
    let chars: Vec<char> = prose.chars().collect();
    let mut found = Vec::new();
    let line_of = |i: usize| chars[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let mut i = 0;
    while i + 1 < chars.len() {
        if chars[i] == ']' && chars[i + 1] == '(' {
            let start = i + 2;
            let mut depth = 1;
            let mut j = start;
            while j < chars.len() && chars[j] != '\n' {
                match chars[j] {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j < chars.len() && chars[j] == ')' {
                let inner: String = chars[start..j].iter().collect();
                let inner = inner.trim();
                let target = if let Some(rest) = inner.strip_prefix('<') {
                    rest.split('>').next().unwrap_or("").to_string()
                } else {
                    inner.split_whitespace().next().unwrap_or("").to_string()
                };
                found.push(Link {
                    line: line_of(i),
                    target,
                });
                i = j;
            }
        }
        i += 1;
    }
    for (n, line) in prose.lines().enumerate() {
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() > 3 || !trimmed.starts_with('[') {
            continue;
        }
        if let Some(close) = trimmed.find("]:") {
            let target = trimmed[close + 2..].split_whitespace().next().unwrap_or("");
            if !target.is_empty() && !trimmed[1..close].contains('[') {
                found.push(Link {
                    line: n + 1,
                    target: target.trim_matches(|c| c == '<' || c == '>').to_string(),
                });
            }
        }
    }
    found
}

/// GitHub's anchor for a heading's text: inline markup reduced to its text,
/// lowercased, every character but letters, digits, spaces, hyphens and
/// underscores removed, spaces turned into hyphens.
fn slug(heading: &str) -> String {
    // `[text](url)` reads as `text`.
    let mut plain = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        plain.push_str(&rest[..open]);
        plain.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    plain.push_str(rest);
    plain
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor the headings of a markdown text get, duplicates numbered
/// `-1`, `-2`, … as GitHub numbers them.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for line in outside_fences(text) {
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let level = trimmed.chars().take_while(|&c| c == '#').count();
        if level == 0 || level > 6 {
            continue;
        }
        let after = &trimmed[level..];
        if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
            continue;
        }
        // An optional closing sequence of `#`s goes.
        let mut body = after.trim();
        let without = body.trim_end_matches('#');
        if without.is_empty() || without.ends_with(' ') {
            body = without.trim_end();
        }
        let base = slug(body);
        let anchor = match seen.get(&base) {
            None => base.clone(),
            Some(n) => format!("{base}-{n}"),
        };
        *seen.entry(base).or_insert(0) += 1;
        out.push(anchor);
    }
    out
}

/// `%20` and friends, as a browser decodes a link's path.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_external(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// What is wrong with one relative link of `doc`, if anything.
fn check(doc: &Path, target: &str, cache: &mut HashMap<PathBuf, Vec<String>>) -> Option<String> {
    if target.is_empty() {
        return Some("empty target".into());
    }
    let (path_part, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let path_part = path_part.split('?').next().unwrap_or("");
    let file = if path_part.is_empty() {
        doc.to_path_buf()
    } else if path_part.starts_with('/') {
        return Some("an absolute path: write it relative to this file".into());
    } else {
        doc.parent()
            .expect("a document has a directory")
            .join(percent_decode(path_part))
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let anchor = anchor?;
    if file.extension().is_none_or(|e| e != "md") || file.is_dir() {
        return None;
    }
    let known = cache.entry(file.clone()).or_insert_with(|| {
        let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        anchors(&text)
    });
    let anchor = percent_decode(anchor).to_lowercase();
    if known.contains(&anchor) {
        None
    } else {
        Some(format!(
            "no heading in {} has the anchor #{anchor}",
            file.display()
        ))
    }
}

#[test]
fn every_relative_link_resolves() {
    let root = root();
    let mut cache = HashMap::new();
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents::documents(&root) {
        let text = fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for link in links(&text) {
            if is_external(&link.target) {
                continue;
            }
            checked += 1;
            if let Some(why) = check(&doc, &link.target, &mut cache) {
                broken.push(format!("{name}:{}: ({}): {why}", link.line, link.target));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "{} broken link(s) of {checked} relative ones:\n{}",
        broken.len(),
        broken.join("\n")
    );
    assert!(
        checked > 0,
        "no relative links found: is the scanner broken?"
    );
}

#[test]
fn readme_is_a_front_door() {
    let text = fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move the rest to docs/"
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("The API (`wit/lease.wit`)"), "the-api-witleasewit");
    assert_eq!(slug("single-object (default)"), "single-object-default");
    assert_eq!(slug("Using it from Node.js"), "using-it-from-nodejs");
    assert_eq!(
        slug("The command line: `s3-lease`"),
        "the-command-line-s3-lease"
    );
    assert_eq!(slug("See [the guide](guide.md) now"), "see-the-guide-now");
    assert_eq!(
        anchors("# A\n## A\n```\n# not a heading\n```\n### A ###\n#nope\n"),
        ["a", "a-1", "a-2"]
    );
}

#[test]
fn code_is_not_scanned_for_links() {
    let text = "[a](a.md) `[b](b.md)`\n```\n[c](c.md)\n```\n``x [d](d.md)\ny``\n![e](e.png \"t\")\n\n[f]: f.md\n";
    let targets: Vec<String> = links(text).into_iter().map(|l| l.target).collect();
    assert_eq!(targets, ["a.md", "e.png", "f.md"]);
    let lines: Vec<usize> = links(text).into_iter().map(|l| l.line).collect();
    assert_eq!(lines, [1, 7, 9]);
}
