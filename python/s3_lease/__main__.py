"""``python -m s3_lease precompile PATH``: compiles the component for this
machine, for ``S3LEASE_PRECOMPILED=PATH`` (a process then loads it in
milliseconds, with no compile cache and nothing written at run time: a
container image or a Lambda layer built with it starts fast)."""

import sys

from . import precompile


def main(argv: "list[str]") -> int:
    if len(argv) != 2 or argv[0] != "precompile":
        print("usage: python -m s3_lease precompile PATH", file=sys.stderr)
        return 2
    size = precompile(argv[1])
    print(f"s3_lease: wrote {argv[1]} ({size} bytes); set S3LEASE_PRECOMPILED={argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
