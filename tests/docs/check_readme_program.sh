#!/bin/sh
# The README's complete program works as the README says: the ```c block
# after "<!-- check:program -->" is saved as app.c beside the single-file
# build (tools/amalgamate.sh), every ```sh block after a
# "<!-- check:single-file -->" line is run there line by line, exactly as
# written (its `cc` is CC when one is given, through a wrapper of that
# name), and what each prints must equal the ```text block after
# "<!-- check:output -->". The program must also compile as C11 with
# -Wall -Wextra -Wpedantic -Wconversion -Werror. So neither the program,
# the build command nor the output shown can drift from what works.
# Usage: check_readme_program.sh SOURCE_DIR [CC]
set -eu
src=$1
cc=${2:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints the body of the fenced block after the Nth line MARKER (N = $2,
# default 1).
block() {
    awk -v marker="$1" -v want="${2:-1}" '
        $0 == marker { if (++seen == want) armed = 1; next }
        armed && !inblock && /^```/ { inblock = 1; next }
        inblock && /^```$/ { found = 1; exit }
        inblock { print }
        END { exit found ? 0 : 1 }
    ' "$src/README.md" || { echo "README.md: no code block after $1 number ${2:-1}" >&2; exit 1; }
}

sh "$src/tools/amalgamate.sh" "$src" "$tmp/dist" > /dev/null
block '<!-- check:program -->' > "$tmp/dist/app.c"
block '<!-- check:output -->' > "$tmp/expected"
recipes=$(grep -c -x -F '<!-- check:single-file -->' "$src/README.md" || true)
[ "$recipes" -ge 1 ] || { echo "README.md: no <!-- check:single-file --> recipe"; exit 1; }

"$cc" -std=c11 -Wall -Wextra -Wpedantic -Wconversion -Werror -pthread -I"$tmp/dist" \
    -c "$tmp/dist/app.c" -o "$tmp/app_strict.o" ||
    { echo "README.md: the program does not compile cleanly (see above)"; exit 1; }

# `cc` in the recipe is the compiler under test (by its full path: the
# wrapper is first in PATH, so a bare `cc` would name the wrapper itself).
compiler=$(command -v "$cc") || { echo "compiler $cc not found"; exit 1; }
mkdir "$tmp/bin"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$compiler" > "$tmp/bin/cc"
chmod +x "$tmp/bin/cc"
n=1
seen=
while [ "$n" -le "$recipes" ]; do
    block '<!-- check:single-file -->' "$n" > "$tmp/recipe.sh"
    key=$(cksum < "$tmp/recipe.sh" | tr " " _)
    # A recipe the README repeats word for word is built once.
    case " $seen " in *" $key "*) n=$((n + 1)); continue ;; esac
    seen="$seen $key"
    echo "README.md recipe $n:"; sed 's/^/  /' "$tmp/recipe.sh"
    rm -f "$tmp/dist/app" "$tmp/dist/"*.o
    (cd "$tmp/dist" && PATH="$tmp/bin:$PATH" sh -e "$tmp/recipe.sh") > "$tmp/output" ||
        { echo "README.md: single-file recipe $n fails as written"; exit 1; }
    if ! cmp -s "$tmp/expected" "$tmp/output"; then
        echo "README.md: with recipe $n the program printed something else than the README shows:"
        diff "$tmp/expected" "$tmp/output" || true
        exit 1
    fi
    n=$((n + 1))
done
echo "README program ok: each of the $recipes single-file recipes builds it, and it prints what the README shows"
