//! HTTP hooks that let the demo cut one node's network, and count what the
//! node sends; everything else goes to the runtime's pooled sender.

use s3_lease_host::http::{
    HttpError, HttpSender, IoFuture, RequestOptions, ResponseFuture, WasiBody, WasiHttpHooks,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

#[derive(Clone)]
pub struct NetworkSwitch {
    cut: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    next: HttpSender,
}

impl NetworkSwitch {
    pub fn new(next: HttpSender) -> Self {
        NetworkSwitch {
            cut: Arc::default(),
            sent: Arc::default(),
            next,
        }
    }

    /// While cut, every request fails as if the connection were refused.
    pub fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::SeqCst);
    }

    /// Requests the node tried to send so far, cut or not.
    pub fn requests_sent(&self) -> usize {
        self.sent.load(Ordering::SeqCst)
    }
}

impl WasiHttpHooks for NetworkSwitch {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _default: IoFuture,
    ) -> ResponseFuture {
        self.sent.fetch_add(1, Ordering::SeqCst);
        if self.cut.load(Ordering::SeqCst) {
            return Box::new(async { Err(HttpError::ConnectionRefused) });
        }
        self.next.send(request, options)
    }
}
