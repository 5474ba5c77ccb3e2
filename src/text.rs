//! Text helpers that keep large formatting machinery out of the component.

use crate::prelude::*;

/// `items` joined by `sep`, as `[..].join(sep)` does: one small loop in
/// place of std's specialized joins (a few KB for their instantiations).
pub fn join<S: AsRef<str>>(items: impl IntoIterator<Item = S>, sep: &str) -> String {
    let mut out = String::new();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        out.push_str(item.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_matches_std() {
        let words = ["a", "", "bc"];
        assert_eq!(join(words, ", "), words.join(", "));
        assert_eq!(join(Vec::<String>::new(), ";"), "");
        assert_eq!(join(["x".to_string()], ";"), "x");
    }
}
