#!/usr/bin/env python3
"""Shrinks the built component in place: wasm-opt -Oz on its core module.

usage: optimize_component.py COMPONENT WASM_OPT

rustc's `opt-level = "z"` with LTO leaves room that binaryen's optimizer
takes (about 16% of the core module, see docs/size.md). wasm-opt reads core
modules, not components, so this lifts the core module out of the
component, optimizes it with the features rustc enabled, and splices it
back; the component's types, imports, exports and canonical-ABI adapters
are untouched bytes. It also drops the `component-name` custom section
(names for debuggers that wasm-component-ld writes after `strip`), which
marks the file as done: a second run finds no such section and leaves the
file alone, and a fresh `cargo build` brings the section back.

The integration suite, the soak and the examples all run on the component
this writes. Standard library only.
"""
import os
import subprocess
import sys
import tempfile

# What rustc 1.95 enables for wasm32-wasip2 (its default target features);
# wasm-opt may use no other.
FEATURES = [
    "--enable-bulk-memory",
    "--enable-bulk-memory-opt",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-multivalue",
    "--enable-reference-types",
    "--enable-call-indirect-overlong",
]

CORE_MODULE = 1
CUSTOM = 0


def leb(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def to_leb(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def sections(data):
    """(id, payload) of each top-level section after the 8-byte preamble."""
    i = 8
    while i < len(data):
        sid = data[i]
        size, start = leb(data, i + 1)
        yield sid, data[start : start + size]
        i = start + size


def custom_name(payload):
    n, i = leb(payload, 0)
    return payload[i : i + n].decode("utf-8", "replace")


def optimize(module, wasm_opt):
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.wasm"), os.path.join(tmp, "out.wasm")
        with open(src, "wb") as f:
            f.write(module)
        subprocess.run([wasm_opt, "-Oz", *FEATURES, src, "-o", dst], check=True)
        with open(dst, "rb") as f:
            return f.read()


def main():
    path, wasm_opt = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        data = f.read()
    # A component's preamble: magic, then version 0x0d and layer 1.
    if data[:4] != b"\0asm" or data[4:8] != b"\x0d\x00\x01\x00":
        sys.exit(f"optimize_component: {path} is not a component")
    parts = list(sections(data))
    if not any(sid == CUSTOM and custom_name(p) == "component-name" for sid, p in parts):
        print(f"optimize_component: {path} is already optimized ({len(data)} bytes)")
        return
    # The first core module is ours; any later ones are small generated shims.
    main_module = next(i for i, (sid, _) in enumerate(parts) if sid == CORE_MODULE)
    out = bytearray(data[:8])
    for i, (sid, payload) in enumerate(parts):
        if sid == CUSTOM and custom_name(payload) == "component-name":
            continue
        if i == main_module:
            payload = optimize(payload, wasm_opt)
        out += bytes([sid]) + to_leb(len(payload)) + payload
    tmp = path + ".optimizing"
    with open(tmp, "wb") as f:
        f.write(out)
    # A new file, not a write through cargo's hard link into deps/.
    os.replace(tmp, path)
    print(f"optimize_component: {path}: {len(data)} -> {len(out)} bytes")


if __name__ == "__main__":
    main()
