//! Rust types and calls generated from the contract (`wit/`): the types
//! once, and the calls of both builds of the component, `lease` (WASI 0.2)
//! and `async-lease` (WASI 0.3). A component exports one of the two; the
//! runtime finds which (`exports::…::GuestIndices::new` fails for the
//! other).

wasmtime::component::bindgen!({
    path: "../wit",
    inline: "
        package s3-lease:host;
        /// Never instantiated as a whole: its exports are bound one by one.
        world either-build {
            export s3-lease:lease/types@0.9.0;
            export s3-lease:lease/lease@0.9.0;
            export s3-lease:lease/async-lease@0.9.0;
        }
    ",
    world: "s3-lease:host/either-build",
    // Both builds' calls are made asynchronously, on the calling thread's
    // own runtime (`engine::local`): the 0.3 build's on a store that runs
    // concurrent calls, the 0.2 build's with `call_async`, so its requests
    // wait on that thread's reactor rather than on another thread's.
    exports: { "s3-lease:lease/async-lease": async, "s3-lease:lease/lease": async },
    additional_derives: [PartialEq, Eq],
});

// All of the contract's types, so a type the contract adds (a store's
// settings, say) needs no line here.
pub use exports::s3_lease::lease::types::*;

/// The contract's own (kebab-case) names, for messages, tables and JSON:
/// the vocabulary's (`s3_lease_keep::vocabulary`), through the one
/// conversion of each enum (`crate::component`).
macro_rules! wit_names {
    ($($ty:ident)*) => {$(
        impl $ty {
            /// This case's name in the WIT.
            pub fn wit_name(&self) -> &'static str {
                s3_lease_keep::vocabulary::$ty::from(*self).name()
            }
        }
    )*};
}

wit_names! { Capability Verdict Strategy ExpiryClock }

impl Error {
    /// The case's name in the WIT (`lost`, `s3`, `store-unsafe`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Lost(_) => "lost",
            Error::Conflict(_) => "conflict",
            Error::ClockSkewed(_) => "clock-skewed",
            Error::AccessDenied(_) => "access-denied",
            Error::NoSuchBucket(_) => "no-such-bucket",
            Error::CorruptLockObject(_) => "corrupt-lock-object",
            Error::S3(_) => "s3",
            Error::Transport(_) => "transport",
            Error::InvalidConfig(_) => "invalid-config",
            Error::InvalidArgument(_) => "invalid-argument",
            Error::Timeout(_) => "timeout",
            Error::Fenced(_) => "fenced",
            Error::StoreUnsafe(_) => "store-unsafe",
            Error::LimitMismatch(_) => "limit-mismatch",
        }
    }
}
