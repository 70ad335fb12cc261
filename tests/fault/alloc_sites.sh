#!/bin/sh
# alloc_sites.sh: which allocation call sites of src/ does the fault sweep
# reach with a failing allocation?
#
#   sh tests/fault/alloc_sites.sh SOURCE_DIR BUILD_DIR [REPORT]
#
# BUILD_DIR must be a TES_COVERAGE=ON build (make coverage makes one). The
# script runs BUILD_DIR/tests/fault_sweep alone, with its gcov counters
# written under a temporary GCOV_PREFIX (the build's own counters, which
# the rest of the suite fills, stay untouched), then reads gcov's line
# counts of every .c file of src/.
#
# An allocation call site is a call of an allocation primitive (tes__malloc,
# tes__calloc, tes__realloc, tes__grow, tes__strdup) or of a reserve helper
# (every tes__*reserve* function declared in src/, e.g. tes__map_reserve,
# tes__table_reserve, tes__defer_reserve, plus tes__world_scratch), outside
# src/core/alloc.c (the primitives themselves). Constructors that allocate
# (tes__table_new, tes__group_new, ...) are covered by the primitive calls
# inside them.
#
# A site's failure branch is the first line run only when the call failed:
#   if (... call(...) ...)        -> the line after the condition
#       return TES_ERR_NOMEM;
#   x = call(...);                -> the line after the NULL / rc check of x
#   if (!x)
#       return NULL;
# The site is reached when that line ran in the sweep. Calls whose result is
# returned as is ("return call(...)") are forwarded: their callers are the
# sites. Sites whose failure path has no line of its own (a ternary, a
# "!= NULL" success test, a check shared after the variable is assigned
# again, a body on the condition's line) are undetermined: counted in the
# total, not as reached, and listed apart. Calls sharing one condition
# ("if (a() || b())") share its failure line, so each counts as reached when
# either failed; the listing marks them.
#
# Prints "alloc sites: H of T reached by the fault sweep", then the sites it
# did not reach. Exits 0 whatever the count (the listing is the finding);
# non-zero only when it cannot run.
set -eu

src_dir=${1:?usage: alloc_sites.sh SOURCE_DIR BUILD_DIR [REPORT]}
build_dir=${2:?usage: alloc_sites.sh SOURCE_DIR BUILD_DIR [REPORT]}
report=${3:-$build_dir/alloc_sites.txt}
src_dir=$(cd "$src_dir" && pwd)
build_dir=$(cd "$build_dir" && pwd)

sweep=$build_dir/tests/fault_sweep
objdir=$build_dir/CMakeFiles/tessera_objects.dir
if [ ! -x "$sweep" ]; then
    echo "alloc_sites: $sweep is missing (build the tests first)" >&2
    exit 2
fi
if ! ls "$objdir"/src/core/*.gcno >/dev/null 2>&1; then
    echo "alloc_sites: no gcov notes under $objdir (configure with -DTES_COVERAGE=ON)" >&2
    exit 2
fi
command -v gcov >/dev/null || { echo "alloc_sites: gcov is missing" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# The sweep alone, its counters under $tmp.
if ! GCOV_PREFIX=$tmp GCOV_PREFIX_STRIP=0 "$sweep" >"$tmp/sweep.log" 2>&1; then
    tail -n 20 "$tmp/sweep.log" >&2
    echo "alloc_sites: fault_sweep failed" >&2
    exit 2
fi

# Allocating functions: the primitives and the reserve helpers.
helpers=$(cat "$src_dir"/src/*/*.h | grep -o 'tes__[a-z0-9_]*reserve[a-z0-9_]*(' | tr -d '(' | sort -u | tr '\n' ' ')
allocators="tes__malloc tes__calloc tes__realloc tes__grow tes__strdup tes__world_scratch $helpers"

# One annotated listing per .c file: "count:line:source".
mirror=$tmp$objdir
: >"$tmp/all.txt"
for src in $(cd "$src_dir" && find src -name '*.c' | sort); do
    [ "$src" = src/core/alloc.c ] && continue
    out=$tmp/$(echo "$src" | tr / _).gcov
    gcda=$mirror/$src.gcda
    if [ -f "$gcda" ]; then
        cp "$objdir/$src.gcno" "$mirror/$src.gcno"
        (cd "$tmp" && gcov -t -o "$(dirname "$gcda")" "$gcda" 2>/dev/null) |
            awk -v want="$src_dir/$src" '
                /^ *-: *0:Source:/ { sub(/^ *-: *0:Source:/, ""); on = ($0 == want); next }
                on { print }' >"$out"
    fi
    if [ ! -s "$out" ]; then
        # Never run by the sweep: every line counts zero.
        awk '{ printf "#####:%5d:%s\n", NR, $0 }' "$src_dir/$src" >"$out"
    fi
    awk -v file="$src" '{ print file "\t" $0 }' "$out" >>"$tmp/all.txt"
done

awk -F '\t' -v allocators="$allocators" -v report="$report" '
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
function nocomment(s) { sub(/\/\*.*\*\//, "", s); sub(/\/\/.*$/, "", s); return trim(s) }
function parens(s,   o, c) { o = gsub(/\(/, "(", s); c = gsub(/\)/, ")", s); return o - c }
function count(n,   c) {
    c = cnt[n]
    if (c ~ /#|=/) return 0
    gsub(/[^0-9]/, "", c)
    return c == "" ? -1 : c + 0
}
# Line after the condition of the if statement starting at line i, or 0 when
# the body sits on the same line.
function after_if(i,   d, j, rest) {
    d = 0
    for (j = i; j <= nl; j++) {
        d += parens(nocomment(txt[j]))
        if (d <= 0) break
    }
    rest = nocomment(txt[j])
    sub(/.*\)/, "", rest)
    rest = trim(rest)
    if (rest != "" && rest != "{") return 0
    j++
    while (j <= nl && trim(txt[j]) == "{") j++
    return j
}
function flush(   l, i, k, m, name, s, e, d, head, pre, lhs, v, vre, f, why, toks, n, chk) {
    for (l = 1; l <= nl; l++) {
        line = nocomment(txt[l])
        if (line == "" || txt[l] ~ /^[^ \t]/ || line ~ /^\*/) continue
        rest = line
        while (match(rest, /tes__[a-z0-9_]+\(/)) {
            name = substr(rest, RSTART, RLENGTH - 1)
            rest = substr(rest, RSTART + RLENGTH)
            if (!(name in isalloc)) continue
            # The statement holding the call: back to the end of the previous one.
            s = l
            while (s > 1) {
                if (nocomment(txt[s]) ~ /^(\}|else|if|return|for|while|do)([ ({]|$)/) break
                pre = nocomment(txt[s - 1])
                if (pre == "" || pre ~ /[;{}:]$/ || pre ~ /^#/ || pre == "else" || txt[s - 1] ~ /\*\/[ \t]*$/) break
                if (pre ~ /^(\} *)?(else +)?(if|for|while) *\(/ && parens(pre) == 0) break
                s--
            }
            d = 0
            for (e = s; e <= nl; e++) {
                d += parens(nocomment(txt[e]))
                if (e >= l && d <= 0) break
            }
            head = nocomment(txt[s])
            for (k = s + 1; k <= e; k++) head = head " " nocomment(txt[k])
            f = 0; why = ""
            if (head ~ /^return[ (]/ || head ~ /^return$/) {
                fwd[++nf] = sprintf("%s:%d %s in %s", file, l, name, fn[l])
                continue
            }
            shared = (head ~ /^(\} *)?(else +)?if *\(/) && (index(head, "||") > 0)
            if (head ~ /^(\} *)?(else +)?if *\(/) {
                if (head ~ ("\\(" name "\\([^;]*\\) *!= *NULL") || head ~ /!= *NULL\)/) why = "success test (!= NULL), failure path shared"
                else if (!(f = after_if(s))) why = "body on the condition line"
            } else if (match(head, "^[^=(]*=[ \t]*" name "\\(")) {
                lhs = trim(substr(head, 1, index(head, "=") - 1))
                n = split(lhs, toks, /[ \t]+/)
                v = toks[n]
                if (n > 1) gsub(/^\*+/, "", v)
                vre = v
                gsub(/[][\\.*+?^$(){}|]/, "\\\\&", vre)
                for (k = e + 1; k <= e + 15 && k <= nl; k++) {
                    chk = nocomment(txt[k])
                    if (chk ~ ("^(\\} *)?(else +)?if *\\((!" vre "|" vre "|" vre " *== *NULL|" vre " *!= *TES_OK)\\)") ||
                        chk ~ ("^(\\} *)?(else +)?if *\\((.*[^a-z0-9_>.])?!" vre " *(\\)|\\|\\|)")) {
                        shared = index(chk, "||") > 0
                        if (!(f = after_if(k))) why = "body on the check line"
                        break
                    }
                    if (chk ~ ("(^|[^a-z0-9_>.])" vre " *=[^=]")) { why = "result assigned again before its check"; break }
                }
                if (!f && why == "") why = "no check of " v " found"
            } else {
                why = "result not tested on its own line"
            }
            total++
            key = sprintf("%s:%d %s in %s", file, l, name, fn[l])
            if (why != "") { und[++nu] = key " (" why ")"; continue }
            c = count(f)
            if (c > 0) { hit++; if (shared) sharedhit[++ns] = key " (failure line " f ", shared condition)" }
            else if (c < 0) und[++nu] = key " (line " f " is not executable)"
            else miss[++nm] = key " (failure line " f ": " trim(txt[f]) ")"
        }
    }
}
BEGIN { n = split(allocators, a, " "); for (i = 1; i <= n; i++) isalloc[a[i]] = 1 }
$1 != file {
    if (file != "") flush()
    file = $1; nl = 0; cur = "?"
    delete cnt; delete txt; delete fn
}
{
    raw = $2
    for (i = 3; i <= NF; i++) raw = raw "\t" $i
    c = raw; sub(/:.*/, "", c); c = trim(c)
    r = raw; sub(/^[^:]*:/, "", r)
    no = r; sub(/:.*/, "", no); no = trim(no) + 0
    sub(/^[^:]*:/, "", r)
    if (no < 1) next
    nl = no; cnt[no] = c; txt[no] = r
    if (r ~ /^[a-zA-Z].*[a-z0-9_]+\(/ && r !~ /;[ \t]*$/) {
        f2 = r; sub(/\(.*/, "", f2); sub(/.*[ *]/, "", f2); cur = f2
    }
    fn[no] = cur
}
END {
    if (file != "") flush()
    out = sprintf("alloc sites: %d of %d reached by the fault sweep", hit, total)
    print out > report
    if (nm) { print "not reached (the failure line never ran):" > report; for (i = 1; i <= nm; i++) print "  " miss[i] > report }
    if (nu) { print "undetermined (no failure line of their own; not counted as reached):" > report; for (i = 1; i <= nu; i++) print "  " und[i] > report }
    if (ns) { print "reached through a condition shared with another call (approximate):" > report; for (i = 1; i <= ns; i++) print "  " sharedhit[i] > report }
    if (nf) { print "forwarded (\"return call(...)\"; the callers are the sites):" > report; for (i = 1; i <= nf; i++) print "  " fwd[i] > report }
    close(report)
}' "$tmp/all.txt"

cat "$report"
