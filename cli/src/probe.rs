//! Telling, while `run` and `elect` campaign, an error that retrying
//! cannot fix (no such bucket or table, refused credentials, a corrupt lock
//! object, a request the store rejects) from one it can.
//!
//! The elector keeps trying whatever fails, and keeps only the text of its
//! last error. So after a step fails, the key is read once more by a client
//! of our own (one GET or GetItem, on a thread, so a silent network never
//! holds up the supervision), and that read's typed error decides: a
//! permanent one ends the command with its code, as `acquire` would; a
//! transient one (or none) leaves the elector to keep trying. A step that
//! succeeds costs nothing: the read is only ever made after a failure.

use crate::exit::{is_permanent, Failure};
use s3_lease_host::blocking::Client;
use s3_lease_host::Error;
use std::sync::mpsc::{channel, Receiver, TryRecvError};
use std::time::Duration;

/// Makes the probe's client, on the first failure.
pub type Connect<'a> = Box<dyn Fn() -> Result<Client, Error> + 'a>;

pub struct Probe<'a> {
    key: String,
    connect: Connect<'a>,
    client: Option<Client>,
    /// The read under way, if one is.
    in_flight: Option<Receiver<Result<(), Error>>>,
    /// The elector's failed steps already looked into.
    looked_at: u64,
}

impl<'a> Probe<'a> {
    pub fn new(key: &str, connect: Connect<'a>) -> Self {
        Probe {
            key: key.to_string(),
            connect,
            client: None,
            in_flight: None,
            looked_at: 0,
        }
    }

    /// Given the elector's count of failed steps: starts a read after a
    /// new failure, and returns the failure to end with once a read found
    /// a permanent error.
    pub fn check(&mut self, failed_steps: u64) -> Option<Failure> {
        if let Some(found) = self.collect(Duration::ZERO) {
            return Some(found);
        }
        if self.in_flight.is_none() && failed_steps > self.looked_at {
            self.looked_at = failed_steps;
            if let Err(e) = self.start() {
                return permanent(e);
            }
        }
        None
    }

    /// When giving up: the verdict on the last failure, waiting for a read
    /// under way (or making one now) for at most `limit`.
    pub fn settle(&mut self, failed_steps: u64, limit: Duration) -> Option<Failure> {
        if self.in_flight.is_none() && failed_steps > self.looked_at {
            self.looked_at = failed_steps;
            if let Err(e) = self.start() {
                return permanent(e);
            }
        }
        self.collect(limit)
    }

    fn start(&mut self) -> Result<(), Error> {
        let client = match &self.client {
            Some(client) => client.clone(),
            None => {
                let client = (self.connect)()?;
                self.client = Some(client.clone());
                client
            }
        };
        let (tx, rx) = channel();
        let key = self.key.clone();
        std::thread::Builder::new()
            .name("s3-lease-probe".into())
            .spawn(move || {
                let _ = tx.send(client.inspect(&key).map(|_| ()));
            })
            // Without a thread, no read: the failure is classified later.
            .ok();
        self.in_flight = Some(rx);
        Ok(())
    }

    /// The read's verdict, if it has come (waiting up to `limit`).
    fn collect(&mut self, limit: Duration) -> Option<Failure> {
        let rx = self.in_flight.as_ref()?;
        let result = if limit.is_zero() {
            match rx.try_recv() {
                Ok(result) => result,
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => Ok(()),
            }
        } else {
            match rx.recv_timeout(limit) {
                Ok(result) => result,
                Err(_) => {
                    self.in_flight = None;
                    return None;
                }
            }
        };
        self.in_flight = None;
        result.err().and_then(permanent)
    }
}

fn permanent(e: Error) -> Option<Failure> {
    is_permanent(&e).then(|| Failure::from(e))
}
