#!/bin/sh
# The single-file distribution can be vendored into a project that builds
# with -Werror: dist/tessera.c (written here by tools/amalgamate.sh into a
# scratch directory) compiles with no warning as C11 under
# -Wall -Wextra -Wpedantic -Werror with each compiler given that is
# installed (gcc and clang in the ctest), at -O2 (where gcc's flow
# warnings appear) and at -O1 with TES_DEBUG defined. At least one compiler must be present.
# Usage: check_amalgamation_warnings.sh SOURCE_DIR COMPILER...
set -eu
src=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$src/tools/amalgamate.sh" "$src" "$tmp/dist"
ran=0
for cc in "$@"; do
    command -v "$cc" >/dev/null 2>&1 || { echo "skip: $cc not installed"; continue; }
    # gcc emits some warnings (maybe-uninitialized, array bounds) from its
    # optimisers, so it compiles for real; clang emits its warnings from
    # the front end, so -fsyntax-only checks the same set in a thirtieth of
    # the time (0.3 s against 8 s for the file: CI's budget is tight).
    out="-c -o $tmp/tessera.o"
    case "$cc" in *clang*) out=-fsyntax-only ;; esac
    for opts in "-O2" "-O1 -DTES_DEBUG"; do
        # shellcheck disable=SC2086 # opts and out split into words
        "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror $opts -pthread \
            $out "$tmp/dist/tessera.c"
        echo "$cc $opts: no warning"
        ran=$((ran + 1))
    done
done
[ "$ran" -gt 0 ] || { echo "no C compiler found"; exit 1; }
