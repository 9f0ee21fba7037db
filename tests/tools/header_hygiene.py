#!/usr/bin/env python3
"""Fails when a header does not compile on its own: it uses a name it does not include.

Usage: header_hygiene.py SOURCE_DIR CXX   (every header of SOURCE_DIR/include/kstacklab and
                                           SOURCE_DIR/src/*/, compiled alone with CXX)
       header_hygiene.py --self-test       (shows on made-up headers that a missing include fails)

A header that leans on what its includer happened to include first breaks the next file that
includes it in another order, and a unity build (how CI compiles) hides it. Each header is
compiled as the only line of a translation unit, `-std=c++20 -fsyntax-only`, with the include
path a file of its module has: include/ for a public header, include/ and its own folder for a
module's private one. (clang-tidy 14 has no include-cleaner; for a .cc file that does not include
what it uses, run `scripts/tidy.sh --each`.)

Parsing nlohmann/json.hpp is most of the cost (2 of the 2.5 s a header that reaches it takes), so a
header whose own includes reach kstacklab/results/json.h (the one header that includes nlohmann) is
compiled with json.h precompiled and included first: what it then sees is what it sees alone, as
its includes come before its code. A header that does not reach json.h is compiled without it.
"""

import concurrent.futures
import glob
import os
import re
import subprocess
import tempfile

from check_tool import expect, main, write_tree


def headers(source_dir):
    """(header, its include directories), public headers first, each list sorted."""
    include = os.path.join(source_dir, "include")
    public = sorted(glob.glob(os.path.join(include, "kstacklab", "**", "*.h"), recursive=True))
    out = [(h, [include]) for h in public]
    for h in sorted(glob.glob(os.path.join(source_dir, "src", "*", "*.h"))):
        out.append((h, [include, os.path.dirname(h)]))
    return out


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
JSON_HEADER = "kstacklab/results/json.h"


def reaches_json(header, include_dirs, seen=None):
    """True when `header` includes kstacklab/results/json.h, itself or through its quoted includes."""
    seen = set() if seen is None else seen
    if header in seen:
        return False
    seen.add(header)
    with open(header) as f:
        text = f.read()
    for name in INCLUDE.findall(text):
        if name == JSON_HEADER:
            return True
        for d in [os.path.dirname(header)] + include_dirs:
            path = os.path.join(d, name)
            if os.path.isfile(path):
                if reaches_json(path, include_dirs, seen):
                    return True
                break
    return False


def precompile_json(cxx, source_dir, workdir):
    """The -include flags that put a precompiled kstacklab/results/json.h first, or [] when it cannot."""
    json_h = os.path.join(source_dir, "include", JSON_HEADER)
    if not os.path.isfile(json_h):
        return []
    front = os.path.join(workdir, "json_first.h")
    with open(front, "w") as f:
        f.write('#include "{}"\n'.format(json_h))
    clang = "clang" in subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    pch = front + (".pch" if clang else ".gch")
    r = subprocess.run([cxx, "-std=c++20", "-x", "c++-header", front, "-o", pch],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return []
    return ["-include-pch", pch] if clang else ["-include", front]


def compile_alone(cxx, header, include_dirs, first=()):
    """The compiler's first error line for `header` alone, or None when it compiles. `first`:
    flags that include a precompiled header before it."""
    cmd = [cxx, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"] + list(first)
    cmd += ["-I" + d for d in include_dirs]
    tu = '#include "{}"\n'.format(os.path.abspath(header))
    r = subprocess.run(cmd, input=tu, capture_output=True, text=True)
    if r.returncode == 0:
        return None
    errors = [line for line in r.stderr.splitlines() if "error" in line]
    return errors[0] if errors else r.stderr.strip().splitlines()[-1:] or "failed"


def failures(source_dir, cxx):
    """[(header, error)] of the headers that do not compile alone."""
    found = headers(source_dir)
    with tempfile.TemporaryDirectory() as workdir:
        json_first = precompile_json(cxx, source_dir, workdir)

        def one(item):
            header, dirs = item
            first = json_first if json_first and reaches_json(header, dirs) else []
            return header, compile_alone(cxx, header, dirs, first)

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(one, found))
    return [(h, e) for h, e in results if e is not None], len(found)


def check(source_dir, cxx):
    bad, count = failures(source_dir, cxx)
    for header, error in bad:
        print("{}: does not compile on its own: {}".format(os.path.relpath(header, source_dir),
                                                          error))
    if bad:
        print("{} of {} headers do not include what they use: add the #include each error "
              "names".format(len(bad), count))
        return 1
    if count == 0:
        print("no headers found under {}".format(source_dir))
        return 1
    print("header hygiene: {} headers, each compiles on its own".format(count))
    return 0


def self_test():
    cxx = os.environ.get("CXX", "c++")
    ok = True
    with tempfile.TemporaryDirectory() as root:
        write_tree(root, {
            "include/kstacklab/good.h": "#pragma once\n#include <vector>\n"
                                        "inline std::vector<int> Good() { return {}; }\n",
            "include/kstacklab/bad.h": "#pragma once\n"
                                       "inline std::vector<int> Bad() { return {}; }\n",
            # The precompiled json.h: it declares Json; a header that reaches it through its own
            # includes compiles, one that uses Json without including it does not.
            "include/kstacklab/results/json.h": "#pragma once\n#include <map>\nusing Json = int;\n",
            "include/kstacklab/uses_json.h": '#pragma once\n#include "kstacklab/json_user.h"\n'
                                             "inline Json Two() { return 2; }\n",
            "include/kstacklab/json_user.h": '#pragma once\n#include "kstacklab/results/json.h"\n',
            "include/kstacklab/forgets_json.h": "#pragma once\n"
                                                "inline Json Three() { return 3; }\n",
            "src/mod/private.h": '#pragma once\n#include "kstacklab/good.h"\n'
                                 '#include "sibling.h"\n',
            "src/mod/sibling.h": "#pragma once\n",
        })
        include = os.path.join(root, "include")
        ok &= expect(reaches_json(os.path.join(include, "kstacklab/uses_json.h"), [include]),
                     True, "a header reaching json.h through another is found")
        ok &= expect(reaches_json(os.path.join(include, "kstacklab/forgets_json.h"), [include]),
                     False, "a header not including json.h is not given it")
        bad, count = failures(root, cxx)
        ok &= expect(count, 8, "headers found")
        ok &= expect(sorted(os.path.basename(h) for h, _ in bad), ["bad.h", "forgets_json.h"],
                     "only the headers that use a name without its include fail")
        ok &= expect(check(root, cxx), 1, "a tree with a failing header fails")
        os.remove(os.path.join(root, "include/kstacklab/bad.h"))
        os.remove(os.path.join(root, "include/kstacklab/forgets_json.h"))
        ok &= expect(check(root, cxx), 0, "a private header finds its module's siblings")
    return 0 if ok else 1


if __name__ == "__main__":
    main(__doc__, check, self_test, 2)
