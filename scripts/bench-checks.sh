# Sourced by the benchmark scripts (bench-serve.sh, bench-mqsim.sh, bench-lag.sh) to check
# their arguments and tools before they start anything.

#   whole_numbers PROG NAME VALUE [NAME VALUE ...]
# exits 2 naming the first VALUE that is not a whole number above 0.
whole_numbers() {
    local prog=$1
    shift
    while [ $# -ge 2 ]; do
        case $2 in
            '' | *[!0-9]* | 0) echo "$prog: $1 '$2': expected a whole number above 0" >&2; exit 2 ;;
        esac
        shift 2
    done
}

#   need_tools PROG TOOL=PACKAGE [TOOL=PACKAGE ...]
# exits 2 naming the first TOOL not on the PATH and the Debian package that has it (ssdlab:
# how to install it from the checkout).
need_tools() {
    local prog=$1 tool
    shift
    for tool in "$@"; do
        command -v "${tool%%=*}" >/dev/null && continue
        if [ "${tool%%=*}" = ssdlab ]; then
            echo "$prog: ssdlab not found: expected it installed (pip install -e .)" >&2
        else
            echo "$prog: ${tool%%=*} not found: apt-get install ${tool#*=}" >&2
        fi
        exit 2
    done
}
