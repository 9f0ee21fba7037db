#!/usr/bin/env bash
# Fails (and lists the files) when a C++ source differs from .clang-format. Fix: clang-format -i FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "clang-format not found: apt-get install clang-format" >&2; exit 1; }
bad=()
while IFS= read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done < <(git ls-files '*.cc' '*.h')
if [ ${#bad[@]} -ne 0 ]; then
  printf 'not clang-formatted (run clang-format -i):\n'; printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format: $(git ls-files '*.cc' '*.h' | wc -l) files clean"
