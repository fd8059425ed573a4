#!/usr/bin/env python3
"""layout_check.py: keeps the source layout issue 30 set (label docs).

    tests/docs/layout_check.py SOURCE_DIR BUILD_DIR

1. No production C file (the libraries' and services' folders, bench/) over 800 lines:
   a file that grows past it is split by resource or concern (STYLE.md).
2. No folder borrows from a sibling service's: nothing in consumer/ includes a header of
   order/, nothing in order/ one of consumer/ (what both speak is in domain/); order/ does
   not include event2/http.h (the project's own route code parses query strings).
3. No two files of order/ or consumer/ call each other in a loop. Read from the build's
   object files (nm): file A calls file B when A's undefined symbols include one B
   defines; a strongly connected component of more than one file is a loop, printed with
   the symbols that close it. A loop through a header alone is no loop: calls are what
   tie files together.
Needs python3 and nm (binutils). Exits 1 with every finding printed, 0 when all hold.
"""
import collections
import os
import re
import subprocess
import sys

PROD = ["common", "domain", "order", "consumer", "idgen", "lock", "rcluster", "bench"]
LOOPLESS = ["order", "consumer"]
MAX_LINES = 800


def headers(folder):
    return {f for f in os.listdir(folder) if f.endswith(".h")}


def check_lines(src, bad):
    for d in PROD:
        for f in sorted(os.listdir(os.path.join(src, d))):
            if f.endswith(".c"):
                with open(os.path.join(src, d, f), encoding="utf-8") as fh:
                    n = sum(1 for _ in fh)
                if n > MAX_LINES:
                    bad.append(f"{d}/{f}: {n} lines (limit {MAX_LINES})")


def check_borrow(src, bad):
    own = {d: headers(os.path.join(src, d)) for d in ("order", "consumer")}
    inc = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
    for d, other in (("order", "consumer"), ("consumer", "order")):
        for f in sorted(os.listdir(os.path.join(src, d))):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(src, d, f), encoding="utf-8") as fh:
                names = inc.findall(fh.read())
            for h in names:
                base = os.path.basename(h)
                if base in own[other] and base not in own[d]:
                    bad.append(f"{d}/{f} includes {h}, a header of {other}/")
                if d == "order" and h == "event2/http.h":
                    bad.append(f"{d}/{f} includes event2/http.h")


def strong_components(graph):
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
                comps.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return comps


def check_loops(src, build, bad):
    for d in LOOPLESS:
        sources = {f[:-2] for f in os.listdir(os.path.join(src, d)) if f.endswith(".c")}
        objs = {}
        for root, _, files in os.walk(os.path.join(build, d)):
            for f in files:
                if f.endswith(".c.o") and f[:-4] in sources:
                    objs.setdefault(f[:-4], os.path.join(root, f))
        missing = sources - set(objs)
        if missing:
            bad.append(f"{d}/: no object file for {', '.join(sorted(missing))} in {build}")
            continue
        defs, uses = collections.defaultdict(set), {}
        for name, path in objs.items():
            out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
            uses[name] = set()
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBR":
                    defs[p[2]].add(name)
                elif len(p) == 2 and p[0] == "U":
                    uses[name].add(p[1])
        graph = collections.defaultdict(set)
        why = {}
        for a, syms in uses.items():
            graph[a]
            for s in syms:
                for b in defs.get(s, ()):
                    if b != a:
                        graph[a].add(b)
                        why.setdefault((a, b), s)
        for comp in strong_components(graph):
            ties = [f"{a}.c -> {b}.c ({why[(a, b)]})" for a in comp for b in comp
                    if (a, b) in why]
            bad.append(f"{d}/: files calling each other in a loop: {'; '.join(ties)}")


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    bad = []
    check_lines(src, bad)
    check_borrow(src, bad)
    check_loops(src, build, bad)
    for b in bad:
        print("layout_check: " + b)
    if not bad:
        print("layout_check: ok (file sizes, no borrowing between order/ and consumer/, "
              "no call loops in order/ and consumer/)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
