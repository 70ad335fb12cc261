#!/bin/sh
# check_reference.sh — keeps docs/reference.md in sync with include/tessera.h.
#
# Usage: sh tests/docs/check_reference.sh [PROJECT_SOURCE_DIR]
#
# Fails (exit 1, listing the names) when
#   - a function declared in the header (every tes_* prototype, static
#     inline definitions included) has no heading in the reference: each
#     function must appear in a Markdown heading line ("### `tes_get`");
#   - a public macro, enum constant or type of the header (TES_*, tes_*_t;
#     internal TES__* names excluded) is not mentioned in the reference;
#   - a reference heading names a tes_* function the header no longer has.
# Plain POSIX sh, grep and sed: no other tools needed.
set -u

root=${1:-.}
header="$root/include/tessera.h"
ref="$root/docs/reference.md"
for f in "$header" "$ref"; do
    if [ ! -f "$f" ]; then
        echo "check_reference: $f not found" >&2
        exit 2
    fi
done

tmp=${TMPDIR:-/tmp}/check_reference.$$
mkdir "$tmp" || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# Header with comments removed, so names mentioned in comments do not count.
sed -e 's://.*$::' "$header" |
    sed -e ':a' -e '/\/\*/{' -e '/\*\//!{N;ba' -e '}' -e 's:/\*.*\*/::' -e 'ba' -e '}' \
    > "$tmp/code.h"

# Functions: a line that starts a declaration (no leading blank, not a
# preprocessor line) and holds "tes_name(" before any other parenthesis.
grep -E '^[A-Za-z_]' "$tmp/code.h" | grep -v '^#' |
    sed -n -E 's/^([^(]*[^A-Za-z0-9_])?(tes_[a-z0-9_]+)[[:space:]]*\(.*/\2/p' |
    grep -v "^tes__" | sort -u > "$tmp/functions"

# Macros (#define TES_X), enum constants (TES_X = / TES_X,) and types
# (typedef ... tes_x_t). TES__* are internal; the include guard is TESSERA_H.
{
    sed -n -E 's/^#define[[:space:]]+(TES_[A-Z0-9][A-Z0-9_]*).*/\1/p' "$tmp/code.h"
    sed -n -E 's/^[[:space:]]+(TES_[A-Z0-9][A-Z0-9_]*)[[:space:]]*(=|,|$).*/\1/p' "$tmp/code.h"
    grep -o -w -E 'tes_[a-z0-9_]+_t' "$tmp/code.h" | grep -v '^tes__'
} | grep -v '^TES__' | sort -u > "$tmp/names"

if [ ! -s "$tmp/functions" ]; then
    echo "check_reference: no functions found in $header (is the pattern broken?)" >&2
    exit 2
fi

grep -E '^#+ ' "$ref" > "$tmp/headings"  # Markdown headings, not #define lines
status=0

missing=""
while read -r name; do
    grep -q -w -F "$name" "$tmp/headings" || missing="$missing $name"
done < "$tmp/functions"
if [ -n "$missing" ]; then
    echo "docs/reference.md has no heading for these functions of include/tessera.h:"
    for name in $missing; do echo "  $name"; done
    status=1
fi

missing=""
while read -r name; do
    grep -q -w -F "$name" "$ref" || missing="$missing $name"
done < "$tmp/names"
if [ -n "$missing" ]; then
    echo "docs/reference.md never mentions these macros, constants or types of include/tessera.h:"
    for name in $missing; do echo "  $name"; done
    status=1
fi

# Headings that name a function the header does not declare (stale entries).
grep -o -E 'tes_[a-z0-9_]+' "$tmp/headings" | grep -v -E '_t$' | sort -u > "$tmp/documented"
stale=""
while read -r name; do
    grep -q -x -F "$name" "$tmp/functions" || stale="$stale $name"
done < "$tmp/documented"
if [ -n "$stale" ]; then
    echo "docs/reference.md has headings for functions include/tessera.h does not declare:"
    for name in $stale; do echo "  $name"; done
    status=1
fi

if [ "$status" -eq 0 ]; then
    echo "check_reference: $(wc -l < "$tmp/functions" | tr -d ' ') functions and" \
        "$(wc -l < "$tmp/names" | tr -d ' ') macros, constants and types documented"
fi
exit "$status"
