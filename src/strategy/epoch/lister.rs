//! Listing a key's epochs: the search for the highest (`Lister`), the check
//! for any epoch above ours (`HigherCheck`), and the reading of LIST pages,
//! truncated ones followed by their continuation token.

use crate::prelude::*;

use super::cleanup::KEEP_EPOCHS;
use super::object::{epoch_key, listing_prefix, parse_epoch_key, reply_lacks};
use crate::error::{Error, S3Error};
use crate::stores::s3::{list_continue, list_request, parse_list, ListPage, S3Request, S3Response};

/// LIST requests one search for the highest epoch may send: a listing from
/// the start, then galloping and bisecting over the 64-bit epoch space.
pub const MAX_LIST_REQUESTS: u32 = 160;

/// Finds a key's epochs and the highest of them.
///
/// It lists from just below the hint (the highest epoch this client saw), or
/// from the start without one. Cleanup keeps two epochs, so one page nearly
/// always holds them all. When a page is truncated (cleanup lagging far
/// behind, or thousands of leftovers), it does not read page after page: it
/// gallops ahead by doubling steps with `start-after` and bisects back, so a
/// fresh instance finds the highest of a million epochs in about 40 LISTs.
/// If a hinted listing finds nothing, it lists from the start once.
///
/// S3 may answer a page with fewer keys than asked, or none, and still say
/// it is truncated: a truncated page without an epoch is read on with its
/// continuation token (see `continue_after`), never taken as the end.
pub(super) struct Lister {
    dir: String,
    pub(super) hint: u64,
    full: bool,
    requests: u32,
    /// Every epoch seen (cleanup deletes the old ones among them).
    pub(super) epochs: Vec<u64>,
    /// The `start-after` epoch of the page in flight, when it is a probe.
    probe: Option<u64>,
    /// A probe found nothing above this epoch.
    ceiling: Option<u64>,
    step: u64,
}

impl Lister {
    pub(super) fn new(dir: &str, hint: u64) -> Self {
        Lister {
            dir: dir.to_string(),
            hint,
            full: hint <= KEEP_EPOCHS,
            requests: 0,
            epochs: Vec::new(),
            probe: None,
            ceiling: None,
            step: u64::from(crate::stores::s3::LIST_PAGE_KEYS),
        }
    }

    pub(super) fn first(&mut self) -> S3Request {
        self.epochs.clear();
        self.probe = None;
        self.ceiling = None;
        // From the oldest epoch cleanup keeps, so the grant that follows
        // still sees the one it should delete.
        let after = (!self.full).then(|| epoch_key(&self.dir, self.hint - KEEP_EPOCHS));
        self.request(after.as_deref())
    }

    fn request(&mut self, start_after: Option<&str>) -> S3Request {
        self.requests += 1;
        list_request(&listing_prefix(&self.dir), start_after)
    }

    /// The page after `page`, which was truncated.
    fn continue_after(&mut self, page: &ListPage, r: &S3Response) -> Result<S3Request, Error> {
        if self.requests >= MAX_LIST_REQUESTS {
            return Err(self.did_not_converge());
        }
        let token = continuation(page, r, &self.dir)?;
        self.requests += 1;
        Ok(list_continue(&listing_prefix(&self.dir), token))
    }

    fn did_not_converge(&self) -> Error {
        Error::S3(S3Error {
            status: 200,
            message: format!(
                "the highest epoch under {:?} was not found in {MAX_LIST_REQUESTS} LISTs",
                listing_prefix(&self.dir)
            ),
            ..S3Error::default()
        })
    }

    fn probe_after(&mut self, epoch: u64) -> Result<Option<S3Request>, Error> {
        if self.requests >= MAX_LIST_REQUESTS {
            return Err(self.did_not_converge());
        }
        self.probe = Some(epoch);
        let key = epoch_key(&self.dir, epoch);
        Ok(Some(self.request(Some(&key))))
    }

    /// The next request, or `None` once the highest epoch is known.
    pub(super) fn on_page(&mut self, r: S3Response) -> Result<Option<S3Request>, Error> {
        let page = read_page(&r)?;
        self.on_listed(&page, &r)
    }

    /// `on_page` once the reply `r` is read as `page`.
    fn on_listed(&mut self, page: &ListPage, r: &S3Response) -> Result<Option<S3Request>, Error> {
        let found: Vec<u64> = page
            .keys
            .iter()
            .filter_map(|k| parse_epoch_key(&self.dir, k))
            .collect();
        self.epochs.extend(&found);
        let probe = self.probe.take();
        if page.truncated {
            if found.is_empty() {
                // Only foreign keys on this page, or no keys at all: read
                // on, still answering the same probe. Taking it as the end
                // would miss every epoch beyond it.
                let next = self.continue_after(page, r)?;
                self.probe = probe;
                return Ok(Some(next));
            }
            // More beyond this page: gallop, or bisect below a ceiling.
            return self.search();
        }
        match probe {
            // Nothing above the probe: the highest is at most the probe.
            Some(p) if found.is_empty() => {
                self.ceiling = Some(p);
                self.search()
            }
            // A last page (after a probe or not): everything above is known.
            _ => self.finish(),
        }
    }

    /// The next probe once the last page left the highest epoch open.
    ///
    /// Invariant: `low` (the highest epoch seen, 0 for none) exists, and no
    /// epoch is above `ceiling` (a probe after it found none), so the
    /// highest lies in `low ..= ceiling`; a probe after `m` is a LIST with
    /// `start-after` epoch `m`, which lists epochs above `m` only. Probing
    /// after `m` with `low <= m < ceiling` either finds an epoch above `m`
    /// (`low` rises past `m`) or none (`ceiling` falls to `m`): the range
    /// shrinks every time, and the search ends exactly when `ceiling ==
    /// low`, the highest then known. Stopping at `ceiling == low + 1` (as
    /// it once did) never asked whether epoch `ceiling` itself exists: with
    /// dense epochs 1..201 it found 200.
    fn search(&mut self) -> Result<Option<S3Request>, Error> {
        let low = self.highest().unwrap_or(0);
        match self.ceiling {
            Some(ceiling) if ceiling <= low => self.finish(),
            Some(ceiling) => self.probe_after(low + (ceiling - low) / 2),
            // No ceiling yet: gallop by doubling steps. Nothing can be
            // above `u64::MAX`.
            None if low == u64::MAX => self.finish(),
            None => {
                self.step = self.step.saturating_mul(2);
                self.probe_after(low.saturating_add(self.step))
            }
        }
    }

    fn finish(&mut self) -> Result<Option<S3Request>, Error> {
        if self.epochs.is_empty() && !self.full {
            self.full = true;
            return Ok(Some(self.first()));
        }
        Ok(None)
    }

    pub(super) fn highest(&self) -> Option<u64> {
        self.epochs.iter().copied().max()
    }
}

/// Looks for any epoch above `mine`, following pages past foreign keys:
/// after a create, and after every renew or release, a higher epoch means
/// ours is superseded. It fails closed: "nothing higher" only from a page
/// that is not truncated; a truncated page (short, empty, or all foreign
/// keys) is followed with its continuation token, and one without a token,
/// or more than `MAX_LIST_REQUESTS` pages, is an error, never a grant.
pub(super) struct HigherCheck {
    dir: String,
    pages: u32,
}

pub(super) enum Higher {
    Found,
    None,
    Next(S3Request),
}

impl HigherCheck {
    pub(super) fn start(dir: &str, mine: u64) -> (Self, S3Request) {
        let check = HigherCheck {
            dir: dir.to_string(),
            pages: 1,
        };
        let request = list_request(&listing_prefix(dir), Some(&epoch_key(dir, mine)));
        (check, request)
    }

    pub(super) fn on_page(&mut self, r: S3Response) -> Result<Higher, Error> {
        let page = read_page(&r)?;
        // Every key of the page sorts after ours, so any epoch on it is higher.
        if page
            .keys
            .iter()
            .filter_map(|k| parse_epoch_key(&self.dir, k))
            .next()
            .is_some()
        {
            return Ok(Higher::Found);
        }
        if !page.truncated {
            return Ok(Higher::None);
        }
        if self.pages >= MAX_LIST_REQUESTS {
            return Err(reply_lacks_list(&self.dir));
        }
        let token = continuation(&page, &r, &self.dir)?;
        self.pages += 1;
        Ok(Higher::Next(list_continue(
            &listing_prefix(&self.dir),
            token,
        )))
    }
}

fn reply_lacks_list(dir: &str) -> Error {
    Error::S3(S3Error {
        status: 200,
        message: format!(
            "more than {MAX_LIST_REQUESTS} LIST pages without an epoch under {:?}",
            listing_prefix(dir)
        ),
        ..S3Error::default()
    })
}

/// The token that continues truncated `page`. Without one the rest of the
/// listing cannot be read, and what it holds cannot be known: an error.
fn continuation<'a>(page: &'a ListPage, r: &S3Response, dir: &str) -> Result<&'a str, Error> {
    page.next_token.as_deref().ok_or_else(|| {
        reply_lacks(
            r,
            &format!(
                "a truncated LIST page under {:?} has no NextContinuationToken to read on from",
                listing_prefix(dir)
            ),
        )
    })
}

fn read_page(r: &S3Response) -> Result<ListPage, Error> {
    if r.status != 200 {
        return Err(r.clone().into_error());
    }
    if let Some(len) = r.body_too_large {
        return Err(reply_lacks(
            r,
            &format!("the LIST reply is {len} bytes, more than this client reads"),
        ));
    }
    parse_list(&r.body)
        .map_err(|reason| reply_lacks(r, &format!("unreadable ListObjectsV2 reply: {reason}")))
}

#[cfg(test)]
mod tests;
