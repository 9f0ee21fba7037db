// The interleaved A/B of a knob's values (src/run/interleave.h RunAb).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "interleave.h"
#include "kstacklab/common/text.h"

namespace kstacklab::run {
namespace {

// The rows of each value, all chosen before anything changes; value v's results go to
// benchmarks[first[v] ...] of the merged result.
struct ValueRows {
  std::vector<std::vector<workloads::WorkloadDef>> rows;
  std::vector<size_t> first;
  size_t total = 0;
};

Expected<ValueRows> RowsOfEachValue(const std::vector<workloads::WorkloadDef>& rows,
                                    const knobs::AbSpec& spec, const knobs::Knob& knob) {
  ValueRows out;
  for (size_t v = 0; v < spec.values.size(); ++v) {
    auto r = knob.RowsFor(rows, spec.values, v);
    if (!r.ok()) return r.error();
    out.first.push_back(out.total);
    out.total += r->size();
    out.rows.push_back(std::move(*r));
  }
  return out;
}

// Every value is written once (and read back) before anything is measured: a value the kernel
// rejects ("abc", out of range) is the user's input error, found now, not mid-run. Ends with the
// original value set.
Status TryEveryValue(RunGuard& guard, const knobs::AbSpec& spec) {
  for (const std::string& v : spec.values) {
    if (Status set = guard.SetKnob(v); !set.ok()) {
      const std::string original = guard.KnobOriginal();
      Status restored = guard.RestoreKnob();
      return UsageError(fmt::format(
          "{}: sysctl {} does not take the value '{}' ({}); nothing was measured, {}; give "
          "values the sysctl accepts",
          spec.text, spec.name, EscapeControl(v), set.error().message,
          restored.ok() ? "the original value " + original + " is restored"
                        : "and restoring it failed: " + restored.error().message));
    }
  }
  return guard.SetKnob(guard.KnobOriginal());
}

// Appends one repetition of a value's rows to the merged result.
Status MergeRepetition(RunResult& measured, size_t first, RunResult& merged) {
  for (size_t i = 0; i < measured.benchmarks.size(); ++i) {
    BenchmarkResult& into = merged.benchmarks[first + i];
    BenchmarkResult& got = measured.benchmarks[i];
    if (into.name.empty()) {
      into = std::move(got);
      continue;
    }
    into.repetitions.insert(into.repetitions.end(), got.repetitions.begin(), got.repetitions.end());
    KSTACKLAB_RETURN_IF_ERROR(into.histogram.Merge(got.histogram));
  }
  return OkStatus();
}

// Lets the guard's knob go on every path out of RunAb: the knob object does not outlive it.
class KnobRelease {
 public:
  explicit KnobRelease(RunGuard& guard) : guard_(guard) {}
  ~KnobRelease() { (void)guard_.RestoreKnob(); }
  KnobRelease(const KnobRelease&) = delete;
  KnobRelease& operator=(const KnobRelease&) = delete;

 private:
  RunGuard& guard_;
};

}  // namespace

Expected<AbOutcome> RunAb(const std::vector<workloads::WorkloadDef>& rows,
                          const RunOptions& options, const sampler::ClockParams& clock,
                          RunGuard& guard, const ProgressFn& progress, const knobs::AbSpec& spec,
                          knobs::Knob& knob) {
  const size_t nv = spec.values.size();
  ValueRows values;
  KSTACKLAB_ASSIGN_OR_RETURN(values, RowsOfEachValue(rows, spec, knob));
  AbOutcome out;
  RunResult& merged = out.result;
  merged.benchmarks.resize(values.total);
  const bool held = knob.changes_machine();  // a sysctl: saved, restored on every path
  KnobRelease release(guard);
  if (held) {
    KSTACKLAB_RETURN_IF_ERROR(guard.HoldKnob(knob));
    KSTACKLAB_RETURN_IF_ERROR(TryEveryValue(guard, spec));
  }
  RunOptions one = options;
  one.repetitions = 1;
  const double total = static_cast<double>(options.repetitions) * static_cast<double>(nv);
  std::string failure;
  for (int r = 0; r < options.repetitions && !merged.partial; ++r) {
    const std::vector<size_t> order = RoundOrder(nv, r);
    one.first_repetition = r;
    for (size_t k = 0; k < nv && !merged.partial; ++k) {
      if (guard.stop_requested()) {
        merged.partial = true;
        break;
      }
      const size_t v = order[k];
      if (Status set = held ? guard.SetKnob(spec.values[v]) : knob.Write(spec.values[v]);
          !set.ok()) {
        if (r == 0 && k == 0) return set.error();  // nothing measured yet: a plain error
        // Keep what was measured (a partial file) and say why it stopped.
        merged.partial = true;
        failure = fmt::format("setting {} to {} failed mid-run: {}", spec.name, spec.values[v],
                              set.error().message);
        break;
      }
      const double done = static_cast<double>(r) * static_cast<double>(nv) + k;
      ProgressFn inner;
      if (progress) {
        inner = [&](double f, double e, const std::string& row) {
          progress((done + f) / total, e, row);
        };
      }
      auto res = RunWorkloads(values.rows[v], one, clock, guard.stop_flag(), inner);
      if (!res.ok()) return res.error();
      KSTACKLAB_RETURN_IF_ERROR(MergeRepetition(*res, values.first[v], merged));
      merged.partial = res->partial;
    }
  }
  // A value never reached (stopped early) leaves its rows empty: drop them.
  std::erase_if(merged.benchmarks, [](const BenchmarkResult& b) { return b.name.empty(); });
  if (held) {
    if (Status restored = guard.RestoreKnob(); !restored.ok()) {
      if (merged.benchmarks.empty()) return restored.error();
      failure += fmt::format("{}restoring {} failed: {}", failure.empty() ? "" : "; ", spec.name,
                             restored.error().message);
    }
  }
  if (!failure.empty()) out.failure = RuntimeError(failure);
  return out;
}

}  // namespace kstacklab::run
