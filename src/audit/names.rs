//! Where a key's records live: `<key-prefix>.s3-lease-audit/<key>/`, one
//! object (or the store's item) per record, named by the token, 20
//! digits, so names sort as tokens do:
//!
//! - `<token>.grant.json`: the grant (or its back-fill);
//! - `<token>.release.json`: its release;
//! - `<token>.collision.json`: a second grant of the same token, written
//!   by the grantee that found the first one's record;
//! - `pruned.json`: tokens below which records were pruned.
//!
//! No lock key, epoch object or fenced object may have a name with
//! `.s3-lease-audit/` in it (`lease::object_key` refuses them), so nothing
//! else is ever written there.

use crate::prelude::*;

use crate::error::Error;
use crate::limits::MAX_OBJECT_KEY_BYTES;

/// The folder of every key's log, under the key prefix.
pub use crate::lease::AUDIT_DIR_NAME;

/// What a record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Kind {
    #[default]
    Grant,
    Release,
    Collision,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Grant, Kind::Release, Kind::Collision];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Grant => "grant",
            Kind::Release => "release",
            Kind::Collision => "collision",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// The folder of `key`'s records.
pub fn log_dir(prefix: &str, key: &str) -> String {
    format!("{prefix}{AUDIT_DIR_NAME}{key}/")
}

pub fn record_key(dir: &str, token: u64, kind: Kind) -> String {
    format!("{dir}{token:020}.{}.json", kind.name())
}

/// The prune marker of a log.
pub fn marker_key(dir: &str) -> String {
    format!("{dir}pruned.json")
}

/// The token and kind of a record named `name` in `dir`; `None` for any
/// other name (another key's folder below this one, the marker).
pub fn parse_record_key(dir: &str, name: &str) -> Option<(u64, Kind)> {
    let rest = name.strip_prefix(dir)?;
    let (digits, rest) = rest.split_at_checked(20)?;
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kind = rest.strip_prefix('.')?.strip_suffix(".json")?;
    Some((digits.parse().ok()?, Kind::from_name(kind)?))
}

/// The longest record name of a key (`collision`), refused when the store
/// would refuse it, before the grant that would need it.
pub fn check_key(prefix: &str, key: &str) -> Result<(), Error> {
    let longest = record_key(&log_dir(prefix, key), u64::MAX, Kind::Collision);
    if longest.len() > MAX_OBJECT_KEY_BYTES {
        return Err(Error::InvalidArgument(format!(
            "key {key:?} is too long for the grant log: its records' names would be {} bytes \
             with the prefix; at most {MAX_OBJECT_KEY_BYTES} are allowed",
            longest.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_as_tokens_and_read_back() {
        let dir = log_dir("locks/", "nightly");
        assert_eq!(dir, "locks/.s3-lease-audit/nightly/");
        let a = record_key(&dir, 9, Kind::Grant);
        let b = record_key(&dir, 10, Kind::Grant);
        assert_eq!(
            a,
            "locks/.s3-lease-audit/nightly/00000000000000000009.grant.json"
        );
        assert!(a < b);
        for kind in Kind::ALL {
            let name = record_key(&dir, u64::MAX, kind);
            assert_eq!(parse_record_key(&dir, &name), Some((u64::MAX, kind)));
        }
        // Another key's folder below this one, the marker, anything else.
        for other in [
            format!("{dir}sub/00000000000000000001.grant.json"),
            marker_key(&dir),
            format!("{dir}0000000000000000000x.grant.json"),
            format!("{dir}00000000000000000001.grant.json.bak"),
            format!("{dir}00000000000000000001.renew.json"),
            format!("{dir}1.grant.json"),
        ] {
            assert_eq!(parse_record_key(&dir, &other), None, "{other}");
        }
    }

    #[test]
    fn a_key_whose_records_the_store_would_refuse_is_refused() {
        check_key("p/", &"k".repeat(900)).unwrap();
        assert!(matches!(
            check_key("p/", &"k".repeat(1000)),
            Err(Error::InvalidArgument(_))
        ));
    }
}
