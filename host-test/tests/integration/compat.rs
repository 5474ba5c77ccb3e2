//! The contract is versioned. 0.2.0 broke 0.1 on purpose: leases carry a
//! seal, lock states their `expires-in-ms`, and errors a `clock-skewed`
//! case. A host built against the 0.1.0 WIT must be refused when it binds,
//! never run with records whose layout no longer matches. 0.3.0 broke 0.2
//! likewise: the config gained `preflight` and errors `store-unsafe`. And
//! 0.4.0 broke 0.3: step results gained `leading-until-ms`, which a caller
//! must act on. 0.5.0 broke 0.4: errors gained `limit-mismatch`, with the
//! semaphore calls. 0.6.0 broke 0.5: the config gained `store` (DynamoDB),
//! and capabilities the table checks. Within 0.6 the store gained
//! `azure-blob` and capabilities the race: the same names, other types, so
//! a host built on the first 0.6 WIT binds, and its first call is refused
//! by the type check.

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

mod v0_6_0_first {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.6.0-first.wit",
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

/// Within 0.6 the names stay, so binding finds them; the types differ, so
/// the first call (the constructor) is refused by wasmtime's type check
/// before the component runs.
#[test]
fn a_host_built_on_the_first_0_6_contract_is_refused_at_its_first_call() {
    let pre = v0_6_0_first::LeaseApiPre::new(harness().instance_pre().clone());
    let outcome = pre.and_then(|pre| {
        let (mut store, _, _) = harness().store();
        let api = pre.instantiate(&mut store)?;
        let client = api.s3_lease_lease_lease().client();
        let config = v0_6_0_first::exports::s3_lease::lease::types::Config {
            endpoint: endpoint().url.clone(),
            region: endpoint().region.clone(),
            bucket: endpoint().bucket.clone(),
            addressing: v0_6_0_first::exports::s3_lease::lease::types::AddressingStyle::Path,
            credentials: v0_6_0_first::exports::s3_lease::lease::types::Credentials {
                access_key_id: endpoint().access_key_id.clone(),
                secret_access_key: endpoint().secret_access_key.clone(),
                session_token: None,
            },
            key_prefix: Some(fresh_prefix("compat-first-0.6")),
            request_timeout_ms: None,
            strategy: None,
            expiry_clock: None,
            preflight: None,
            seal_key: None,
            store: None,
        };
        let handle = client.call_constructor(&mut store, &config)?;
        let report = client.call_preflight(&mut store, handle.unwrap())?;
        Ok(format!("{report:?}"))
    });
    let message = format!(
        "{:#}",
        outcome.expect_err("the first 0.6 types must not be taken")
    );
    assert!(
        message.contains("type mismatch for field store")
            && message.contains("expected variant of 2 cases, found 3 cases"),
        "{message}"
    );
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
