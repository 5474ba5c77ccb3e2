//! Any `Io` with a hook that sees each request before it goes out: to
//! answer it itself (a refused connection) or to change the world first
//! (another writer's PUT landing just before ours).

use crate::driver::Io;
use crate::error::Error;
use crate::ready::Ready;
use crate::s3::{S3Request, S3Response};

type Hook<'a, I> = Box<dyn FnMut(&S3Request, &mut I) -> Option<Result<S3Response, Error>> + 'a>;

pub struct Intercept<'a, I: Io> {
    pub io: &'a mut I,
    hook: Hook<'a, I>,
}

impl<'a, I: Io> Intercept<'a, I> {
    /// `hook` returns `Some` to answer the request itself, `None` to let it
    /// go on to `io`.
    pub fn new(
        io: &'a mut I,
        hook: impl FnMut(&S3Request, &mut I) -> Option<Result<S3Response, Error>> + 'a,
    ) -> Self {
        Intercept {
            io,
            hook: Box::new(hook),
        }
    }
}

impl<I: Io> Io for Intercept<'_, I> {
    async fn send(&mut self, request: &S3Request) -> Result<S3Response, Error> {
        match (self.hook)(request, self.io) {
            Some(answer) => answer,
            None => self.io.send(request).await,
        }
    }
    fn now_ms(&mut self) -> u64 {
        self.io.now_ms()
    }
    fn monotonic_ms(&mut self) -> u64 {
        self.io.monotonic_ms()
    }
    async fn sleep_ms(&mut self, ms: u64) {
        self.io.sleep_ms(ms).await;
    }
    fn random_u64(&mut self) -> u64 {
        self.io.random_u64()
    }
    fn correct_signing_clock(&mut self, server_ms: u64) {
        self.io.correct_signing_clock(server_ms);
    }
}

/// An `Io` over the model whose PUT replies arrive `delay_ms` late: the
/// write is applied, then time passes before the writer hears of it.
pub fn slow_put_replies(
    io: &mut crate::testing::model_io::ModelIo,
    delay_ms: u64,
) -> Intercept<'_, crate::testing::model_io::ModelIo> {
    Intercept::new(io, move |request, io| {
        (request.method == crate::s3::Method::Put).then(|| {
            let reply = io.send(request).ready();
            io.advance(delay_ms);
            reply
        })
    })
}
