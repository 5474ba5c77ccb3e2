//! The command's process group under a claim: started with the lease in
//! its environment, and stopped (SIGTERM, then SIGKILL) once the claim is
//! lost.

use super::Job;
use crate::exit::{Failure, USAGE};
use crate::guardian::GuardianArgs;
use crate::json;
use crate::tree::{CommandGroup, GroupState};
use s3_lease_host::clock::{self, Clock};
use s3_lease_host::LeaseRecord as Lease;
use std::process::Command;
use std::time::Duration;

/// What `run` and `elect` hand their command about the lease it runs
/// under (its fencing hand-off), one variable each. The command's
/// environment and the help text (`help`) are both made from `ALL`, so
/// neither names a variable the other does not.
#[derive(Clone, Copy)]
pub(crate) enum LeaseVar {
    Key,
    Token,
    Holder,
    Lease,
}

impl LeaseVar {
    pub(crate) const ALL: [LeaseVar; 4] = [
        LeaseVar::Key,
        LeaseVar::Token,
        LeaseVar::Holder,
        LeaseVar::Lease,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            LeaseVar::Key => "S3LEASE_KEY",
            LeaseVar::Token => "S3LEASE_TOKEN",
            LeaseVar::Holder => "S3LEASE_HOLDER",
            LeaseVar::Lease => "S3LEASE_LEASE",
        }
    }

    /// What it holds, for the help text.
    fn holds(self) -> &'static str {
        match self {
            LeaseVar::Key => "the key held",
            LeaseVar::Token => {
                "the fencing token: higher with every grant of the key; pass it \
                 to what the command writes, so a stale holder's writes can be refused"
            }
            LeaseVar::Holder => "the holder id",
            LeaseVar::Lease => {
                "the sealed lease as JSON: a nested `s3-lease fenced put` or \
                 `fenced delete` writes with it"
            }
        }
    }

    fn value(self, key: &str, lease: &Lease) -> String {
        match self {
            LeaseVar::Key => key.to_string(),
            LeaseVar::Token => lease.token.to_string(),
            LeaseVar::Holder => lease.holder_id.clone(),
            LeaseVar::Lease => json::lease(lease).to_string(),
        }
    }

    /// `run --help` and `elect --help`: the command's environment.
    pub(crate) fn help() -> String {
        let width = Self::ALL.iter().map(|v| v.name().len()).max().unwrap_or(0);
        let mut text = String::from("CMD's environment, while it holds the lease:\n");
        for v in Self::ALL {
            text.push_str(&format!("  {:width$}  {}\n", v.name(), v.holds()));
        }
        text.push_str(
            "and, so that a nested s3-lease finds the same locks: S3LEASE_BUCKET, \
             S3LEASE_ENDPOINT (when an endpoint was given), S3LEASE_REGION, and \
             S3LEASE_PREFIX, S3LEASE_STORE, S3LEASE_TABLE, S3LEASE_CONTAINER, \
             S3LEASE_STRATEGY and S3LEASE_EXPIRY_CLOCK when set. CMD's AWS \
             variables are left as they were.",
        );
        text
    }
}

/// Starts the command, with the lease in its environment, as the leader
/// of a process group of its own, which the guardian ends at `held_until`
/// unless fed a later deadline (SIGKILL `kill_after` after SIGTERM).
pub(super) fn spawn_group(
    job: &Job,
    lease: &Lease,
    held_until: clock::Instant,
) -> Result<CommandGroup, Failure> {
    let (program, args) = job
        .command
        .split_first()
        .ok_or_else(|| Failure::new(USAGE, "no command to run"))?;
    let mut c = Command::new(program);
    c.args(args)
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .envs(LeaseVar::ALL.map(|v| (v.name(), v.value(&job.key, lease))));
    let warn = |w: &str| job.say("warning", Some(lease.token), w);
    let guardian = GuardianArgs {
        kill_after: job.kill_after,
        key: &job.key,
        holder: &job.holder,
    };
    CommandGroup::spawn(c, held_until, &guardian, warn).map_err(|e| {
        // The shell's codes: 127 not found, 126 found but not runnable.
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        Failure::new(code, format!("cannot start {program:?}: {e}"))
    })
}

/// How a group is being stopped: SIGTERM to the group, then SIGKILL
/// `kill_after` later, and a line once the command itself has exited
/// while others of its group are still running.
pub(super) struct Stopping {
    /// When SIGTERM was sent, on the host's clock (suspended time counted).
    since: Option<clock::Instant>,
    killed: bool,
    leftovers_said: bool,
}

impl Stopping {
    pub(super) fn new() -> Self {
        Stopping {
            since: None,
            killed: false,
            leftovers_said: false,
        }
    }

    /// Starts stopping the group (once); the guardian is told, so that
    /// the SIGKILL comes on time even if we cannot send it.
    pub(super) fn begin(&mut self, group: &mut CommandGroup) {
        if self.since.is_none() {
            group.signal(libc::SIGTERM);
            group.ending();
            self.since = Some(Clock::system().now());
        }
    }

    /// SIGKILL once `kill_after` has passed since `begin`; true when sent now.
    pub(super) fn escalate(&mut self, group: &CommandGroup, kill_after: Duration) -> bool {
        match self.since {
            Some(at)
                if !self.killed
                    && Clock::system().now().saturating_duration_since(at) >= kill_after =>
            {
                group.signal(libc::SIGKILL);
                self.killed = true;
                true
            }
            _ => false,
        }
    }

    /// True the first time the command has exited with others left.
    pub(super) fn first_leftovers(&mut self, state: GroupState) -> bool {
        if matches!(state, GroupState::Leftovers(_)) && !self.leftovers_said {
            self.leftovers_said = true;
            return true;
        }
        false
    }
}

/// The line for a command that exited while others of its group run on.
pub(super) fn leftovers_line(status: i32, pid: i32) -> String {
    format!(
        "the command exited ({status}); waiting for the processes it left in its process group {pid} (the lock is held until none is left)"
    )
}
