//! Writes the lock and epoch records' JSON.
//!
//! By hand rather than through `serde_json::Value`: serializing a `Value`
//! links serde_json's float printer (zmij, its tables) and `Value`'s
//! serializer, 5.9 KB of component for two records whose only float is a
//! whole number of milliseconds (docs/size.md). serde_json still escapes
//! the strings. Callers write fields in sorted order, as `Value`'s map did,
//! so a record's bytes (and so its ETag) are what earlier versions wrote;
//! the tests compare the two.

use crate::prelude::*;

/// A JSON object, written field by field.
#[derive(Default)]
pub struct JsonObject {
    out: Vec<u8>,
}

impl JsonObject {
    fn name(&mut self, name: &str) {
        self.out.push(if self.out.is_empty() { b'{' } else { b',' });
        self.string(name);
        self.out.push(b':');
    }

    fn string(&mut self, s: &str) {
        // Serializing a `str` cannot fail.
        if let Ok(quoted) = serde_json::to_string(s) {
            self.out.extend_from_slice(quoted.as_bytes());
        }
    }

    pub fn str(&mut self, name: &str, value: &str) {
        self.name(name);
        self.string(value);
    }

    pub fn u64(&mut self, name: &str, value: u64) {
        self.name(name);
        self.out.extend_from_slice(value.to_string().as_bytes());
    }

    pub fn bool(&mut self, name: &str, value: bool) {
        self.name(name);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// A value already written as JSON (an array of objects this module
    /// wrote).
    pub fn raw(&mut self, name: &str, json: &[u8]) {
        self.name(name);
        self.out.extend_from_slice(json);
    }

    /// Whole milliseconds as seconds with a fraction, as serde_json prints
    /// `ms as f64 / 1000.0`: 1740151473206 -> `1740151473.206`, 0 -> `0.0`.
    /// The same text, because below 2^53 ms the decimal has at most 16
    /// digits and 3 decimals, so it is the shortest that reads back as that
    /// float (and the times written stay below 1e14 ms, where serde_json
    /// would switch to an exponent).
    pub fn seconds(&mut self, name: &str, ms: u64) {
        self.name(name);
        let mut text = format!("{}.{:03}", ms / 1000, ms % 1000);
        while text.ends_with('0') && !text.ends_with(".0") {
            text.pop();
        }
        self.out.extend_from_slice(text.as_bytes());
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.out.is_empty() {
            self.out.push(b'{');
        }
        self.out.push(b'}');
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock_object::MAX_TIME_MS;

    fn seconds_text(ms: u64) -> String {
        let mut o = JsonObject::default();
        o.seconds("t", ms);
        let body = String::from_utf8(o.finish()).unwrap();
        body["{\"t\":".len()..body.len() - 1].to_string()
    }

    #[test]
    fn seconds_are_what_serde_json_prints_for_the_float() {
        let mut cases = vec![
            0,
            1,
            10,
            100,
            999,
            1000,
            1001,
            1010,
            1100,
            60_000,
            1_740_151_473_206,
            1_740_151_473_200,
            1_740_151_473_000,
            MAX_TIME_MS - 1,
        ];
        // Pseudo-random milliseconds over the whole range written.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            cases.push((x >> 11) % MAX_TIME_MS);
            cases.push((x >> 11) % 10_000_000);
        }
        for ms in cases {
            let want = serde_json::to_string(&(ms as f64 / 1000.0)).unwrap();
            assert_eq!(seconds_text(ms), want, "{ms} ms");
        }
    }

    #[test]
    fn objects_are_what_a_serde_json_map_writes() {
        let tricky = "quote \" backslash \\ newline \n tab \t nul \u{0} é 🦀";
        let mut o = JsonObject::default();
        o.seconds("a", 1_740_151_473_206);
        o.bool("b", true);
        o.bool("c", false);
        o.str("d", tricky);
        o.u64("e", u64::MAX);
        o.u64("f", 0);
        let want = serde_json::json!({
            "a": 1_740_151_473.206, "b": true, "c": false, "d": tricky,
            "e": u64::MAX, "f": 0,
        });
        assert_eq!(o.finish(), want.to_string().into_bytes());
        assert_eq!(JsonObject::default().finish(), b"{}");
    }
}
