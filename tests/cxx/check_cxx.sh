#!/bin/sh
# Builds tests/cxx/cxx_api.cpp with each C++ compiler given, as C++11, 14,
# 17 and 20 (-Wall -Wextra -pedantic -Werror), under AddressSanitizer and
# UBSan, links it with the static library and runs it. Fails on any
# warning, any sanitizer report or any failed check.
# Usage: check_cxx.sh SOURCE_DIR STATIC_LIB COMPILER...
set -eu
src=$1
lib=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ran=0
for cxx in "$@"; do
    command -v "$cxx" >/dev/null 2>&1 || { echo "skip: $cxx not installed"; continue; }
    for std in 11 14 17 20; do
        exe="$tmp/cxx_$(basename "$cxx")_$std"
        "$cxx" -std=c++$std -Wall -Wextra -pedantic -Werror -g \
            -fsanitize=address,undefined -fno-sanitize-recover=all \
            -I"$src/include" "$src/tests/cxx/cxx_api.cpp" "$lib" -o "$exe"
        printf '%s -std=c++%s: ' "$cxx" "$std"
        ASAN_OPTIONS=detect_leaks=1 "$exe"
        ran=$((ran + 1))
    done
done
[ "$ran" -gt 0 ] || { echo "no C++ compiler found"; exit 1; }
