#!/usr/bin/env bash
# The system packages the tests drive, from Debian's packages (apt-get; sudo when not root):
# called by scripts/test.sh, so the quickstart's test command and CI install the same things.
set -euo pipefail

# What the tests drive against `ssdlab serve`, as command:Debian package (a path prefix stands
# for a file): the real NBD clients (tests/test_serve.py, tests/test_serve_clients.py; Debian's
# fio has the nbd engine) and a Linux guest's machine, kernel and tools (tests/test_guest.py,
# scripts/guest.sh); and Chromium, in which the sweep report's test renders the HTML report
# (tests/test_experiments_cli.py); valgrind, whose lackey tool traces a real program's memory
# accesses for the paging model (crates/ssdlab/tests/paging.rs); GnuTLS's psktool and certtool,
# which make the PSK files and X.509 certificates of the TLS tests (tests/test_serve_tls.py).
# Installed only when missing; a test whose tool is still missing skips, naming it.
TEST_TOOLS=(
    qemu-system-x86_64:qemu-system-x86 busybox:busybox-static mke2fs:e2fsprogs cpio:cpio
    /boot/vmlinuz-:linux-image-cloud-amd64
    qemu-img:qemu-utils qemu-io:qemu-utils fio:fio nbdinfo:libnbd-bin nbdcopy:libnbd-bin
    psktool:gnutls-bin certtool:gnutls-bin
    chromium:chromium valgrind:valgrind
)

present() {
    if [[ $1 == /* ]]; then
        compgen -G "$1*" >/dev/null
    else
        command -v "$1" >/dev/null 2>&1
    fi
}

install_test_tools() {
    local -a needed=()
    local tool package
    for tool in "${TEST_TOOLS[@]}"; do
        package=${tool#*:}
        if ! present "${tool%%:*}" && [[ " ${needed[*]-} " != *" $package "* ]]; then
            needed+=("$package")
        fi
    done
    if ((${#needed[@]} == 0)); then
        return 0
    fi
    local -a sudo=()
    if ((EUID != 0)); then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            echo "ci: cannot install ${needed[*]} (not root, no sudo): their tests would skip (and under CI=true that fails the run)" >&2
            # Under CI a skipped test is a test that did not run: fail instead.
            [[ ${CI:-} != true ]]
            return
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "ci: cannot install ${needed[*]} (no apt-get): their tests would skip (and under CI=true that fails the run)" >&2
        [[ ${CI:-} != true ]]
        return
    fi
    echo "ci: installing ${needed[*]} (apt-get)"
    local log
    log=$(mktemp)
    if ! {
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq update &&
            "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -qq --no-install-recommends "${needed[@]}"
    } >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "ci: apt-get install ${needed[*]} failed" >&2
        return 1
    fi
    rm -f "$log"
}
install_test_tools
# Twice: a machine whose qemu-utils is newer than Debian's (a backport) loses it when Debian's
# qemu-system-x86 comes in; the second pass puts back the qemu-utils that matches it.
install_test_tools
