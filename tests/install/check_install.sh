#!/bin/sh
# Installs the build tree into a scratch prefix, then builds and runs a tiny
# program against it twice: through find_package(tessera) and, when
# pkg-config is present, through tessera.pc. Usage: check_install.sh BUILD_DIR
set -eu
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mkdir "$tmp/app"
cat > "$tmp/app/main.c" <<'C'
#include <tessera.h>
#include <stdio.h>
typedef struct { float x, y; } Position;
int main(void)
{
    tes_world_t *w = tes_world_new(NULL);
    tes_comp_t pos = TES_COMPONENT(w, Position);
    tes_entity_t e = tes_spawn(w);
    tes_set(w, e, pos, &(Position){1, 2});
    int ok = ((const Position *)tes_get(w, e, pos))->y == 2 && tes_alive(w, e);
    tes_world_free(w);
    puts(ok ? "consumer ok" : "consumer FAILED");
    return ok ? 0 : 1;
}
C
cat > "$tmp/app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(tessera REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE tessera::tessera)
CM
cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/app/build" >/dev/null
"$tmp/app/build/consumer"
if command -v pkg-config >/dev/null 2>&1; then
    pc=$(find "$tmp/prefix" -name tessera.pc | head -n 1)
    flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs --static tessera)
    libdir=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --variable=libdir tessera)
    # shellcheck disable=SC2086 # the flags are meant to split into words
    cc "$tmp/app/main.c" $flags -Wl,-rpath,"$libdir" -o "$tmp/app/pc_consumer"
    "$tmp/app/pc_consumer"
else
    echo "pkg-config not installed: tessera.pc not exercised"
fi
