//! What keeps a lock in a host, as state machines with `now` passed in.
//!
//! The component's core decides what to send; these decide, around it,
//! what a host believes and when it acts: until when a held lease is
//! surely held and when to renew it ([`guard`]), until when an elector
//! leads whatever its step is doing ([`leadership`]), when each of many
//! held leases is looked at next, one entry per lease ([`schedule`]),
//! when a guardian ends a supervised command its supervisor no longer
//! keeps ([`supervision`]), when to fetch credentials again
//! ([`refresh`]), and how the lease gate waits for a request's key and
//! holds it through the exchange ([`gate`]). None of them reads a clock, sleeps or
//! sends: a driver does that, and only that. The host crate's drivers run
//! them on real time (threads, tasks); the deterministic simulation
//! (`s3_lease::testing::sim`) runs the same machines on virtual time, so
//! what they promise is checked where it cannot be by waiting.
//!
//! Beside the machines, what the component, the host crate and the guest
//! crate share of the contract, defined once: its names ([`vocabulary`]),
//! its plain records ([`records`]) and the conversions to each crate's
//! generated bindings ([`twins`], [`same_fields!`], [`same_cases!`],
//! [`same_vocabulary!`]).
//!
//! Times are milliseconds: monotonic ones (on the driver's clock, whose
//! origin is the driver's) for guards and leadership, wall-clock ones
//! (since the Unix epoch) for credentials, whose expiry is a wall time.

// No std: the component's own waiting (`wait`) runs on this crate too, and
// the component links no std.
#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod gate;
pub mod guard;
pub mod leadership;
pub mod records;
pub mod refresh;
pub mod schedule;
pub mod supervision;
pub mod twins;
pub mod vocabulary;
pub mod wait;
