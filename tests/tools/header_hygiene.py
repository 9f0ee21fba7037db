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
"""

import concurrent.futures
import glob
import os
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


def compile_alone(cxx, header, include_dirs):
    """The compiler's first error line for `header` alone, or None when it compiles."""
    cmd = [cxx, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"]
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
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = pool.map(lambda hd: (hd[0], compile_alone(cxx, hd[0], hd[1])), found)
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
            "src/mod/private.h": '#pragma once\n#include "kstacklab/good.h"\n'
                                 '#include "sibling.h"\n',
            "src/mod/sibling.h": "#pragma once\n",
        })
        bad, count = failures(root, cxx)
        ok &= expect(count, 4, "headers found")
        ok &= expect([os.path.basename(h) for h, _ in bad], ["bad.h"],
                     "only the header that uses std::vector without <vector> fails")
        ok &= expect(check(root, cxx), 1, "a tree with a failing header fails")
        os.remove(os.path.join(root, "include/kstacklab/bad.h"))
        ok &= expect(check(root, cxx), 0, "a private header finds its module's siblings")
    return 0 if ok else 1


if __name__ == "__main__":
    main(__doc__, check, self_test, 2)
