#!/bin/sh
# Compiles every code block of docs/guide.md and README.md, so their
# examples stay correct and warning-free (-std=c11 -Wall -Wextra -Wpedantic
# -Werror).
#
# A ```c block is an excerpt: its #include lines, and its static functions
# with the typedefs they need, go to file scope; the rest becomes the body
# of a function. A fixed prelude supplies what excerpts take from earlier
# ones (the world w, an entity e, the ids pos, vel and frozen, a query q,
# a count n, values p and v, arrays positions and velocities, and the types
# Position, Velocity and Health); an excerpt may declare any
# of them again (it shadows the prelude). Excerpts are not whole programs,
# so unused variables are not reported; a ```c block that defines
# `int main(` is a whole program and is compiled as it stands (the README's
# is also built and run by check_readme_program.sh). A ```cpp block is a complete file
# and is compiled as C++11 with -Wall -Wextra -pedantic -Werror, when a C++
# compiler is given.
# Usage: check_guide_examples.sh SOURCE_DIR [CC [CXX]]
set -eu
src=$1
cc=${2:-cc}
cxx=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for doc in docs/guide.md README.md; do
stem=$(basename "$doc" .md)
awk -v dir="$tmp" -v doc="$doc" -v stem="$stem" '
    /^```c$/   { n++; lang = "c"; inblock = 1; nl = 0; start = FNR; next }
    /^```cpp$/ { n++; lang = "cpp"; inblock = 1; nl = 0; start = FNR; next }
    inblock && /^```$/ {
        inblock = 0
        base = sprintf("%s/%s_ex%02d", dir, stem, n)
        if (lang == "cpp") {
            f = base ".cpp"
            printf "#line %d \"%s\"\n", start + 1, doc > f
            for (i = 1; i <= nl; i++) print lines[i] > f
            close(f)
            next
        }
        f = base ".c"
        whole = 0
        for (i = 1; i <= nl; i++) if (lines[i] ~ /^int main\(/) whole = 1
        if (whole) {
            printf "#line %d \"%s\"\n", start + 1, doc > f
            for (i = 1; i <= nl; i++) print lines[i] > f
            close(f)
            next
        }
        hasfn = 0
        for (i = 1; i <= nl; i++) if (lines[i] ~ /^static [^=]*\(/) hasfn = 1
        print "#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <tessera.h>" > f
        print "typedef struct { float x, y; } Position;\ntypedef struct { float x, y; } Velocity;\ntypedef struct { int32_t hp; } Health;" > f
        print "static tes_world_t *w;\nstatic tes_entity_t e;\nstatic tes_comp_t pos, vel, frozen;\nstatic tes_query_t *q;" > f
        print "static int32_t n;\nstatic Position p, *positions;\nstatic Velocity v, *velocities;" > f
        infn = 0
        for (i = 1; i <= nl; i++) {
            l = lines[i]
            if (l ~ /^static [^=]*\(/) infn = 1
            top[i] = infn || l ~ /^#include/ || (hasfn && l ~ /^typedef .*;$/)
            if (infn && l ~ /^}$/) infn = 0
        }
        # Both parts keep every line (blank where the other part has it), so
        # one #line each keeps compiler messages on the guide line numbers.
        printf "#line %d \"%s\"\n", start + 1, doc > f
        for (i = 1; i <= nl; i++) print (top[i] ? lines[i] : "") > f
        printf "int %s_example_%d(void);\nint %s_example_%d(void)\n{\n", stem, n, stem, n > f
        printf "#line %d \"%s\"\n", start + 1, doc > f
        for (i = 1; i <= nl; i++) print (top[i] ? "" : lines[i]) > f
        print "    return 0;\n}" > f
        close(f)
        next
    }
    inblock { lines[++nl] = $0 }
' "$src/$doc"
done

count=0
fail=0
for f in "$tmp"/*_ex*.c; do
    [ -f "$f" ] || continue
    count=$((count + 1))
    if ! "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -Wno-unused-variable \
            -Wno-unused-but-set-variable -I"$src/include" -c "$f" -o "$f.o"; then
        echo "example $(basename "$f" .c) does not compile cleanly (see above)"
        fail=1
    fi
done
for f in "$tmp"/*_ex*.cpp; do
    [ -f "$f" ] || continue
    if [ -z "$cxx" ]; then echo "skip $(basename "$f"): no C++ compiler given"; continue; fi
    count=$((count + 1))
    if ! "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$src/include" -c "$f" -o "$f.o"; then
        echo "example $(basename "$f" .cpp) does not compile cleanly"
        fail=1
    fi
done
[ "$count" -gt 0 ] || { echo "no examples found"; exit 1; }
[ "$fail" -eq 0 ] || exit 1
echo "guide and README examples ok: $count compiled"
