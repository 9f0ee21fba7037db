#!/usr/bin/env python3
"""Fails on a cycle among kstacklab's libraries, counting the links and the includes.

Usage: module_graph.py GRAPH_FILE SOURCE_DIR    (GRAPH_FILE: written by src/CMakeLists.txt)
       module_graph.py --self-test              (shows on a made-up tree that a cycle fails)

A library depends on another when it links it, or when one of its files includes a header of the
other. A public header (include/) belongs to the library named after it or after its folder
(kstacklab/run.h, kstacklab/workload.h, kstacklab/kstack/apply.h: kstacklab_run,
kstacklab_workloads, kstacklab_kstack), else to the one library with a source of its name
(kstacklab/summary.h: report/summary.cc); a private header (src/M/x.h) to the library of its
namesake source, else of its folder. A header of neither kind (header-only, such as json.h)
belongs to whoever includes it: its own includes count for its includer.
Such a dependency hidden in a header (a library including the header of a library that links
it) is a cycle the linker does not see; this check does.
Exit 0 with one summary line, or 1 listing each cycle with the link or include behind every edge.
"""

import os
import re
import sys
import tempfile

from check_tool import expect, main, write_tree

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_graph(path):
    """{target: {"sources": [abs paths], "links": [targets]}} from the file CMake writes."""
    targets = {}
    current = None
    with open(path) as f:
        for line in f:
            kind, _, value = line.rstrip("\n").partition(" ")
            if kind == "target":
                current = targets.setdefault(value, {"sources": [], "links": []})
            elif kind == "source":
                current["sources"].append(os.path.normpath(value))
            elif kind == "link":
                current["links"].append(value)
    for t in targets.values():  # only links among the project's own libraries
        t["links"] = [l for l in t["links"] if l in targets]
    return targets


def includes_of(path, roots):
    """The project files `path` includes, resolved against its directory and the include roots."""
    try:
        text = open(path, errors="replace").read()
    except OSError:
        return []
    found = []
    for name in INCLUDE.findall(text):
        for base in [os.path.dirname(path)] + roots:
            candidate = os.path.normpath(os.path.join(base, name))
            if os.path.isfile(candidate):
                found.append((name, candidate))
                break
    return found


def stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def owners(targets, roots):
    """{header: target} for the headers of the sources' directories and the include roots."""
    def module(target):
        return target.split("_", 1)[1] if "_" in target else target

    owner = {}
    by_stem, by_dir = {}, {}
    for name, t in targets.items():
        for src in t["sources"]:
            by_stem.setdefault((os.path.dirname(src), stem(src)), name)
            counts = by_dir.setdefault(os.path.dirname(src), {})
            counts[name] = counts.get(name, 0) + 1
    headers = set()
    for t in targets.values():
        for src in t["sources"]:
            headers.update(inc for _, inc in includes_of(src, roots))
    pending = list(headers)
    while pending:  # the headers those headers include, too
        h = pending.pop()
        for _, inc in includes_of(h, roots):
            if inc not in headers:
                headers.add(inc)
                pending.append(inc)
    sources = {src: name for name, t in targets.items() for src in t["sources"]}
    for h in headers:
        d, st = os.path.dirname(h), stem(h)
        public = [r for r in roots if h.startswith(os.path.join(r, ""))]
        if public:
            # kstacklab/run.h -> kstacklab_run, kstacklab/workload.h -> kstacklab_workloads,
            # kstacklab/kstack/apply.h -> kstacklab_kstack; else a library with a source of the
            # same name (kstacklab/summary.h -> report/summary.cc); else header-only.
            parts = os.path.relpath(h, public[0]).split(os.sep)
            names = [st, st + "s"] + (parts[1:2] if len(parts) > 2 else [])
            match = [t for t in sorted(targets) if module(t) in names]
            if not match:
                match = sorted({n for (sd, ss), n in by_stem.items() if ss == st})
            if len(match) == 1:
                owner[h] = match[0]
        elif h not in sources and d in by_dir:
            # a private header: the library of its namesake source, else of its directory
            counts = by_dir[d]
            owner[h] = by_stem.get((d, st)) or max(sorted(counts), key=lambda n: counts[n])
    return owner


def dependencies(targets, roots, source_dir):
    """{target: {other: reason}}: the links and the includes of other libraries' headers."""
    owner = owners(targets, roots)
    deps = {name: {} for name in targets}
    for name, t in targets.items():
        for link in t["links"]:
            if link != name:
                deps[name].setdefault(link, "links " + link)
        seen = set()
        stack = list(t["sources"])
        while stack:
            path = stack.pop()
            if path in seen:
                continue
            seen.add(path)
            for spelled, inc in includes_of(path, roots):
                other = owner.get(inc)
                if other is not None and other != name:
                    deps[name].setdefault(other, '{} includes "{}"'.format(
                        os.path.relpath(path, source_dir), spelled))
                else:  # its own header, or a header-only one: part of this library
                    stack.append(inc)
    return deps


def cycles(deps):
    """The strongly connected components of more than one library (Tarjan), each sorted."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in deps[v]:
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

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def check(graph_file, source_dir):
    targets = read_graph(graph_file)
    source_dir = os.path.abspath(source_dir)
    roots = [os.path.join(source_dir, "include"), os.path.join(source_dir, "src")]
    deps = dependencies(targets, roots, source_dir)
    found = cycles(deps)
    if not found:
        edges = sum(len(d) for d in deps.values())
        print("module graph: {} libraries, {} dependencies, no cycle".format(len(deps), edges))
        return 0
    for comp in found:
        print("cycle among: " + ", ".join(comp))
        for a in comp:
            for b in comp:
                if b in deps[a]:
                    print("  {} -> {}: {}".format(a, b, deps[a][b]))
    return 1


def self_test():
    """A made-up tree: `b` links `a`, and a header of `a` includes one of `b`; then without it."""
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, {
            "include/p/a.h": '#include "p/b.h"\n',
            "include/p/b.h": '#include "p/util.h"\n',
            "include/p/util.h": "",
            "src/a/a.cc": '#include "p/a.h"\n',
            "src/b/b.cc": '#include "p/b.h"\n',
            "graph.txt": "target a\nsource {0}/src/a/a.cc\ntarget b\nsource {0}/src/b/b.cc\n"
                         "link a\n".format(d)})
        graph = os.path.join(d, "graph.txt")
        if not expect(check(graph, d), 1, "the planted cycle a <-> b was not found"):
            return 1
        write_tree(d, {"include/p/a.h": '#include "p/util.h"\n'})
        if not expect(check(graph, d), 0, "a cycle was reported where there is none"):
            return 1
    print("self-test: a planted cycle fails, its removal passes")
    return 0


if __name__ == "__main__":
    main(__doc__, check, self_test, 2)
