#!/bin/sh
# The C++17 sample (examples/sample_cpp.cpp) builds with each C++ compiler
# given that is installed, -std=c++17 -Wall -Wextra -pedantic -Werror,
# links the static library and runs. Then the designated-field form of
# TES_COMPONENT, which needs C++20, fails under C++17 with the header's
# message saying so (not a parse error), and compiles under C++20.
# Usage: check_sample_cpp.sh SOURCE_DIR STATIC_LIB COMPILER...
set -eu
src=$1
lib=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/fields.cpp" <<'CPP'
#include <tessera.h>
struct Health { int hp; };
int main()
{
    tes_world_t *w = tes_world_new(nullptr);
    tes_comp_t c = TES_COMPONENT(w, Health, .storage = TES_STORAGE_SPARSE);
    tes_world_free(w);
    return c ? 0 : 1;
}
CPP
ran=0
for cxx in "$@"; do
    command -v "$cxx" >/dev/null 2>&1 || { echo "skip: $cxx not installed"; continue; }
    "$cxx" -std=c++17 -Wall -Wextra -pedantic -Werror -I"$src/include" \
        "$src/examples/sample_cpp.cpp" "$lib" -pthread -o "$tmp/sample"
    echo "== $cxx -std=c++17: sample_cpp"
    (cd "$tmp" && ./sample)
    if "$cxx" -std=c++17 -I"$src/include" -c "$tmp/fields.cpp" -o "$tmp/fields.o" \
        > "$tmp/fields.err" 2>&1; then
        echo "$cxx -std=c++17 accepted TES_COMPONENT with designated fields"; exit 1
    fi
    grep -q "need C++20 designated initializers" "$tmp/fields.err" || {
        echo "$cxx -std=c++17: no 'need C++20' message:"; cat "$tmp/fields.err"; exit 1; }
    echo "$cxx -std=c++17: designated fields refused with the C++20 message"
    "$cxx" -std=c++20 -Wall -Wextra -pedantic -Werror -I"$src/include" -c "$tmp/fields.cpp" \
        -o "$tmp/fields.o"
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "no C++ compiler found"; exit 1; }
