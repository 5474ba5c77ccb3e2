//! S3 may answer a LIST with fewer keys than asked, or none, and still say
//! `IsTruncated` with a `NextContinuationToken`. Every LIST of the strategy
//! reads on with the token; a truncated page it cannot continue is an
//! error. Before: an empty truncated page read as "nothing higher" (a stale
//! epoch granted, a superseded one renewed) or "no epochs at all".

use super::*;
use crate::lease::Lease;
use crate::ready::Ready;
use crate::strategy::epoch::tests::{before_put, grant, seal, wid};
use crate::strategy::epoch::{EpochRewrite, EpochTryAcquire};
use crate::testing::intercept::Intercept;
use crate::testing::model_io::ModelIo;

fn renew(s: &mut impl Io, lease: &Lease) -> Result<Lease, Error> {
    driver::run(
        s,
        EpochRewrite::renew(lease.clone(), DIR.into(), seal(), wid()),
    )
    .ready()
}

/// Others create epochs 2 and 3 and cleanup deletes 2 just before our
/// create of 2, which therefore lands on a stale epoch; then the verifying
/// LIST's first page comes back empty but truncated, 3 on the next page.
fn stale_create_then_empty_page(store: &mut S3Model) {
    let body = store.objects[&epoch_key(DIR, 1)].body.clone();
    for e in [2, 3] {
        store.put_object(&epoch_key(DIR, e), &body);
    }
    store.objects.remove(&epoch_key(DIR, 2));
    store.empty_list_pages = 1;
}

fn released_epoch_1() -> ModelIo {
    let mut s = store();
    let a = granted(&mut s, "a");
    driver::run(&mut s, EpochRewrite::release(a, DIR.into(), seal(), wid()))
        .ready()
        .unwrap();
    s
}

/// An `Io` whose LIST replies lose their `NextContinuationToken`.
fn without_tokens<I: Io>(io: &mut I) -> Intercept<'_, I> {
    Intercept::new(io, |request, io: &mut I| {
        request.object_key.is_empty().then(|| {
            io.send(request).ready().map(|mut r| {
                let body = String::from_utf8_lossy(&r.body).into_owned();
                let cut = match (
                    body.find("<NextContinuationToken>"),
                    body.find("</NextContinuationToken>"),
                ) {
                    (Some(a), Some(b)) => format!(
                        "{}{}",
                        &body[..a],
                        &body[b + "</NextContinuationToken>".len()..]
                    ),
                    _ => body,
                };
                r.body = cut.into_bytes();
                r
            })
        })
    })
}

#[test]
fn a_stale_epoch_is_not_granted_when_the_verifying_list_starts_with_an_empty_page() {
    let mut s = released_epoch_1();
    s.take_requests();
    assert_eq!(
        held(
            &mut before_put(&mut s, stale_create_then_empty_page),
            "late"
        ),
        None
    );
    // The verifying LIST read on with the empty page's token.
    let requests = s.take_requests();
    assert!(
        requests
            .iter()
            .any(|r| r.query.iter().any(|(k, _)| k == "continuation-token")),
        "{requests:?}"
    );
    assert_eq!(s.store.empty_list_pages, 0);
}

#[test]
fn a_superseded_epoch_does_not_renew_when_the_verifying_list_starts_with_an_empty_page() {
    let mut s = store();
    let first = granted(&mut s, "h");
    let second = granted(&mut s, "h");
    assert_eq!((first.token, second.token), (1, 2));
    s.store.empty_list_pages = 1;
    let r = renew(&mut s, &first);
    assert!(
        matches!(&r, Err(Error::Lost { token: 1, current: Some(c), .. }) if c.record.token == 2),
        "{r:?}"
    );
    assert_eq!(s.store.empty_list_pages, 0);
    // The current lease renews through an empty page too.
    s.store.empty_list_pages = 1;
    assert_eq!(renew(&mut s, &second).unwrap().token, 2);
}

#[test]
fn a_truncated_page_without_a_continuation_token_is_an_error_not_a_grant_or_renewal() {
    // Acquire: the verifying LIST cannot be read on.
    let mut s = released_epoch_1();
    let op = EpochTryAcquire::new(
        "k".into(),
        DIR.into(),
        grant("late"),
        seal(),
        judge(),
        wid(),
        0,
    );
    let mut others = before_put(&mut s, stale_create_then_empty_page);
    let r = driver::run(&mut without_tokens(&mut others), op).ready();
    match &r {
        Err(Error::S3(e)) => assert!(e.message.contains("NextContinuationToken"), "{}", e.message),
        other => panic!("expected an error, got {other:?}"),
    }
    // Renew: the same.
    let mut s = store();
    let first = granted(&mut s, "h");
    granted(&mut s, "h");
    s.store.empty_list_pages = 1;
    let r = renew(&mut without_tokens(&mut s), &first);
    assert!(
        matches!(&r, Err(Error::S3(e)) if e.message.contains("NextContinuationToken")),
        "{r:?}"
    );
    // A truncated page of only foreign keys, without a token: also an error.
    let mut s = store();
    let first = granted(&mut s, "h");
    for n in 0..250 {
        s.store
            .put_object(&format!("{}.bak{n:03}", epoch_key(DIR, 1)), b"x");
    }
    let r = renew(&mut without_tokens(&mut s), &first);
    assert!(matches!(&r, Err(Error::S3(_))), "{r:?}");
}

#[test]
fn inspect_and_a_fresh_lister_read_past_empty_pages() {
    let mut s = store();
    granted(&mut s, "a");
    let b = {
        s.advance(13_000);
        granted(&mut s, "b")
    };
    assert_eq!(b.token, 2);
    // The first page of the search comes back empty but truncated.
    s.store.empty_list_pages = 1;
    let state = driver::run(
        &mut s,
        EpochInspect::new("k".into(), DIR.into(), judge(), 0),
    )
    .ready()
    .unwrap()
    .expect("a holder");
    assert_eq!(
        (state.record.token, state.record.holder_id.as_str()),
        (2, "b")
    );
    // An empty page now and then: handovers go on, tokens rise.
    for round in 3..=40u64 {
        s.store.empty_list_pages = u32::from(round % 3 == 0);
        s.advance(13_000);
        assert_eq!(granted(&mut s, &format!("h{round}")).token, round);
        assert!(held(&mut s, "other").is_some());
    }
}
