//! What the soak injects, all drawn from the seed: per request, a fault
//! policy for the hooks (`host_test::hooks::FaultPolicy`); per process, a
//! plan of crashes, pauses and clock jumps.

use super::process::Process;
use crate::hooks::{Fault, FaultPolicy, RequestRecord};
use s3_lease::testing::rng::Rng;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Every kind of fault, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// 500 InternalError, answered by the host: the server never saw it.
    InternalError,
    /// 503 SlowDown (throttling), answered by the host.
    SlowDown,
    /// 409 ConditionalRequestConflict on a conditional PUT.
    Conflict,
    /// The connection is refused.
    Refused,
    /// Held past the request timeout, then delivered (a late arrival).
    LateArrival,
    /// Held past the request timeout, never delivered.
    TimedOut,
    /// Applied by the server, the reply dropped.
    LostReply,
    /// The process was killed between calls, without releasing.
    Crash,
    /// The process was killed as a request left: that request was lost,
    /// arrived late or never left; nothing after it did.
    CrashMidRequest,
    /// The process stopped for longer than the lease: its member thread
    /// sleeps and every request it sends waits for the end of the pause
    /// (the host elector's threads run on: see `process`).
    Pause,
    /// A request stalled in the process for longer than the lease before
    /// it left (a pause between building a request and sending it).
    PauseMidRequest,
    /// The process's wall clock stepped (forward or back).
    ClockJump,
}

impl FaultKind {
    pub const ALL: [FaultKind; 12] = [
        FaultKind::InternalError,
        FaultKind::SlowDown,
        FaultKind::Conflict,
        FaultKind::Refused,
        FaultKind::LateArrival,
        FaultKind::TimedOut,
        FaultKind::LostReply,
        FaultKind::Crash,
        FaultKind::CrashMidRequest,
        FaultKind::Pause,
        FaultKind::PauseMidRequest,
        FaultKind::ClockJump,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::InternalError => "500 InternalError",
            FaultKind::SlowDown => "503 SlowDown",
            FaultKind::Conflict => "409 ConditionalRequestConflict",
            FaultKind::Refused => "connection refused",
            FaultKind::LateArrival => "timeout, the request arrives late",
            FaultKind::TimedOut => "timeout, the request never arrives",
            FaultKind::LostReply => "lost reply (request applied)",
            FaultKind::Crash => "crash between calls",
            FaultKind::CrashMidRequest => "crash with a request in flight",
            FaultKind::Pause => "pause past the lease, between calls",
            FaultKind::PauseMidRequest => "pause past the lease, mid-request",
            FaultKind::ClockJump => "wall-clock jump",
        }
    }

    fn index(self) -> usize {
        FaultKind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

/// Faults injected so far, by kind; shared by every thread.
#[derive(Default)]
pub struct FaultCounts([AtomicU64; FaultKind::ALL.len()]);

impl FaultCounts {
    pub fn add(&self, kind: FaultKind) {
        self.0[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, kind: FaultKind) -> u64 {
        self.0[kind.index()].load(Ordering::Relaxed)
    }

    pub fn total(&self) -> u64 {
        FaultKind::ALL.iter().map(|k| self.get(*k)).sum()
    }
}

/// The request timeout every soak client is configured with.
pub const REQUEST_TIMEOUT_MS: u64 = 700;

/// How late a held request may arrive after it was sent.
pub const MAX_LATE_MS: u64 = REQUEST_TIMEOUT_MS + 2_500;

/// The per-request schedule of one instance (one key of one process, in
/// one generation): seeded, so the n-th request of that instance gets the
/// same fault in every replay; only thread timing differs.
pub struct RequestFaults {
    rng: Rng,
    /// The chance that a request is faulted at all.
    rate: f64,
    counts: Arc<FaultCounts>,
    process: Arc<Process>,
    generation: u32,
}

impl RequestFaults {
    pub fn new(seed: u64, rate: f64, counts: Arc<FaultCounts>, process: Arc<Process>) -> Self {
        RequestFaults {
            rng: Rng::new(seed),
            rate,
            counts,
            generation: process.generation(),
            process,
        }
    }

    pub fn into_policy(mut self) -> FaultPolicy {
        Box::new(move |r: &RequestRecord| self.decide(r))
    }

    fn decide(&mut self, r: &RequestRecord) -> Option<Fault> {
        // Every draw is made whatever happens, so the schedule replays.
        let faulted = self.rng.chance(self.rate);
        let roll = self.rng.below(7);
        let late = Duration::from_millis(self.rng.range(REQUEST_TIMEOUT_MS + 50, MAX_LATE_MS));
        if self.process.generation() != self.generation {
            // A dead process sends nothing.
            return Some(Fault::Refuse);
        }
        if let Some(down_ms) = self.process.take_kill() {
            // Killed as this request leaves: it reached the server or not,
            // and nobody reads the reply.
            self.process.crash_now(down_ms);
            self.counts.add(FaultKind::CrashMidRequest);
            return Some(match roll % 3 {
                0 => Fault::LoseReply,
                1 => Fault::TimeOut {
                    arrives_after: Some(late),
                },
                _ => Fault::Refuse,
            });
        }
        if let Some(left) = self.process.paused_for() {
            // A paused process sends nothing until it resumes.
            return Some(Fault::Delay(left));
        }
        if let Some(ms) = self.process.take_stall() {
            self.counts.add(FaultKind::PauseMidRequest);
            return Some(Fault::Delay(Duration::from_millis(ms)));
        }
        if !faulted {
            return None;
        }
        let conditional_put =
            r.method == "PUT" && (r.if_match.is_some() || r.if_none_match.is_some());
        let internal = || {
            error(
                500,
                "InternalError",
                "We encountered an internal error. Please try again.",
            )
        };
        let (kind, fault) = match roll {
            0 => (FaultKind::InternalError, internal()),
            1 => (
                FaultKind::SlowDown,
                error(503, "SlowDown", "Please reduce your request rate."),
            ),
            // S3 sends 409 only to conditional writes; elsewhere a 500.
            2 if conditional_put => (
                FaultKind::Conflict,
                error(
                    409,
                    "ConditionalRequestConflict",
                    "A conflicting conditional operation is currently in progress against this resource. Please try again.",
                ),
            ),
            2 => (FaultKind::InternalError, internal()),
            3 => (FaultKind::Refused, Fault::Refuse),
            4 => (
                FaultKind::LateArrival,
                Fault::TimeOut {
                    arrives_after: Some(late),
                },
            ),
            5 => (FaultKind::TimedOut, Fault::TimeOut { arrives_after: None }),
            _ => (FaultKind::LostReply, Fault::LoseReply),
        };
        self.counts.add(kind);
        Some(fault)
    }
}

fn error(status: u16, code: &str, message: &str) -> Fault {
    Fault::Respond {
        status,
        content_type: "application/xml",
        body: format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message><RequestId>soak-fault</RequestId></Error>"
        ),
    }
}

/// A seed for one instance's schedule: the run's seed mixed with who it is.
pub fn instance_seed(seed: u64, process: usize, key: usize, generation: u32) -> u64 {
    let mut rng = Rng::new(
        seed ^ (process as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (key as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
            ^ u64::from(generation).wrapping_mul(0x1656_67B1_9E37_79F9),
    );
    rng.next_u64()
}

/// A process-level fault, as the plan draws it.
#[derive(Debug, Clone, Copy)]
pub enum ProcessFault {
    /// Killed without releasing; restarted as a fresh process after
    /// `down_ms`. `mid_request`: as its next request leaves, so that
    /// request is in flight (the plan waits up to a second for one).
    Crash { down_ms: u64, mid_request: bool },
    /// Stops for `ms` (longer than the lease): the member thread sleeps
    /// and the process's requests are held until it resumes.
    /// `mid_request`: instead, the next request of one instance stalls that
    /// long before it leaves.
    Pause { ms: u64, mid_request: bool },
    /// The wall clock steps by `ms` (negative: back).
    ClockJump { ms: i64 },
}

/// One draw of the process plan. Every draw takes the same values from the
/// generator whatever is chosen, so a seed replays the same plan.
pub struct PlanDraw {
    pub gap_ms: u64,
    pub fault: ProcessFault,
    /// Aim at a process that leads some key, when one is free.
    pub want_leader: bool,
    pub pick: u64,
}

pub fn draw(rng: &mut Rng, lease_ms: u64) -> PlanDraw {
    let gap_ms = rng.range(800, 3_000);
    let roll = rng.below(100);
    let want_leader = rng.chance(0.6);
    let pick = rng.next_u64();
    let down_ms = rng.range(300, 4_000);
    // Up to well past a failover, so a paused leader often wakes to find
    // its successor has written (and its own stale write is refused).
    let pause_ms = lease_ms + rng.range(500, 8_000);
    let jump = rng.range(1_000, 30_000) as i64;
    let back = rng.chance(0.5);
    let mid_request = rng.chance(0.5);
    let fault = match roll {
        0..=39 => ProcessFault::Crash {
            down_ms,
            mid_request,
        },
        40..=69 => ProcessFault::Pause {
            ms: pause_ms,
            mid_request,
        },
        _ => ProcessFault::ClockJump {
            ms: if back { -jump } else { jump },
        },
    };
    PlanDraw {
        gap_ms,
        fault,
        want_leader,
        pick,
    }
}
