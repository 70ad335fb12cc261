#!/bin/sh
# One source for the benchmark figures the documentation quotes:
# docs/bench/results.csv and docs/bench/results_memory.csv (as `make bench`
# writes them to build/bench/) plus docs/bench/machine.txt (where and how
# they were measured). This script writes the block between
# "<!-- bench:begin NAME -->" and "<!-- bench:end -->" in docs/bench.md
# (NAME bench: the full table) and docs/guide.md (NAME guide: the storage
# and bulk comparisons) from those files, so the two never disagree.
#
#   tools/bench_figures.sh                 rewrite both blocks from docs/bench/
#   tools/bench_figures.sh --from DIR      first copy DIR/bench_results*.csv
#                                          into docs/bench/ (and the chart
#                                          DIR/bench_results.svg, when drawn,
#                                          to docs/), and describe this
#                                          machine in machine.txt (make bench-docs)
#   tools/bench_figures.sh --check         exit 1 if a block is out of date
#
# POSIX sh and awk only. Run from anywhere: paths are relative to the
# repository (the script's parent directory).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
mode=write
from=
while [ $# -gt 0 ]; do
    case $1 in
    --check) mode=check ;;
    --from) from=$2; shift ;;
    *) echo "usage: $0 [--check] [--from DIR]" >&2; exit 2 ;;
    esac
    shift
done
bench="$root/docs/bench"
if [ -n "$from" ]; then
    cp "$from/bench_results.csv" "$bench/results.csv"
    cp "$from/bench_results_memory.csv" "$bench/results_memory.csv"
    if [ -s "$from/bench_results.svg" ]; then cp "$from/bench_results.svg" "$root/docs/bench_results.svg"; fi
    cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
    ccv=$(cc --version 2>/dev/null | head -n 1 || true)
    printf '%s; %s CPUs%s; %s; %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
        "$(nproc 2>/dev/null || echo '?')" "${cpu:+ ($cpu)}" "$(uname -sr)" "$ccv" > "$bench/machine.txt"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Renders both blocks into $tmp/bench.block and $tmp/guide.block.
awk -v machine="$(cat "$bench/machine.txt")" -v out="$tmp" '
    # Splits one CSV line (quoted fields may hold commas) into f[1..n].
    function split_csv(line, f,    n, i, c, field, quoted) {
        n = 0; field = ""; quoted = 0
        for (i = 1; i <= length(line); i++) {
            c = substr(line, i, 1)
            if (quoted) {
                if (c == "\"" && substr(line, i + 1, 1) == "\"") { field = field c; i++ }
                else if (c == "\"") quoted = 0
                else field = field c
            } else if (c == "\"") quoted = 1
            else if (c == ",") { f[++n] = field; field = "" }
            else field = field c
        }
        f[++n] = field
        return n
    }
    function need(key, arr) {
        if (!(key in arr)) { printf "bench_figures: no row \"%s\" in the CSV\n", key > "/dev/stderr"; bad = 1; return "?" }
        return arr[key]
    }
    function ns(name) { return sprintf("%.2f ns", need(name, tmed)) }
    function base(name) { return sprintf("%.2f ns", need(name, bmed)) }
    function bpe(name) { return sprintf("%.2f B/entity", need(name, mbpe)) }
    FNR == 1 { file++; next }
    file == 1 {
        split_csv($0, f)
        rows[++nrows] = f[1]; unit[f[1]] = f[2]
        tmed[f[1]] = f[3]; tmin[f[1]] = f[4]; tcold[f[1]] = f[5]
        bmed[f[1]] = f[6]; bmin[f[1]] = f[7]; ratio[f[1]] = f[8]
    }
    file == 2 {
        split_csv($0, f)
        mrows[++nmrows] = f[1]; ments[f[1]] = f[2]; mbytes[f[1]] = f[3]
        mbpe[f[1]] = f[4]; mpay[f[1]] = f[5]; mbase[f[1]] = f[6]
    }
    END {
        r = out "/bench.block"
        printf "One full `make bench` run (%s):\n\n```\n", machine > r
        printf "%-36s %-7s %10s %10s %10s %10s %10s %7s\n", "workload", "per", "tes med", "tes min", "tes cold", "base med", "base min", "ratio" > r
        printf "%-36s %-7s %10s %10s %10s %10s %10s %7s\n", "", "", "ns", "ns", "ns", "ns", "ns", "med/med" > r
        line = ""; for (i = 0; i < 106; i++) line = line "-"; print line > r
        for (i = 1; i <= nrows; i++) {
            k = rows[i]
            if (tmed[k] == "") { printf "%-36s %-7s %s\n", k, unit[k], "failed" > r; continue }
            printf "%-36s %-7s %10.2f %10.2f %10.2f %10.2f %10.2f %7.2f\n", k, unit[k], tmed[k], tmin[k], tcold[k], bmed[k], bmin[k], ratio[k] > r
        }
        printf "\nmemory (tes_world_stats().bytes_allocated / live entities)\n" > r
        printf "%-38s %9s %12s %10s %12s %10s\n", "probe", "entities", "bytes", "B/entity", "payload B/e", "base B/e" > r
        line = ""; for (i = 0; i < 96; i++) line = line "-"; print line > r
        for (i = 1; i <= nmrows; i++) {
            k = mrows[i]
            printf "%-38s %9s %12s %10.2f %12.2f %10.2f\n", k, ments[k], mbytes[k], mbpe[k], mpay[k], mbase[k] > r
        }
        printf "```\n" > r
        close(r)

        g = out "/guide.block"
        printf "Measured by `make bench` (%s; median per operation; the full table and what each workload measures: [Benchmarks](bench.md)):\n\n", machine > g
        printf "| Operation | table | sparse | notes |\n|---|---|---|---|\n" > g
        printf "| `tes_get`, random order | %s | %s | table: entity slot, then the column; sparse: the sparse entry (which carries the generation, so the entity slot is not read), then the data page |\n", ns("table: get Position random order"), ns("sparse: get random order") > g
        printf "| add + remove of a 4-byte component (10k entities) | %s | %s | table moves the row twice; sparse touches one store |\n", ns("table: add+remove 4B comp (N/100)"), ns("sparse: add+remove 4B comp (N/100)") > g
        printf "| `Position += Velocity` over 1M entities, all match | %s | %s (view), %s (owning group) | plain C loop: %s |\n", ns("W4 move: table query"), ns("W4 move: sparse view"), ns("W4 move: owning group"), base("W4 move: table query") > g
        printf "| the same, 10%% match | %s | %s (view), %s (owning group) | per matched entity; plain loop: %s |\n", ns("W8 move 10%: table query"), ns("W8 move 10%: sparse view"), ns("W8 move 10%: owning group"), base("W8 move 10%: table query") > g
        printf "| memory, 3 x 12-byte components | %s | %s | payload 36 B; both include the 12-byte entity slot |\n", bpe("memory: 3 table comps (spawn_n)"), bpe("memory: 3 sparse comps (spawn_n)") > g
        printf "\n| Per entity | in bulk | one call at a time |\n|---|---|---|\n" > g
        printf "| spawn with 3 table components | %s (`tes_spawn_n`) | %s (`tes_spawn` + 3 `tes_set`) |\n", ns("table: spawn_n 3 comps bulk"), ns("table: spawn + set 3 comps 1-by-1") > g
        printf "| instantiate a 5-member prefab | %s (`tes_instantiate_n`) | %s (`tes_instantiate`) |\n", ns("instantiate_n: 5-member prefab bulk"), ns("instantiate: 5-member prefab x1") > g
        close(g)
        exit bad
    }
' "$bench/results.csv" "$bench/results_memory.csv"

# Replaces the block NAME in FILE by BLOCK_FILE (to stdout).
splice() {
    awk -v name="$2" -v block="$3" '
        $0 == "<!-- bench:begin " name " -->" {
            print; while ((getline line < block) > 0) print line; skipping = 1; found = 1; next
        }
        skipping && $0 == "<!-- bench:end -->" { skipping = 0 }
        !skipping { print }
        END { if (!found) { printf "bench_figures: no block %s\n", name > "/dev/stderr"; exit 1 } }
    ' "$1"
}

status=0
for pair in "docs/bench.md bench" "docs/guide.md guide"; do
    set -- $pair
    splice "$root/$1" "$2" "$tmp/$2.block" > "$tmp/new"
    if [ "$mode" = check ]; then
        if ! cmp -s "$tmp/new" "$root/$1"; then
            echo "$1: the benchmark block is out of date (run tools/bench_figures.sh)"
            diff "$root/$1" "$tmp/new" | head -n 20 || true
            status=1
        fi
    elif ! cmp -s "$tmp/new" "$root/$1"; then
        cp "$tmp/new" "$root/$1"
        echo "wrote the benchmark figures into $1"
    fi
done
exit $status
