// The timer attack against the rdtsc-fed offset counter, scored against the probe's ground
// truth (include/kstacklab/live/attacks.h, docs/live.md).
#include <fmt/format.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/live/attacks.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"
#include "kstacklab/timing/timing.h"

namespace kstacklab::live {

namespace {

constexpr uint64_t kMinCalls = 256;

// The attacker's clock: lfence; rdtsc; lfence on x86 (what an unprivileged process can read).
inline uint64_t ReadTsc() { return timing::CycleClock::Now(); }

double Percentile(std::vector<int64_t> v, double pct) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(pct / 100.0 * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]);
}

AttackerScore Score(std::string name, std::string knows, const std::vector<uint8_t>& predicted,
                    const std::vector<uint8_t>& actual, uint32_t bins) {
  AttackerScore s;
  s.name = std::move(name);
  s.knows = std::move(knows);
  s.predictions = predicted.size();
  for (size_t i = 0; i < predicted.size(); ++i) s.correct += predicted[i] == actual[i] ? 1 : 0;
  s.correct_fraction =
      s.predictions > 0 ? static_cast<double>(s.correct) / static_cast<double>(s.predictions) : 0;
  auto mi = analysis::MutualInformationBits(predicted, actual, bins);
  if (mi.ok()) s.conditional_entropy_bits = mi->conditional_bits;
  return s;
}

// What a leaked offset tells about the state: the masked bits, up to the rounding. v6.11+
// (x & 0x3F0, no rounding): bits 4-9 exactly. Older kernels round x & 0x3FF up to the alignment,
// hiding its low bits L: the attacker keeps its own estimate of L (right once it has converged,
// as those bits come from known bits and its TSC), and then x = offset when L = 0, else
// offset - align + L.
uint32_t Leak(uint32_t estimate, uint32_t offset, const kstack::OffsetGeometry& g) {
  const uint32_t hidden = g.mask & (g.align - 1);
  uint32_t x = offset;
  if (hidden != 0) {
    const uint32_t low = estimate & hidden;
    if (low != 0 && offset > 0) {
      x = offset - g.align + low;
    } else if (offset > g.mask) {
      x = g.mask;  // the top offset needs L != 0: the estimate's L is wrong; take the largest x
    }
  }
  return (estimate & ~g.mask) | (x & g.mask);
}

}  // namespace

Expected<TimerAttackData> CollectTimerAttack(uint64_t calls, int cpu) {
  cpu_set_t saved;
  bool pinned = false;
  if (cpu >= 0) {
    if (sched_getaffinity(0, sizeof(saved), &saved) != 0) {
      return RuntimeError("sched_getaffinity failed");
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) {
      return RuntimeError(fmt::format("cannot run on CPU {}", cpu));
    }
    pinned = true;
  }
  struct Restore {
    cpu_set_t* mask;
    bool active;
    ~Restore() {
      if (active) sched_setaffinity(0, sizeof(*mask), mask);
    }
  } restore{&saved, pinned};
  auto probe = Probe::Attach(ProbeOptions{SYS_getpid});
  if (!probe.ok()) return probe.error();
  TimerAttackData data;
  data.records.reserve(calls);
  data.tsc_after.assign(calls, 0);
  for (uint64_t i = 0; i < calls; ++i) {
    RawSyscall0(SYS_getpid);
    data.tsc_after[i] = ReadTsc();
    if ((i + 1) % Probe::kDrainEvery == 0) {
      if (Status s = (*probe)->Drain(&data.records); !s.ok()) return s.error();
    }
  }
  if (Status s = (*probe)->Drain(&data.records); !s.ok()) return s.error();
  if (data.records.size() != calls) {
    return RuntimeError(fmt::format("the probe recorded {} of {} syscalls ({} dropped)",
                                    data.records.size(), calls, (*probe)->Dropped()));
  }
  return data;
}

namespace {

// input_i = what the kernel mixed in between syscall i and i+1 (recovered from the recorded
// states); its error against the attacker's TSC read, centred on the training half's median
// (rep->delta). Fills delta and the error summary; returns the centred errors.
std::vector<int64_t> CalibrateErrors(const TimerAttackData& data, TimerAttackReport* rep) {
  const size_t n = data.records.size();
  std::vector<int64_t> err(n - 1);
  for (size_t i = 0; i + 1 < n; ++i) {
    const uint32_t input =
        data.records[i + 1].task_state ^ std::rotr(data.records[i].task_state, 5);
    err[i] = static_cast<int32_t>(input - static_cast<uint32_t>(data.tsc_after[i]));
  }
  std::vector<int64_t> train(err.begin(), err.begin() + static_cast<ptrdiff_t>(rep->training));
  rep->delta = static_cast<int64_t>(Percentile(train, 50));
  std::vector<int64_t> centred(err.size());
  uint64_t close = 0;
  for (size_t i = 0; i < err.size(); ++i) {
    centred[i] = err[i] - rep->delta;
    close += std::llabs(centred[i]) < 16 ? 1 : 0;
  }
  rep->error_p05 = Percentile(centred, 5);
  rep->error_p95 = Percentile(centred, 95);
  rep->within_16 = static_cast<double>(close) / static_cast<double>(centred.size());
  return centred;
}

}  // namespace

Expected<TimerAttackReport> AnalyzeTimerAttack(const TimerAttackData& data,
                                               std::span<const uint32_t> offsets,
                                               const kstack::OffsetGeometry& geometry) {
  const size_t n = data.records.size();
  if (n < kMinCalls || data.tsc_after.size() != n || offsets.size() != n) {
    return RuntimeError(fmt::format(
        "the timer attack needs at least {} calls with one TSC read and one offset each",
        kMinCalls));
  }
  TimerAttackReport rep;
  rep.calls = n;
  rep.training = n / 2;
  rep.has_state = std::all_of(data.records.begin(), data.records.end(),
                              [](const LiveRecord& r) { return (r.flags & kHasTaskState) != 0; });
  if (!rep.has_state) {
    return RuntimeError(
        "this kernel does not expose task_struct.kstack_offset, so the kernel's TSC input cannot "
        "be recovered to calibrate and check the attack");
  }
  const std::vector<int64_t> centred = CalibrateErrors(data, &rep);

  // The attacker's error model: the centred training errors and how often each occurred. A
  // prediction is the offset with the largest total weight over these errors (maximum a
  // posteriori under the training distribution), not just the one at the median.
  std::map<int64_t, uint64_t> error_weights;
  for (size_t i = 0; i < rep.training; ++i) ++error_weights[centred[i]];
  auto predict = [&](uint32_t rotated_state, uint64_t tsc) {
    std::array<uint64_t, kstack::kMaxOffsetCount> weight{};
    for (const auto& [e, w] : error_weights) {
      const uint32_t input = static_cast<uint32_t>(tsc + static_cast<uint64_t>(rep.delta + e));
      weight[geometry.Apply(rotated_state ^ input) / geometry.align] += w;
    }
    return static_cast<uint8_t>(std::max_element(weight.begin(), weight.end()) - weight.begin());
  };

  // Scored predictions are of offsets[k] for k in [training + 1, n).
  std::array<uint64_t, kstack::kMaxOffsetCount> freq{};
  for (size_t k = 0; k < rep.training; ++k) ++freq[offsets[k] / geometry.align];
  const auto mode = static_cast<uint8_t>(std::max_element(freq.begin(), freq.end()) - freq.begin());
  std::vector<uint8_t> actual;
  std::vector<uint8_t> guess;
  std::vector<uint8_t> leaks;
  std::vector<uint8_t> state;
  uint32_t estimate = 0;
  for (size_t k = 1; k < n; ++k) {
    // Attacker with leaks: before syscall k it knows offsets[0..k-1] and tsc_after[0..k-1].
    const uint32_t rotated = std::rotr(estimate, 5);
    estimate =
        rotated ^ static_cast<uint32_t>(data.tsc_after[k - 1] + static_cast<uint64_t>(rep.delta));
    estimate = Leak(estimate, offsets[k], geometry);  // the leak of offset k, after the call
    if (k <= rep.training) continue;
    const uint8_t leak_prediction = predict(rotated, data.tsc_after[k - 1]);
    const uint8_t state_prediction =
        predict(std::rotr(data.records[k - 1].task_state, 5), data.tsc_after[k - 1]);
    actual.push_back(static_cast<uint8_t>(offsets[k] / geometry.align));
    guess.push_back(mode);
    leaks.push_back(leak_prediction);
    state.push_back(state_prediction);
  }
  rep.attackers.push_back(Score("guess",
                                "nothing: always the most frequent offset of the first half", guess,
                                actual, geometry.count()));
  rep.attackers.push_back(Score("tsc+leaks",
                                "its TSC after each call, every previous offset (leaked), delta "
                                "calibrated on the first half",
                                leaks, actual, geometry.count()));
  rep.attackers.push_back(Score("tsc+state",
                                "its TSC after each call and the full previous 32-bit state "
                                "(upper bound)",
                                state, actual, geometry.count()));
  return rep;
}

}  // namespace kstacklab::live
