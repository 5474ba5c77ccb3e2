//! The contract's closed sets of names, defined once: the core, the host
//! crate and the guest crate all use these (the leadership machine's
//! [`Role`](crate::leadership::Role) and
//! [`StopReason`](crate::leadership::StopReason) likewise), and each meets
//! its generated bindings' twin through [`same_cases!`](crate::same_cases),
//! which the compiler checks case for case in both directions.
//!
//! A case added to the contract is added here and nowhere else by hand:
//! every `match` over these enums, and every conversion, then fails to
//! build until it says what the case means. So none is `#[non_exhaustive]`
//! and no converter has a catch-all arm.

use core::fmt;

macro_rules! vocabulary {
    ($(
        $(#[$meta:meta])*
        pub enum $ty:ident {
            $( $(#[$case_meta:meta])* $case:ident => $name:literal ),* $(,)?
        }
    )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $ty {
            $( $(#[$case_meta])* $case ),*
        }

        impl $ty {
            /// Every case, in the contract's order.
            pub const ALL: &'static [$ty] = &[$($ty::$case),*];

            /// Its name in the contract (kebab-case), as the command line,
            /// JSON and messages say it.
            pub fn name(self) -> &'static str {
                match self { $($ty::$case => $name),* }
            }

            /// The case of that name in the contract.
            pub fn from_name(name: &str) -> Option<$ty> {
                match name {
                    $($name => Some($ty::$case),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    )*};
}

vocabulary! {
    /// How a key's lock is laid out in the store.
    pub enum Strategy {
        /// One lock object per key, updated by compare-and-swap (the default).
        SingleObject => "single-object",
        /// One object per leader epoch, for stores with `If-None-Match` but
        /// not `If-Match`.
        EpochObjects => "epoch-objects",
    }

    /// Which clock decides that a lease nobody released has expired.
    pub enum ExpiryClock {
        /// The holder's wall clock, against the reader's (the design's rule).
        Holder => "holder",
        /// The store's (`Last-Modified` and `Date`): the default where the
        /// store records when it wrote.
        Server => "server",
        /// The reader's monotonic clock: the same version seen unchanged
        /// for the ttl (the default where the store records no write time).
        Observed => "observed",
    }

    /// How a bucket (or a storage account) reaches the server.
    pub enum Addressing {
        /// `https://endpoint/bucket/key`: MinIO, SeaweedFS, emulators.
        Path => "path",
        /// `https://bucket.endpoint/key`: AWS's default.
        VirtualHosted => "virtual-hosted",
    }

    /// What the store preflight checks, in the order it reports them.
    pub enum Capability {
        /// `If-None-Match: *` on an existing key is refused (and accepted on
        /// a new one): how a first grant is made.
        IfNoneMatchExisting => "if-none-match-existing",
        /// `If-Match` with a wrong ETag is refused on PUT, the right one
        /// accepted, and the ETag changes with the body: compare-and-swap.
        IfMatchPut => "if-match-put",
        /// `If-Match` on a missing key is refused (404 or 412).
        IfMatchMissingKey => "if-match-missing-key",
        /// `If-Match` with a wrong ETag is refused on DELETE.
        IfMatchDelete => "if-match-delete",
        /// Replies carry `Date`, reads carry `Last-Modified`, on one clock.
        ServerDates => "server-dates",
        /// LIST with `start-after` starts after that key.
        ListStartAfter => "list-start-after",
        /// GET with `If-None-Match` answers 304 for the object's ETag, and
        /// the object for any other.
        ConditionalGet => "conditional-get",
        /// A body whose declared hash does not match is refused.
        PayloadHash => "payload-hash",
        /// This machine's wall clock against the store's `Date`.
        ClockOffset => "clock-offset",
        /// A table store's key schema is the one the lock items need.
        TableKeySchema => "table-key-schema",
        /// A table store's TTL cannot sweep a lock item's token.
        TtlAttribute => "ttl-attribute",
        /// Of writers racing to create one new key, exactly one wins.
        ConcurrentCreate => "concurrent-create",
        /// Of writers racing to update one key on one ETag, exactly one wins.
        ConcurrentUpdate => "concurrent-update",
    }

    /// What a preflight probe showed.
    pub enum Verdict {
        Pass => "pass",
        Fail => "fail",
        /// Not decided: no reply, an odd one, or its probe could not run.
        Unknown => "unknown",
    }

    /// What `audit-verify` found (the grant log's verifier).
    pub enum AuditFindingKind {
        /// One token granted twice.
        TokenRepeated => "token-repeated",
        /// A grant made without seeing an earlier one: they raced.
        MissedGrant => "missed-grant",
        /// A grant made while the lease it replaced was live on the
        /// store's clock.
        TakenWhileLive => "taken-while-live",
        /// A semaphore's grant with its limit of other holders live.
        OverLimit => "over-limit",
        /// A token that no record explains.
        UnexplainedGap => "unexplained-gap",
        /// A takeover whose end the store's times do not show (a store
        /// that keeps no time, or a record without them).
        NotOnStoreClock => "not-on-store-clock",
        /// A record that could not be read.
        Unreadable => "unreadable",
        /// A fenced object whose token no grant of the key recorded.
        FencedUnknownToken => "fenced-unknown-token",
        /// A fenced object's versions whose tokens fell.
        FencedTokenFell => "fenced-token-fell",
    }
}

impl AuditFindingKind {
    /// The log shows two holders at once (or a token granted twice), as
    /// opposed to not showing that there were never two.
    pub fn is_overlap(self) -> bool {
        matches!(
            self,
            AuditFindingKind::TokenRepeated
                | AuditFindingKind::MissedGrant
                | AuditFindingKind::TakenWhileLive
                | AuditFindingKind::OverLimit
                | AuditFindingKind::FencedTokenFell
        )
    }
}

/// `From` both ways between an enum and its twin of the same case names
/// (the generated bindings' copy of a contract enum), for each pair given:
///
/// ```
/// mod generated {
///     #[derive(Clone, Copy, Debug, PartialEq)]
///     pub enum Verdict { Pass, Fail, Unknown }
/// }
/// use s3_lease_keep::vocabulary::Verdict;
/// s3_lease_keep::same_cases! { Verdict = generated::Verdict { Pass, Fail, Unknown } }
/// assert_eq!(generated::Verdict::from(Verdict::Fail), generated::Verdict::Fail);
/// ```
///
/// Each `match` is exhaustive on both sides: a case missing from the list,
/// or from either enum, fails the build.
#[macro_export]
macro_rules! same_cases {
    ($( $ours:ty = $theirs:ty { $($case:ident),* $(,)? } )*) => {$(
        impl From<$ours> for $theirs {
            fn from(value: $ours) -> $theirs {
                type Ours = $ours;
                type Theirs = $theirs;
                match value { $(Ours::$case => Theirs::$case),* }
            }
        }
        impl From<$theirs> for $ours {
            fn from(value: $theirs) -> $ours {
                type Ours = $ours;
                type Theirs = $theirs;
                match value { $(Theirs::$case => Ours::$case),* }
            }
        }
    )*};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_its_case() {
        fn check<T: Copy + PartialEq + fmt::Debug>(
            all: &[T],
            name: fn(T) -> &'static str,
            from: fn(&str) -> Option<T>,
        ) {
            for &case in all {
                assert_eq!(from(name(case)), Some(case), "{case:?}");
            }
            assert_eq!(from("no-such-case"), None);
        }
        check(Strategy::ALL, Strategy::name, Strategy::from_name);
        check(ExpiryClock::ALL, ExpiryClock::name, ExpiryClock::from_name);
        check(Addressing::ALL, Addressing::name, Addressing::from_name);
        check(Capability::ALL, Capability::name, Capability::from_name);
        check(Verdict::ALL, Verdict::name, Verdict::from_name);
        check(
            AuditFindingKind::ALL,
            AuditFindingKind::name,
            AuditFindingKind::from_name,
        );
        assert_eq!(Capability::ALL.len(), 13);
        assert_eq!(
            alloc::format!("{}", Strategy::EpochObjects),
            "epoch-objects"
        );
    }
}
