#!/usr/bin/env python3
"""tests/arch/cycles.py [BUILD] -- no dependency cycle across folders.

Run from the repository root (make arch-test does). The graph's nodes are
the files of src/, analysis/ and include/; its edges are

  include   a file -> the file its `#include "..."` names, looked up next
            to the including file, then in include/, then in src/ (the
            compiler's order: "" first, then -Iinclude -Isrc);
            A header and the .c file of the same name in the same folder
            are one node, named by the .c (x.h stands for x.c: including
            it means depending on it);
  symbol    with BUILD (default build/; skipped when it holds no objects),
            the source of each object -> the source of every object that
            defines a global symbol it leaves undefined (nm -P). Objects
            whose source no longer exists are ignored.

Every strongly connected component of more than one file (Tarjan) is a
cycle. A cycle fails the check when its files span two folders (issue 25:
"a test fails on an include cycle across folders"), or when it lies inside
src/cli/ (the CLI is layered: messages/args <- ... <- cmd_*). Cycles inside
one other folder (media's decoders, the tokenizer's models) are allowed and
only listed with -v.

tests/arch/cycles.baseline lists the failing cycles that existed when the
check was written, one per line, as the sorted files of the cycle. A cycle
listed there exactly passes; a line whose cycle is gone (or changed) fails
with a request to delete (or rewrite) it. The baseline only shrinks: its
goal is to be empty (issue 25, plan step 21), when this check is strict.
Never add a line for a new cycle; break the cycle.
"""
import os
import re
import subprocess
import sys

ROOTS = ("src", "analysis", "include")
INCLUDE_DIRS = ("include", "src")
BASELINE = "tests/arch/cycles.baseline"
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def files():
    out = []
    for root in ROOTS:
        for d, _, names in os.walk(root):
            for n in names:
                if n.endswith((".c", ".h")):
                    out.append(os.path.normpath(os.path.join(d, n)))
    return sorted(out)


def resolve(name, src, known):
    for base in (os.path.dirname(src),) + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(base, name))
        if p in known:
            return p
    return None


def unit(f, known):
    """x.h and x.c (same folder) are one node, named x.c."""
    if f.endswith(".h") and f[:-2] + ".c" in known:
        return f[:-2] + ".c"
    return f


def include_edges(files_, known):
    nodes = sorted({unit(f, known) for f in files_})
    edges = {n: set() for n in nodes}
    for f in files_:
        u = unit(f, known)
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = INCLUDE_RE.match(line)
                if m:
                    t = resolve(m.group(1), f, known)
                    if t and unit(t, known) != u:
                        edges[u].add((unit(t, known), "include " + t))
    return nodes, edges


def objects(build):
    """{source: object} for the objects under BUILD whose source exists."""
    out = {}
    for root in ROOTS:
        top = os.path.join(build, root)
        for d, _, names in os.walk(top):
            for n in names:
                if n.endswith(".o"):
                    o = os.path.join(d, n)
                    src = os.path.normpath(os.path.relpath(o, build))[:-2] + ".c"
                    if os.path.exists(src):
                        out[src] = o
    return out


def symbol_edges(objs, edges):
    defs, undef = {}, {}
    srcs = sorted(objs)
    # one nm call for every object: about 0.2 s
    r = subprocess.run(["nm", "-P", "-A"] + [objs[s] for s in srcs],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("cycles: nm failed: " + r.stderr[:300])
    by_obj = {objs[s]: s for s in srcs}
    for line in r.stdout.splitlines():
        # "build/src/x.o: name T value size"
        obj, _, rest = line.partition(": ")
        parts = rest.split()
        if len(parts) < 2 or obj not in by_obj:
            continue
        name, kind = parts[0], parts[1]
        src = by_obj[obj]
        if kind in ("U", "w", "v"):
            undef.setdefault(src, set()).add(name)
        elif kind.isupper():  # global definitions only: statics repeat
            defs.setdefault(name, set()).add(src)
    count = 0
    for src, names in undef.items():
        for name in names:
            for t in defs.get(name, ()):
                if t != src:
                    edges[src].add((t, "symbol " + name))
                    count += 1
    return count


def tarjan(nodes, edges):
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in edges.get(v, ()):
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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in nodes:
        if v not in index:
            visit(v)
    return sorted(out)


def why(comp, edges):
    """The edges inside the cycle, one line each (the first reason per pair)."""
    inside = set(comp)
    lines = []
    for a in comp:
        seen = {}
        for b, kind in sorted(edges[a]):
            if b in inside and b not in seen:
                seen[b] = kind
        for b, kind in seen.items():
            lines.append("      %s -> %s (%s)" % (a, b, kind))
    return lines


def failing(comp):
    folders = {os.path.dirname(f) for f in comp}
    if len(folders) > 1:
        return "across folders " + " ".join(sorted(folders))
    if folders == {"src/cli"}:
        return "inside src/cli/"
    return None


def read_baseline():
    out = []
    if os.path.exists(BASELINE):
        with open(BASELINE) as fh:
            for no, line in enumerate(fh, 1):
                line = line.split("#", 1)[0].strip()
                if line:
                    out.append((no, tuple(sorted(line.split()))))
    return out


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv if a != "-v"]
    build = args[0] if args else "build"
    all_files = files()
    known = set(all_files)
    nodes, edges = include_edges(all_files, known)
    objs = objects(build) if os.path.isdir(build) else {}
    if objs:
        n = symbol_edges(objs, edges)
        print("cycles: %d nodes, include edges and %d symbol edges from %d objects in %s/"
              % (len(nodes), n, len(objs), build))
    else:
        print("cycles: %d nodes, include edges only (no objects in %s/: build first for symbol edges)"
              % (len(nodes), build))
    comps = tarjan(nodes, edges)
    base = read_baseline()
    base_keys = {k for _, k in base}
    bad = 0
    for comp in comps:
        reason = failing(comp)
        key = tuple(comp)
        if reason is None:
            if verbose:
                print("  allowed (inside one folder): " + " ".join(comp))
            continue
        if key in base_keys:
            print("  known, in %s (%s): %s" % (BASELINE, reason, " ".join(comp)))
            if verbose:
                print("\n".join(why(comp, edges)))
            continue
        bad += 1
        print("FAIL: a new cycle %s:\n    %s" % (reason, " ".join(comp)))
        print("\n".join(why(comp, edges)))
    current = {tuple(c) for c in comps}
    for no, key in base:
        if key not in current:
            bad += 1
            print("FAIL: %s:%d lists a cycle that no longer exists as written:\n    %s\n"
                  "  delete the line (the baseline only shrinks); if the cycle changed rather than\n"
                  "  went away, it is reported above as new." % (BASELINE, no, " ".join(key)))
    if bad:
        print("cycles: %d failure(s)" % bad)
        return 1
    print("cycles: ok (%d known cycle(s) left in %s; the goal is none)" % (len(base), BASELINE))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
