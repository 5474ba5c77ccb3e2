//! Any `Io` with a hook that sees each request before it goes out: to
//! answer it itself (a refused connection) or to change the world first
//! (another writer's PUT landing just before ours).

use crate::driver::{Io, Sends, Wrapped};
use crate::error::Error;
use crate::ready::Ready;
use crate::stores::s3::{S3Request, S3Response};

type Answer = Option<Result<S3Response, Error>>;

type HookFn<'a, I> = dyn FnMut(&S3Request, &mut I) -> Answer + 'a;

/// Returns `Some` to answer the request itself, `None` to let it go on.
pub struct Hook<'a, I>(Box<HookFn<'a, I>>);

pub type Intercept<'a, I> = Wrapped<'a, I, Hook<'a, I>>;

impl<'a, I: Io> Intercept<'a, I> {
    /// `hook` returns `Some` to answer the request itself, `None` to let it
    /// go on to `io`.
    pub fn new(io: &'a mut I, hook: impl FnMut(&S3Request, &mut I) -> Answer + 'a) -> Self {
        Wrapped {
            io,
            sends: Hook(Box::new(hook)),
        }
    }
}

impl<I: Io> Sends<I> for Hook<'_, I> {
    async fn send(&mut self, io: &mut I, request: &S3Request) -> Result<S3Response, Error> {
        match (self.0)(request, io) {
            Some(answer) => answer,
            None => io.send(request).await,
        }
    }
}

/// An `Io` over the model whose PUT replies arrive `delay_ms` late: the
/// write is applied, then time passes before the writer hears of it.
pub fn slow_put_replies(
    io: &mut crate::testing::model_io::ModelIo,
    delay_ms: u64,
) -> Intercept<'_, crate::testing::model_io::ModelIo> {
    Intercept::new(io, move |request, io| {
        (request.method == crate::stores::s3::Method::Put).then(|| {
            let reply = io.send(request).ready();
            io.advance(delay_ms);
            reply
        })
    })
}
