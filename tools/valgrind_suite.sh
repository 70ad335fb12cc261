#!/bin/sh
# valgrind_suite.sh DIR OPS JOBS FLAGS... — runs every test program in DIR
# under valgrind memcheck, JOBS at a time (the fault sweep alone takes
# minutes there, so the others run beside it). The fuzz runner gets
# --ops OPS. Each program's log is left next to it (NAME.valgrind.log).
# Exits 1 if any program reports an error or a definite/indirect leak.
set -u
dir=$1 ops=$2 jobs=$3
shift 3
start=$(date +%s)
status=$(mktemp -d)
trap 'rm -rf "$status"' EXIT INT TERM
for t in "$dir"/*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    case "$t" in *fuzz_libfuzzer|*make_seeds|*.log) continue;; esac
    echo "$t"
done | xargs -P "$jobs" -I{} sh -c '
    t=$1 ops=$2 status=$3; shift 3
    args=; case "$t" in *fuzz_runner) args="--ops $ops";; esac
    if valgrind "$@" "$t" $args >"$t.valgrind.log" 2>&1; then
        echo "valgrind: ok   $(basename "$t")"; touch "$status/ok.$(basename "$t")"
    else
        echo "valgrind: FAIL $(basename "$t") (log: $t.valgrind.log)"; tail -n 40 "$t.valgrind.log"
        touch "$status/bad.$(basename "$t")"
    fi' sh {} "$ops" "$status" "$@"
n=$(ls "$status" | wc -l)
bad=$(ls "$status" | grep -c '^bad\.' || true)
echo "valgrind: took $(( $(date +%s) - start ))s"
if [ "$bad" -ne 0 ]; then echo "valgrind: $n programs, $bad failed (errors or leaks)"; exit 1; fi
echo "valgrind: $n programs, 0 errors, 0 leaks"
