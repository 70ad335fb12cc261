#!/bin/sh
# The installed debug variant works for a consumer as the guide says:
# install BUILD_DIR (a build with TES_DEBUG_LIBRARY, the default) into a
# scratch prefix, then build tests/consumer/debug_app.c
#  - through find_package(tessera REQUIRED COMPONENTS debug), linking
#    tessera::tessera_debug, and through
#    `cc app.c $(pkg-config --cflags --libs tessera-debug)`: both run and
#    show the debug behaviour (mode "moves");
#  - with -fsanitize=address against the debug variant: a pointer kept
#    across a structural call and written through is reported
#    (heap-use-after-free), while the same program against the release
#    libtessera runs to its end (the mistake goes unseen there);
#  - a loop left without tes_iter_fini is reported on stderr when the
#    world is freed.
# Usage: check_debug_variant.sh SOURCE_DIR BUILD_DIR [CC]
set -eu
src=$(cd "$1" && pwd)
build=$2
cc=${3:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
[ -n "$(find "$prefix" -name 'libtessera_debug*')" ] || { echo "no libtessera_debug installed"; exit 1; }

app="$tmp/app"
mkdir "$app"
cp "$src/tests/consumer/debug_app.c" "$app/app.c"
cat > "$app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(tessera REQUIRED COMPONENTS debug)
add_executable(app app.c)
target_link_libraries(app PRIVATE tessera::tessera_debug)
CM
cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$app/build" >/dev/null
printf 'find_package COMPONENTS debug: '
"$app/build/app" moves

command -v pkg-config >/dev/null 2>&1 || { echo "pkg-config not installed: tessera-debug.pc not exercised"; exit 0; }
PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name tessera-debug.pc | head -n 1)")
export PKG_CONFIG_PATH
# shellcheck disable=SC2046 # pkg-config output split into words
"$cc" -std=c11 "$app/app.c" $(pkg-config --cflags --libs tessera-debug) -o "$app/app-pc"
printf 'pkg-config tessera-debug: '
"$app/app-pc" moves

# The iterator never finished, reported at tes_world_free.
"$app/app-pc" open 2> "$tmp/open.err"
grep -q "tes_world_free: the world is still deferred by 1 unfinished iterator of query {Position}" \
    "$tmp/open.err" || { echo "no report of the open iterator:"; cat "$tmp/open.err"; exit 1; }
echo "open iterator reported: $(cat "$tmp/open.err")"

# AddressSanitizer in the consumer's own build catches the stale write
# with the debug variant, and not with the release library.
if ! echo 'int main(void){return 0;}' | "$cc" -x c -fsanitize=address - -o "$tmp/asan-probe" 2>/dev/null; then
    echo "skip: $cc cannot build with -fsanitize=address"
    exit 0
fi
# shellcheck disable=SC2046
"$cc" -std=c11 -g -fsanitize=address "$app/app.c" $(pkg-config --cflags --libs tessera-debug) \
    -o "$app/app-asan"
if ASAN_OPTIONS=detect_leaks=0 "$app/app-asan" stale > "$tmp/stale.out" 2>&1; then
    echo "the stale write was not caught with the debug variant:"; cat "$tmp/stale.out"; exit 1
fi
grep -q "heap-use-after-free" "$tmp/stale.out" || { echo "unexpected failure:"; cat "$tmp/stale.out"; exit 1; }
echo "debug variant + ASan: stale write reported (heap-use-after-free)"
# shellcheck disable=SC2046
"$cc" -std=c11 -g -fsanitize=address "$app/app.c" $(pkg-config --cflags --libs tessera) \
    -o "$app/app-asan-release"
ASAN_OPTIONS=detect_leaks=0 "$app/app-asan-release" stale > "$tmp/stale-release.out" 2>&1 || {
    echo "the release library was expected to miss the stale write:"; cat "$tmp/stale-release.out"; exit 1; }
echo "release library + ASan: the same write goes unseen ($(cat "$tmp/stale-release.out"))"
