#!/usr/bin/env python3
"""Fails on a cycle among kstacklab's libraries, counting the links and the includes.

Usage: module_graph.py GRAPH_FILE SOURCE_DIR    (GRAPH_FILE: written by src/CMakeLists.txt)
       module_graph.py --self-test              (shows on a made-up tree that a cycle fails)

A library depends on another when it links it, or when one of its files includes a header of the
other. Ownership is read from the folder: a public header include/kstacklab/F/x.h belongs to
kstacklab_F, the library of src/F/ (one folder per library); a header outside such a folder is an
error. A private header (src/F/x.h) belongs to the library whose sources are in its folder.
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
    """({header: target}, [public headers in no library's folder]) for the headers reached."""
    by_dir = {}
    for name, t in targets.items():
        for src in t["sources"]:
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
    owner, homeless = {}, []
    for h in sorted(headers):
        public = [r for r in roots if h.startswith(os.path.join(r, "")) and r.endswith("include")]
        if public:
            # include/<project>/<folder>/x.h -> <project>_<folder>
            parts = os.path.relpath(h, public[0]).split(os.sep)
            target = "_".join(parts[:2]) if len(parts) == 3 else None
            if target in targets:
                owner[h] = target
            else:
                homeless.append(os.path.relpath(h, os.path.dirname(public[0])))
        elif h not in sources and os.path.dirname(h) in by_dir:
            counts = by_dir[os.path.dirname(h)]
            owner[h] = max(sorted(counts), key=lambda n: counts[n])
    return owner, homeless


def dependencies(targets, roots, source_dir):
    """{target: {other: reason}}: the links and the includes of other libraries' headers."""
    owner, homeless = owners(targets, roots)
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
                else:  # its own header
                    stack.append(inc)
    return deps, homeless


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
    deps, homeless = dependencies(targets, roots, source_dir)
    for h in homeless:
        print("{}: in no library's folder (include/kstacklab/<module>/ for src/<module>/)".format(h))
    found = cycles(deps)
    if homeless:
        return 1
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
    """A made-up tree: `p_b` links `p_a`, and a header of `p_a` includes one of `p_b`; then
    without it; then a header in no library's folder."""
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, {
            "include/p/a/a.h": '#include "p/b/b.h"\n',
            "include/p/b/b.h": '#include "p/a/util.h"\n',
            "include/p/a/util.h": "",
            "src/a/a.cc": '#include "p/a/a.h"\n',
            "src/b/b.cc": '#include "p/b/b.h"\n',
            "graph.txt": "target p_a\nsource {0}/src/a/a.cc\ntarget p_b\nsource {0}/src/b/b.cc\n"
                         "link p_a\n".format(d)})
        graph = os.path.join(d, "graph.txt")
        if not expect(check(graph, d), 1, "the planted cycle p_a <-> p_b was not found"):
            return 1
        write_tree(d, {"include/p/a/a.h": '#include "p/a/util.h"\n'})
        if not expect(check(graph, d), 0, "a cycle was reported where there is none"):
            return 1
        write_tree(d, {"include/p/loose.h": "", "src/b/b.cc": '#include "p/loose.h"\n'})
        if not expect(check(graph, d), 1, "a header in no library's folder was not refused"):
            return 1
    print("self-test: a planted cycle fails, its removal passes, a header outside the folders fails")
    return 0


if __name__ == "__main__":
    main(__doc__, check, self_test, 2)
