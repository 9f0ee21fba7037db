#!/usr/bin/env python3
"""Fails when a string of a library names a command-line flag ("--repetitions").

Usage: flag_names.py SOURCE_DIR     (checks SOURCE_DIR/src, every library but cli/ and report/)
       flag_names.py --self-test    (shows on made-up sources that a flag in a string fails)

Libraries word their messages with values, never flags; the CLI adds the flag (cli::WithFlag)
or passes its own names for the values (run::PlanNames). cli/ is the CLI; report/ is where the
tool's words live, and its footnotes cite the options a reader can use. Comments do not count,
nor do the strings that drive a program rather than speak to a reader: one argument
("--no-store", "--append=CMDLINE": an argument vector's element) and a script (a string of
several lines). ALLOWED lists the other strings that may: each names the reason.
"""

import os
import re
import tempfile

from check_tool import expect, main, write_tree

FLAG = re.compile(r"(?<![\w-])--[a-z]")

# (path under src/, a part of the literal, why it may name a flag).
ALLOWED = [
    ("campaign/plan_yaml.cc", "[--suite, syscall]",
     "a plan's `run` key holds run's command-line arguments: the example is one"),
    ("campaign/runner.cc", "entropy --kernel printed no JSON report",
     "names the command the guest ran"),
    ("campaign/plan_fields.cc", "`entropy --kernel`",
     "the field's words name the command the guest runs"),
    ("campaign/runner.cc", "--dir '{}'",
     "a message from before this check; its caller is to word it with the flag"),
    ("results/json.cc", "compare --baseline",
     "a message from before this check; its caller is to word it with the flag"),
    ("store/store.cc", "fewer --repetitions",
     "a message from before this check; its caller is to word it with the flag"),
    ("store/store.cc", "(--store PATH)",
     "a message from before this check; its caller is to word it with the flag"),
]


ARGUMENT = re.compile(r"^--?[\w-]+(=.*)?$", re.S)


def speaks(body):
    """A string a reader reads: not one argument ("--raw", "--append=CMDLINE"), not a script."""
    return not ARGUMENT.match(body) and "\n" not in body and "\\n" not in body


def allowed(rel, body):
    return any(rel == path and text in body for path, text, _ in ALLOWED)


SKIPPED = ("cli", "report")


def literals(text):
    """(line, contents) of every string literal in C++ `text`, comments and chars skipped;
    adjacent literals ("give a " "--flag", one string to the compiler) joined."""
    out, i, line, n = [], 0, 1, len(text)
    last_end = -1  # where the previous literal ended

    def add(start, end, body, body_line):
        if out and text[last_end:start].strip() == "":
            out[-1] = (out[-1][0], out[-1][1] + body)
        else:
            out.append((body_line, body))
        return end

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            line += text.count("\n", i, end)
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delim = text[i + 2:open_paren]
            end = text.find(")" + delim + '"', open_paren)
            body = text[open_paren + 1:end]
            last_end = add(i, end + len(delim) + 2, body, line)
            line += body.count("\n")
            i = last_end
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if c == '"':
                last_end = add(i, j + 1, text[i + 1:j], line)
            i = j + 1
        else:
            i += 1
    return out


def violations(src_dir):
    found = []
    for root, dirs, files in os.walk(src_dir):
        dirs.sort()
        rel_root = os.path.relpath(root, src_dir)
        if rel_root.split(os.sep)[0] in SKIPPED:
            continue
        for name in sorted(files):
            if not name.endswith((".cc", ".h")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src_dir)
            with open(path, errors="replace") as f:
                for line, body in literals(f.read()):
                    if not FLAG.search(body) or not speaks(body):
                        continue
                    if allowed(rel, body):
                        continue
                    found.append("src/{}:{}: \"{}\"".format(rel, line, body[:120]))
    return found


def check(source_dir):
    found = violations(os.path.join(source_dir, "src"))
    if found:
        print("library strings naming a command-line flag (word the value; the CLI names its "
              "flag):")
        for f in found:
            print("  " + f)
        return 1
    print("flag names: no library string names a command-line flag ({} allowed, each with its "
          "reason)".format(len(ALLOWED)))
    return 0


def self_test():
    """A made-up tree: a flag in the CLI, in comments and values only; then one in a library."""
    with tempfile.TemporaryDirectory() as d:
        write_tree(d, {
            "src/cli/x_cmd.cc": 'auto e = UsageError("--alpha is wrong");\n',
            "src/stats/a.cc": '// --alpha in a comment\nconst char* k = "alpha -1 is out of '
                              'range";\n/* --x */ char c = \'-\';\n'
                              'argv = {"kexec", "--initrd=", "--append=x y"};\n'
                              'const char* sh = R"(set -u\nbusybox --install -s /bin\n)";\n'})
        if not expect(check(d), 0, "a clean library was refused"):
            return 1
        write_tree(d, {"src/stats/b.cc": 'auto e = UsageError(fmt::format("give a smaller "\n'
                                         '    "--alpha"));\n'})
        if not expect(check(d), 1, "a flag in a library's string was not found"):
            return 1
    print("self-test: a flag in a library string fails; comments, the CLI, values, arguments and "
          "scripts do not")
    return 0


if __name__ == "__main__":
    main(__doc__, check, self_test, 1)
