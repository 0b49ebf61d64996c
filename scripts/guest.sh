#!/usr/bin/env bash
# A real Linux guest on the simulated drive: `ssdlab serve PRESET` over NBD is the NVMe disk of a
# qemu-system-x86_64 virtual machine that boots the machine's own distribution kernel with a small
# initramfs built here from host binaries (busybox, mke2fs, fio and the libraries they need).
#
#   bash scripts/guest.sh [options] [PRESET]      (PRESET: a preset name or config TOML;
#                                                  default small-tlc)
#
#   -w, --workdir DIR   where the initramfs, consoles, fio output and server results go
#                       (default: a new mktemp directory, kept and named at the end)
#   --clock CLOCK       the server's clock, realtime (default) or logical
#   --runtime SECONDS   length of each fio job (default 5)
#   --timeout SECONDS   limit on each guest run (default 600 with KVM, 2400 under TCG)
#   --kernel PATH       the kernel to boot (default: the newest /boot/vmlinuz-*)
#   --no-clean          skip the second, fio-only session
#   --tcg               do not use KVM even if /dev/kvm is usable
#   --no-install        never apt-get: fail naming what is missing
#   --retries N         run a session again, up to N times, when the guest's NVMe driver timed
#                       out a command (a stalled queue: see "Known issue" in docs/live-device.md);
#                       each stalled attempt is kept in WORKDIR/NAME.stalled-K (default 0)
#   --crash             the crash sessions instead (below): record, then cut
#   --crash-files N     files the crash workload writes and fsyncs (default 24)
#   --cut-after K       crash: cut the power once the guest has reported K fsynced files
#                       (default 8)
#   --set PATH=VALUE    a config override for the server (repeatable)
#   -v, --verbose       show the guest's console as it runs
#   -h, --help          this text
#
# Environment: SSDLAB, the command that runs ssdlab (default `ssdlab`, else `python3 -m ssdlab`);
# PYTHON, a python3 for reading JSON (default python3); GUEST_KERNEL_PACKAGE, the kernel package
# installed when /boot has none (default linux-image-cloud-amd64: NVMe and ext4 built in).
#
# Two sessions, each its own server and its own boot:
#   full   fio on the raw device (before mkfs, so it reads the drive's preconditioned data and each
#          4 KiB direct read is exactly one NBD read), then mkfs.ext4, a 64 MiB file and a few
#          small ones written, synced, unmounted, caches dropped, remounted, read back and checked
#          against their SHA-256 sums.
#   fio    fio on the raw device only: the server's read figures are then fio's reads plus the
#          handful the kernel makes when it probes the disk, a clean comparison.
# With --crash, two other sessions (docs/power-loss.md, "The guest crash test"), each with
# `--data file:WORKDIR/NAME/disk.img`, a virtio-blk disk (QEMU's NVMe drops FUA: see
# run_session) and the same workload: mkfs.ext4 (64 MiB, 4 KiB blocks, no
# discard) on the disk, then for each of N files: a file left unsynced beside, the file written
# with dd conv=fsync, and once fsync has returned a console line `SSDLAB-FSYNCED fI SHA256` and
# the same line in a 4 KiB marker block written with O_DIRECT at 96 MiB + I * 4 KiB (past the
# file system; block 0 says SSDLAB-MKFS-DONE once mke2fs has returned), so that the request
# stream itself says where mkfs and each fsync had returned.
#   record  the whole workload, unmounted cleanly; the server (--power-cuts, as in the cut
#           session, so that it sends WRITE_ZEROES alike) logs the request stream with its
#           data (--log, --log-data) for a replay with cuts anywhere in it
#   cut     the server runs with --power-cuts; once the console has reported K fsynced files
#           the script sends it SIGUSR1 and, when it has reported the cut, kills qemu (the
#           machine loses power too). The disk image is then the recovered drive's.
# The fio job: 4 KiB random reads, direct=1, libaio, iodepth 1 then iodepth 8 (stonewall), JSON
# output, printed on the serial console between marker lines. The script extracts it, stops the
# server with SIGTERM (it writes its result JSON), prints fio's read IOPS, mean and p99 latency
# beside the server's, and writes everything to WORKDIR/summary.json.
#
# Missing tools are installed from Debian's packages (apt-get, sudo if not root): qemu-system-x86,
# busybox-static, e2fsprogs, fio, cpio and a kernel (GUEST_KERNEL_PACKAGE). Nothing is copied
# into the repository. Exit status 0 only when every check passed; 1 with a message otherwise;
# 2 for a usage error.
set -euo pipefail

prog=guest.sh
die() {
    echo "$prog: error: $*" >&2
    exit 1
}
usage_error() {
    echo "$prog: $*" >&2
    echo "usage: bash scripts/guest.sh [options] [PRESET]   (--help for more)" >&2
    exit 2
}
note() {
    echo "$prog: $*" >&2
}

preset=small-tlc
workdir=
clock=realtime
runtime=5
timeout_s=
kernel=
clean=1
force_tcg=0
install=1
verbose=0
retries=0
crash=0
crash_files=24
cut_after=8
overrides=()
while (($#)); do
    case $1 in
        -w | --workdir | --clock | --runtime | --timeout | --kernel | --retries | --crash-files | \
            --cut-after | --set)
            (($# >= 2)) || usage_error "$1 needs a value" ;;
    esac
    case $1 in
        -w | --workdir) workdir=$2; shift 2 ;;
        --clock) clock=$2; shift 2 ;;
        --runtime) runtime=$2; shift 2 ;;
        --timeout) timeout_s=$2; shift 2 ;;
        --kernel) kernel=$2; shift 2 ;;
        --retries) retries=$2; shift 2 ;;
        --crash) crash=1; shift ;;
        --crash-files) crash_files=$2; shift 2 ;;
        --cut-after) cut_after=$2; shift 2 ;;
        --set) overrides+=(--set "$2"); shift 2 ;;
        --no-clean) clean=0; shift ;;
        --tcg) force_tcg=1; shift ;;
        --no-install) install=0; shift ;;
        -v | --verbose) verbose=1; shift ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        -*) usage_error "unknown option $1" ;;
        *) preset=$1; shift ;;
    esac
done
case $clock in realtime | logical) ;; *) usage_error "--clock must be realtime or logical" ;; esac
[[ $runtime =~ ^[1-9][0-9]*$ ]] || usage_error "--runtime must be a positive whole number"
[[ $retries =~ ^[0-9]$ ]] || usage_error "--retries must be a whole number from 0 to 9"
[[ $crash_files =~ ^[1-9][0-9]{0,2}$ ]] || usage_error "--crash-files must be a whole number from 1 to 999"
[[ $cut_after =~ ^[1-9][0-9]{0,2}$ ]] || usage_error "--cut-after must be a whole number from 1 to 999"
[[ -z $timeout_s || $timeout_s =~ ^[1-9][0-9]*$ ]] ||
    usage_error "--timeout must be a positive whole number"

[[ $(uname -m) == x86_64 ]] || die "this script boots an x86_64 guest on an x86_64 host"

# ---------------------------------------------------------------- tools, installed if missing
find_tool() { # NAME: its path, also looking in the sbin directories a user's PATH may lack
    PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin command -v "$1" 2>/dev/null || true
}
newest_kernel() {
    local k
    k=$(find /boot -maxdepth 1 -name 'vmlinuz-*' 2>/dev/null | sort -V | tail -n 1)
    echo "$k"
}
missing_packages() {
    local -a need=()
    [[ -n $(find_tool qemu-system-x86_64) ]] || need+=(qemu-system-x86)
    [[ -n $(find_tool busybox) ]] || need+=(busybox-static)
    [[ -n $(find_tool mke2fs) ]] || need+=(e2fsprogs)
    [[ -n $(find_tool fio) ]] || need+=(fio)
    [[ -n $(find_tool cpio) ]] || need+=(cpio)
    if [[ -z $kernel && -z $(newest_kernel) ]]; then
        need+=("${GUEST_KERNEL_PACKAGE:-linux-image-cloud-amd64}")
    fi
    echo "${need[*]}"
}
read -r -a need <<<"$(missing_packages)"
if ((${#need[@]})); then
    ((install)) || die "missing Debian packages: ${need[*]} (--no-install given)"
    command -v apt-get >/dev/null || die "missing ${need[*]} and no apt-get to install them"
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || die "missing ${need[*]}: not root and no sudo"
        sudo=(sudo)
    fi
    note "installing ${need[*]} (apt-get)"
    apt_install() {
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends "${need[@]}"
    }
    if ! apt_install; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
            die "apt-get update failed"
        apt_install || die "apt-get install ${need[*]} failed"
    fi
    read -r -a still <<<"$(missing_packages)"
    ((${#still[@]} == 0)) || die "still missing after apt-get: ${still[*]}"
fi
qemu=$(find_tool qemu-system-x86_64)
busybox=$(find_tool busybox)
mke2fs=$(find_tool mke2fs)
fio=$(find_tool fio)

if [[ -z $kernel ]]; then
    kernel=$(newest_kernel)
fi
[[ -f $kernel ]] || die "no kernel at ${kernel:-/boot/vmlinuz-*}"
[[ -r $kernel ]] || die "cannot read $kernel (run as root, or copy it and pass --kernel)"
kver=$(basename "$kernel")
kver=${kver#vmlinuz-}

if [[ -z ${SSDLAB:-} ]]; then
    if command -v ssdlab >/dev/null; then SSDLAB=ssdlab; else SSDLAB="python3 -m ssdlab"; fi
fi
read -r -a ssdlab <<<"$SSDLAB"
python=${PYTHON:-python3}
command -v "$python" >/dev/null || die "no $python to read JSON with (set PYTHON)"

# KVM when /dev/kvm is usable and boots this kernel: a short probe boot (no initramfs, so the
# kernel panics at once and, with panic=-1 and -no-reboot, qemu exits) finds a -cpu that works.
# qemu 7.2's `-cpu host` aborts on some hosts setting MSR 0x10a (arch-capabilities); without it
# the same boot may work. /dev/kvm from kvm_pvm (PVM, nested virtualisation) boots only PVM
# guest kernels: a distribution kernel hangs there, so the probe is not even tried.
kvm_probe() { # CPU [ACCEL...]: does the kernel reach its panic under KVM with -cpu CPU?
    local cpu=$1 out
    shift
    out=$(timeout -k 5 30 "$qemu" "${@:--enable-kvm}" -cpu "$cpu" -m 256M -nographic \
        -no-reboot -nic none -kernel "$kernel" -append "console=ttyS0 panic=-1" \
        </dev/null 2>&1) || true
    grep -aq 'Kernel panic' <<<"$out"
}
kvm=0
kvm_reason=
if ((force_tcg)); then
    kvm_reason="--tcg given"
elif ! [[ -c /dev/kvm && -r /dev/kvm && -w /dev/kvm ]] || ! { exec 3<>/dev/kvm; } 2>/dev/null; then
    kvm_reason="/dev/kvm is missing or not usable by $(id -un)"
elif [[ -d /sys/module/kvm_pvm && ! -d /sys/module/kvm_intel && ! -d /sys/module/kvm_amd ]]; then
    exec 3>&-
    kvm_reason="/dev/kvm is PVM (module kvm_pvm), which boots only PVM-enabled guest kernels"
else
    exec 3>&-
    for cpu in host host,-arch-capabilities; do
        if kvm_probe "$cpu"; then
            kvm=1
            break
        fi
    done
    ((kvm)) || kvm_reason="$(basename "$kernel") did not boot under KVM (probe with -cpu host)"
fi
if ((kvm)); then
    accel=(-enable-kvm -cpu "$cpu" -smp 2)
    : "${timeout_s:=600}"
else
    # One vCPU: under TCG each vCPU is a busy host thread, and the server needs a core too.
    accel=(-accel tcg -cpu max -smp 1)
    : "${timeout_s:=2400}"
    note "note: $kvm_reason: running the guest under TCG (emulation, slower)"
fi

# ---------------------------------------------------------------- work directory
if [[ -z $workdir ]]; then
    workdir=$(mktemp -d "${TMPDIR:-/tmp}/ssdlab-guest.XXXXXX")
fi
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
sockdir=$workdir
if ((${#workdir} > 90)); then # a Unix socket's path is at most 107 bytes
    sockdir=$(mktemp -d /tmp/ssdlab-sock.XXXXXX)
fi

server_pid=
cleanup() { # the server this script started, if it still runs; qemu runs in the foreground
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" || true
        wait "$server_pid" 2>/dev/null || true
    fi
    if [[ $sockdir != "$workdir" ]]; then rm -rf "$sockdir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- the initramfs
root=$workdir/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,mnt,modules}
declare -A libdirs=()

copy_file() { # SRC DEST-IN-ROOT: the file's contents (symlinks followed)
    mkdir -p "$root$(dirname "$2")"
    cp -L "$1" "$root$2"
}
copy_binary() { # SRC DEST-IN-ROOT: the binary and every shared library ldd lists for it
    copy_file "$1" "$2"
    local deps lib
    deps=$(ldd "$1" 2>/dev/null || true) # "not a dynamic executable": exit 1, no libraries
    while read -r lib; do
        [[ -n $lib && -e $lib ]] || continue
        if [[ ! -e $root$lib ]]; then copy_file "$lib" "$lib"; fi
        libdirs[$(dirname "$lib")]=1
    done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$deps")
}
copy_binary "$busybox" /bin/busybox
copy_binary "$mke2fs" /usr/sbin/mke2fs
copy_binary "$fio" /usr/bin/fio
if [[ -f /etc/mke2fs.conf ]]; then copy_file /etc/mke2fs.conf /etc/mke2fs.conf; fi

# Kernel modules for NVMe and ext4 (and crc32c, which ext4's checksums use), in load order, when
# this kernel has them as modules; Debian's cloud kernel builds NVMe and ext4 in.
nmods=0
modprobe_cmd=$(find_tool modprobe)
if [[ -d /lib/modules/$kver && -n $modprobe_cmd ]]; then
    deps=$("$modprobe_cmd" -S "$kver" -a --show-depends nvme ext4 crc32c virtio_pci virtio_blk \
        2>&1 || true)
    declare -A seen_module=()
    while read -r kind path _; do
        [[ $kind == insmod && -z ${seen_module[$path]:-} ]] || continue
        seen_module[$path]=1
        nmods=$((nmods + 1))
        name=$(printf '%02d-%s' "$nmods" "$(basename "$path")")
        case $path in
            *.ko.xz) xz -dc "$path" >"$root/modules/${name%.xz}" ;;
            *.ko.zst) zstd -qdc "$path" >"$root/modules/${name%.zst}" ;;
            *.ko.gz) gzip -dc "$path" >"$root/modules/${name%.gz}" ;;
            *) cp "$path" "$root/modules/$name" ;;
        esac
    done <<<"$deps"
    for m in nvme ext4; do
        grep -Eq "^(builtin |insmod .*/)$m(\.ko.*)?( |$)" <<<"$deps" ||
            note "warning: modprobe knows no $m for $kver; the guest may not see the disk"
    done
else
    note "note: no /lib/modules/$kver: assuming NVMe and ext4 are built into $kernel"
fi

ld_path=$(printf '%s\n' "${!libdirs[@]}" | sort | paste -sd: -)
cat >"$root/init" <<EOF
#!/bin/busybox sh
# Generated by scripts/guest.sh. Mode and fio runtime come from the kernel command line
# (ssdlab.mode=full|fio|crash, ssdlab.runtime=SECONDS, ssdlab.files=N).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export LD_LIBRARY_PATH=$ld_path
EOF
cat >>"$root/init" <<'EOF'
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
/bin/busybox --install -s /bin
mkdir -p /dev/pts /tmp
mount -t tmpfs tmpfs /tmp

say() { echo "SSDLAB-GUEST: $*"; }
off() { sync; poweroff -f; sleep 10; echo o >/proc/sysrq-trigger; }
fail() { echo "SSDLAB-GUEST-FAIL: $*"; dmesg_excerpt; off; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
dmesg_excerpt() {
    echo "=== SSDLAB DMESG BEGIN ==="
    dmesg | grep -iE 'nvme|blk_|I/O error|EXT4-fs (error|warning)|timeout|abort|reset|hung' \
        | grep -v 'Command line' | tail -n 60
    echo "=== SSDLAB DMESG END ==="
}
step() { # NAME COMMAND...: run it, say how long it took, fail if it fails
    name=$1; shift
    t0=$(uptime_s)
    "$@" || fail "$name failed (exit $?)"
    say "step $name $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }') s"
}

mode=full
runtime=5
for arg in $(cat /proc/cmdline); do
    case $arg in
        ssdlab.mode=*) mode=${arg#ssdlab.mode=} ;;
        ssdlab.runtime=*) runtime=${arg#ssdlab.runtime=} ;;
        ssdlab.files=*) files=${arg#ssdlab.files=} ;;
    esac
done
dmesg -n 5  # errors and warnings (an NVMe timeout is one) still reach the console
for m in /modules/*.ko; do
    [ -e "$m" ] && { insmod "$m" || say "insmod $m failed"; }
done
say "start mode=$mode runtime=$runtime kernel=$(uname -r)"

dev=/dev/nvme0n1
# The crash workload's disk is virtio-blk (scripts/guest.sh explains why).
[ "$mode" = crash ] && dev=/dev/vda
i=0
while [ ! -b $dev ]; do
    i=$((i + 1))
    [ $i -gt 300 ] && fail "no $dev after 30 s"
    sleep 0.1
done
say "disk $dev: $(($(cat /sys/block/${dev#/dev/}/size) / 2048)) MiB," \
    "model $(cat /sys/block/${dev#/dev/}/device/model 2>/dev/null | tr -s ' ')"

if [ "$mode" = crash ]; then
    # The crash workload (scripts/guest.sh --crash): each fsynced file is reported on the
    # console and in a marker block past the file system once fsync has returned.
    step mkfs /usr/sbin/mke2fs -t ext4 -F -q -b 4096 -E nodiscard $dev 64M
    mark=$((96 * 256))
    echo SSDLAB-MKFS-DONE | dd of=$dev bs=4096 seek=$mark count=1 conv=sync oflag=direct \
        2>/dev/null || fail "marker 0 failed"
    step mount mount -t ext4 $dev /mnt
    i=1
    while [ $i -le "$files" ]; do
        dd if=/dev/urandom of=/tmp/f bs=1024 count=$((i * 7919 % 200 + 1)) 2>/dev/null
        sum=$(sha256sum /tmp/f | cut -d' ' -f1)
        dd if=/dev/urandom of=/mnt/noise$i bs=4096 count=$((i % 5 + 1)) 2>/dev/null
        dd if=/tmp/f of=/mnt/f$i bs=4096 conv=fsync 2>/dev/null || fail "writing f$i failed"
        echo "SSDLAB-FSYNCED f$i $sum"
        printf 'SSDLAB-FSYNCED f%d %s\n' $i "$sum" |
            dd of=$dev bs=4096 seek=$((mark + i)) count=1 conv=sync oflag=direct 2>/dev/null ||
            fail "marker $i failed"
        i=$((i + 1))
    done
    step umount umount /mnt
    say "done"
    off
fi

# fio on the raw device, before any file system: 4 KiB random reads of the drive's data.
run_fio() {
    /usr/bin/fio --output-format=json --output=/tmp/fio.json \
        --filename=$dev --direct=1 --rw=randread --bs=4k --ioengine=libaio \
        --time_based --runtime="$runtime" --lat_percentiles=1 --randrepeat=0 --eta=never \
        --name=qd1 --iodepth=1 \
        --name=qd8 --iodepth=8 --stonewall
}
step fio run_fio
dmesg -n 1  # nothing from the kernel in the middle of the JSON
echo "=== SSDLAB FIO JSON BEGIN ==="
cat /tmp/fio.json
echo "=== SSDLAB FIO JSON END ==="
dmesg -n 5

if [ "$mode" = full ]; then
    step mkfs /usr/sbin/mke2fs -t ext4 -F -q $dev
    step mount mount -t ext4 $dev /mnt
    mkdir -p /tmp/src
    step generate dd if=/dev/urandom of=/tmp/src/big bs=1M count=64 2>/dev/null
    echo "hello from the ssdlab guest" >/tmp/src/hello.txt
    dd if=/dev/urandom of=/tmp/src/small-4k bs=4096 count=1 2>/dev/null
    dd if=/dev/urandom of=/tmp/src/odd-12345 bs=12345 count=1 2>/dev/null
    seq 1 20000 >/tmp/src/numbers.txt
    (cd /tmp/src && sha256sum * >/tmp/sums) || fail "sha256sum of the sources failed"
    step write cp /tmp/src/big /tmp/src/hello.txt /tmp/src/small-4k /tmp/src/odd-12345 \
        /tmp/src/numbers.txt /mnt/
    step sync sync
    step umount umount /mnt
    echo 3 >/proc/sys/vm/drop_caches
    step remount mount -t ext4 -o ro $dev /mnt
    echo 3 >/proc/sys/vm/drop_caches
    verify() { (cd /mnt && sha256sum -c /tmp/sums); }
    t0=$(uptime_s)
    if verify; then
        say "checksums ok ($(wc -l </tmp/sums) files)" \
            "in $(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }') s"
    else
        echo "SSDLAB-GUEST-FAIL: checksum mismatch"
        cat /tmp/sums
        (cd /mnt && sha256sum $(cd /tmp/src && ls))
        dmesg_excerpt
        off
    fi
    df -k /mnt | tail -n 1
    step umount umount /mnt
fi
dmesg_excerpt
say "done"
off
EOF
chmod +x "$root/init"

initrd=$workdir/initramfs.cpio.gz
(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) |
    gzip -1 >"$initrd"
rm -rf "$root" # packed: only the archive is kept
note "initramfs: $(du -h "$initrd" | cut -f1) ($kernel, $nmods modules; work dir $workdir)"

# ---------------------------------------------------------------- one session
# run_session NAME MODE: a server, a boot, the console's checks; files under WORKDIR/NAME.
run_session() {
    local name=$1 mode=$2
    local dir=$workdir/$name
    rm -rf "$dir"
    mkdir -p "$dir"
    local sock=$sockdir/$name.sock
    rm -f "$sock"
    local -a extra=("${overrides[@]}")
    case $name in
        record) extra+=(--data "file:$dir/disk.img" --log-data "$dir/session.data" --power-cuts) ;;
        cut) extra+=(--data "file:$dir/disk.img" --power-cuts) ;;
    esac
    note "[$name] starting: ${ssdlab[*]} serve $preset --listen unix:$sock --clock $clock ${extra[*]}"
    "${ssdlab[@]}" serve "$preset" --listen "unix:$sock" --clock "$clock" "${extra[@]}" \
        --json "$dir/result.json" --log "$dir/session.log" --quiet >"$dir/server.out" 2>"$dir/server.err" </dev/null &
    server_pid=$!
    local waited=0
    while [[ ! -S $sock ]]; do
        if ! kill -0 "$server_pid" 2>/dev/null || ((waited > 600)); then
            cat "$dir/server.err" >&2
            die "[$name] the server did not start (see $dir/server.err)"
        fi
        sleep 0.1
        waited=$((waited + 1))
    done

    # The crash sessions' disk is virtio-blk, not NVMe: QEMU 7.2's NVMe controller passes a
    # write's FUA bit on to nothing (the recorded stream showed jbd2's commit block, which
    # the kernel sends with FUA, reach the server as a plain write with no FLUSH after it),
    # so a cut lost fsynced files for the host's fault, not the drive's. virtio-blk offers
    # no FUA and the guest kernel sends a FLUSH after the commit block instead.
    local disk=nvme,serial=ssdlab,drive=d0
    [[ $mode == crash ]] && disk=virtio-blk-pci,drive=d0
    # shellcheck disable=SC2054 # qemu's option values hold commas
    local -a cmd=(
        "$qemu" "${accel[@]}" -m 1G -nographic -no-reboot -nic none
        -kernel "$kernel" -initrd "$initrd"
        -append "console=ttyS0 panic=1 ssdlab.mode=$mode ssdlab.runtime=$runtime ssdlab.files=$crash_files"
        -drive "file=nbd+unix:///?socket=$sock,format=raw,if=none,id=d0,cache=none,discard=unmap"
        -device "$disk"
    )
    printf '%q ' "${cmd[@]}" >"$dir/qemu.cmd"
    echo >>"$dir/qemu.cmd"
    note "[$name] booting $(basename "$kernel") ($( ((kvm)) && echo KVM || echo TCG)," \
        "timeout ${timeout_s} s); console: $dir/console.log"
    local t0=$SECONDS rc=0
    if [[ $name == cut ]]; then
        # The machine and the drive lose power together: SIGUSR1 to the server once the guest
        # has reported enough fsynced files, then qemu killed once the server has cut.
        timeout -k 10 "$timeout_s" "${cmd[@]}" </dev/null >"$dir/console.log" 2>&1 &
        local qemu_pid=$! reported=0
        while kill -0 "$qemu_pid" 2>/dev/null; do
            reported=$(grep -ac '^SSDLAB-FSYNCED' "$dir/console.log" || true)
            ((reported >= cut_after)) && break
            sleep 0.05
        done
        if ((reported >= cut_after)); then
            kill -USR1 "$server_pid"
            n=0
            while ! grep -q 'power cut at event' "$dir/server.err" && ((n < 200)); do
                sleep 0.05
                n=$((n + 1))
            done
            kill -KILL "$qemu_pid" 2>/dev/null || true
        fi
        wait "$qemu_pid" || rc=$?
        ((reported >= cut_after)) && rc=0
    elif ((verbose)); then
        set +e
        timeout -k 10 "$timeout_s" "${cmd[@]}" </dev/null 2>&1 | tee "$dir/console.log"
        rc=${PIPESTATUS[0]}
        set -e
    else
        timeout -k 10 "$timeout_s" "${cmd[@]}" </dev/null >"$dir/console.log" 2>&1 || rc=$?
    fi
    local boot_s=$((SECONDS - t0))
    tr -d '\r' <"$dir/console.log" >"$dir/console.txt"

    # The server stops on SIGTERM and writes the session's result: within a minute, or it hangs.
    local problems=() src=0 n=0
    kill -TERM "$server_pid" 2>/dev/null || true
    while kill -0 "$server_pid" 2>/dev/null && ((n < 600)); do
        sleep 0.1
        n=$((n + 1))
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        problems+=("the server did not stop within 60 s of SIGTERM (killed)")
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" || src=$?
    server_pid=
    if [[ -S $sock ]]; then note "[$name] warning: the server left its socket $sock behind"; fi

    if ((rc == 124 || rc == 137)); then
        problems+=("qemu timed out after $timeout_s s")
    elif ((rc != 0)); then
        problems+=("qemu exited with status $rc")
    fi
    if [[ $name == cut ]]; then
        grep -q 'power cut at event' "$dir/server.err" || problems+=("the server did not cut")
    else
        grep -q '^SSDLAB-GUEST: done' "$dir/console.txt" || problems+=("the guest did not finish")
    fi
    # (After a cut the guest's writes fail: expected there.)
    if [[ $name != cut ]] && grep -q '^SSDLAB-GUEST-FAIL' "$dir/console.txt"; then
        problems+=("$(grep -m1 '^SSDLAB-GUEST-FAIL' "$dir/console.txt")")
    fi
    if [[ $mode == full ]] && ! grep -q '^SSDLAB-GUEST: checksums ok' "$dir/console.txt"; then
        problems+=("the guest did not confirm its checksums")
    fi
    sed -n '/^=== SSDLAB FIO JSON BEGIN ===$/,/^=== SSDLAB FIO JSON END ===$/{/^===/d;p}' \
        "$dir/console.txt" >"$dir/fio.json"
    if [[ $mode == crash ]]; then
        : # no fio in the crash workload
    elif [[ ! -s $dir/fio.json ]]; then
        problems+=("no fio JSON between the markers on the console")
    elif ! "$python" -c '
import json, sys
text = open(sys.argv[1]).read()
json.loads(text[text.index("{"):])' "$dir/fio.json" 2>/dev/null; then
        problems+=("fio's output on the console is not JSON")
    fi
    if ((src != 0)); then
        problems+=("the server exited with status $src on SIGTERM")
    elif [[ ! -s $dir/result.json ]]; then
        problems+=("the server wrote no result JSON")
    fi
    # What qemu said about the NBD connection, and what the guest kernel said about the disk.
    grep -ao 'qemu-system-x86_64: .*' "$dir/console.txt" >"$dir/qemu-messages.txt" || true
    sed -n '/^=== SSDLAB DMESG BEGIN ===$/,/^=== SSDLAB DMESG END ===$/{/^===/d;p}' \
        "$dir/console.txt" >"$dir/dmesg.txt"
    grep '^SSDLAB-GUEST: step' "$dir/console.txt" | sed "s/^SSDLAB-GUEST: /  [$name] /" >&2 || true
    note "[$name] guest ran ${boot_s} s (qemu exit $rc), server exit $src"
    echo "$boot_s" >"$dir/wall_s"
    if ((${#problems[@]})); then
        echo "---- last 40 console lines ($dir/console.txt) ----" >&2
        tail -n 40 "$dir/console.txt" >&2
        echo "---- server stderr ----" >&2
        tail -n 20 "$dir/server.err" >&2
        local p
        for p in "${problems[@]}"; do echo "$prog: [$name] $p" >&2; done
        die "[$name] session failed (files in $dir)"
    fi
}

sessions=(full)
((clean)) && sessions+=(fio)
((crash)) && sessions=(record cut)
for s in "${sessions[@]}"; do
    attempt=0
    while :; do
        mode=$s
        ((crash)) && mode=crash
        run_session "$s" "$mode"
        if ((attempt < retries)) && grep -qiE 'nvme.*(timeout|abort|reset)' "$workdir/$s/dmesg.txt"; then
            attempt=$((attempt + 1))
            rm -rf "$workdir/$s.stalled-$attempt"
            mv "$workdir/$s" "$workdir/$s.stalled-$attempt"
            note "[$s] the guest's NVMe driver timed out a command; the server's session log" \
                "($workdir/$s.stalled-$attempt/session.log) shows what reached it. Attempt" \
                "$((attempt + 1)) of $((retries + 1))"
            continue
        fi
        break
    done
done

# ---------------------------------------------------------------- the comparison
if ((crash)); then
    # The disk images are checked by the caller (tests/test_guest_crash.py).
    printf '{"kvm": %s, "sessions": ["record", "cut"], "cut_after": %d, "files": %d}\n' \
        "$( ((kvm)) && echo true || echo false)" "$cut_after" "$crash_files" >"$workdir/summary.json"
    note "crash sessions done: $workdir/record (session.log, session.data), $workdir/cut (disk.img)"
    exit 0
fi
"$python" - "$workdir" "$kvm" "$clock" "$preset" "${sessions[@]}" <<'PY'
import json
import re
import sys
from pathlib import Path

workdir, kvm, clock, preset, *sessions = sys.argv[1:]
work = Path(workdir)


def fio_jobs(path: Path) -> list[dict]:
    text = path.read_text()
    data = json.loads(text[text.index("{") :])
    jobs = []
    for job in data["jobs"]:
        r = job["read"]
        lat = r.get("lat_ns", {})
        pct = lat.get("percentile") or r.get("clat_ns", {}).get("percentile", {})
        jobs.append({
            "name": job["jobname"],
            "iodepth": int(job["job options"].get("iodepth", 1)),
            "reads": r["total_ios"],
            "iops": r["iops"],
            "mean_us": lat.get("mean", 0.0) / 1000,
            "p99_us": pct.get("99.000000", 0.0) / 1000,
            "runtime_ms": r["runtime"],
            "errors": job.get("error", 0),
        })
    return jobs


def server_read(path: Path) -> dict:
    data = json.loads(path.read_text())
    r = data["ops"]["read"]
    return {
        "reads": r["count"],
        "iops": r["iops"],
        "mean_us": r["latency_us"]["mean"],
        "p99_us": r["latency_us"]["p99"],
        "writes": data["ops"].get("write", {}).get("count", 0),
        "simulated_s": data["sim"].get("simulated_time_s"),
        "stop_reason": data["sim"].get("stop_reason"),
    }


def stalled_attempts(work: Path, name: str) -> list[dict]:
    """Attempts run again (--retries) because the guest's NVMe driver timed out: the driver's
    lines, and the longest time between two requests reaching the server (its session log)."""
    out = []
    for d in sorted(work.glob(f"{name}.stalled-*")):
        arrivals = [
            int(ln.split()[1])
            for ln in (d / "session.log").read_text().splitlines()
            if ln.startswith("at ")
        ]
        gap_ps = max((b - a for a, b in zip(arrivals, arrivals[1:])), default=0)
        dmesg = (d / "dmesg.txt").read_text().splitlines()
        out.append({
            "dir": str(d),
            "nvme_lines": [ln for ln in dmesg if re.search("timeout|abort|reset", ln, re.I)],
            "longest_gap_between_requests_s": gap_ps / 1e12,
        })
    return out


summary = {"preset": preset, "clock": clock, "kvm": kvm == "1", "sessions": {}}
problems = []
for name in sessions:
    d = work / name
    jobs = fio_jobs(d / "fio.json")
    server = server_read(d / "result.json")
    console = (d / "console.txt").read_text()
    fio_reads = sum(j["reads"] for j in jobs)
    summary["sessions"][name] = {
        "fio": jobs,
        "fio_reads": fio_reads,
        "server": server,
        "checksums_ok": ("SSDLAB-GUEST: checksums ok" in console) if name == "full" else None,
        "steps": [ln.split(": ", 1)[1] for ln in console.splitlines()
                  if ln.startswith("SSDLAB-GUEST: step")],
        "wall_s": int((d / "wall_s").read_text()),
        "qemu_messages": (d / "qemu-messages.txt").read_text().splitlines(),
        "dmesg": (d / "dmesg.txt").read_text().splitlines(),
        "stalled_attempts": stalled_attempts(work, name),
    }
    for j in jobs:
        if j["errors"]:
            problems.append(f"[{name}] fio job {j['name']} reported error {j['errors']}")
        if not j["iops"] > 0:
            problems.append(f"[{name}] fio job {j['name']} read nothing")
    if server["reads"] < fio_reads:
        problems.append(
            f"[{name}] the server counted {server['reads']} reads, fewer than fio's {fio_reads}"
        )
(work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

rows = []  # (column title, reads, iops, mean, p99)
for name in sessions:
    s = summary["sessions"][name]
    for j in s["fio"]:
        rows.append((f"guest fio QD{j['iodepth']} [{name}]", j["reads"], j["iops"],
                     j["mean_us"], j["p99_us"]))
    srv = s["server"]
    rows.append((f"server, {name} session", srv["reads"], srv["iops"], srv["mean_us"],
                 srv["p99_us"]))

print()
print(f"4 KiB random reads, {preset}, {clock} clock, {'KVM' if kvm == '1' else 'TCG'}")
print(f"{'':30} {'reads':>9} {'IOPS':>10} {'mean µs':>10} {'p99 µs':>10}")
for title, n, iops, mean, p99 in rows:
    print(f"{title:30} {n:>9,} {iops:>10,.0f} {mean:>10,.1f} {p99:>10,.1f}")
print()
if kvm != "1":
    print("(under TCG the guest's latencies carry the emulation's own cost, far above KVM's)")
print("guest: fio's total latency (submission to completion) in the guest, over its run time.")
print("server: the simulated latency of every read of the session; IOPS over the session's")
print("simulated time (on the realtime clock the boot and idle time too). The full session's")
print("reads include mke2fs's and the checksum pass's (large reads); the fio session's are")
print("fio's and the few the kernel makes probing the disk.")
for name in sessions:
    s = summary["sessions"][name]
    if s["checksums_ok"]:
        print(f"[{name}] guest checksums matched")
    for line in s["qemu_messages"]:
        print(f"[{name}] qemu/console: {line}")
    for line in s["dmesg"]:
        if re.search(r"error|timeout|abort|reset|hung|fail", line, re.IGNORECASE):
            print(f"[{name}] guest kernel: {line}")
print(f"files: {work} (summary.json, */console.txt, */fio.json, */result.json)")
if problems:
    for p in problems:
        print(f"guest.sh: {p}", file=sys.stderr)
    sys.exit(1)
PY
