#!/bin/sh
# `make help` names every target the Makefile declares (.PHONY).
# Usage: check_make_help.sh SOURCE_DIR
set -eu
src=$1
help=$(make -s -C "$src" help)
targets=$(sed -n -e '/^\.PHONY:/,/[^\\]$/p' "$src/Makefile" | sed -e 's/^\.PHONY://' -e 's/\\//g' | tr -s ' \t' '\n\n' | grep -v '^$')
missing=
for t in $targets; do
    printf '%s\n' "$help" | grep -q -E "make $t( |$|,)" || missing="$missing $t"
done
[ -n "$targets" ] || { echo "no .PHONY targets found"; exit 1; }
if [ -n "$missing" ]; then echo "make help does not list:$missing"; exit 1; fi
echo "make help lists all $(printf '%s\n' $targets | wc -l) targets"
