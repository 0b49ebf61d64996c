#!/usr/bin/env bash
# Whole-process speed of ssdlab beside MQSim on the same drive and workload, measured on this
# machine: MQSim's own shipped ssdconfig.xml (a 512 GiB MLC drive with a write cache and a
# cached map; the `mqsim-default` preset is the same drive) and one synthetic flow of
# IO_COUNT random 4 KiB requests, half reads, 32 in flight, over the whole logical space.
# The flow is written here in MQSim's workload.xml format; ssdlab runs what `ssdlab import
# mqsim` makes of the same two files (docs/import.md), so both read one description.
#
# ROUNDS rounds each run ssdlab, then MQSim (alternated, so that a busy spell of a shared
# machine falls on both). Each process is timed from outside, start-up included: CPU seconds
# (user + system, the figure other load disturbs least), wall seconds and peak resident
# memory, from the kernel's accounting of the finished child (os.wait4). Prints a Markdown
# table, one row per round and MQSim over ssdlab for each figure, then the medians. MQSim
# must have serviced every request (its summary line is checked).
#
#   bash scripts/bench-mqsim.sh MQSIM_DIR [ROUNDS] [IO_COUNT]
#
# MQSIM_DIR is a built MQSim checkout (github.com/CMU-SAFARI/MQSim, `make` there; its binary
# `MQSim` and `ssdconfig.xml`). MQSim is not a Debian package, so this is a benchmark for a
# machine that has it, not a test: CI does not run it. One MQSim run of a million requests
# takes about a minute of CPU.
set -euo pipefail

usage="usage: bash scripts/bench-mqsim.sh MQSIM_DIR [ROUNDS] [IO_COUNT]"
[ $# -ge 1 ] || { echo "bench-mqsim: MQSIM_DIR missing: $usage" >&2; exit 2; }
mqsim_dir=$1
rounds=${2:-3}
io_count=${3:-1000000}
source "$(dirname "$0")/bench-checks.sh"
whole_numbers bench-mqsim ROUNDS "$rounds" IO_COUNT "$io_count"
for f in MQSim ssdconfig.xml; do
    if [ ! -f "$mqsim_dir/$f" ]; then
        echo "bench-mqsim: $mqsim_dir/$f not found: expected a built MQSim checkout (run make in it)" >&2
        exit 2
    fi
done
need_tools bench-mqsim ssdlab=
mqsim_dir=$(cd "$mqsim_dir" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# MQSim reads Stop_Time before Total_Requests_To_Generate: 0 makes the count the bound.
# Address_Alignment_Unit and Average_Request_Size are 512-byte sectors (8 = 4 KiB).
cat > "$work/matched.xml" <<EOF
<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios>
  <IO_Scenario>
    <IO_Flow_Parameter_Set_Synthetic>
      <Priority_Class>HIGH</Priority_Class>
      <Device_Level_Data_Caching_Mode>WRITE_CACHE</Device_Level_Data_Caching_Mode>
      <Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
      <Chip_IDs>0,1,2,3</Chip_IDs>
      <Die_IDs>0,1</Die_IDs>
      <Plane_IDs>0,1</Plane_IDs>
      <Initial_Occupancy_Percentage>75</Initial_Occupancy_Percentage>
      <Working_Set_Percentage>100</Working_Set_Percentage>
      <Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
      <Read_Percentage>50</Read_Percentage>
      <Address_Distribution>RANDOM_UNIFORM</Address_Distribution>
      <Percentage_of_Hot_Region>0</Percentage_of_Hot_Region>
      <Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
      <Address_Alignment_Unit>8</Address_Alignment_Unit>
      <Request_Size_Distribution>FIXED</Request_Size_Distribution>
      <Average_Request_Size>8</Average_Request_Size>
      <Variance_Request_Size>0</Variance_Request_Size>
      <Seed>798</Seed>
      <Average_No_of_Reqs_in_Queue>32</Average_No_of_Reqs_in_Queue>
      <Stop_Time>0</Stop_Time>
      <Total_Requests_To_Generate>$io_count</Total_Requests_To_Generate>
    </IO_Flow_Parameter_Set_Synthetic>
  </IO_Scenario>
</MQSim_IO_Scenarios>
EOF
cp "$mqsim_dir/ssdconfig.xml" "$work/ssdconfig.xml"
ssdlab import mqsim "$work/ssdconfig.xml" "$work/matched.xml" -o "$work/ssdlab/" 2>"$work/import.log" >/dev/null ||
    { cat "$work/import.log" >&2; exit 1; }

# One timed child: prints "cpu_s wall_s peak_mib exit", its output to the file named.
cat > "$work/timed.py" <<'EOF'
import os, subprocess, sys, time
out = open(sys.argv[1], "wb")
start = time.monotonic()
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
_, status, usage = os.wait4(child.pid, 0)
wall = time.monotonic() - start
print(f"{usage.ru_utime + usage.ru_stime:.3f} {wall:.3f} {usage.ru_maxrss / 1024:.1f} {os.waitstatus_to_exitcode(status)}")
EOF

echo "bench-mqsim: $rounds rounds of $io_count requests; MQSim at $mqsim_dir ($(git -C "$mqsim_dir" rev-parse --short HEAD 2>/dev/null || echo "no git"))" >&2
rows=()
for ((r = 1; r <= rounds; r++)); do
    read -r s_cpu s_wall s_peak s_exit < <(cd "$work" && python3 timed.py ssdlab.out \
        ssdlab run ssdlab/config.toml --job ssdlab/config-scenario-1.toml)
    [ "$s_exit" = 0 ] || { echo "bench-mqsim: ssdlab exited $s_exit:" >&2; tail -5 "$work/ssdlab.out" >&2; exit 1; }
    read -r m_cpu m_wall m_peak m_exit < <(cd "$work" && python3 timed.py mqsim.out \
        "$mqsim_dir/MQSim" -i ssdconfig.xml -w matched.xml)
    [ "$m_exit" = 0 ] || { echo "bench-mqsim: MQSim exited $m_exit:" >&2; tail -5 "$work/mqsim.out" >&2; exit 1; }
    grep -q "total requests serviced:$io_count\$" "$work/mqsim.out" ||
        { echo "bench-mqsim: MQSim did not service $io_count requests:" >&2; grep -i "serviced" "$work/mqsim.out" >&2; exit 1; }
    rows+=("$s_cpu $s_wall $s_peak $m_cpu $m_wall $m_peak")
    echo "bench-mqsim: round $r: ssdlab ${s_cpu} s CPU, MQSim ${m_cpu} s CPU" >&2
done

printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, line.split())) for line in sys.stdin if line.strip()]
print("| round | ssdlab CPU s | wall s | peak MiB | MQSim CPU s | wall s | peak MiB | MQSim / ssdlab CPU | wall | peak |")
print("|---|---|---|---|---|---|---|---|---|---|")
def ratios(r):
    return [r[3] / r[0], r[4] / r[1], r[5] / r[2]]
def line(name, r, q):
    print(f"| {name} | {r[0]:.2f} | {r[1]:.2f} | {r[2]:.0f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.0f} | "
          f"{q[0]:.1f}x | {q[1]:.1f}x | {q[2]:.1f}x |")
for i, r in enumerate(rows, 1):
    line(str(i), r, ratios(r))
# The ratios are taken round by round (a round ran both on the same spell of the machine),
# and their median is the median row'"'"'s.
line("median", [statistics.median(c) for c in zip(*rows)],
     [statistics.median(c) for c in zip(*map(ratios, rows))])
'
