//! Inspect: one GET of the lock object, read as the caller's expiry clock
//! judges it.

use crate::prelude::*;

use super::object::{get, read_lock};
use crate::expiry::Judge;
use crate::lock_object::LockState;
use crate::protocol::{Operation, Step};
use crate::stores::s3::S3Response;

pub struct Inspect {
    key: String,
    object_key: String,
    judge: Judge,
}

impl Inspect {
    pub fn new(key: String, object_key: String, judge: Judge) -> Self {
        Inspect {
            key,
            object_key,
            judge,
        }
    }
}

impl Operation for Inspect {
    type Output = Option<LockState>;
    fn start(&mut self, _now_ms: u64) -> Step<Self::Output> {
        Step::Send(get(&self.object_key, &self.judge))
    }
    fn on_response(&mut self, r: S3Response, now_ms: u64) -> Step<Self::Output> {
        Step::Done(read_lock(
            &self.key,
            &self.object_key,
            r,
            now_ms,
            &self.judge,
        ))
    }
}
