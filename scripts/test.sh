#!/usr/bin/env bash
# Every test of the project, in one command, stopping at the first failure:
# install (builds the Rust extension), Rust format/lint/tests, Python tests, Python lint/format.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

section() {
    printf '\n==== %s ====\n' "$1"
}

# QEMU, fio, libnbd's tools, a guest kernel, Chromium: installed from Debian's packages when
# missing (a test whose tool is still missing skips, naming it).
section "system packages: scripts/install-test-tools.sh"
bash scripts/install-test-tools.sh

# The ray extra too: tests/test_ray.py runs a sweep on a local Ray cluster it starts itself.
section "install: python -m pip install -e '.[test,ray]' (maturin builds ssdlab._core)"
python -m pip install --disable-pip-version-check -e '.[test,ray]'

# The stubs of the compiled module (python/ssdlab/_core.pyi) must describe it exactly.
section "python: stubtest ssdlab._core against python/ssdlab/_core.pyi"
python -m mypy.stubtest ssdlab._core

section "rust: cargo fmt --check"
cargo fmt --all -- --check

section "rust: cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

if cargo nextest --version >/dev/null 2>&1; then
    section "rust: cargo nextest run"
    cargo nextest run --workspace
else
    section "rust: cargo test"
    cargo test --workspace
fi

# Every fuzz target of fuzz/ under libFuzzer for 10 s (coverage-guided, on the stable toolchain):
# the standing adversarial suite of the trace readers, the NVMe registers and the NBD server.
section "rust: scripts/fuzz.sh (each fuzz target for 10 s)"
bash scripts/fuzz.sh 10

# pytest exits 5 when it collects no test: that is a failure here too, as set -e leaves it.
# One worker per core (pytest-xdist): CI has two.
section "python: pytest -n auto"
python -m pytest -q -n auto tests

section "python: ruff check"
python -m ruff check python tests

section "python: ruff format --check"
python -m ruff format --check python tests

section "all tests passed"
