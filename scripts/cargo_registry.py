#!/usr/bin/env python3
"""A cargo registry as static files: a sparse index and the .crate files.

usage: cargo_registry.py DIR URL CRATE...

Writes into DIR, for the registry served at URL (any HTTP server that
serves DIR, e.g. `python3 -m http.server`):

  DIR/index/config.json            where cargo downloads crates from
  DIR/index/<prefix>/<name>        one line of JSON per version (cargo's
                                   sparse index format)
  DIR/crates/<name>-<version>.crate

An author's cargo reads it as an alternative registry:
`[registries.NAME] index = "sparse+URL/index/"` in .cargo/config.toml, or
CARGO_REGISTRIES_<NAME>_INDEX. Each CRATE is a file `cargo package` wrote;
its entry is made from the normalized Cargo.toml inside it, as crates.io
makes one from a published crate's: its dependencies (from this registry
when given here with it, else from crates.io), features and checksum. A version published again replaces its entry.
Standard library only (Python 3.11: tomllib).
"""
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tomllib

CRATES_IO = "https://github.com/rust-lang/crates.io-index"


def index_path(name):
    """Where cargo looks up `name` in an index (its prefix directories)."""
    name = name.lower()
    if len(name) <= 2:
        return os.path.join(str(len(name)), name)
    if len(name) == 3:
        return os.path.join("3", name[0], name)
    return os.path.join(name[:2], name[2:4], name)


def dependency(name, spec, kind, target, published):
    if isinstance(spec, str):
        spec = {"version": spec}
    if "path" in spec or "git" in spec:
        sys.exit(f"cargo_registry: {name}: a packed crate has no path or git dependencies")
    entry = {
        "name": name,
        "req": spec.get("version", "*"),
        "features": spec.get("features", []),
        "optional": spec.get("optional", False),
        "default_features": spec.get("default-features", True),
        "target": target,
        "kind": kind,
        # A crate published here with it comes from this registry (null:
        # the index's own); every other from crates.io (the index of an
        # alternative registry names the other registries its crates use).
        "registry": None if name in published else spec.get("registry-index", CRATES_IO),
    }
    if "package" in spec:
        # Renamed: `name` is the name the crate uses, `package` the real one.
        entry["package"] = spec["package"]
    return entry


def dependencies(manifest, published):
    kinds = {"dependencies": "normal", "dev-dependencies": "dev", "build-dependencies": "build"}
    found = []
    for table, kind in kinds.items():
        for name, spec in manifest.get(table, {}).items():
            found.append(dependency(name, spec, kind, None, published))
    for target, tables in manifest.get("target", {}).items():
        for table, kind in kinds.items():
            for name, spec in tables.get(table, {}).items():
                found.append(dependency(name, spec, kind, target, published))
    return found


def manifest_of(crate_file):
    with tarfile.open(crate_file, "r:gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Cargo.toml"))
        return tomllib.loads(tar.extractfile(member).read().decode())


def entry(crate_file, published):
    with open(crate_file, "rb") as f:
        data = f.read()
    manifest = manifest_of(crate_file)
    package = manifest["package"]
    features = manifest.get("features", {})
    # `dep:` and `?` features go in features2 (index format v2).
    plain = {k: v for k, v in features.items() if not any("dep:" in f or "?/" in f for f in v)}
    extended = {k: v for k, v in features.items() if k not in plain}
    line = {
        "name": package["name"],
        "vers": package["version"],
        "deps": dependencies(manifest, published),
        "cksum": hashlib.sha256(data).hexdigest(),
        "features": plain,
        "yanked": False,
        "links": package.get("links"),
        "v": 2 if extended else 1,
    }
    if extended:
        line["features2"] = extended
    if "rust-version" in package:
        line["rust_version"] = package["rust-version"]
    return line


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    root, url, crate_files = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3:]
    os.makedirs(os.path.join(root, "index"), exist_ok=True)
    os.makedirs(os.path.join(root, "crates"), exist_ok=True)
    with open(os.path.join(root, "index", "config.json"), "w") as f:
        json.dump({"dl": f"{url}/crates/{{crate}}-{{version}}.crate"}, f)
    published = {manifest_of(f)["package"]["name"] for f in crate_files}
    for crate_file in crate_files:
        line = entry(crate_file, published)
        name, version = line["name"], line["vers"]
        shutil.copyfile(crate_file, os.path.join(root, "crates", f"{name}-{version}.crate"))
        path = os.path.join(root, "index", index_path(name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        lines = []
        if os.path.exists(path):
            with open(path) as f:
                lines = [l for l in f.read().splitlines() if l and json.loads(l)["vers"] != version]
        lines.append(json.dumps(line, separators=(",", ":")))
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"cargo_registry: {name} {version} ({line['cksum'][:16]}…) in {root}")


if __name__ == "__main__":
    main()
