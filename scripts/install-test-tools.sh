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

# Debian builds these from one source (qemu), and each depends on the others' exact version
# (qemu-system-x86 on qemu-system-common, which qemu-utils of another version breaks): asked
# for one of them while another is installed at a different version (a backport), apt-get
# removes the installed one. So the packages of this family to be installed are pinned to the
# installed one's version when the archive has it; otherwise the installed ones are moved to
# the new one's version in the same transaction.
QEMU_FAMILY=(qemu-system-x86 qemu-utils)

installed_version() {
    dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
        awk '$1 == "install" && $3 == "installed" { print $4 }'
}

candidate_version() {
    apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

available() { # PACKAGE VERSION: whether the archive holds PACKAGE at VERSION
    apt-cache madison "$1" 2>/dev/null | awk -F'|' -v v="$2" '{ gsub(/ /, "", $2) } $2 == v { f = 1 } END { exit !f }'
}

# Rewrite needed[] (and add to it) so that the qemu family ends up at one version.
pin_qemu_family() {
    local -a missing=() present_ones=()
    local package version=""
    for package in "${QEMU_FAMILY[@]}"; do
        if [[ " ${needed[*]} " == *" $package "* ]]; then
            missing+=("$package")
        elif [[ -n $(installed_version "$package") ]]; then
            present_ones+=("$package")
            version=$(installed_version "$package")
        fi
    done
    if ((${#missing[@]} == 0 || ${#present_ones[@]} == 0)); then
        return 0
    fi
    local all_there=1
    for package in "${missing[@]}"; do
        available "$package" "$version" || all_there=0
    done
    local i
    if ((all_there)); then
        for i in "${!needed[@]}"; do
            for package in "${missing[@]}"; do
                if [[ ${needed[i]} == "$package" ]]; then
                    needed[i]="$package=$version"
                fi
            done
        done
    else
        version=$(candidate_version "${missing[0]}")
        for package in "${present_ones[@]}"; do
            needed+=("$package=$version")
        done
        allow_downgrades=(--allow-downgrades)
    fi
    return 0
}

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
    local log
    log=$(mktemp)
    local -a allow_downgrades=()
    if "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq update >"$log" 2>&1; then
        pin_qemu_family
    fi
    echo "ci: installing ${needed[*]} (apt-get)"
    if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${allow_downgrades[@]}" "${needed[@]}" \
        >>"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "ci: apt-get install ${needed[*]} failed" >&2
        return 1
    fi
    rm -f "$log"
}
install_test_tools
