//! Where the bindings read the contract: the crate's own `wit/` in the
//! published crate (a copy of the repository's `wit/`, made when the crate
//! is packed, from a copy of the crate outside the repository:
//! `scripts/package_guest.sh`), else the repository's `wit/` beside this
//! crate. One source, no link: the repository's `wit/` is the
//! contract, and the packed copy is checked against it byte for byte.

use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(s3lease_guest_repository_wit)");
    // Nothing in the crate's directory decides it but `wit/`, which never
    // appears in the repository's copy: run once.
    println!("cargo::rerun-if-changed=build.rs");
    if Path::new("wit/lease.wit").exists() {
        return;
    }
    // A crate packed without its WIT (`cargo package` run in the
    // workspace, not scripts/package_guest.sh) would build nowhere else:
    // cargo's verification of it stops here, before it is published.
    assert!(
        Path::new("../wit/lease.wit").exists(),
        "s3-lease-guest has no wit/ (the contract): pack it with scripts/package_guest.sh, \
         which copies the repository's wit/ into the crate"
    );
    println!("cargo::rustc-cfg=s3lease_guest_repository_wit");
}
