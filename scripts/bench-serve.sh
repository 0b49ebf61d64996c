#!/usr/bin/env bash
# Speed of the live device beside two plain NBD servers, measured in one run on this machine:
#   ssdlab serve PRESET --clock logical   (every request simulated)
#   the same over TLS                     (what encryption costs: a self-signed certificate, as
#                                          fio's nbd engine may not name a PSK file in its URI)
#   nbdkit memory                         (RAM, no model)
#   qemu-nbd over a raw file              (the page cache, no model)
# Each is driven by fio's nbd engine over a Unix socket: 4 KiB random reads at QD32 and 1 MiB
# sequential reads at QD8, after the same data is written. Prints a Markdown table.
#
#   bash scripts/bench-serve.sh [PRESET] [SECONDS]
#
# Needs fio (with its nbd engine: Debian's fio), nbdkit, qemu-utils and certtool (gnutls-bin);
# ssdlab installed.
set -euo pipefail

preset=${1:-small-tlc}
seconds=${2:-10}
for tool in fio nbdkit qemu-nbd qemu-img certtool ssdlab python3; do
    command -v "$tool" >/dev/null || { echo "bench-serve: $tool not found" >&2; exit 2; }
done
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

wait_socket() {
    for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done
    echo "bench-serve: no socket at $1" >&2; exit 1
}

start() {  # start NAME: one server at $work/NAME.sock
    case $1 in
        ssdlab) ssdlab serve "$preset" --listen "unix:$work/ssdlab.sock" --clock logical \
                    --quiet --json "$work/ssdlab.json" >/dev/null 2>&1 & ;;
        ssdlab-tls) ssdlab serve "$preset" --listen "unix:$work/ssdlab-tls.sock" --clock logical \
                    --tls-certificates "$work/pki" --no-tls-verify-peer --quiet >/dev/null 2>&1 & ;;
        nbdkit) nbdkit --foreground --unix "$work/nbdkit.sock" memory "$size_bytes" >/dev/null 2>&1 & ;;
        qemu-nbd) truncate -s "$size_bytes" "$work/disk.raw"
                  qemu-nbd --persistent --shared=8 --format=raw --cache=writeback \
                      --socket="$work/qemu-nbd.sock" "$work/disk.raw" >/dev/null 2>&1 & ;;
    esac
    pids+=($!)
    wait_socket "$work/$1.sock"
}

uri() {  # uri NAME: the server's URI (TLS without checking the self-signed certificate)
    if [ "$1" = ssdlab-tls ]; then
        echo "nbds+unix:///?socket=$work/$1.sock&tls-verify-peer=false"
    else
        echo "nbd+unix:///?socket=$work/$1.sock"
    fi
}

fio_job() {  # fio_job NAME RW BS DEPTH -> prints "iops MiB/s mean_us p99_us"
    fio --name=bench --ioengine=nbd --uri="$(uri "$1")" \
        --rw="$2" --bs="$3" --iodepth="$4" --size="$span" --time_based --runtime="$seconds" \
        --output-format=json 2>/dev/null | python3 "$work/fio_figures.py"
}

cat >"$work/fio_figures.py" <<'PY'
import json, sys
text = sys.stdin.read()  # fio prints "fio: connected to NBD server" before its JSON
job = json.loads(text[text.index("{"):])["jobs"][0]
side = job["read"] if job["read"]["io_bytes"] else job["write"]
lat = side["clat_ns"]
p99 = lat["percentile"]["99.000000"]
print(f"{side['iops']:.0f} {side['bw_bytes'] / 2**20:.0f} {lat['mean'] / 1e3:.1f} {p99 / 1e3:.1f}")
PY

mkdir "$work/pki"
printf 'cn = localhost\ntls_www_server\nencryption_key\nsigning_key\nexpiration_days = 1\n' \
    >"$work/server.info"
certtool --generate-privkey --outfile "$work/pki/server-key.pem" 2>/dev/null
certtool --generate-self-signed --load-privkey "$work/pki/server-key.pem" \
    --template "$work/server.info" --outfile "$work/pki/server-cert.pem" >/dev/null 2>&1
servers=(ssdlab ssdlab-tls nbdkit qemu-nbd)
declare -A rand seq
for name in "${servers[@]}"; do
    start "$name"
    if [ "$name" = ssdlab ]; then
        size_bytes=$(qemu-img info --output=json "nbd+unix:///?socket=$work/ssdlab.sock" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["virtual-size"])')
    fi
    # Fill the span once so that every server reads data, not holes.
    fio --name=fill --ioengine=nbd --uri="$(uri "$name")" --rw=write \
        --bs=1m --iodepth=8 --size="$span" --output-format=json >/dev/null 2>&1
    rand[$name]=$(fio_job "$name" randread 4k 32)
    seq[$name]=$(fio_job "$name" read 1m 8)
    kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
done

echo "fio (nbd engine), ${seconds} s per job, span $((span >> 20)) MiB; preset $preset; $(nproc) cores"
echo
echo "| server | 4 KiB randread QD32 IOPS | mean µs | p99 µs | 1 MiB read QD8 MiB/s |"
echo "|---|---|---|---|---|"
for name in "${servers[@]}"; do
    read -r iops _ mean p99 <<<"${rand[$name]}"
    read -r _ mibs _ _ <<<"${seq[$name]}"
    echo "| $name | $iops | $mean | $p99 | $mibs |"
done
