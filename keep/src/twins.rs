//! Our records and their twins: the same record of the contract as a
//! crate's generated bindings define it (wasmtime's `bindgen!` in the host
//! crate, wit-bindgen in the component and the guest crate). Each crate
//! converts field by field with [`same_fields!`](crate::same_fields),
//! naming the fields that travel as they are and saying what the others
//! become; the contract's enums convert by [`same_cases!`](crate::same_cases).
//! One mechanism for the three crates, so no converter is written by hand.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// A value made from its twin (`From` for records and enums of the
/// contract, across the crates' generated copies): lists, options and
/// boxes convert item by item, plain values stay as they are.
pub trait FromTwin<T> {
    fn from_twin(twin: T) -> Self;
}

/// [`FromTwin`] the other way round, as `Into` is to `From`.
pub trait IntoTwin<T> {
    fn into_twin(self) -> T;
}

impl<T, U: FromTwin<T>> IntoTwin<U> for T {
    fn into_twin(self) -> U {
        U::from_twin(self)
    }
}

macro_rules! as_they_are {
    ($($ty:ty),*) => {$(
        impl FromTwin<$ty> for $ty {
            fn from_twin(twin: $ty) -> $ty {
                twin
            }
        }
    )*};
}

as_they_are!(bool, u8, u16, u32, u64, i64, String);

impl<T, U: FromTwin<T>> FromTwin<Option<T>> for Option<U> {
    fn from_twin(twin: Option<T>) -> Self {
        twin.map(U::from_twin)
    }
}

impl<T, U: FromTwin<T>> FromTwin<Vec<T>> for Vec<U> {
    fn from_twin(twin: Vec<T>) -> Self {
        twin.into_iter().map(U::from_twin).collect()
    }
}

impl<T, U: FromTwin<T>> FromTwin<T> for Box<U> {
    fn from_twin(twin: T) -> Self {
        Box::new(U::from_twin(twin))
    }
}

/// [`FromTwin`] for records, one line each: `|v: Source| -> Target`, the
/// fields that convert as they are (by [`FromTwin`], so records, enums,
/// lists and options of them nest), then after `;` the target's fields
/// that are made otherwise, each as an expression over `v`:
///
/// ```
/// use core::time::Duration;
/// use s3_lease_keep::twins::{FromTwin, IntoTwin};
/// mod generated {
///     pub struct Lease { pub key: String, pub token: u64, pub ttl_ms: u64 }
/// }
/// pub struct Lease { pub key: String, pub token: u64, pub ttl: Duration }
/// s3_lease_keep::same_fields! {
///     |l: generated::Lease| -> Lease { key, token; ttl: Duration::from_millis(l.ttl_ms) }
///     |l: Lease| -> generated::Lease { key, token; ttl_ms: l.ttl.as_millis() as u64 }
/// }
/// let ours: Lease = generated::Lease { key: "k".into(), token: 7, ttl_ms: 1500 }.into_twin();
/// assert_eq!((ours.token, ours.ttl), (7, Duration::from_millis(1500)));
/// ```
///
/// The target is a struct literal: a field of it left out fails the
/// build, so a field added to the contract is met in every crate.
#[macro_export]
macro_rules! same_fields {
    ($(
        |$v:ident : $source:ty| -> $target:ty {
            $($field:ident),* $(,)? $(; $($made:ident : $how:expr),* $(,)?)?
        }
    )*) => {$(
        impl $crate::twins::FromTwin<$source> for $target {
            #[allow(clippy::redundant_field_names)]
            fn from_twin($v: $source) -> Self {
                // What is made is made first, while `v` is whole.
                Self {
                    $($($made: $how,)*)?
                    $($field: $crate::twins::FromTwin::from_twin($v.$field),)*
                }
            }
        }
    )*};
}
