#!/usr/bin/env bash
# Run every fuzz target of fuzz/fuzz_targets with libFuzzer for a bounded time each, on the
# stable toolchain: rustc is given the coverage instrumentation cargo-fuzz asks for with
# `--sanitizer none` (all stable -C flags), so neither nightly nor cargo-fuzz is needed. A crash
# or a panic fails the script, leaving the input that caused it under fuzz/artifacts/TARGET/.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 10; CI runs it with the default)
# Deeper runs: `cd fuzz && cargo +nightly fuzz run TARGET` (docs/traces.md).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz"
seconds=${1:-10}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
    echo "scripts/fuzz.sh: got '$seconds', expected a whole number of seconds per target" >&2
    exit 2
fi

# An explicit --target keeps these flags off build scripts and proc macros, as cargo-fuzz does.
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks"
export CARGO_TARGET_DIR=target
cargo build --release --target "$host" --bins

corpus_root=$(mktemp -d)
trap 'rm -rf "$corpus_root"' EXIT
for source in fuzz_targets/*.rs; do
    name=$(basename "$source" .rs)
    mkdir -p "$corpus_root/$name" "artifacts/$name"
    # A target's seed inputs (fuzz/seeds/TARGET/), when it has some: lines of a format the
    # fuzzer would take long to find from nothing.
    if [ -d "seeds/$name" ]; then
        cp seeds/"$name"/* "$corpus_root/$name/"
    fi
    printf '\n---- fuzz %s: %s s ----\n' "$name" "$seconds"
    log="$corpus_root/$name.log"
    status=0
    "target/$host/release/$name" "$corpus_root/$name" \
        -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="artifacts/$name/" -print_final_stats=1 >"$log" 2>&1 || status=$?
    grep -E '^(stat::number_of_executed_units|Done [0-9]+ runs)' "$log" || true
    if [ "$status" -ne 0 ]; then
        tail -n 40 "$log" >&2
        echo "fuzz target $name failed (exit $status); the input is in fuzz/artifacts/$name/" >&2
        exit 1
    fi
done
echo "every fuzz target ran $seconds s without a crash"
