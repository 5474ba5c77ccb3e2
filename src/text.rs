//! Text helpers that keep large formatting machinery out of the component.
//!
//! `format!("{}", f64)` links core's float printer (Grisu with a Dragon4
//! fallback and its big-number tables, about 22 KB of the component).
//! serde_json already links a shortest round-trip float printer (zmij) to
//! write JSON; [`f64_display`] reuses its digits and lays them out the way
//! `Display` does. Both printers emit the shortest digits that read back as
//! the same `f64`, and among those the closest; they differ only on an exact
//! tie between two closest candidates (zmij picks the even digit, std rounds
//! up), which [`exact_digits`] detects. The tests compare with std.

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

/// Exactly what `format!("{x}")` gives for a finite `x`.
pub fn f64_display(x: f64) -> String {
    let Some(number) = serde_json::Number::from_f64(x) else {
        // Not finite: never the case for a number serde_json parsed.
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    };
    // zmij writes `123.45`, `1e300`, `1.5e-7`, `-3.0`: digits with an
    // optional point, then an optional exponent.
    let shortest = number.to_string();
    let (negative, unsigned) = match shortest.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, shortest.as_str()),
    };
    let (mantissa, exponent) = match unsigned.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The value is 0.DIGITS × 10^point.
    let mut digits: String = whole.chars().chain(fraction.chars()).collect();
    let mut point = whole.len() as i32 + exponent;
    let leading = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..leading);
    point -= leading as i32;
    digits.truncate(digits.trim_end_matches('0').len());
    if let Some((exact, exact_point)) = exact_digits(x.abs()) {
        let tie = exact.len() == digits.len() + 1
            && exact.ends_with('5')
            && exact.starts_with(digits.as_str())
            && exact_point == point;
        if tie {
            // Round half up, as std does.
            let mut bytes = digits.into_bytes();
            while bytes.last() == Some(&b'9') {
                bytes.pop();
            }
            match bytes.last_mut() {
                Some(last) => *last += 1,
                None => {
                    bytes.push(b'1');
                    point += 1;
                }
            }
            digits = String::from_utf8(bytes).unwrap_or_default();
        }
    }

    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if digits.is_empty() {
        out.push('0');
    } else if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else if (point as usize) < digits.len() {
        let (int, frac) = digits.split_at(point as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', point as usize - digits.len()));
    }
    out
}

/// The exact decimal value of a finite, non-negative `x`, as significant
/// digits `D` and a point `p` (the value is 0.D × 10^p), when it has few
/// enough digits for a tie between 17-digit candidates to be possible;
/// `None` otherwise (and for zero).
fn exact_digits(x: f64) -> Option<(String, i32)> {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mut mantissa, mut exponent) = match biased {
        0 => (fraction, -1074),
        _ => (fraction | (1 << 52), biased - 1075),
    };
    if mantissa == 0 {
        return None;
    }
    while mantissa & 1 == 0 {
        mantissa >>= 1;
        exponent += 1;
    }
    // An odd mantissa times 2^-k has at least 0.69·k significant digits, and
    // times 2^k at least 0.3·k minus the (at most 22) factors of 10 it can
    // hold: past these bounds there are more than 18 digits, so no tie.
    if !(-30..=140).contains(&exponent) {
        return None;
    }
    // Little-endian decimal digits of mantissa × 2^exponent, or of
    // mantissa × 5^-exponent (the value times 10^-exponent).
    let mut number: Vec<u8> = Vec::new();
    while mantissa > 0 {
        number.push((mantissa % 10) as u8);
        mantissa /= 10;
    }
    let factor = if exponent >= 0 { 2 } else { 5 };
    for _ in 0..exponent.unsigned_abs() {
        let mut carry = 0;
        for digit in number.iter_mut() {
            let product = *digit * factor + carry;
            *digit = product % 10;
            carry = product / 10;
        }
        if carry > 0 {
            number.push(carry);
        }
    }
    let point = number.len() as i32 + exponent.min(0);
    let digits: String = number.iter().rev().map(|d| char::from(b'0' + d)).collect();
    Some((digits.trim_end_matches('0').to_string(), point))
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

    fn same_as_std(x: f64) {
        assert_eq!(f64_display(x), format!("{x}"), "bits {:#x}", x.to_bits());
    }

    #[test]
    fn matches_std_display_on_chosen_values() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.5,
            0.1,
            0.3,
            -1.5e-7,
            1e-7,
            1e300,
            -1e300,
            1e11,
            99_999_999_999.999_5,
            123_456_789_012.5,
            1_740_151_473.206,
            1_394_865_425_023_536.2, // a tie: zmij writes .2, std .3
            9_007_199_254_740_993.0,
            1.8446744073709552e19,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            -5e-324,
        ] {
            same_as_std(x);
        }
        for e in -1074..=1023 {
            same_as_std(2f64.powi(e));
            same_as_std(-(2f64.powi(e)) * 3.0);
        }
        for e in -320..=308 {
            same_as_std(format!("1e{e}").parse().unwrap());
            same_as_std(format!("-9.87654321e{e}").parse().unwrap());
        }
    }

    #[test]
    fn matches_std_display_on_random_bit_patterns() {
        // xorshift64*: deterministic, no dependency.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..500_000 {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let x = f64::from_bits(state.wrapping_mul(0x2545_f491_4f6c_dd1d));
            if x.is_finite() {
                same_as_std(x);
            }
        }
    }
}
