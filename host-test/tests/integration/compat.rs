//! The contract is versioned: 0.1.1 only added functions and types, so a host
//! built against the 0.1.0 WIT still loads today's component (wasmtime
//! matches `@0.1.0` to the semver-compatible `@0.1.1` export, and extra
//! functions are allowed) and works against the real server.

use super::*;

mod v0_1_0 {
    wasmtime::component::bindgen!({
        path: "tests/integration/compat/lease-0.1.0.wit",
        world: "s3-lease:lease/lease-api",
    });
}

use v0_1_0::exports::s3_lease::lease::types as old;

#[test]
fn a_host_built_on_the_0_1_0_contract_still_loads_and_works() {
    let pre = v0_1_0::LeaseApiPre::new(harness().instance_pre().clone())
        .expect("the 0.1.0 exports are found in the component");
    let (mut store, hooks, _clock) = harness().store();
    let api = pre.instantiate(&mut store).expect("instantiate");
    let client = api.s3_lease_lease_lease().client();

    let now = endpoint().config(&fresh_prefix("compat"));
    let config = old::Config {
        endpoint: now.endpoint,
        region: now.region,
        bucket: now.bucket,
        addressing: old::AddressingStyle::Path,
        credentials: old::Credentials {
            access_key_id: now.credentials.access_key_id,
            secret_access_key: now.credentials.secret_access_key,
            session_token: now.credentials.session_token,
        },
        key_prefix: now.key_prefix,
        request_timeout_ms: None,
        strategy: None,
    };
    let handle = client
        .call_constructor(&mut store, &config)
        .expect("no trap")
        .expect("config");
    let options = old::Options {
        ttl_ms: 30_000,
        holder_id: Some("old-host".into()),
        metadata: None,
    };
    let lease = client
        .call_try_acquire(&mut store, handle, "k", &options)
        .expect("no trap")
        .expect("try-acquire")
        .expect("free key");
    assert_eq!(lease.token, 1);
    client
        .call_release(&mut store, handle, &lease)
        .expect("no trap")
        .expect("release");
    assert_eq!(hooks.requests().len(), 3, "GET, PUT, PUT");
}
