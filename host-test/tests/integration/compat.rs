//! The contract is versioned. 0.2.0 broke 0.1 on purpose: leases carry a
//! seal, lock states their `expires-in-ms`, and errors a `clock-skewed`
//! case. A host built against the 0.1.0 WIT must be refused when it binds,
//! never run with records whose layout no longer matches. 0.3.0 broke 0.2
//! likewise: the config gained `preflight` and errors `store-unsafe`. And
//! 0.4.0 broke 0.3: step results gained `leading-until-ms`, which a caller
//! must act on. 0.5.0 broke 0.4: errors gained `limit-mismatch`, with the
//! semaphore calls. 0.6.0 broke 0.5: the config gained `store` (DynamoDB),
//! and capabilities the table checks. 0.7.0 broke 0.6: the store gained
//! `azure-blob`, and capabilities the race's two. 0.8.0 broke 0.7: the
//! store gained `gcs`, and the client `set-gcs-credential`. 0.9.0 broke
//! 0.8: the config is the settings every store shares and a `store`
//! variant whose case holds that store's own endpoint, place and
//! credential, and one `set-credential` replaced the three setters.

use super::*;

mod v0_1_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.1.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_2_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.2.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_3_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.3.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_8_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.8.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_7_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.7.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_6_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.6.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_5_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.5.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

mod v0_4_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.4.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

#[test]
fn a_host_built_on_the_0_8_contract_is_refused_when_it_binds() {
    let refused = v0_8_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.8 exports must not be found")
    );
    assert!(message.contains("0.8.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_7_contract_is_refused_when_it_binds() {
    let refused = v0_7_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.7 exports must not be found")
    );
    assert!(message.contains("0.7.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_6_contract_is_refused_when_it_binds() {
    let refused = v0_6_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.6 exports must not be found")
    );
    assert!(message.contains("0.6.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_5_contract_is_refused_when_it_binds() {
    let refused = v0_5_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.5 exports must not be found")
    );
    assert!(message.contains("0.5.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_4_contract_is_refused_when_it_binds() {
    let refused = v0_4_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.4 exports must not be found")
    );
    assert!(message.contains("0.4.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_3_contract_is_refused_when_it_binds() {
    let refused = v0_3_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.3 exports must not be found")
    );
    assert!(message.contains("0.3.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_2_contract_is_refused_when_it_binds() {
    let refused = v0_2_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.2 exports must not be found")
    );
    assert!(message.contains("0.2.0"), "{message}");
}

#[test]
fn a_host_built_on_the_0_1_contract_is_refused_when_it_binds() {
    let refused = v0_1_0::LeaseApiPre::new(harness().instance_pre().clone());
    let message = format!(
        "{:#}",
        refused.err().expect("0.1 exports must not be found")
    );
    assert!(message.contains("0.1.0"), "{message}");
}
