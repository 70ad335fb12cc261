#!/bin/sh
# valgrind_suite.sh DIR OPS STRIDE JOBS FLAGS... — runs every test program
# in DIR under valgrind memcheck, JOBS at a time (the fault sweep alone
# takes minutes there, so the others run beside it). The fuzz runner gets
# --ops OPS; the fault sweep gets --stride STRIDE (it fails every STRIDEth
# allocation: the sanitizer build sweeps every one); the change-detection
# and hierarchy fuzzers run a few of their seeds (make test runs them all). Each program's log is left next to it (NAME.valgrind.log).
# Exits 1 if any program reports an error or a definite/indirect leak.
set -u
dir=$1 ops=$2 stride=$3 jobs=$4
shift 4
start=$(date +%s)
status=$(mktemp -d)
trap 'rm -rf "$status"' EXIT INT TERM
# The longest programs start first, so the short ones fill the other
# workers around them instead of leaving one long run alone at the end.
# VG_SKIP (environment): names of programs to leave out, space-separated.
for t in "$dir"/*; do
    [ -x "$t" ] && [ -f "$t" ] || continue
    case " ${VG_SKIP:-} " in *" $(basename "$t") "*) continue;; esac
    case "$t" in
        *fuzz_libfuzzer|*make_seeds|*.log) continue;;
        *fault_sweep|*fuzz_runner) echo "0 $t";;
        *test_system*|*test_memsafety|*api_misuse|*changes_fuzz|*hier_fuzz) echo "1 $t";;
        *) echo "2 $t";;
    esac
done | sort -k1,1n -s | cut -d' ' -f2- | xargs -P "$jobs" -I{} sh -c '
    t=$1 ops=$2 stride=$3 status=$4; shift 4
    args=; case "$t" in *fuzz_runner) args="--ops $ops";; *fault_sweep) args="--stride $stride";;
        *json_world_gen) args="1 $t.out.json $t.out.expect";;
        *changes_fuzz) args="--seeds 2";; *hier_fuzz) args="--seeds 2";; esac
    if valgrind "$@" "$t" $args >"$t.valgrind.log" 2>&1; then
        echo "valgrind: ok   $(basename "$t")"; touch "$status/ok.$(basename "$t")"
    else
        echo "valgrind: FAIL $(basename "$t") (log: $t.valgrind.log)"; tail -n 40 "$t.valgrind.log"
        touch "$status/bad.$(basename "$t")"
    fi' sh {} "$ops" "$stride" "$status" "$@"
n=$(ls "$status" | wc -l)
bad=$(ls "$status" | grep -c '^bad\.' || true)
echo "valgrind: took $(( $(date +%s) - start ))s"
if [ "$bad" -ne 0 ]; then echo "valgrind: $n programs, $bad failed (errors or leaks)"; exit 1; fi
echo "valgrind: $n programs, 0 errors, 0 leaks"
