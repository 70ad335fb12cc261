#!/bin/sh
# Tessera as a dependency inside another CMake project, the two ways the
# README shows: add_subdirectory(path/to/tessera) and FetchContent (from a
# tarball of this source tree, as a release download would be). The parent
# project checks that Tessera added no targets but the library (no tests,
# fuzzer, benchmarks or examples), left its empty build type and its flags
# alone, and never looked for cmocka (whose directories are hidden from
# find_* with CMAKE_IGNORE_PATH, as on a machine without it). Then the
# consumer program is built and run.
# Usage: check_subproject.sh SOURCE_DIR add_subdirectory|fetchcontent
set -eu
src=$(cd "$1" && pwd)
mode=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/app"
cp "$src/tests/consumer/app.c" "$tmp/app/app.c"
if [ "$mode" = fetchcontent ]; then
    tar -C "$src" --exclude=./build --exclude=./.git --exclude=./dist -czf "$tmp/tessera.tar.gz" .
    fetch="include(FetchContent)
FetchContent_Declare(tessera URL \"$tmp/tessera.tar.gz\")
FetchContent_MakeAvailable(tessera)
set(tes_dir \"\${tessera_SOURCE_DIR}\")"
else
    fetch="add_subdirectory(\"$src\" tessera)
set(tes_dir \"$src\")"
fi
cat > "$tmp/app/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(consumer C)
set(flags_before "\${CMAKE_C_FLAGS_RELEASE}")
$fetch
if(NOT "\${CMAKE_BUILD_TYPE}" STREQUAL "")
  message(FATAL_ERROR "Tessera changed the parent's build type to '\${CMAKE_BUILD_TYPE}'")
endif()
if(NOT "\${CMAKE_C_FLAGS_RELEASE}" STREQUAL "\${flags_before}")
  message(FATAL_ERROR "Tessera changed the parent's CMAKE_C_FLAGS_RELEASE")
endif()
get_property(targets DIRECTORY "\${tes_dir}" PROPERTY BUILDSYSTEM_TARGETS)
get_property(subdirs DIRECTORY "\${tes_dir}" PROPERTY SUBDIRECTORIES)
if(NOT "\${targets}" STREQUAL "tessera_objects;tessera" OR subdirs)
  message(FATAL_ERROR "Tessera added targets '\${targets}' and subdirectories '\${subdirs}'")
endif()
if(DEFINED CACHE{CMOCKA_INCLUDE_DIR} OR DEFINED CACHE{CMOCKA_LIBRARY})
  message(FATAL_ERROR "Tessera looked for cmocka")
endif()
message(STATUS "tessera as a subproject: targets \${targets}")
add_executable(app app.c)
target_link_libraries(app PRIVATE tessera::tessera)
CM
ignore=""
for f in /usr/include/cmocka.h /usr/local/include/cmocka.h; do
    [ -f "$f" ] && ignore="$ignore;$(dirname "$f")"
done
for f in /usr/lib/*/libcmocka.so /usr/lib/libcmocka.so /usr/local/lib/libcmocka.so; do
    [ -f "$f" ] && ignore="$ignore;$(dirname "$f")"
done
ignore=${ignore#;}
cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_IGNORE_PATH="$ignore" >"$tmp/configure.log" 2>&1 ||
    { cat "$tmp/configure.log"; exit 1; }
grep 'tessera as a subproject' "$tmp/configure.log"
cmake --build "$tmp/app/build" -j 2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
"$tmp/app/build/app"
