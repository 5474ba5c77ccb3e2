//! The search for the highest epoch (`Lister`), driven directly against
//! the S3 model. Before the fix it ended one low for some counts of dense
//! epochs (201, 801, 1401, 1801, ...): a fresh instance then read epoch
//! N-1, lost every create race on N, and `inspect` named the wrong holder.

use super::*;
use crate::driver::{self, Io};
use crate::ready::Ready;
use crate::stores::s3::model::S3Model;
use crate::strategy::epoch::tests::{granted, held, judge, store, DIR, START_MS};
use crate::strategy::epoch::{EpochInspect, EpochRecord};

/// The highest epoch a fresh lister with `hint` finds in `store`, and the
/// LISTs it took.
fn search(store: &mut S3Model, hint: u64) -> (Option<u64>, u32) {
    let mut lister = Lister::new(DIR, hint);
    let mut request = lister.first();
    loop {
        let reply = store.handle(&request);
        match lister.on_page(reply) {
            Ok(Some(next)) => request = next,
            Ok(None) => return (lister.highest(), lister.requests),
            Err(e) => panic!("hint {hint}: {e}"),
        }
    }
}

/// Epoch objects for `epochs`, without the bodies a LIST never shows.
fn with_epochs(epochs: impl IntoIterator<Item = u64>) -> S3Model {
    let mut store = S3Model::new(START_MS);
    for e in epochs {
        store.put_object(&epoch_key(DIR, e), b"");
    }
    store
}

fn assert_finds(store: &mut S3Model, want: u64, what: &str) {
    let (found, lists) = search(store, 0);
    assert_eq!(found, Some(want), "{what}: {lists} LISTs");
    assert!(lists <= MAX_LIST_REQUESTS, "{what}: {lists} LISTs");
}

/// The page ListObjectsV2 returns for `request` over epoch objects
/// `epochs` (ascending, nothing else under the prefix; `keys` their keys),
/// as the model would page them, without the XML: the dense search below
/// runs 3,000 times.
fn page_of(epochs: &[u64], keys: &[String], request: &S3Request) -> ListPage {
    let query = |name: &str| {
        request
            .query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    // Our tokens, like the model's, are the last key of the page before.
    let after = query("continuation-token")
        .or(query("start-after"))
        .map(|key| parse_epoch_key(DIR, key).expect("an epoch key"));
    let from = after.map_or(0, |a| epochs.partition_point(|&e| e <= a));
    let max_keys: usize = query("max-keys").unwrap().parse().unwrap();
    let keys = keys[from..epochs.len().min(from + max_keys)].to_vec();
    let truncated = from + keys.len() < epochs.len();
    ListPage {
        next_token: keys.last().filter(|_| truncated).cloned(),
        keys,
        truncated,
    }
}

/// `search` over `page_of(epochs)`.
fn search_pages(epochs: &[u64], keys: &[String]) -> (Option<u64>, u32) {
    let mut lister = Lister::new(DIR, 0);
    let mut request = lister.first();
    loop {
        let page = page_of(epochs, keys, &request);
        match lister.on_listed(&page, &S3Response::default()) {
            Ok(Some(next)) => request = next,
            Ok(None) => return (lister.highest(), lister.requests),
            Err(e) => panic!("1..={}: {e}", epochs.len()),
        }
    }
}

#[test]
fn a_fresh_lister_finds_exactly_n_of_dense_epochs_1_to_n_for_every_n_to_3000() {
    let epochs: Vec<u64> = (1..=3_000).collect();
    let keys: Vec<String> = epochs.iter().map(|&e| epoch_key(DIR, e)).collect();
    assert_eq!(search_pages(&[], &[]).0, None);
    for n in 1..=epochs.len() {
        let (found, lists) = search_pages(&epochs[..n], &keys[..n]);
        assert_eq!(found, Some(n as u64), "1..={n}: {lists} LISTs");
        assert!(lists <= 40, "1..={n}: {lists} LISTs");
    }
    // The counts it once missed, through the model's XML and its paging.
    for n in [201, 202, 401, 801, 1_401, 1_801] {
        let mut store = with_epochs(1..=n);
        assert_finds(&mut store, n, &format!("model, 1..={n}"));
    }
}

#[test]
fn sparse_layouts_are_found_too() {
    let layouts: Vec<(&str, Vec<u64>)> = vec![
        ("a gap", (1..=150).chain(5_000..=5_100).collect()),
        ("a gap of one", (1..=200).chain([202]).collect()),
        ("every other", (1..=1_000).map(|e| e * 2).collect()),
        ("one huge epoch", vec![u64::MAX]),
        ("the top two", vec![u64::MAX - 1, u64::MAX]),
        ("old and huge", (1..=300).chain([1 << 40]).collect()),
        (
            "starting high",
            (1_000_000_000_000..1_000_000_000_450).collect(),
        ),
        ("one", vec![1]),
        ("page plus one, high", (1 << 50..(1 << 50) + 201).collect()),
    ];
    for (what, epochs) in layouts {
        let want = *epochs.iter().max().unwrap();
        let mut store = with_epochs(epochs.iter().copied());
        assert_finds(&mut store, want, what);
        // Foreign keys among them change nothing.
        for e in epochs.iter().step_by(7) {
            store.put_object(&format!("{}.bak", epoch_key(DIR, *e)), b"");
        }
        assert_finds(&mut store, want, &format!("{what}, with foreign keys"));
    }
}

#[test]
fn hints_below_at_and_above_the_highest_find_it() {
    let mut store = with_epochs(1..=1_401);
    for hint in [1, 2, 3, 200, 1_398, 1_399, 1_400, 1_401, 1_402, 5_000] {
        assert_eq!(search(&mut store, hint).0, Some(1_401), "hint {hint}");
    }
}

#[test]
fn short_and_empty_pages_change_nothing_in_the_search() {
    for page_keys in [1, 2, 7, 199] {
        let mut store = S3Model::new(START_MS);
        store.list_page_keys = Some(page_keys);
        for n in 1..=900u64 {
            store.put_object(&epoch_key(DIR, n), b"");
            // Every count for the smallest pages is slow: a sample of them,
            // and every count near a page boundary.
            if n % 37 != 0 && n % 200 > 2 && n > 30 {
                continue;
            }
            store.empty_list_pages = u32::from(n % 3 == 0) * 2;
            assert_finds(&mut store, n, &format!("1..={n}, {page_keys} a page"));
        }
    }
    for page_keys in [1, 3] {
        let mut store = with_epochs((1..=150).chain(5_000..=5_100).chain([1 << 40]));
        store.list_page_keys = Some(page_keys);
        store.empty_list_pages = 5;
        assert_finds(&mut store, 1 << 40, &format!("sparse, {page_keys} a page"));
    }
}

#[test]
fn handovers_go_on_with_one_key_a_page_and_empty_pages() {
    let mut s = store();
    s.store.list_page_keys = Some(1);
    for round in 1..=40u64 {
        s.store.empty_list_pages = u32::from(round % 3 == 0);
        s.advance(13_000);
        assert_eq!(granted(&mut s, &format!("h{round}")).token, round);
        assert!(held(&mut s, "other").is_some());
    }
}

#[test]
fn a_fresh_instance_takes_the_key_after_201_expired_epochs() {
    let mut s = store();
    for e in 1..=201u64 {
        let body = EpochRecord {
            expired: true,
            validity_ms: 1_000,
            token: e,
            holder_id: format!("old{e}"),
            acquired_at_ms: START_MS,
            metadata: String::new(),
            write_id: String::new(),
        };
        s.store.put_object(&epoch_key(DIR, e), &body.to_json());
    }
    let state = driver::run(
        &mut s,
        EpochInspect::new("k".into(), DIR.into(), judge(), 0),
    )
    .ready()
    .unwrap()
    .unwrap();
    assert_eq!(state.record.holder_id, "old201");
    assert_eq!(granted(&mut s, "fresh").token, 202);
}

mod short_pages;
