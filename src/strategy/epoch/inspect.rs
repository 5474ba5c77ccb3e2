//! Inspect: LIST the epochs, GET the highest, read as the caller's expiry
//! clock judges it; list again if cleanup deleted it in between.

use crate::prelude::*;

use super::lister::Lister;
use super::object::{get_epoch, read_epoch};
use crate::expiry::Judge;
use crate::limits::MAX_REREADS;
use crate::lock_object::LockState;
use crate::protocol::{Operation, Step};
use crate::stores::s3::S3Response;

pub struct EpochInspect {
    key: String,
    dir: String,
    judge: Judge,
    lister: Lister,
    reading: Option<u64>,
    rereads: u32,
}

impl EpochInspect {
    pub fn new(key: String, dir: String, judge: Judge, hint: u64) -> Self {
        EpochInspect {
            lister: Lister::new(&dir, hint),
            key,
            dir,
            judge,
            reading: None,
            rereads: 0,
        }
    }
}

impl Operation for EpochInspect {
    type Output = Option<LockState>;

    fn start(&mut self, _now_ms: u64) -> Step<Self::Output> {
        Step::Send(self.lister.first())
    }

    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Self::Output> {
        if let Some(epoch) = self.reading.take() {
            return match read_epoch(&self.key, &self.dir, epoch, r, now_ms, &self.judge) {
                // Cleaned up after a newer grant between our LIST and GET.
                Ok(None) if self.rereads < MAX_REREADS => {
                    self.rereads += 1;
                    Step::Send(self.lister.first())
                }
                result => Step::Done(result),
            };
        }
        match self.lister.on_page(r) {
            Ok(Some(next)) => Step::Send(next),
            Ok(None) => match self.lister.highest() {
                None => Step::Done(Ok(None)),
                Some(epoch) => {
                    self.reading = Some(epoch);
                    Step::Send(get_epoch(&self.dir, epoch, &self.judge))
                }
            },
            Err(e) => Step::Done(Err(e)),
        }
    }
}
