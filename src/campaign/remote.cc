#include "kstacklab/campaign/remote.h"

#include <fmt/format.h>

#include <string>

#include "kstacklab/results/naming.h"

namespace kstacklab::campaign {

std::string ShellQuote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string ShellCommand(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += ' ';
    out += ShellQuote(w);
  }
  return out;
}

const std::vector<std::string>& ChannelFileNames() {
  static const std::vector<std::string> k = {
      "uname",   "cmdline",      "env.json",   "result.json", "run.rc",
      "run.log", "entropy.json", "entropy.rc", "entropy.log", "sysctl.log"};
  return k;
}

std::string JobScript() {
  // Every value arrives as an argument and is used only inside double quotes; sysctl names were
  // checked to be letters, digits, _ - and dots before boot 1 (plan.cc), so the path built from
  // one stays under /proc/sys.
  return R"SH(set -u
k=$1 out=$2 label=$3 strength=$4
shift 4
mkdir -p "$out" || exit 1
rm -f "$out/"*
uname -r > "$out/uname"
cat /proc/cmdline > "$out/cmdline"
: > "$out/sysctl.log"
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  name=$1 value=$2
  shift 2
  path=/proc/sys/$(printf '%s' "$name" | tr . /)
  if printf '%s\n' "$value" > "$path"; then
    echo "set $name" >> "$out/sysctl.log"
  else
    echo "failed $name" >> "$out/sysctl.log"
  fi
done
[ "$#" -gt 0 ] && shift
"$k" env --json > "$out/env.json" 2>/dev/null
"$k" run --no-store --label "$label" -o "$out/result.json" "$@" > "$out/run.log" 2>&1
echo $? > "$out/run.rc"
if [ -n "$strength" ]; then
  "$k" entropy --kernel --format json --samples "$strength" > "$out/entropy.json" 2> "$out/entropy.log"
  echo $? > "$out/entropy.rc"
fi
if command -v lava-test-case > /dev/null 2>&1 && [ "$(cat "$out/run.rc")" = 0 ]; then
  "$k" show --headline "$out/result.json" | while read -r case value; do
    lava-test-case "$case" --result pass --measurement "$value" --units ns
  done
fi
for f in uname cmdline env.json result.json run.rc run.log entropy.json entropy.rc entropy.log sysctl.log; do
  if [ -f "$out/$f" ]; then
    echo "kstacklab-file $f"
    base64 "$out/$f"
    echo "kstacklab-end"
  fi
done
echo "kstacklab-done"
)SH";
}

std::vector<std::string> JobScriptArgs(const std::string& kstacklab, const std::string& out_dir,
                                       const Profile& profile,
                                       const std::vector<std::string>& run_args, bool strength,
                                       uint64_t strength_samples) {
  std::vector<std::string> args = {"kstacklab-job", kstacklab, out_dir, profile.name,
                                   strength ? std::to_string(strength_samples) : std::string()};
  for (const auto& [name, value] : profile.sysctls) {
    args.push_back(name);
    args.push_back(value);
  }
  args.emplace_back("--");
  args.insert(args.end(), run_args.begin(), run_args.end());
  return args;
}

std::vector<std::pair<std::string, double>> HeadlineFigures(const RunResult& result) {
  std::vector<std::pair<std::string, double>> out;
  for (const BenchmarkResult& b : result.benchmarks) {
    double sum = 0;
    size_t n = 0;
    for (const Repetition& r : b.repetitions) {
      auto it = r.metrics.find("mean");
      if (it == r.metrics.end()) continue;
      sum += it->second;
      ++n;
    }
    if (n == 0) continue;
    out.emplace_back(TestCaseName(b.Key()) + ".mean", sum / static_cast<double>(n));
  }
  return out;
}

}  // namespace kstacklab::campaign
