//! A linearizability checker for the fenced register: one object written by
//! `fenced-put` and `fenced-delete` (see `crate::fenced`).
//!
//! A history is a set of [`Operation`]s, each a call, its result and the
//! interval of real time it took. [`check`] looks for a *linearization*: an
//! order of the operations that respects real time (an operation that
//! ended before another began comes first) and in which every operation,
//! applied one at a time to the sequential specification below, gives the
//! result it really got; and, when given, ends in the observed final state.
//!
//! # The sequential specification
//!
//! The register is [`State::Absent`] or [`State::Present`] with the token
//! of the write that stored it and the value it stored (none: a tombstone).
//! A call with token `t` meets the stored token `s` (if any):
//! - refused when `s > t`, or `s == t` with `reject_equal`: result
//!   [`FencedResult::Fenced`]`{ stored_token: s }`, and nothing changes;
//! - otherwise accepted: result [`FencedResult::Written`]`{ previous_token }`
//!   (`Some(s)`, a tombstone's token included; `None` when absent), or
//!   [`FencedResult::Accepted`] when the reply does not say; and the
//!   register becomes `Present { token: t, value }`: the put's value, or
//!   `None` for a delete (a tombstone keeps the token).
//!
//! An [`FencedResult::Unknown`] operation (a lost or ambiguous reply) may
//! have taken effect at any point after it started, even after its caller
//! gave up, or never.
//!
//! # The search
//!
//! Depth-first search over linearization points (Wing & Gong): at each step,
//! try every operation not yet placed whose real-time predecessors are all
//! placed and whose result the specification gives in the current state.
//! Lowe's memoization prunes it: the future of the search depends only on
//! which operations are placed and on the register's state, so each such
//! pair is explored once. An operation that changes nothing (a refusal) and
//! fits now is placed at once, without branching: placing it later is never
//! needed.
//!
//! The cost grows with how many operations overlap, not with the length of
//! the history: it is meant for histories of up to a few dozen operations
//! with about a dozen in flight at once. Twelve fully concurrent operations
//! take tens of milliseconds at worst in an unoptimized test build (all
//! replies lost and a final state nobody wrote, so every order is tried).
//! Histories longer than [`MAX_OPS`] are refused, and a search that visits
//! more than [`MAX_EXPLORED`] pairs (some seconds) stops with
//! [`ViolationKind::Inconclusive`] rather than run for ever.
//!
//! The answer is deterministic: the same history gives the same
//! linearization or the same violation.

use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

/// The most operations one history may have (the placed set is a `u128`).
pub const MAX_OPS: usize = 128;
/// The most (placed operations, state) pairs one search visits.
pub const MAX_EXPLORED: usize = 1 << 20;

/// A call on the fenced object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FencedCall {
    /// `fenced-put` with the lease's `token`; `value` names the body (give
    /// every write a value of its own, as the bodies should be).
    Put { token: u64, value: u64 },
    /// `fenced-delete` with the lease's `token`: stores a tombstone.
    Delete { token: u64 },
}

impl FencedCall {
    /// The fencing token of the caller's lease.
    pub fn token(&self) -> u64 {
        match *self {
            FencedCall::Put { token, .. } | FencedCall::Delete { token } => token,
        }
    }

    /// What the register holds once this call is accepted.
    pub fn stores(&self) -> State {
        match *self {
            FencedCall::Put { token, value } => State::Present {
                token,
                value: Some(value),
            },
            FencedCall::Delete { token } => State::Present { token, value: None },
        }
    }
}

/// What the caller saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FencedResult {
    /// Accepted: the `fenced-write` record's `previous-token`, the token
    /// stored before this write (`None`: the object was absent; a
    /// tombstone's token counts).
    Written { previous_token: Option<u64> },
    /// Accepted, but the reply does not say what it replaced (WIT
    /// `fenced-delete` returns nothing): any accepting state fits.
    Accepted,
    /// Refused with the `fenced` error: the token stored was higher (or
    /// equal, with `reject_equal`).
    Fenced { stored_token: u64 },
    /// The reply was lost or ambiguous (a transport error, a timeout, no
    /// reply yet): it may have taken effect at any point after `start` —
    /// `end` is not used — or never.
    Unknown,
}

/// One call of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Operation {
    /// Who called; for messages only (a client's own order follows from
    /// `start` and `end`).
    pub client: usize,
    pub call: FencedCall,
    pub result: FencedResult,
    /// When the call was made, in any unit shared by the history.
    pub start: u64,
    /// When its reply arrived (`u64::MAX`: never). `a` precedes `b` in real
    /// time when `a.end < b.start`; equal instants are concurrent.
    pub end: u64,
}

/// The register's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum State {
    /// Never written.
    #[default]
    Absent,
    /// Written with `token` (0: a plain, unfenced PUT); `value` is `None`
    /// for a tombstone.
    Present { token: u64, value: Option<u64> },
}

impl State {
    /// The token stored, if any.
    pub fn token(&self) -> Option<u64> {
        match *self {
            State::Absent => None,
            State::Present { token, .. } => Some(token),
        }
    }
}

/// What was observed at the end, after every operation (e.g. by
/// `fenced-get`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FinalState {
    /// The token seen; `None`: not seen (not checked).
    pub token: Option<u64>,
    /// The value seen; `None`: absent or a tombstone (as `fenced-get`
    /// reports both).
    pub value: Option<u64>,
}

impl FinalState {
    /// Whether the register in `state` would be observed as `self`: the
    /// values agree (`None` matches absence and any tombstone), and so do
    /// the tokens when `self.token` is given (absence has no token).
    pub fn matches(&self, state: &State) -> bool {
        let value = match state {
            State::Absent => None,
            State::Present { value, .. } => *value,
        };
        value == self.value && self.token.is_none_or(|t| state.token() == Some(t))
    }
}

/// An order that explains the history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linearization {
    /// Indices into the history, in the order they took effect: every
    /// operation with a known result, and the `Unknown` ones that took
    /// effect.
    pub order: Vec<usize>,
    /// The `Unknown` operations that never took effect in this order.
    pub omitted: Vec<usize>,
    /// The state after `order`.
    pub final_state: State,
}

/// Why a history is not linearizable (or could not be checked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub kind: ViolationKind,
    /// The longest order found (indices into the history) in which every
    /// operation gets its result: the most operations with known results
    /// that could be placed.
    pub longest_prefix: Vec<usize>,
    /// The state after `longest_prefix`.
    pub state_after_prefix: State,
    /// The operations with known results missing from `longest_prefix`.
    pub unplaced: Vec<usize>,
    /// All of the above in words, with the history's operations spelled out
    /// and why each unplaced one could not come next.
    pub explanation: String,
}

/// The kinds of [`Violation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ViolationKind {
    /// No order places every operation with a known result.
    NotLinearizable,
    /// Orders that place them all exist, but none ends in the final state.
    FinalState,
    /// Not a history this checker takes: more than [`MAX_OPS`] operations,
    /// or one that ended before it started.
    Malformed,
    /// The search gave up after [`MAX_EXPLORED`] steps: neither proved nor
    /// refuted.
    Inconclusive,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explanation)
    }
}

impl std::error::Error for Violation {}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            State::Absent => f.write_str("absent"),
            State::Present {
                token,
                value: Some(v),
            } => write!(f, "value {v} by token {token}"),
            State::Present { token, value: None } => write!(f, "tombstone by token {token}"),
        }
    }
}

impl fmt::Display for FinalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(f, "value {v}")?,
            None => f.write_str("absent or tombstone")?,
        }
        match self.token {
            Some(t) => write!(f, " with token {t}"),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {} ", self.client)?;
        match self.call {
            FencedCall::Put { token, value } => write!(f, "put value {value} token {token}")?,
            FencedCall::Delete { token } => write!(f, "delete token {token}")?,
        }
        match self.end {
            u64::MAX => write!(f, " [{}, never]", self.start)?,
            end => write!(f, " [{}, {end}]", self.start)?,
        }
        match self.result {
            FencedResult::Written {
                previous_token: Some(p),
            } => write!(f, " -> written over token {p}"),
            FencedResult::Written {
                previous_token: None,
            } => f.write_str(" -> written, object was absent"),
            FencedResult::Accepted => f.write_str(" -> accepted"),
            FencedResult::Fenced { stored_token } => {
                write!(f, " -> fenced by stored token {stored_token}")
            }
            FencedResult::Unknown => f.write_str(" -> unknown"),
        }
    }
}

/// The state after `op` in `state`, if the specification gives `op` its
/// result there; `Err` says why not. An `Unknown` operation fits only where
/// it would be accepted (refused, it changes nothing: the same as never).
pub fn step(op: &Operation, state: &State, reject_equal: bool) -> Result<State, String> {
    apply(op, state, reject_equal).ok_or_else(|| why_not(op, state, reject_equal))
}

/// The token that refuses a call with token `ours` in `state`, if any.
fn refused_by(ours: u64, state: &State, reject_equal: bool) -> Option<u64> {
    state
        .token()
        .filter(|&s| s > ours || (s == ours && reject_equal))
}

/// [`step`] without the reason: the search's inner loop.
fn apply(op: &Operation, state: &State, reject_equal: bool) -> Option<State> {
    let refused_by = refused_by(op.call.token(), state, reject_equal);
    match (op.result, refused_by) {
        (FencedResult::Fenced { stored_token }, Some(s)) => (s == stored_token).then_some(*state),
        (FencedResult::Fenced { .. }, None) | (_, Some(_)) => None,
        (FencedResult::Written { previous_token }, None) => {
            (previous_token == state.token()).then(|| op.call.stores())
        }
        (FencedResult::Accepted | FencedResult::Unknown, None) => Some(op.call.stores()),
    }
}

fn why_not(op: &Operation, state: &State, reject_equal: bool) -> String {
    let ours = op.call.token();
    match (op.result, refused_by(ours, state, reject_equal)) {
        (FencedResult::Fenced { stored_token }, Some(_)) => {
            format!("refused by token {stored_token}, but the object is {state}")
        }
        (FencedResult::Fenced { stored_token }, None) => format!(
            "refused by token {stored_token}, but the object is {state}, which accepts token {ours}"
        ),
        (_, Some(s)) => format!("token {ours} is refused by stored token {s}"),
        (
            FencedResult::Written {
                previous_token: Some(p),
            },
            None,
        ) => format!("it replaced token {p}, but the object is {state}"),
        (_, None) => format!("it found no object, but the object is {state}"),
    }
}

/// Checks `history` against the fenced register's specification, starting
/// from `initial`, with equal tokens refused when `reject_equal` (for every
/// operation of the history: WIT `fenced-delete` always accepts equal
/// tokens, so check its histories with `reject_equal` false). When
/// `final_state` is given, the order must end in a state it
/// [matches](FinalState::matches).
pub fn check(
    history: &[Operation],
    reject_equal: bool,
    initial: State,
    final_state: Option<FinalState>,
) -> Result<Linearization, Violation> {
    let malformed = |why: String| Violation {
        kind: ViolationKind::Malformed,
        longest_prefix: Vec::new(),
        state_after_prefix: initial,
        unplaced: (0..history.len()).collect(),
        explanation: why,
    };
    if history.len() > MAX_OPS {
        return Err(malformed(format!(
            "{} operations: the checker takes at most {MAX_OPS}",
            history.len()
        )));
    }
    if let Some((i, op)) = history
        .iter()
        .enumerate()
        .find(|(_, o)| o.end < o.start && o.result != FencedResult::Unknown)
    {
        return Err(malformed(format!(
            "operation {i} ends before it starts: {op}"
        )));
    }

    check_within(history, reject_equal, initial, final_state, MAX_EXPLORED)
}

/// [`check`] with a search budget of `max_explored` pairs.
fn check_within(
    history: &[Operation],
    reject_equal: bool,
    initial: State,
    final_state: Option<FinalState>,
    max_explored: usize,
) -> Result<Linearization, Violation> {
    let mut search = Search::new(history, reject_equal, initial, final_state, max_explored);
    if search.run() {
        let order = search.path.clone();
        let omitted = (0..history.len()).filter(|i| !order.contains(i)).collect();
        let final_state = order.iter().fold(initial, |s, &i| {
            step(&history[i], &s, reject_equal).unwrap()
        });
        return Ok(Linearization {
            order,
            omitted,
            final_state,
        });
    }
    Err(search.violation())
}

/// Index into `Search::states` (0: the initial state).
type StateId = u16;

struct Search<'a> {
    ops: &'a [Operation],
    reject_equal: bool,
    initial: State,
    final_state: Option<FinalState>,
    /// Per operation: the operations with known results that ended before
    /// it started.
    after: Vec<u128>,
    /// Every operation.
    all: u128,
    /// The operations with known results.
    known: u128,
    /// The refusals (which change nothing).
    refusal: u128,
    /// Every state the register can be in: the initial one and what each
    /// operation stores, without repeats, so a state is a small index.
    states: Vec<State>,
    /// Per operation: what it stores when accepted, in `states`.
    stores: Vec<StateId>,
    /// Lowe's memo: (placed, state) pairs already explored.
    seen: HashSet<(u128, StateId), BuildHasherDefault<MixHasher>>,
    max_explored: usize,
    path: Vec<usize>,
    longest: Vec<usize>,
    longest_known: u32,
    /// Per state: whether a complete order ended in it (none matched).
    ended: Vec<bool>,
    exhausted: bool,
}

/// A quick hash for the memo's keys (SipHash is needlessly slow here, above
/// all in unoptimized test builds).
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(23) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_u128(&mut self, x: u128) {
        self.write_u64(x as u64);
        self.write_u64((x >> 64) as u64);
    }

    fn write_u16(&mut self, x: u16) {
        self.write_u64(u64::from(x));
    }
}

fn bit(i: usize) -> u128 {
    1u128 << i
}

impl<'a> Search<'a> {
    fn new(
        ops: &'a [Operation],
        reject_equal: bool,
        initial: State,
        final_state: Option<FinalState>,
        max_explored: usize,
    ) -> Self {
        let is_known = |o: &Operation| o.result != FencedResult::Unknown;
        let mask = |f: &dyn Fn(&Operation) -> bool| {
            (0..ops.len())
                .filter(|&i| f(&ops[i]))
                .fold(0, |m, i| m | bit(i))
        };
        let all = mask(&|_| true);
        let known = mask(&is_known);
        let refusal = mask(&|o| matches!(o.result, FencedResult::Fenced { .. }));
        let after = ops
            .iter()
            .map(|b| {
                (0..ops.len())
                    .filter(|&a| is_known(&ops[a]) && ops[a].end < b.start)
                    .fold(0, |m, a| m | bit(a))
            })
            .collect();
        let mut states = vec![initial];
        let stores = ops
            .iter()
            .map(|op| {
                let s = op.call.stores();
                match states.iter().position(|x| *x == s) {
                    Some(id) => id as StateId,
                    None => {
                        states.push(s);
                        (states.len() - 1) as StateId
                    }
                }
            })
            .collect();
        Search {
            ops,
            reject_equal,
            initial,
            final_state,
            after,
            all,
            known,
            refusal,
            ended: vec![false; states.len()],
            states,
            stores,
            seen: HashSet::default(),
            max_explored,
            path: Vec::new(),
            longest: Vec::new(),
            longest_known: 0,
            exhausted: false,
        }
    }

    /// Operation `i`, not placed, can come next: its predecessors are placed.
    fn ready(&self, placed: u128, i: usize) -> bool {
        self.after[i] & !placed == 0
    }

    /// The search from the root.
    fn run(&mut self) -> bool {
        self.seen.insert((0, 0));
        self.dfs(0, 0)
    }

    /// Extends `self.path` (placing `placed`, in `state`, a pair not seen
    /// before) to a full linearization; true when found (then `self.path`
    /// is it).
    fn dfs(&mut self, placed: u128, state: StateId) -> bool {
        let known_placed = (placed & self.known).count_ones();
        if known_placed > self.longest_known {
            self.longest_known = known_placed;
            self.longest = self.path.clone();
        }
        let s = self.states[state as usize];
        if placed & self.known == self.known {
            if self.final_state.is_none_or(|f| f.matches(&s)) {
                return true;
            }
            self.ended[state as usize] = true;
        }
        // A refusal that fits now changes nothing: place it without
        // branching.
        let mut free = self.all & !placed;
        while free != 0 {
            let i = free.trailing_zeros() as usize;
            free &= free - 1;
            if self.refusal & bit(i) != 0
                && self.ready(placed, i)
                && apply(&self.ops[i], &s, self.reject_equal).is_some()
            {
                return self.visit(placed, i, state);
            }
        }
        let mut free = self.all & !placed;
        while free != 0 {
            let i = free.trailing_zeros() as usize;
            free &= free - 1;
            if !self.ready(placed, i) || apply(&self.ops[i], &s, self.reject_equal).is_none() {
                continue;
            }
            let next = if self.refusal & bit(i) != 0 {
                state
            } else {
                self.stores[i]
            };
            if self.visit(placed, i, next) {
                return true;
            }
            if self.exhausted {
                return false;
            }
        }
        false
    }

    /// Places operation `i` next, leaving the register in `next`, and
    /// searches on unless that pair was seen (or the budget is spent).
    fn visit(&mut self, placed: u128, i: usize, next: StateId) -> bool {
        let placed = placed | bit(i);
        if !self.seen.insert((placed, next)) {
            return false;
        }
        if self.seen.len() > self.max_explored {
            self.exhausted = true;
            return false;
        }
        self.path.push(i);
        if self.dfs(placed, next) {
            return true;
        }
        self.path.pop();
        false
    }

    fn violation(&self) -> Violation {
        let ops = self.ops;
        let mut state = self.initial;
        let mut placed = 0;
        let mut text = String::new();
        let mut line = |s: String| {
            text.push_str(&s);
            text.push('\n');
        };
        let kind = if self.exhausted {
            ViolationKind::Inconclusive
        } else if self.ended.contains(&true) {
            ViolationKind::FinalState
        } else {
            ViolationKind::NotLinearizable
        };
        line(match kind {
            ViolationKind::Inconclusive => {
                format!(
                    "inconclusive: the search stopped after {} steps",
                    self.max_explored
                )
            }
            ViolationKind::FinalState => {
                let ends: Vec<String> = (self.states.iter().zip(&self.ended))
                    .filter(|(_, &e)| e)
                    .map(|(s, _)| s.to_string())
                    .collect();
                format!(
                    "not linearizable: every order of the operations ends {}, not {}",
                    ends.join(" or "),
                    self.final_state.unwrap()
                )
            }
            _ => "not linearizable: no order of the operations gives each its result".into(),
        });
        line(format!("history ({} operations):", ops.len()));
        for (i, op) in ops.iter().enumerate() {
            line(format!("  #{i}: {op}"));
        }
        line(format!("longest order found, from {}:", self.initial));
        for &i in &self.longest {
            state = step(&ops[i], &state, self.reject_equal).unwrap();
            placed |= bit(i);
            line(format!("  #{i} -> {state}"));
        }
        let unplaced: Vec<usize> = (0..ops.len())
            .filter(|&i| self.known & bit(i) != 0 && placed & bit(i) == 0)
            .collect();
        if !unplaced.is_empty() {
            line("then none of these can come next:".into());
        }
        for &i in &unplaced {
            let why = match (0..ops.len()).find(|&a| self.after[i] & !placed & bit(a) != 0) {
                Some(a) => format!("must follow #{a}, which ended before it started"),
                None => step(&ops[i], &state, self.reject_equal)
                    .err()
                    .unwrap_or_else(|| "it fits here, but nothing after it does".into()),
            };
            line(format!("  #{i}: {why}"));
        }
        Violation {
            kind,
            longest_prefix: self.longest.clone(),
            state_after_prefix: state,
            unplaced,
            explanation: text,
        }
    }
}

#[cfg(test)]
mod tests;
