#!/bin/sh
# A shared libtessera exports the public API and nothing else: every
# defined dynamic symbol is a tes_* function (no internal tes__* and no
# static helper leaks), apart from the few the linker itself defines.
# Usage: check_exports.sh SHARED_LIBRARY
set -eu
lib=$1
syms=$(nm -D --defined-only "$lib" | awk '{ print $3 }')
bad=$(printf '%s\n' "$syms" | grep -v -e '^tes_' -e '^_init$' -e '^_fini$' -e '^_edata$' \
      -e '^_end$' -e '^__bss_start$' -e '^$' || true)
internal=$(printf '%s\n' "$syms" | grep '^tes__' || true)
public=$(printf '%s\n' "$syms" | grep -c '^tes_[^_]' || true)
if [ -n "$bad$internal" ]; then
    echo "$lib exports symbols outside the public API:"
    printf '%s\n' "$bad" "$internal" | grep -v '^$'
    exit 1
fi
[ "$public" -ge 40 ] || { echo "$lib exports only $public tes_* symbols"; exit 1; }
echo "exports ok: $public tes_* symbols, nothing else"
