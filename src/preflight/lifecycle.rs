//! The bucket's lifecycle rules, read before any probe writes: S3's
//! GetBucketLifecycleConfiguration (`GET /?lifecycle`), or what the store
//! answers it with, read as the store's profile says (`LifecycleRules`). A rule that deletes objects under the
//! client's key prefix deletes what s3-lease keeps there: idle lock
//! objects, the seal key, the keys' token floors. Each such rule is named
//! in a note of the report (no capability: a lock still works, and the
//! floors carry a deleted lock object's tokens on, unless the rule deletes
//! them too). A store whose rules its credentials cannot read gives a note
//! of its own; a table's TTL is the table checks'.

use crate::prelude::*;

use crate::lease::SEAL_KEY_OBJECT_NAME;
use crate::stores::s3::{Method, S3Request, S3Response};
use crate::stores::{LifecycleRule as Rule, LifecycleRules};
use crate::strategy::floor::FLOOR_DIR;

/// A lifecycle configuration is small; a reply past this is not read.
const MAX_REPLY_BYTES: usize = 256 * 1024;

const KEEP_OUT: &str = "keep the lock objects, the seal key, the token floors and the fenced \
                        objects out of lifecycle rules (see Lifecycle rules in docs/stores.md)";

/// GetBucketLifecycleConfiguration (each store's translation sends its own).
pub(super) fn request() -> S3Request {
    let mut req = S3Request::new(Method::Get, "", MAX_REPLY_BYTES);
    req.query = vec![("lifecycle".into(), String::new())];
    req
}

/// The notes for what the lifecycle read found, on a client whose key
/// prefix is `key_prefix`.
pub(super) fn notes(
    reply: Option<&S3Response>,
    failure: Option<&str>,
    key_prefix: &str,
    read_as: LifecycleRules,
) -> Vec<String> {
    let Some(r) = reply else {
        let why = failure.unwrap_or("no reply");
        return vec![unreadable(&format!("no reply: {why}"))];
    };
    let rules = match r.status {
        200 if r.body_too_large.is_some() => {
            return vec![unreadable("its reply was too large to read")]
        }
        200 => match read_as.read(&r.body) {
            Some(rules) => rules,
            None => return Vec::new(),
        },
        // S3's answer for a bucket without rules.
        404 if r.s3_error().code == "NoSuchLifecycleConfiguration" => Ok(Vec::new()),
        _ => Err(format!("HTTP {}", r.s3_error())),
    };
    match rules {
        Ok(rules) => rules
            .iter()
            .filter_map(|rule| note_for(rule, key_prefix))
            .collect(),
        Err(why) => vec![unreadable(&why)],
    }
}

/// The note on a store whose lifecycle rules its credentials cannot read:
/// the store's `note`, then the key prefix and what to keep out of them.
pub(super) fn unreadable_note(note: &str, key_prefix: &str) -> String {
    format!("lifecycle: {note} {key_prefix:?}; {KEEP_OUT}")
}

fn unreadable(why: &str) -> String {
    format!(
        "lifecycle: could not read the bucket's lifecycle rules ({why}): a rule that deletes \
         objects under this client's key prefix cannot be ruled out; {KEEP_OUT}"
    )
}

/// Whether `rule` may match an object whose name is `name` exactly
/// (`whole`) or any name starting with `name`.
fn matches(rule: &Rule, name: &str, whole: bool) -> bool {
    let prefixed = rule.prefixes.iter().any(|p| {
        if whole {
            name.starts_with(p.as_str())
        } else {
            name.starts_with(p.as_str()) || p.starts_with(name)
        }
    });
    let suffixed = !whole
        || rule.suffixes.is_empty()
        || rule.suffixes.iter().any(|s| name.ends_with(s.as_str()));
    prefixed && suffixed
}

fn note_for(rule: &Rule, key_prefix: &str) -> Option<String> {
    let seal = format!("{key_prefix}{SEAL_KEY_OBJECT_NAME}");
    let floors = format!("{key_prefix}{FLOOR_DIR}");
    let hits_seal = matches(rule, &seal, true);
    let hits_floors = matches(rule, &floors, false);
    // Lock objects: any name under the prefix but s3-lease's own.
    let ours = format!("{key_prefix}.s3-lease-");
    let hits_locks = matches(rule, key_prefix, false)
        && !rule.prefixes.iter().all(|p| p.starts_with(ours.as_str()));
    if !(hits_seal || hits_floors || hits_locks) {
        return None;
    }
    let mut what = Vec::new();
    if hits_locks {
        what.push("idle lock objects");
    }
    if hits_seal {
        what.push("the seal key");
    }
    if hits_floors {
        what.push("the keys' token floors");
    }
    let every = matches!(rule.prefixes.as_slice(), [p] if p.is_empty());
    let mut filter = Vec::new();
    if !every {
        filter.push(format!("prefix {}", rule.prefixes.join(", ")));
    }
    if !rule.suffixes.is_empty() {
        filter.push(format!("suffix {}", rule.suffixes.join(", ")));
    }
    let filter = match filter.is_empty() {
        true => "every object".to_string(),
        false => filter.join(", "),
    };
    let mut harms = Vec::new();
    if hits_seal {
        harms.push("a deleted seal key makes every lease sealed with it refused");
    }
    if hits_floors {
        harms.push(
            "a key whose lock object and floor are both deleted starts its tokens again at 1, \
             so every object fenced by its old tokens refuses its new holders",
        );
    }
    if harms.is_empty() {
        harms.push("their keys' tokens go on above their floors, which this rule keeps");
    }
    let harm = harms.join("; ");
    Some(format!(
        "lifecycle: the bucket's rule {:?} ({}, {filter}) deletes {} under this client's key \
         prefix {key_prefix:?}: {harm}; {KEEP_OUT}",
        rule.name,
        rule.action,
        what.join(", "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3(xml: &str) -> Vec<String> {
        let r = crate::testing::response(200, &[], xml);
        notes(Some(&r), None, "locks/", LifecycleRules::Xml)
    }

    fn config(rules: &str) -> String {
        format!("<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</LifecycleConfiguration>")
    }

    #[test]
    fn an_s3_rule_over_the_key_prefix_is_named_and_others_are_not() {
        let expire = |id: &str, filter: &str| {
            format!("<Rule><ID>{id}</ID><Filter>{filter}</Filter><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>")
        };
        let all = s3(&config(&expire("everything", "")));
        assert_eq!(all.len(), 1, "{all:?}");
        assert!(
            all[0].contains("\"everything\" (expiration after 30 days, every object)"),
            "{all:?}"
        );
        assert!(
            all[0].contains("idle lock objects, the seal key, the keys' token floors"),
            "{all:?}"
        );
        let wider = s3(&config(&expire("wider", "<Prefix>lo</Prefix>")));
        assert!(wider[0].contains("prefix lo"), "{wider:?}");
        // Narrower: only lock objects under it; their floors stay.
        let narrower = s3(&config(&expire("jobs", "<Prefix>locks/jobs/</Prefix>")));
        assert!(
            narrower[0].contains("deletes idle lock objects under"),
            "{narrower:?}"
        );
        assert!(
            narrower[0].contains("go on above their floors"),
            "{narrower:?}"
        );
        for harmless in [
            expire("elsewhere", "<Prefix>logs/</Prefix>"),
            expire("tagged", "<Tag><Key>k</Key><Value>v</Value></Tag>"),
            expire("scratch", "<Prefix>locks/.s3-lease-preflight/</Prefix>"),
            "<Rule><ID>off</ID><Filter></Filter><Status>Disabled</Status><Expiration><Days>1</Days></Expiration></Rule>".into(),
            "<Rule><ID>old versions</ID><Filter></Filter><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration></Rule>".into(),
            "<Rule><ID>uploads</ID><Filter></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>".into(),
        ] {
            assert_eq!(s3(&config(&harmless)), Vec::<String>::new(), "{harmless}");
        }
        let archived = s3(&config("<Rule><ID>cold</ID><Prefix></Prefix><Status>Enabled</Status><Transition><Days>90</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>"));
        assert!(
            archived[0].contains("transition to GLACIER"),
            "{archived:?}"
        );
        // Two rules, two notes.
        let both = s3(&config(
            &(expire("a", "") + &expire("b", "<Prefix>locks/</Prefix>")),
        ));
        assert_eq!(both.len(), 2);
    }

    #[test]
    fn no_configuration_is_no_note_and_an_unreadable_one_says_so() {
        let none = crate::testing::response(
            404,
            &[],
            "<Error><Code>NoSuchLifecycleConfiguration</Code></Error>",
        );
        assert!(notes(Some(&none), None, "locks/", LifecycleRules::Xml).is_empty());
        let denied = crate::testing::response(403, &[], "<Error><Code>AccessDenied</Code></Error>");
        let n = notes(Some(&denied), None, "locks/", LifecycleRules::Xml);
        assert!(
            n[0].contains("could not read") && n[0].contains("403 AccessDenied"),
            "{n:?}"
        );
        let n = notes(
            None,
            Some("connection reset"),
            "locks/",
            LifecycleRules::Xml,
        );
        assert!(n[0].contains("connection reset"), "{n:?}");
        let n = notes(
            Some(&crate::testing::response(200, &[], "<html/>")),
            None,
            "locks/",
            LifecycleRules::Xml,
        );
        assert!(n[0].contains("no LifecycleConfiguration"), "{n:?}");
    }

    #[test]
    fn a_bucket_json_delete_rule_over_the_key_prefix_is_named() {
        let json = |json: &str| {
            let r = crate::testing::response(200, &[], json);
            notes(Some(&r), None, "locks/", LifecycleRules::BucketJson)
        };
        assert!(json(r#"{"name":"b"}"#).is_empty());
        let n =
            json(r#"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"age":7}}]}}"#);
        assert!(
            n[0].contains("\"rule 1\" (delete at age 7 days, every object)"),
            "{n:?}"
        );
        let n = json(
            r#"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"age":7,"matchesPrefix":["tmp/","locks/"]}}]}}"#,
        );
        assert!(n[0].contains("prefix tmp/, locks/"), "{n:?}");
        for harmless in [
            r#"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"matchesPrefix":["tmp/"]}}]}}"#,
            r#"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"isLive":false}}]}}"#,
            r#"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"numNewerVersions":3}}]}}"#,
            r#"{"lifecycle":{"rule":[{"action":{"type":"SetStorageClass","storageClass":"ARCHIVE"},"condition":{"age":30}}]}}"#,
        ] {
            assert!(json(harmless).is_empty(), "{harmless}");
        }
        // A suffix rule: lock objects may end with it; the seal key does not.
        let n = json(
            r#"{"lifecycle":{"rule":[{"action":{"type":"Delete"},"condition":{"matchesSuffix":[".json"]}}]}}"#,
        );
        assert!(n[0].contains("(delete, suffix .json)"), "{n:?}");
        assert!(
            n[0].contains("deletes idle lock objects, the keys' token floors under"),
            "{n:?}"
        );
    }
}
