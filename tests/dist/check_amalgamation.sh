#!/bin/sh
# The single-file distribution works on its own: writes dist/tessera.h and
# dist/tessera.c with tools/amalgamate.sh into a scratch directory, compiles
# tests/dist/single_file_app.c with those two files alone (no include path
# into the repository) as C11 with -Wall -Wextra -Wpedantic -Werror, runs
# it, and checks that the object compiled from tessera.c defines no global
# symbol outside the public tes_* API.
# Usage: check_amalgamation.sh SOURCE_DIR [CC]
set -eu
src=$1
cc=${2:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$src/tools/amalgamate.sh" "$src" "$tmp/dist"
cp "$src/tests/dist/single_file_app.c" "$tmp/dist/app.c"
cd "$tmp/dist"
flags="-std=c11 -Wall -Wextra -Wpedantic -Werror -pthread"
# shellcheck disable=SC2086 # flags split into words
"$cc" $flags -c tessera.c -o tessera.o
# shellcheck disable=SC2086
"$cc" $flags app.c tessera.o -o app
./app
globals=$(nm -g --defined-only tessera.o | awk '{ print $3 }')
bad=$(printf '%s\n' "$globals" | grep -v '^tes_' | grep -v '^$' || true)
internal=$(printf '%s\n' "$globals" | grep '^tes__' || true)
count=$(printf '%s\n' "$globals" | grep -c '^tes_' || true)
if [ -n "$bad$internal" ]; then
    echo "tessera.o defines non-public globals:"; printf '%s\n' "$bad" "$internal"; exit 1
fi
[ "$count" -ge 40 ] || { echo "only $count tes_* globals in tessera.o"; exit 1; }
echo "amalgamation ok: $(wc -l < tessera.c) lines, $count public symbols, nothing else global"
