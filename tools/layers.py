#!/usr/bin/env python3
"""Checks that the files of src/ depend on each other only downward.

A file depends on another when it includes it (#include "x") or when it
calls (or names in a macro) a non-static function that the other alone
defines. A unit is a .c file with the .h of the same name beside it: the
header declares what the .c defines, so the two stand on one floor. The
script prints, for each folder of src/ and for the whole tree, the include
edges between files, then the call edges between units, and fails (exit 1)
when files include each other in a circle, or units or folders include or
call each other in one: in a graph without one, every file can be given a
floor above all that it depends on, so no include or call runs up. Each
circle is printed with the includes and calls that close it. An include
that names no file of src/ (written relative to src/) fails too, since the
check could not see the edge it makes. It prints the floors of the units
of src/world, lowest first.

    python3 tools/layers.py               edges, floors and the verdict
    python3 tools/layers.py --quiet       the verdict alone (and what failed)
    python3 tools/layers.py src/world     the verdict on circles that
                                          touch src/world only

Exit status: 0 when every include and call runs downward, 1 when not, 2
for a folder that is not in src/. The test suite runs it as ctest
src_layers (python3 -B: no bytecode is written into the tree).

Python 3 standard library only; reads the sources as text (comments and
strings are left out), so a call made through a function pointer is not
seen: that is how a lower layer reaches a higher one (a registered
callback), and it is meant not to count. A function that a macro defines
is not seen either, nor a name that two units define.
"""
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
IDENT_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def strip(text):
    """The text without comments, string and character literals (their
    newlines kept, so line structure stays)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_comments(text):
    """The text without comments (strings kept)."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def sources():
    files = []
    for d, _, names in os.walk(SRC):
        for name in names:
            if name.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, name), SRC))
    return sorted(files)


def unit(path):
    return path[:-2]


def definitions(path, text):
    """Names of the functions path defines that other files may call: a
    definition at file scope (a body follows the parameter list) that is
    not static."""
    names = set()
    depth = 0
    i = 0
    for m in re.finditer(r"[{}]|\b([A-Za-z_]\w*)\s*\(", text):
        if m.group(0) == "{":
            depth += 1
            continue
        if m.group(0) == "}":
            depth -= 1
            continue
        if depth != 0:
            continue
        name = m.group(1)
        start = text.rfind("\n", 0, m.start()) + 1
        head = text[start:m.start()]
        if not head or head[0].isspace() or head.startswith("#"):
            continue
        if re.match(r"\s*(static|typedef|extern)\b", head) or "=" in head:
            continue
        # Find the end of the parameter list, then what follows it.
        j, par = m.end(), 1
        while j < len(text) and par:
            par += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        rest = text[j:j + 200].lstrip()
        while rest.startswith("TES__"):  # attributes such as TES__PRINTF(3, 4)
            k = rest.find(")")
            rest = rest[k + 1:].lstrip()
        if rest.startswith("{"):
            names.add(name)
    return names


def calls(text):
    """Names called in function bodies or in macros (not in prototypes)."""
    names = set()
    depth = 0
    for line in text.splitlines(keepends=True):
        if re.match(r"\s*#\s*define\b", line):
            names.update(IDENT_CALL.findall(line))
            continue
        pos = 0
        for m in re.finditer(r"[{}]", line):
            if depth > 0:
                names.update(IDENT_CALL.findall(line[pos:m.start()]))
            depth += 1 if m.group(0) == "{" else -1
            pos = m.end()
        if depth > 0:
            names.update(IDENT_CALL.findall(line[pos:]))
    return names


def cycles(nodes, edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def floors(nodes, edges):
    floor = {}

    def of(v, seen=()):
        if v not in floor:
            below = [of(w, seen + (v,)) for w in edges.get(v, ()) if w not in seen]
            floor[v] = 1 + max(below, default=0)
        return floor[v]

    for v in nodes:
        of(v)
    return floor


def main():
    quiet = "--quiet" in sys.argv[1:]
    # Folders of src/ whose circles decide the verdict (all when none).
    scope = [a.rstrip("/").split("src/", 1)[-1] for a in sys.argv[1:] if not a.startswith("--")]
    say = (lambda *a: None) if quiet else print
    files = sources()
    known = {os.path.dirname(f) for f in files}
    for f in scope:
        if f not in known:
            print("layers: src/%s is no folder of src/ with sources (folders: %s)"
                  % (f, " ".join("src/" + k for k in sorted(known))))
            return 2
    text, raw = {}, {}
    for f in files:
        # A byte that is not UTF-8 (in a comment, say) must not stop the
        # check: it is read as a replacement character.
        with open(os.path.join(SRC, f), encoding="utf-8", errors="replace") as fh:
            raw[f] = fh.read()
        text[f] = strip(raw[f])

    includes = defaultdict(set)  # file -> files it includes
    unresolved = []
    for f in files:
        # Includes are read from the text as written (strip() empties the
        # quoted names); one inside a comment is not an include.
        for inc in INCLUDE.findall(strip_comments(raw[f])):
            if inc == "tessera.h":
                continue
            if inc in text:
                includes[f].add(inc)
            else:
                unresolved.append((f, inc))

    definer = defaultdict(set)  # name -> units defining it
    for f in files:
        for name in definitions(f, text[f]):
            definer[name].add(unit(f))

    called = defaultdict(set)  # unit -> (name, unit defining it)
    for f in files:
        for name in calls(text[f]):
            owners = definer.get(name, set())
            if len(owners) == 1:
                (owner,) = owners
                if owner != unit(f):
                    called[unit(f)].add((name, owner))

    folders = sorted({os.path.dirname(f) for f in files})
    for folder in folders:
        say("== src/%s: includes between its files" % folder)
        for f in files:
            if os.path.dirname(f) != folder:
                continue
            for g in sorted(includes[f]):
                if os.path.dirname(g) == folder:
                    say("  %s -> %s" % (f, g))

    say("== src/: includes between folders (count of include lines)")
    between = defaultdict(int)
    for f in files:
        for g in includes[f]:
            a, b = os.path.dirname(f), os.path.dirname(g)
            if a != b:
                between[(a, b)] += 1
    for (a, b), k in sorted(between.items()):
        say("  %s -> %s  %d" % (a, b, k))

    say("== src/: calls of a function another unit defines (caller -> definer: names)")
    for u in sorted(called):
        by = defaultdict(list)
        for name, owner in called[u]:
            by[owner].append(name)
        for owner in sorted(by):
            say("  %s -> %s: %s" % (u, owner, ", ".join(sorted(by[owner]))))

    # The graphs checked: files by includes; units by includes and calls;
    # folders by both.
    failed = False
    file_cycles = cycles(files, includes)
    units = sorted({unit(f) for f in files})
    unit_edges = defaultdict(set)
    for f in files:
        for g in includes[f]:
            if unit(g) != unit(f):
                unit_edges[unit(f)].add(unit(g))
    for u, pairs in called.items():
        for _, owner in pairs:
            unit_edges[u].add(owner)
    unit_cycles = cycles(units, unit_edges)
    folder_edges = defaultdict(set)
    for u, vs in unit_edges.items():
        for v in vs:
            if os.path.dirname(u) != os.path.dirname(v):
                folder_edges[os.path.dirname(u)].add(os.path.dirname(v))
    folder_cycles = cycles(folders, folder_edges)

    def judged(comp):
        return not scope or any(c == f or c.startswith(f + "/") for c in comp for f in scope)

    def why(a, b):
        """Lines saying how unit a depends on unit b: its includes of b's
        files and its calls of b's functions."""
        out = sorted("%s includes %s" % (f, g) for f in files if unit(f) == a
                     for g in includes[f] if unit(g) == b)
        names = sorted(n for n, o in called.get(a, ()) if o == b)
        if names:
            out.append("%s calls %s of %s" % (a, ", ".join(names), b))
        return out

    for name, found in (("files (includes)", file_cycles),
                        ("units (includes and calls)", unit_cycles),
                        ("folders (includes and calls)", folder_cycles)):
        found = [comp for comp in found if judged(comp)]
        if not found:
            say("no circle among %s%s" % (name, " in " + " ".join(scope) if scope else ""))
        for comp in found:
            failed = True
            print("CIRCLE among %s: %s" % (name, " ".join(comp)))
            # What closes it: every edge between two members.
            lines = []
            for a in comp:
                for b in comp:
                    if a == b:
                        continue
                    if name.startswith("files"):
                        if b in includes[a]:
                            lines.append("%s includes %s" % (a, b))
                    elif name.startswith("units"):
                        lines.extend(why(a, b))
                    else:
                        pair = []
                        for u in units:
                            if os.path.dirname(u) == a:
                                for v in sorted(unit_edges.get(u, ())):
                                    if os.path.dirname(v) == b:
                                        pair.extend(why(u, v))
                        if len(pair) > 6:
                            pair = pair[:6] + ["... and %d more from %s to %s"
                                               % (len(pair) - 6, a, b)]
                        lines.extend(pair)
            for line in lines:
                print("  " + line)

    world = [u for u in units if u.startswith("world/")]
    world_edges = {u: {v for v in unit_edges[u] if v.startswith("world/")} for u in world}
    if not cycles(world, world_edges):
        floor = floors(world, world_edges)
        say("== src/world: floors, lowest first (a unit stands above all it depends on)")
        for u in sorted(world, key=lambda u: (floor[u], u)):
            say("  %2d  %s" % (floor[u], u))

    # An include the check cannot place would hide an edge: it fails too.
    for f, inc in unresolved:
        failed = True
        print("UNRESOLVED include: src/%s includes \"%s\", which is no file of src/ "
              "(write includes relative to src/, as \"storage/table.h\")" % (f, inc))
    print("layers: %s" % ("FAILED: a circle or an unresolved include, named above" if failed else
                          "every include and call runs downward (%d files, %d units)"
                          % (len(files), len(units))))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
