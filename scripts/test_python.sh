#!/usr/bin/env bash
# The Python package, as users get it: the wheel built with maturin in the
# dev profile (the workspace's build of the host, reused: nothing but the
# extension compiles), installed into a fresh virtual environment with only
# the test tools beside it, then python/tests run there with pytest against
# the suite's servers (host-test's package_fixtures), and the docs' examples
# checked with mypy --strict against the installed package.
#
#   scripts/test_python.sh [build|check] [PYTEST ARGS...]
#
# `build`: the wheel and the venv only; `check`: pytest and mypy on what
# `build` made (test.sh runs them beside another step); neither: both.
# Needs what `source scripts/setup.sh` and `start_python_tools` provide,
# and the workspace's test build (target/debug/package_fixtures, s3-lease).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-$PWD/target}"
tools=python/.venv
out="$target/python"
phase=all
case "${1:-}" in build | check) phase=$1 && shift ;; esac

if [ "$phase" != check ]; then
    echo "test_python: building the wheel (maturin, dev profile)"
    rm -rf "$out/wheels"
    (cd python && "../$tools/bin/maturin" build --locked --profile dev --features test-build --out "$out/wheels" 2>&1 |
        grep -v '^\s*$' | grep -Ev '^\s+(Compiling|Finished)' || true)
    wheel=$(ls "$out"/wheels/s3_lease-*.whl)
    echo "test_python: $(basename "$wheel") ($(($(stat -c %s "$wheel") / 1024)) KB)"

    echo "test_python: a fresh virtual environment with the wheel, pytest and botocore"
    rm -rf "$out/venv"
    python3 -m venv --without-pip "$out/venv"
    "$tools/bin/pip" --python "$out/venv/bin/python" install --quiet --disable-pip-version-check \
        --no-index --find-links "$tools/wheelhouse" "$wheel" pytest pytest-asyncio botocore
fi
[ "$phase" != build ] || exit 0

echo "test_python: pytest python/tests (the installed package)"
status=0
"$out/venv/bin/pytest" -c python/pyproject.toml --rootdir python -p no:cacheprovider "$@" python/tests || status=$?
# pytest's 5 is "no tests ran": a failure here.
[ "$status" = 0 ] || { echo "test_python: pytest failed (exit $status)" >&2; exit 1; }

echo "test_python: mypy --strict on docs/python.md's examples"
rm -rf "$out/examples" && mkdir -p "$out/examples"
python3 scripts/python_examples.py docs/python.md "$out/examples"
"$tools/bin/mypy" --strict --no-error-summary --python-executable "$out/venv/bin/python" \
    --config-file python/pyproject.toml --cache-dir "$out/mypy-cache" "$out/examples"
echo "test_python: passed"
