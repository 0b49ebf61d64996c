#!/usr/bin/env bash
# The realtime clock's reply lag (issue 44, goal 4): how late `ssdlab serve --clock realtime`
# sends each reply against its simulated completion, under fio's nbd engine over a Unix socket.
# Each session starts a server, writes SPAN with 1 MiB writes at QD8, then reads 4 KiB at random
# at QD32 for SECONDS, stops the server with SIGTERM and reads `wall.reply_lag_us` from its
# result. Prints a line a session (lag mean, p50, p99, p99_9, max in µs; fio's IOPS) and the
# median p99 over the sessions.
#
#   bash scripts/bench-lag.sh [PRESET] [SECONDS] [SESSIONS] [SERVER_CPUS] [CLIENT_CPUS]
#
# SERVER_CPUS and CLIENT_CPUS, when given, pin the server and fio with `taskset -c` (a CPU list
# such as `1` or `2-3`), to give the server a core of its own. A benchmark, not a test (wall
# time on a shared machine): CI does not run it. Needs fio (Debian's package, with its nbd
# engine; scripts/install-test-tools.sh installs it), python3 and ssdlab installed; taskset
# (util-linux) only when pinning. docs/live-device.md ("Speed") has what it measured and why
# the figures on a small VM stay far above 10 µs.
set -euo pipefail

preset=${1:-small-tlc}
seconds=${2:-8}
sessions=${3:-3}
server_cpus=${4:-}
client_cpus=${5:-}
source "$(dirname "$0")/bench-checks.sh"
whole_numbers bench-lag SECONDS "$seconds" SESSIONS "$sessions"
for cpus in "$server_cpus" "$client_cpus"; do
    if [ -n "$cpus" ] && ! [[ $cpus =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]]; then
        echo "bench-lag: CPU list '$cpus': expected a list for taskset -c, such as 1, 2-3 or 0,2" >&2
        exit 2
    fi
done
need_tools bench-lag fio=fio python3=python3 ssdlab=
pin_server=() pin_client=()
if [ -n "$server_cpus$client_cpus" ]; then
    need_tools bench-lag taskset=util-linux
    [ -n "$server_cpus" ] && pin_server=(taskset -c "$server_cpus")
    [ -n "$client_cpus" ] && pin_client=(taskset -c "$client_cpus")
fi
work=$(mktemp -d)
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

span=256m
echo "ssdlab serve $preset --clock realtime, fio nbd randread 4 KiB QD32 for ${seconds} s after" \
    "$span written; server CPUs ${server_cpus:-any}, fio CPUs ${client_cpus:-any}; $(nproc) cores"
for s in $(seq "$sessions"); do
    sock="$work/lag.sock"
    rm -f "$sock"
    "${pin_server[@]}" ssdlab serve "$preset" --clock realtime --listen "unix:$sock" --quiet \
        --json "$work/result.json" >/dev/null 2>"$work/server.err" &
    server=$!
    for _ in $(seq 200); do
        [ -S "$sock" ] && break
        sleep 0.05
    done
    [ -S "$sock" ] || { echo "bench-lag: the server did not listen" >&2; cat "$work/server.err" >&2; exit 1; }
    uri="nbd+unix:///?socket=$sock"
    "${pin_client[@]}" fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=1m \
        --iodepth=8 --size="$span" >/dev/null 2>&1
    "${pin_client[@]}" fio --name=lag --ioengine=nbd --uri="$uri" --rw=randread --bs=4k \
        --iodepth=32 --size="$span" --time_based --runtime="$seconds" --output-format=json \
        >"$work/fio.json" 2>/dev/null
    kill -TERM "$server"
    wait "$server" || true
    server=""
    python3 - "$work/result.json" "$work/fio.json" "$s" "$(cut -d' ' -f1 /proc/loadavg)" \
        >>"$work/lines" <<'PY'
import json, sys
lag = json.load(open(sys.argv[1]))["wall"]["reply_lag_us"]
text = open(sys.argv[2]).read()  # fio prints "fio: connected to NBD server" before its JSON
iops = json.loads(text[text.index("{"):])["jobs"][0]["read"]["iops"]
figures = " ".join(f"{k} {lag[k]:.1f}" for k in ("mean", "p50", "p99", "p99_9", "max") if k in lag)
print(f"session {sys.argv[3]}: lag µs {figures}; {iops:,.0f} IOPS; load {sys.argv[4]}")
PY
    tail -n 1 "$work/lines"
done
python3 - "$work/lines" <<'PY'
import re, statistics, sys
p99 = [float(re.search(r"p99 ([0-9.]+)", line).group(1)) for line in open(sys.argv[1])]
print(f"median p99 lag over {len(p99)} session(s): {statistics.median(p99):.1f} µs (goal: 10 µs)")
PY
