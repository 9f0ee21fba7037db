#!/usr/bin/env python3
"""Checks the install tiers (scripts/packages.txt) against the documents and the size budget.

  install_tiers.py SOURCE_DIR     the checks below; exit 0, 1 on a finding, 77 to skip
  install_tiers.py --self-test    shows that each check fails on a planted fault

1. README.md's dependency table is `scripts/install-deps.sh --table` (the tool tier), line for line;
   docs/install.md's is `--table --all` (every tier).
2. docs/README.md links every other file of docs/.
3. The tool tier (README command 1) adds at most 40 packages to a Debian 12 machine that has
   build-essential and cmake: the packages in the closure of the tier's dependencies (apt-cache
   depends --recurse: Depends and Pre-Depends, no Recommends) that are not in the closure of
   build-essential and cmake. That closure over-approximates an `apt-get install` where a
   dependency has alternatives and under-approximates it by an upgrade (docs/install.md gives
   the count measured in a bare image). Needs apt's package lists: without them the check skips
   (exit 77), or fails where KSTACKLAB_NO_SKIP=1 (CI).
"""
import os
import re
import subprocess
import sys
import tempfile

BUDGET = 40
BASE = ["build-essential", "cmake"]


def table_lines(text, header="| tier | packages | for |"):
    """The lines of the first Markdown table whose header is `header`, header included."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == header:
            out = []
            for l in lines[i:]:
                if not l.startswith("|"):
                    break
                out.append(l.rstrip())
            return out
    return []


def check_tables(src, generated_tool, generated_all):
    problems = []
    for doc, want in (("README.md", generated_tool), ("docs/install.md", generated_all)):
        with open(os.path.join(src, doc), encoding="utf-8") as f:
            have = table_lines(f.read())
        want = [l.rstrip() for l in want.splitlines() if l.strip()]
        if have != want:
            problems.append(f"{doc}: its dependency table is not `scripts/install-deps.sh --table"
                            f"{' --all' if doc != 'README.md' else ''}`; paste that output in its place")
    return problems


def check_docs_index(src):
    docs = os.path.join(src, "docs")
    with open(os.path.join(docs, "README.md"), encoding="utf-8") as f:
        index = f.read()
    linked = set(re.findall(r"\]\(([^)#]+\.md)", index))
    problems = []
    for name in sorted(os.listdir(docs)):
        if name.endswith(".md") and name != "README.md" and name not in linked:
            problems.append(f"docs/README.md does not link docs/{name}: add it under its purpose")
    return problems


def closure(packages):
    out = subprocess.run(
        ["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
         "--no-breaks", "--no-replaces", "--no-enhances"] + packages,
        capture_output=True, text=True, check=False).stdout
    # Real packages of this architecture: not the indented relations, not <virtual> names, not
    # another architecture's (a host with dpkg's arm64 architecture lists those too).
    return {l for l in out.splitlines() if l and not l.startswith((" ", "<")) and ":" not in l}


def count_tool_tier(tool):
    base = closure(BASE)
    if "build-essential" not in base:
        return None
    return sorted(closure(tool) - base)


def run_deps(src, *args):
    return subprocess.run(["bash", os.path.join(src, "scripts/install-deps.sh"), *args],
                          capture_output=True, text=True, check=True).stdout


def main(src):
    problems = check_tables(src, run_deps(src, "--table"), run_deps(src, "--table", "--all"))
    problems += check_docs_index(src)
    added = count_tool_tier(run_deps(src, "--list").split())
    if added is None:
        msg = "install_tiers: apt's package lists are missing (apt-get update): the size of the tool tier is not checked"
        if os.environ.get("KSTACKLAB_NO_SKIP") == "1":
            problems.append(msg)
        else:
            for p in problems:
                print(p, file=sys.stderr)
            print(msg, file=sys.stderr)
            return 1 if problems else 77
    elif len(added) > BUDGET:
        problems.append(f"the tool tier adds {len(added)} packages beyond build-essential and cmake "
                        f"(budget {BUDGET}): {' '.join(added)}; move what the tool does not need "
                        "to the test tier (scripts/packages.txt)")
    else:
        print(f"install_tiers: the tool tier adds {len(added)} packages (budget {BUDGET}): {' '.join(added)}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


def self_test():
    tool = "| tier | packages | for |\n|---|---|---|\n| tool | `a` | x |\n"
    every = tool + "| test | `b` | y |\n"
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "docs"))

        def write(path, text):
            with open(os.path.join(d, path), "w", encoding="utf-8") as f:
                f.write(text)

        write("README.md", "intro\n\n" + tool + "\nafter\n")
        write("docs/install.md", every)
        write("docs/README.md", "- [install](install.md)\n")
        assert check_tables(d, tool, every) == [], "matching tables flagged"
        assert check_docs_index(d) == [], "a complete index flagged"
        write("README.md", tool.replace("| x |", "| z |"))
        assert check_tables(d, tool, every), "a changed README row not flagged"
        write("docs/install.md", tool)
        assert len(check_tables(d, tool, every)) == 2, "a missing tier in docs/install.md not flagged"
        write("docs/new.md", "x")
        assert check_docs_index(d), "a file missing from the index not flagged"
    print("install_tiers self-test: every planted fault is found")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if len(sys.argv) != 2:
        print("usage: install_tiers.py SOURCE_DIR | --self-test", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
