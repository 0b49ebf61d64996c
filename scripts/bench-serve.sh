#!/usr/bin/env bash
# Speed of the live device beside two plain NBD servers, measured in one run on this machine:
#   ssdlab serve PRESET --clock logical   (every request simulated)
#   the same over TLS                     (what encryption costs: a self-signed certificate, as
#                                          fio's nbd engine may not name a PSK file in its URI)
#   nbdkit memory                         (RAM, no model)
#   qemu-nbd over a raw file              (the page cache, no model)
# Each is driven by fio's nbd engine over a Unix socket and over TCP on 127.0.0.1 (a free
# port): 4 KiB random reads at QD32 and 1 MiB sequential reads at QD8, after the same data is
# written. ROUNDS rounds each start every server on every transport once, in turn (so that a
# busy spell of a shared machine falls on all of them); each figure is the median of its
# rounds. Prints a Markdown table with each server's CPU time per request (from /proc: a
# figure other load disturbs less than the wall-clock rates), then ssdlab's (logical clock)
# IOPS and bandwidth as a multiple of nbdkit memory's, per transport. Takes about
# ROUNDS × 8 × (2 × SECONDS + a few) seconds.
#
#   bash scripts/bench-serve.sh [PRESET] [SECONDS] [ROUNDS]
#
# A benchmark, not a test (wall time on a shared machine): CI does not run it. Needs, from
# Debian's packages: fio (its nbd engine), nbdkit, qemu-utils (qemu-nbd, qemu-img), gnutls-bin
# (certtool); and ssdlab installed. fio, qemu-utils and gnutls-bin are the tests' tools
# (scripts/install-test-tools.sh installs them); nbdkit is this script's alone.
set -euo pipefail

preset=${1:-small-tlc}
seconds=${2:-10}
rounds=${3:-1}
source "$(dirname "$0")/bench-checks.sh"
whole_numbers bench-serve SECONDS "$seconds" ROUNDS "$rounds"
need_tools bench-serve fio=fio nbdkit=nbdkit qemu-nbd=qemu-utils qemu-img=qemu-utils \
    certtool=gnutls-bin python3=python3 ssdlab=
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

size_bytes=0  # the simulated drive's capacity, read from it; the others get the same size
span=$((256 << 20))  # the range the jobs touch: written first, so reads find data
port=0  # the TCP port of the server running (a free one, chosen before each start)

free_port() {  # a port on 127.0.0.1 that nothing listens on now
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_ready() {  # wait_ready NAME TRANSPORT: until the server accepts connections (10 s at most)
    # A connection, not the socket file: a server binds its socket a moment before it listens.
    local address="$work/$1.sock"
    [ "$2" = tcp ] && address="127.0.0.1:$port"
    for _ in $(seq 200); do
        python3 - "$address" 2>/dev/null <<'PY' && return 0
import socket, sys
at = sys.argv[1]
if at.startswith("/"):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(1)
    s.connect(at)
else:
    host, port = at.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), 1)
s.close()
PY
        sleep 0.05
    done
    echo "bench-serve: $1 is not listening on $2" >&2; cat "$work/$1.err" >&2; exit 1
}

start() {  # start NAME TRANSPORT: one server, on $work/NAME.sock or 127.0.0.1:$port
    local name=$1 transport=$2
    local sock="$work/$name.sock"
    port=$(free_port)
    rm -f "$sock"  # a server killed in an earlier round may leave its socket file
    local listen="unix:$sock"
    [ "$transport" = tcp ] && listen="tcp://127.0.0.1:$port"
    case $name in
        ssdlab) ssdlab serve "$preset" --listen "$listen" --clock logical \
                    --quiet >/dev/null 2>"$work/$name.err" & ;;
        ssdlab-tls) ssdlab serve "$preset" --listen "$listen" --clock logical \
                    --tls-certificates "$work/pki" --no-tls-verify-peer --quiet >/dev/null 2>"$work/$name.err" & ;;
        nbdkit) if [ "$transport" = unix ]; then
                    nbdkit --foreground --unix "$sock" memory "$size_bytes" >/dev/null 2>"$work/$name.err" &
                else
                    nbdkit --foreground --ipaddr 127.0.0.1 --port "$port" memory "$size_bytes" \
                        >/dev/null 2>"$work/$name.err" &
                fi ;;
        qemu-nbd) truncate -s "$size_bytes" "$work/disk.raw"
                  local at=(--socket="$sock")
                  [ "$transport" = tcp ] && at=(--bind=127.0.0.1 --port="$port")
                  qemu-nbd --persistent --shared=8 --format=raw --cache=writeback "${at[@]}" \
                      "$work/disk.raw" >/dev/null 2>"$work/$name.err" & ;;
    esac
    pids+=($!)
    wait_ready "$name" "$transport"
}

uri() {  # uri NAME TRANSPORT: the server's URI (TLS without checking the self-signed certificate)
    local scheme=nbd query=""
    if [ "$1" = ssdlab-tls ]; then
        scheme=nbds
        query="tls-verify-peer=false"
    fi
    if [ "$2" = unix ]; then
        echo "$scheme+unix:///?socket=$work/$1.sock${query:+&$query}"
    else
        echo "$scheme://127.0.0.1:$port/${query:+?$query}"
    fi
}

cpu_ticks() {  # cpu_ticks PID: the process's user + system CPU time so far, in clock ticks
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

fio_job() {  # fio_job NAME TRANSPORT RW BS DEPTH -> prints "iops MiB/s mean_us p99_us cpu_us/request"
    local before
    before=$(cpu_ticks "${pids[-1]}")
    fio --name=bench --ioengine=nbd --uri="$(uri "$1" "$2")" \
        --rw="$3" --bs="$4" --iodepth="$5" --size="$span" --time_based --runtime="$seconds" \
        --output-format=json 2>/dev/null >"$work/fio.json"
    python3 "$work/fio_figures.py" "$work/fio.json" $(($(cpu_ticks "${pids[-1]}") - before)) \
        "$(getconf CLK_TCK)"
}

cat >"$work/fio_figures.py" <<'PY'
import json, sys
text = open(sys.argv[1]).read()  # fio prints "fio: connected to NBD server" before its JSON
ticks, per_s = int(sys.argv[2]), int(sys.argv[3])
job = json.loads(text[text.index("{"):])["jobs"][0]
side = job["read"] if job["read"]["io_bytes"] else job["write"]
lat = side["clat_ns"]
p99 = lat["percentile"]["99.000000"]
cpu_us = ticks / per_s * 1e6 / max(side["total_ios"], 1)
print(f"{side['iops']:.0f} {side['bw_bytes'] / 2**20:.0f} {lat['mean'] / 1e3:.1f} {p99 / 1e3:.1f}"
      f" {cpu_us:.1f}")
PY

mkdir "$work/pki"
printf 'cn = localhost\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 1\n' \
    >"$work/server.info"
certtool --generate-privkey --outfile "$work/pki/server-key.pem" 2>/dev/null
certtool --generate-self-signed --load-privkey "$work/pki/server-key.pem" \
    --template "$work/server.info" --outfile "$work/pki/server-cert.pem" >/dev/null 2>&1
servers=(ssdlab ssdlab-tls nbdkit qemu-nbd)
transports=(unix tcp)
# Each round's figures, a line each: "NAME TRANSPORT iops mean p99 cpu | iops MiB/s cpu".
for round in $(seq "$rounds"); do
    for transport in "${transports[@]}"; do
        for name in "${servers[@]}"; do
            start "$name" "$transport"
            if [ "$size_bytes" = 0 ]; then
                size_bytes=$(qemu-img info --output=json "$(uri "$name" "$transport")" |
                    python3 -c 'import json, sys; print(json.load(sys.stdin)["virtual-size"])')
            fi
            # Fill the span once so that every server reads data, not holes.
            fio --name=fill --ioengine=nbd --uri="$(uri "$name" "$transport")" --rw=write \
                --bs=1m --iodepth=8 --size="$span" --output-format=json >/dev/null 2>&1
            read -r iops _ mean p99 cpu4k <<<"$(fio_job "$name" "$transport" randread 4k 32)"
            read -r _ mibs _ _ cpu1m <<<"$(fio_job "$name" "$transport" read 1m 8)"
            echo "$name $transport $iops $mean $p99 $cpu4k $mibs $cpu1m" >>"$work/rounds"
            kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
            unset 'pids[-1]'
        done
    done
done

echo "fio (nbd engine), ${seconds} s per job, span $((span >> 20)) MiB; preset $preset;" \
    "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); median of $rounds round(s)"
echo
# ssdlab (logical clock) over nbdkit memory: the live device's goal is at least 1.0× on both.
python3 - "$work/rounds" "${servers[@]}" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
servers, transports = sys.argv[2:], ["unix", "tcp"]
def median(name, transport, k):
    return statistics.median(float(r[k]) for r in rows if r[:2] == [name, transport])
print("| server | transport | 4 KiB randread QD32 IOPS | mean µs | p99 µs | CPU µs/read"
      " | 1 MiB read QD8 MiB/s | CPU µs/MiB |")
print("|---|---|---|---|---|---|---|---|")
for name in servers:
    for t in transports:
        f = [median(name, t, k) for k in range(2, 8)]
        print(f"| {name} | {t} | {f[0]:,.0f} | {f[1]:.0f} | {f[2]:.0f} | {f[3]:.1f}"
              f" | {f[4]:,.0f} | {f[5]:.0f} |")
print()
def ratio(a, b):
    return f"{a / b:.2f}×" if b > 0 else "n/a (nbdkit measured 0)"
for t in transports:
    s_iops, n_iops = median("ssdlab", t, 2), median("nbdkit", t, 2)
    s_mibs, n_mibs = median("ssdlab", t, 6), median("nbdkit", t, 6)
    print(f"ssdlab / nbdkit memory, {t}: IOPS {ratio(s_iops, n_iops)},"
          f" bandwidth {ratio(s_mibs, n_mibs)}")
PY
