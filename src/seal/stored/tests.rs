//! The stored seal key over the S3 and DynamoDB models: read once, created
//! once, the race to create it won by one key, and corrupt objects typed.

use super::*;
use crate::driver;
use crate::ready::Ready;
use crate::stores::dynamodb::model::DynamoIo;
use crate::stores::s3::model::no_such_key;
use crate::testing::model_io::ModelIo;

const OBJECT: &str = "locks/.s3-lease-seal-key";

fn key(byte: u8) -> StoredKey {
    StoredKey::from_bytes([byte; KEY_BYTES])
}

fn load(io: &mut impl crate::driver::Io, fresh: StoredKey) -> Result<StoredKey, Error> {
    driver::run(io, LoadSealKey::new(OBJECT.into(), fresh)).ready()
}

fn methods(io: &mut ModelIo) -> Vec<Method> {
    io.take_requests().into_iter().map(|r| r.method).collect()
}

#[test]
fn the_first_client_creates_the_key_and_every_later_one_reads_it() {
    let mut io = ModelIo::new(0);
    assert_eq!(load(&mut io, key(1)).unwrap(), key(1));
    assert_eq!(methods(&mut io), [Method::Get, Method::Put]);
    assert_eq!(load(&mut io, key(2)).unwrap(), key(1), "the stored one");
    assert_eq!(methods(&mut io), [Method::Get]);
    let body = String::from_utf8(io.store.objects[OBJECT].body.clone()).unwrap();
    assert!(body.contains(&"01".repeat(KEY_BYTES)), "{body}");
}

#[test]
fn a_client_that_loses_the_race_to_create_it_uses_the_winners() {
    let mut io = ModelIo::new(0);
    // Both read it missing; the other client's create lands first.
    io.scripted.push_back(no_such_key());
    io.before_send = Some(Box::new(|store| {
        store.put_object(OBJECT, &key(9).to_body());
    }));
    assert_eq!(load(&mut io, key(1)).unwrap(), key(9));
    assert_eq!(methods(&mut io), [Method::Get, Method::Put, Method::Get]);
}

#[test]
fn a_create_whose_reply_was_lost_reads_what_landed() {
    let mut io = ModelIo::new(0);
    io.lose_put_replies = 1;
    assert_eq!(load(&mut io, key(3)).unwrap(), key(3));
    assert_eq!(methods(&mut io), [Method::Get, Method::Put, Method::Get]);
    // A create that never lands is sent again, a bounded number of times.
    let mut io = ModelIo::new(0);
    let busy = || S3Response {
        status: 503,
        ..Default::default()
    };
    // Missing, then each create answered 503 and read back missing.
    for _ in 0..MAX_REREADS {
        io.scripted.push_back(no_such_key());
        io.scripted.push_back(busy());
    }
    io.scripted.push_back(no_such_key());
    let err = load(&mut io, key(4)).unwrap_err();
    assert!(
        matches!(err, Error::S3(ref e) if e.status == 503),
        "{err:?}"
    );
    assert_eq!(io.take_requests().len(), 2 * MAX_REREADS as usize + 1);
}

#[test]
fn an_unreadable_key_object_is_a_typed_error_that_never_shows_the_key() {
    let digits = "ab".repeat(KEY_BYTES);
    let bodies: Vec<Vec<u8>> = vec![
        b"not json".to_vec(),
        b"[]".to_vec(),
        b"{}".to_vec(),
        br#"{"seal_key": 7}"#.to_vec(),
        format!(r#"{{"seal_key":"{}"}}"#, &digits[2..]).into_bytes(),
        format!(r#"{{"seal_key":"+{}"}}"#, &digits[1..]).into_bytes(),
        format!(r#"{{"seal_key":"{}zz"}}"#, &digits[2..]).into_bytes(),
        format!(r#"{{"seal_key":"{digits}","pad":"{}"}}"#, "x".repeat(2_000)).into_bytes(),
    ];
    for body in bodies {
        let mut io = ModelIo::new(0);
        io.store.put_object(OBJECT, &body);
        match load(&mut io, key(1)) {
            Err(Error::CorruptLockObject { object_key, reason }) => {
                assert_eq!(object_key, OBJECT);
                assert!(!reason.contains("abab"), "{reason}");
            }
            other => panic!("{other:?} for {}", String::from_utf8_lossy(&body)),
        }
        assert_eq!(methods(&mut io), [Method::Get], "nothing written");
    }
    // Upper-case digits and other fields are the key's writer's business.
    let mut io = ModelIo::new(0);
    let body = format!(r#"{{"note":"x","seal_key":"{}"}}"#, digits.to_uppercase());
    io.store.put_object(OBJECT, body.as_bytes());
    assert_eq!(load(&mut io, key(1)).unwrap(), key(0xab));
}

#[test]
fn errors_reading_it_are_the_stores() {
    let mut io = ModelIo::new(0);
    io.scripted.push_back(S3Response {
        status: 403,
        ..Default::default()
    });
    assert!(matches!(load(&mut io, key(1)), Err(Error::AccessDenied(_))));
    let mut io = ModelIo::new(0);
    io.lose_next_reply = true;
    assert!(matches!(load(&mut io, key(1)), Err(Error::Transport(_))));
}

#[test]
fn on_dynamodb_it_is_an_item_created_once() {
    let mut io = DynamoIo::with_table("locks", 0);
    assert_eq!(load(&mut io, key(5)).unwrap(), key(5));
    assert_eq!(load(&mut io, key(6)).unwrap(), key(5));
    assert_eq!(io.store.calls, ["GetItem", "PutItem", "GetItem"]);
    let item = &io.store.items[OBJECT];
    // Never swept by the table's TTL, and no token of a lock.
    assert!(
        !item.contains_key(crate::stores::dynamodb::EXPIRY_ATTRIBUTE),
        "{item:?}"
    );
    assert!(!item.contains_key("token"), "{item:?}");
}

#[test]
fn debug_never_shows_it_nor_a_request_or_reply_that_carries_it() {
    let shown = format!("{:?}", key(0xcd));
    assert!(
        !shown.contains("cd") && shown.contains("redacted"),
        "{shown}"
    );
    let mut io = ModelIo::new(0);
    load(&mut io, key(0xcd)).unwrap();
    let reply = io.store.handle(&io.requests[0]);
    let config = crate::config::ClientConfig::validate(crate::testing::raw_config(
        crate::config::Strategy::SingleObject,
        crate::expiry::ExpiryClock::Server,
    ))
    .unwrap();
    let mut table = config.clone();
    table.store = crate::config::Store::DynamoDb(crate::testing::test_table("locks"));
    let shown = format!(
        "{:?} {reply:?} {:?} {:?}",
        io.requests,
        crate::config::ClientConfig::prepare(&config, &io.requests[1], 0),
        crate::config::ClientConfig::prepare(&table, &io.requests[1], 0),
    );
    // 0xcd as bytes (205) or as hex digits.
    assert!(!shown.contains("205") && !shown.contains("cdcd"), "{shown}");
    assert_eq!(shown.matches("<redacted: ").count(), 4, "{shown}");
}
