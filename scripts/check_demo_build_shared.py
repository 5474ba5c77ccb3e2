#!/usr/bin/env python3
"""Fails when the demo's build would not reuse the tests' build.

usage: check_demo_build_shared.py   (after `cargo test --workspace`)

The demo (`cargo build -p leader-election`) and the tests (`cargo test
--workspace`) share one wasmtime build only while cargo resolves the same
features for both; workspace-hack/Cargo.toml keeps them equal. This builds
the demo and stops at the first dependency from a registry that cargo has
to compile again: a drift costs seconds here, not 8 minutes on each fresh
machine. Our own crates (path packages) may rebuild. Standard library only.
"""
import json
import subprocess
import sys


def main():
    cargo = subprocess.Popen(
        ["cargo", "build", "--locked", "-p", "leader-election", "--message-format=json"],
        stdout=subprocess.PIPE,
        text=True,
    )
    stale = None
    for line in cargo.stdout:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") != "compiler-artifact" or message.get("fresh", True):
            continue
        if not message.get("package_id", "").startswith("path+"):
            stale = message["package_id"]
            cargo.kill()
            break
    cargo.wait()
    if stale:
        sys.exit(
            f"check_demo_build_shared: the demo's build compiles {stale} again: its features "
            "differ from the test build's; add them to workspace-hack/Cargo.toml"
        )
    if cargo.returncode != 0:
        sys.exit(f"check_demo_build_shared: cargo build -p leader-election failed ({cargo.returncode})")
    print("check_demo_build_shared: the demo reuses the tests' build (no dependency compiled again)")


if __name__ == "__main__":
    main()
