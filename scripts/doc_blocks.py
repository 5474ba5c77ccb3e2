#!/usr/bin/env python3
"""The shell blocks the author's documents show, as a script that runs them
exactly as printed.

usage: doc_blocks.py SCENARIO FILE...

A ```` ```sh ```` block whose line before the fence is
`<!-- run: SCENARIO -->` is a command an author runs as written; this
prints, for the blocks of SCENARIO in FILE order and document order, a bash
script that runs each block verbatim (`set -x` shows each command as it
runs, and a header names the document and line). The caller runs it in the
scenario's directory, with the environment the documents tell an author to
set up (scripts/check_fetch_by_name.sh):

- `repository`: in a clone of s3-lease (publishing to registries on
  loopback until the packages are on a public one);
- `author`: in an author's own directory, outside the repository;
- `gate`: in a directory holding an HTTP function, `./function.wasm`,
  that imports no s3-lease;
- `gate-composed`: the same directory, `./function.wasm` now a function
  that imports s3-lease itself.

tests/doc_snippets.rs checks that every shell block of docs/authors.md,
docs/gate.md and the README's component section carries such a marker.
Standard library only.
"""
import os
import re
import shlex
import sys

SCENARIOS = ("repository", "author", "gate", "gate-composed")
MARKER = re.compile(r"^<!-- run: ([a-z-]+) -->$")


def blocks(path):
    """(line, scenario, code) of each marked sh block in `path`."""
    with open(path) as f:
        lines = f.read().splitlines()
    found = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            end = i + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            marker = MARKER.match(lines[i - 1].strip()) if i > 0 else None
            if marker:
                if marker.group(1) not in SCENARIOS:
                    sys.exit(f"doc_blocks: {path}:{i + 1}: unknown scenario {marker.group(1)!r} (one of {SCENARIOS})")
                found.append((i + 1, marker.group(1), "\n".join(lines[i + 1 : end])))
            i = end
        i += 1
    return found


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in SCENARIOS:
        sys.exit(__doc__)
    scenario, files = sys.argv[1], sys.argv[2:]
    # Each command as it runs, with the time (root's bash takes no PS4
    # from the environment).
    out = ["set -euo pipefail", "PS4='+ [${EPOCHREALTIME%????}] '"]
    count = 0
    for path in files:
        for line, name, code in blocks(path):
            if name != scenario:
                continue
            count += 1
            where = f"{os.path.relpath(path)}:{line}"
            out.append(f"echo {shlex.quote(f'doc_blocks: {where} ({scenario}) at')} \"$EPOCHREALTIME\" >&2")
            out.append("set -x")
            out.append(code)
            out.append("{ set +x; } 2>/dev/null")
    if count == 0:
        sys.exit(f"doc_blocks: no block of {scenario!r} in {files}")
    out.append(f"echo {shlex.quote(f'doc_blocks: {count} blocks of {scenario!r} ran, at')} \"$EPOCHREALTIME\" >&2")
    print("\n".join(out))


if __name__ == "__main__":
    main()
