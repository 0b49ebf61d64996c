# Sourced by the benchmark scripts (bench-serve.sh, bench-mqsim.sh) to check their counts:
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
