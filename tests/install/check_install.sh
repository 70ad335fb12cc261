#!/bin/sh
# The installed package works the way README.md says, for a static and a
# shared build:
#  - static (the default; BUILD_DIR is such a build): install, then build
#    tests/consumer/app.c through find_package(tessera) and through
#    `cc app.c $(pkg-config --cflags --libs tessera) -o app`; both binaries
#    run as `./app`.
#  - shared (-DBUILD_SHARED_LIBS=ON, configured here from SOURCE_DIR): the
#    same two consumers; the find_package one runs as is (CMake records the
#    library's directory), the pkg-config one runs as README says for a
#    prefix outside the loader's search path:
#    LD_LIBRARY_PATH="$(pkg-config --variable=libdir tessera)" ./app
#    (and, as a check that the instruction is needed and right, does not
#    start without it). The installed shared library exports only tes_*.
# Usage: check_install.sh SOURCE_DIR BUILD_DIR
set -eu
src=$(cd "$1" && pwd)
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

consume() { # prefix label
    prefix=$1
    label=$2
    app="$tmp/app-$label"
    mkdir "$app"
    cp "$src/tests/consumer/app.c" "$app/app.c"
    cat > "$app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(tessera REQUIRED)
add_executable(app app.c)
target_link_libraries(app PRIVATE tessera::tessera)
CM
    cmake -S "$app" -B "$app/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
    cmake --build "$app/build" >/dev/null
    printf '%s find_package: ' "$label"
    "$app/build/app"
    if ! command -v pkg-config >/dev/null 2>&1; then
        echo "pkg-config not installed: tessera.pc not exercised"
        return 0
    fi
    pcdir=$(dirname "$(find "$prefix" -name tessera.pc | head -n 1)")
    export PKG_CONFIG_PATH="$pcdir"
    (cd "$app" && cc app.c $(pkg-config --cflags --libs tessera) -o app)
    if [ "$label" = static ]; then
        printf '%s pkg-config: ' "$label"
        (cd "$app" && ./app)
    else
        if (cd "$app" && ./app) >/dev/null 2>&1; then
            echo "shared pkg-config binary started without LD_LIBRARY_PATH (README says it needs it)"
            exit 1
        fi
        printf '%s pkg-config: ' "$label"
        (cd "$app" && LD_LIBRARY_PATH="$(pkg-config --variable=libdir tessera)" ./app)
    fi
    unset PKG_CONFIG_PATH
}

cmake --install "$build" --prefix "$tmp/static" >/dev/null
[ -z "$(find "$tmp/static" -name 'libtessera.so*')" ] || { echo "static build installed a .so"; exit 1; }
consume "$tmp/static" static

cmake -S "$src" -B "$tmp/shared-build" -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_TYPE=Release \
      -DTES_BUILD_TESTS=OFF -DTES_BUILD_BENCH=OFF -DTES_BUILD_EXAMPLES=OFF -DTES_DEBUG_LIBRARY=OFF >/dev/null
cmake --build "$tmp/shared-build" -j 2 >/dev/null
cmake --install "$tmp/shared-build" --prefix "$tmp/shared" >/dev/null
so=$(find "$tmp/shared" -name 'libtessera.so.*' | head -n 1)
[ -n "$so" ] || { echo "shared build installed no libtessera.so"; exit 1; }
[ -z "$(find "$tmp/shared" -name 'libtessera.a')" ] || { echo "shared build installed a .a"; exit 1; }
sh "$src/tests/install/check_exports.sh" "$so"
consume "$tmp/shared" shared
