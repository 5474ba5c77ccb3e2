//! Rust types and calls generated from the contract (`wit/`, world `lease-api`).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "s3-lease:lease/lease-api",
    additional_derives: [PartialEq, Eq],
});

pub use exports::s3_lease::lease::types::{
    AddressingStyle, Capability, CapabilityResult, ClockOffset, Config, Credentials, ElectorConfig,
    ElectorEvent, Error, ExpiryClock, FenceOptions, FencedObject, FencedWrite, Lease, LockState,
    Options, PreflightReport, Role, StepResult, StopReason, Strategy, Verdict,
};
