"""What the source checks under tests/tools/ share: their command line and their self-tests."""

import os
import sys


def write_tree(root, files):
    """Writes {relative path: text} under `root`, making the folders."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def expect(got, want, what):
    """True when a check returned `want`; else says which case `what` it got wrong."""
    if got == want:
        return True
    print("self-test: {} (the check returned {}, not {})".format(what, got, want))
    return False


def main(doc, check, self_test, args):
    """`SCRIPT --self-test`, or `SCRIPT ARGS...` with as many arguments as `check` takes."""
    argv = sys.argv[1:]
    if argv == ["--self-test"]:
        sys.exit(self_test())
    if len(argv) != args:
        sys.exit(doc)
    sys.exit(check(*argv))
