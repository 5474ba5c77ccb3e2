//! One client talking to a store model (S3's, DynamoDB's, Azure's, or one
//! several clients share): the `Io` of unit tests, with its own (possibly
//! skewed) wall clock, a monotonic clock, and hooks for what a test wants
//! to happen between the client and the store.

use crate::driver::Io;
use crate::error::Error;
use crate::stores::s3::model::S3Model;
use crate::stores::s3::{Endpoint, S3Request, S3Response};
use crate::stores::Profile;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

/// A store model a client's `Io` talks to (S3's, DynamoDB's, Azure's, or
/// a shared one).
pub trait Model {
    fn handle(&mut self, request: &S3Request) -> S3Response;
    /// The store's clock moves on.
    fn advance(&mut self, ms: u64);
    fn now_ms(&self) -> u64;
    /// The store it answers as: its clients judge its replies as that
    /// store's (`s3::not_the_store`), as the component does a real one's.
    fn store_kind(&self) -> &'static Profile;
}

/// The endpoint a model's clients name in a wrong endpoint's error.
pub const MODEL_ENDPOINT: &str = "http://s3.model";

impl Model for S3Model {
    fn handle(&mut self, request: &S3Request) -> S3Response {
        S3Model::handle(self, request)
    }
    fn advance(&mut self, ms: u64) {
        S3Model::advance(self, ms);
    }
    fn now_ms(&self) -> u64 {
        self.now_ms
    }
    fn store_kind(&self) -> &'static Profile {
        &crate::stores::s3::PROFILE
    }
}

/// A store several clients share, each through a `ModelIo` of its own
/// over a clone of the `Rc`: time passing for one passes for all.
impl<M: Model> Model for Rc<RefCell<M>> {
    fn handle(&mut self, request: &S3Request) -> S3Response {
        self.borrow_mut().handle(request)
    }
    fn advance(&mut self, ms: u64) {
        self.borrow_mut().advance(ms);
    }
    fn now_ms(&self) -> u64 {
        self.borrow().now_ms()
    }
    fn store_kind(&self) -> &'static Profile {
        self.borrow().store_kind()
    }
}

/// Runs once against the store, just before a request reaches it.
pub type StoreHook<S = S3Model> = Box<dyn FnOnce(&mut S)>;

pub struct ModelIo<S = S3Model> {
    pub store: S,
    /// This client's wall clock is `store.now_ms + clock_offset_ms`: skew.
    pub clock_offset_ms: i64,
    /// The store's time when this client started: its monotonic clock
    /// counts the store's time since.
    started_ms: u64,
    /// Every request sent, in order (scripted ones included).
    pub requests: Vec<S3Request>,
    /// Canned replies, used before the store: a request answered from
    /// here never reaches it.
    pub scripted: VecDeque<S3Response>,
    /// Run once just before the next request reaches the store: another
    /// writer sneaking in between this client's requests.
    pub before_send: Option<StoreHook<S>>,
    /// The next request that reaches the store is applied, then its reply
    /// is lost: `send` returns a transport error.
    pub lose_next_reply: bool,
    /// The next this many PUTs are applied, then their replies lost.
    pub lose_put_replies: u32,
    /// The network is cut: every request fails before it reaches the store.
    pub cut: bool,
    /// A lost reply cuts the network (`cut`) until the test mends it: the
    /// outage that lost the reply also fails the read-back after it, so
    /// the call ends without knowing whether its write landed.
    pub cut_after_lost_reply: bool,
    /// What `random_u64` returns. 7 unless a test sets it, so backoffs are
    /// the same from run to run.
    pub random: u64,
}

impl ModelIo {
    /// A client of an empty model at `now_ms`, its clock exactly the store's.
    pub fn new(now_ms: u64) -> Self {
        ModelIo::of(S3Model::new(now_ms))
    }
}

impl<S: Model> ModelIo<S> {
    /// A client of `store`, its clock exactly the store's.
    pub fn of(store: S) -> Self {
        ModelIo {
            started_ms: store.now_ms(),
            store,
            clock_offset_ms: 0,
            requests: Vec::new(),
            scripted: VecDeque::new(),
            before_send: None,
            lose_next_reply: false,
            lose_put_replies: 0,
            cut: false,
            cut_after_lost_reply: false,
            random: 7,
        }
    }

    /// Time passes for everyone: the store's clock, and with it this
    /// client's wall and monotonic clocks.
    pub fn advance(&mut self, ms: u64) {
        self.store.advance(ms);
    }

    /// The requests sent since the last call.
    pub fn take_requests(&mut self) -> Vec<S3Request> {
        std::mem::take(&mut self.requests)
    }
}

impl<S: Model> Io for ModelIo<S> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        self.requests.push(request.clone());
        if self.cut {
            return Err(Error::Transport("network cut".into()));
        }
        if let Some(reply) = self.scripted.pop_front() {
            return Ok(reply);
        }
        if let Some(hook) = self.before_send.take() {
            hook(&mut self.store);
        }
        let reply = self.store.handle(request);
        let lose_put =
            request.method == crate::stores::s3::Method::Put && self.lose_put_replies > 0;
        if lose_put {
            self.lose_put_replies -= 1;
        }
        if std::mem::take(&mut self.lose_next_reply) || lose_put {
            self.cut |= self.cut_after_lost_reply;
            return Err(Error::Transport("reply lost".into()));
        }
        Ok(reply)
    }

    fn now_ms(&mut self) -> u64 {
        let now = i128::from(self.store.now_ms()) + i128::from(self.clock_offset_ms);
        u64::try_from(now.max(0)).unwrap_or(u64::MAX)
    }

    fn monotonic_ms(&mut self) -> u64 {
        self.store.now_ms().saturating_sub(self.started_ms)
    }

    async fn sleep_ms(&mut self, ms: u64) {
        self.advance(ms);
    }

    fn endpoint(&self) -> Option<Endpoint> {
        Some(Endpoint {
            store: self.store.store_kind(),
            url: MODEL_ENDPOINT.into(),
        })
    }

    fn random_u64(&mut self) -> u64 {
        // A different value each call: write ids must differ between
        // operations, or one would "recognise" another's write.
        let r = self.random;
        self.random = self.random.wrapping_add(1 << 32);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ready::Ready;
    use crate::stores::s3::Method;

    fn put(key: &str, body: &[u8]) -> S3Request {
        S3Request::new(Method::Put, key, 1024).body("text/plain", body.to_vec())
    }

    fn get(key: &str) -> S3Request {
        S3Request::new(Method::Get, key, 1024)
    }

    #[test]
    fn clocks_skew_and_sleep_moves_both() {
        let mut io = ModelIo::new(10_000);
        io.clock_offset_ms = -3_000;
        assert_eq!(io.now_ms(), 7_000);
        io.sleep_ms(500).ready();
        assert_eq!(
            (io.store.now_ms, io.now_ms(), io.monotonic_ms()),
            (10_500, 7_500, 500)
        );
        io.clock_offset_ms = -20_000;
        assert_eq!(io.now_ms(), 0, "a clock far behind stops at the epoch");
        io.random = 42;
        assert_eq!(io.random_u64(), 42);
        assert_ne!(io.random_u64(), 42, "never the same twice in a row");
    }

    #[test]
    fn scripted_replies_come_first_and_never_reach_the_store() {
        let mut io = ModelIo::new(0);
        io.scripted.push_back(S3Response {
            status: 503,
            ..S3Response::default()
        });
        assert_eq!(io.send(&put("k", b"v")).ready().unwrap().status, 503);
        assert!(io.store.object("k").is_none());
        assert_eq!(io.send(&put("k", b"v")).ready().unwrap().status, 200);
        assert_eq!(io.take_requests().len(), 2);
        assert!(io.requests.is_empty());
    }

    #[test]
    fn another_writer_sneaks_in_once_before_the_next_request() {
        let mut io = ModelIo::new(0);
        io.before_send = Some(Box::new(|store: &mut S3Model| {
            store.put_object("k", b"theirs");
        }));
        let create = put("k", b"ours").header("if-none-match", "*");
        assert_eq!(io.send(&create).ready().unwrap().status, 412);
        assert!(io.before_send.is_none());
        assert_eq!(io.send(&get("k")).ready().unwrap().body, b"theirs");
    }

    #[test]
    fn a_lost_reply_still_changed_the_store() {
        let mut io = ModelIo::new(0);
        io.lose_next_reply = true;
        assert!(
            matches!(io.send(&put("k", b"v")).ready(), Err(Error::Transport(m)) if m == "reply lost")
        );
        assert_eq!(io.store.object("k").unwrap().body, b"v");
        assert_eq!(
            io.send(&get("k")).ready().unwrap().status,
            200,
            "only one is lost"
        );
    }

    #[test]
    fn clients_of_a_shared_store_share_its_time_and_a_cut_one_reaches_nothing() {
        let store = Rc::new(RefCell::new(S3Model::new(1_000)));
        let (mut a, mut b) = (ModelIo::of(store.clone()), ModelIo::of(store.clone()));
        a.sleep_ms(300).ready();
        assert_eq!(
            (a.monotonic_ms(), b.monotonic_ms(), b.now_ms()),
            (300, 300, 1_300)
        );
        b.cut = true;
        assert!(
            matches!(b.send(&put("k", b"v")).ready(), Err(Error::Transport(m)) if m == "network cut")
        );
        assert!(store.borrow().object("k").is_none());
        assert_eq!(a.send(&put("k", b"v")).ready().unwrap().status, 200);
    }
}
