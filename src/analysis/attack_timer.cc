// timer: "a 24 MHz counter gives too few bits". The counter-based design (legacy-x86:
// offset = ror32(old, 5) ^ counter at the exit step, used at the next entry) against an
// attacker that reads the same counter around its own syscalls. The attacker is given the
// design's state before the exit step (the best case: e.g. recovered from earlier leaks), so
// what it cannot predict is exactly what the counter contributes: bits 4..9 of the counter
// value the kernel read, estimated from the attacker's own reading with an error e.
//
// Simulation (seeded): exit times in picoseconds with a random phase between syscalls
// (1..11 us apart), the counter value = rng::CounterSource(1e12 Hz, F).Quantise(time) (the real
// quantisation of the rng module), e drawn from a normal law with the given standard deviation,
// or resampled from errors measured here (--measure); the design itself is each counter-fed row
// of the policy table (AttackFacts; legacy-x86), its real policy object driven through the row's
// Simulate with the simulated counter value as its counter read.
#include <fmt/format.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "attack_util.h"
#include "kstacklab/analysis/attack.h"
#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/rng/counter.h"
#include "kstacklab/sampler/sampler.h"
#include "kstacklab/timing/timing.h"

namespace kstacklab::analysis {
namespace {

constexpr uint64_t kPicoHz = 1'000'000'000'000;  // the simulation's time base
// IQR of a normal law in standard deviations (2 x 0.6745): robust sigma = IQR / kIqrPerSigma.
constexpr double kIqrPerSigma = 1.349;

// The measured IQR rounds to at most one counter step: it then reflects the counter's
// resolution (durations are whole steps) rather than the call's jitter.
bool AtCounterResolution(const JitterMeasurement& m) {
  return m.counter_step_ns > 0 && m.robust_sigma_ns * kIqrPerSigma < 1.5 * m.counter_step_ns;
}

// A standard normal draw (Box-Muller) from the dice.
double Normal(Dice& dice) {
  const double u1 = 1.0 - dice.Unit();  // (0, 1]
  const double u2 = dice.Unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

std::string HzText(double hz) {
  if (hz >= 1e9) return fmt::format("{:g} GHz", hz / 1e9);
  if (hz >= 1e6) return fmt::format("{:g} MHz", hz / 1e6);
  return fmt::format("{:g} kHz", hz / 1e3);
}

// hz == 0: the reference row, the design fed by a uniform source instead of the counter (the
// attacker still times the counter, at 1 GHz).
// `policy`: a counter-fed row, driven through its Simulate on one CPU; its counter reads
// return counter_value, which the simulation sets to the kernel's read (the attacker's estimate
// while it predicts from a copy of the state).
// Progress of the whole attack: rows done so far and the total, in samples.
struct TimerProgress {
  const AttackProgress* report;
  uint64_t done;
  uint64_t total;
};

Expected<AttackRow> RunRow(const kstack::PolicyDef& policy, double hz, const std::string& label,
                           double sigma_ns, const std::vector<double>* measured, uint64_t samples,
                           uint64_t seed, const TimerProgress& progress) {
  Dice dice(seed);
  const bool uniform = hz == 0;
  if (uniform) hz = 1e9;
  UniformSource source(dice);
  const rng::CounterSource counter(kPicoHz, static_cast<uint64_t>(std::llround(hz)));
  uint64_t counter_value = 0;
  kstack::CpuScript script;
  auto sim = policy.simulate({1, &script, &dice, &counter_value});
  if (!sim.ok()) return sim.error();
  KSTACKLAB_CHECK(sim->predict_next && sim->exit);   // a counter-fed design (SimPolicy)
  std::vector<uint64_t> counts(size_t{64} * 64, 0);  // [guess / 16][actual / 16]
  AttackRow row;
  row.design = label;
  uint64_t t_ps = 1'000'000'000'000 + dice.Below(kPicoHz);  // start 1..2 s after "boot"
  for (uint64_t i = 0; i < samples; ++i) {
    if (*progress.report && i % 65536 == 0) (*progress.report)(progress.done + i, progress.total);
    t_ps += 1'000'000 + dice.Below(10'000'000);  // next exit 1..11 us later
    double err_ns = 0;
    if (measured != nullptr) {
      err_ns = (*measured)[dice.Below(measured->size())];
    } else if (sigma_ns > 0) {
      err_ns = sigma_ns * Normal(dice);
    }
    const double est = static_cast<double>(t_ps) + histogram::NsToPs(err_ns);
    const uint64_t est_ps = est <= 0 ? 0 : static_cast<uint64_t>(est);
    // The state is given to the attacker (best case): it runs the exit step on a copy with
    // its own counter estimate.
    counter_value = counter.Quantise(est_ps);
    const uint32_t guess = sim->predict_next();
    counter_value = uniform ? source.Next() : counter.Quantise(t_ps);
    sim->exit();                           // the kernel's choose step
    const uint32_t actual = sim->entry();  // the next entry
    ++row.predicted;
    row.correct += guess == actual ? 1 : 0;
    ++counts[guess / 16 * 64 + actual / 16];
  }
  row.observations = samples;
  SetAccuracy(row);
  row.remaining_bits = ConditionalEntropyBits(counts, 64);
  row.verdict = PredictionVerdict(row.correct, row.predicted, kChanceAccuracy);
  AddEvidence(row, "tick ns", 1e9 / hz);
  AddEvidence(row, "bit-4 step ns", 16e9 / hz);
  return row;
}

// The counter resolutions to simulate, each with its label: the ones given, the TSC's, and the
// uniform reference row (hz 0).
Expected<std::vector<std::pair<double, std::string>>> Resolutions(const TimerOptions& o) {
  std::vector<std::pair<double, std::string>> res;
  for (double hz : o.resolutions_hz) {
    if (!(hz >= 1e3 && hz <= 1e11)) {
      return UsageError(fmt::format("timer: resolution {:g} Hz outside 1 kHz..100 GHz", hz));
    }
    res.emplace_back(hz, HzText(hz));
  }
  if (o.tsc_hz > 0) res.emplace_back(o.tsc_hz, fmt::format("TSC {:.4g} GHz", o.tsc_hz / 1e9));
  if (o.uniform_row) res.emplace_back(0, "uniform");
  if (res.empty()) return UsageError("timer: no counter resolution to simulate");
  return res;
}

// How to read the report: the method, the reference row, and the measured jitter when there
// is one.
std::vector<AttackNote> TimerNotes(const TimerOptions& o) {
  std::vector<AttackNote> notes = {AttackFixedNote::kTimerMethod, AttackFixedNote::kTimerUniformRow,
                                   AttackFixedNote::kTimerBit4Step};
  if (o.measured.errors_ns.empty()) return notes;
  notes.emplace_back(JitterMeasuredNote{o.measured.errors_ns.size()});
  if (AtCounterResolution(o.measured)) {
    notes.emplace_back(JitterAtResolutionNote{o.measured.robust_sigma_ns * kIqrPerSigma,
                                              o.measured.counter_step_ns,
                                              o.measured.robust_sigma_ns});
  }
  return notes;
}

}  // namespace

Expected<AttackReport> RunTimer(const TimerOptions& o) {
  std::vector<std::pair<double, std::string>> res;
  KSTACKLAB_ASSIGN_OR_RETURN(res, Resolutions(o));
  if (o.samples < 1) return UsageError("timer: samples >= 1");
  AttackReport r;
  r.attack = "timer";
  r.seed = o.seed;
  r.claim = AttackClaim::kCounterTooFewBits;
  std::vector<const kstack::PolicyDef*> designs;
  for (const kstack::PolicyDef& p : o.policy_table) {
    if (kstack::CounterFed(p.facts)) designs.push_back(&p);
  }
  if (designs.empty()) return UsageError("timer: no counter-fed design in the policy table");
  uint64_t row_seed = o.seed;
  const uint64_t rows_per_resolution = o.jitters_ns.size() + (o.measured.errors_ns.empty() ? 0 : 1);
  TimerProgress progress{&o.progress, 0,
                         designs.size() * res.size() * rows_per_resolution * o.samples};
  for (const kstack::PolicyDef* design : designs) {
    for (const auto& [hz, text] : res) {
      const std::string label =
          designs.size() == 1 ? text : fmt::format("{} {}", design->name, text);
      for (double j : o.jitters_ns) {
        auto row = RunRow(*design, hz, label, j, nullptr, o.samples, row_seed++, progress);
        if (!row.ok()) return row.error();
        progress.done += o.samples;
        row->setting = fmt::format("jitter sd {:g} ns", j);
        AddEvidence(*row, "jitter ns", j);
        r.rows.push_back(std::move(*row));
      }
      if (!o.measured.errors_ns.empty()) {
        auto row =
            RunRow(*design, hz, label, 0, &o.measured.errors_ns, o.samples, row_seed++, progress);
        if (!row.ok()) return row.error();
        progress.done += o.samples;
        row->setting = "jitter measured here";
        AddEvidence(*row, "jitter ns", o.measured.robust_sigma_ns);
        r.rows.push_back(std::move(*row));
      }
    }
  }
  r.notes = TimerNotes(o);
  return r;
}

namespace {
void GetpidCall(void* /*state*/) { RawSyscall0(SYS_getpid); }

// ~0.5 us per measured call (a getpid, its two counter reads, the tally), ~60 ns per simulated
// syscall of a row: this project's machine, with margin.
constexpr double kTimerSecondsPerCall = 0.5e-6;
constexpr double kTimerSecondsPerSample = 60e-9;
}  // namespace

AttackCost EstimateTimerCost(const TimerOptions& o, uint64_t measure_calls) {
  double designs = 0;
  for (const kstack::PolicyDef& p : o.policy_table) designs += kstack::CounterFed(p.facts) ? 1 : 0;
  const double resolutions = static_cast<double>(o.resolutions_hz.size()) + (o.tsc_hz > 0 ? 1 : 0) +
                             (o.uniform_row ? 1 : 0);
  const double rows_per_resolution =
      static_cast<double>(o.jitters_ns.size()) + (measure_calls > 0 ? 1 : 0);
  AttackCost c;
  c.seconds = static_cast<double>(measure_calls) * kTimerSecondsPerCall +
              designs * resolutions * rows_per_resolution * static_cast<double>(o.samples) *
                  kTimerSecondsPerSample;
  // The ticks and the errors kept, both alive while the errors are computed.
  c.bytes =
      static_cast<double>(measure_calls) * (sizeof(uint64_t) + sizeof(double)) + 64.0 * 64 * 8;
  return c;
}

Expected<JitterMeasurement> MeasureSyscallJitter(uint64_t calls) {
  if (calls < 100) {
    return UsageError(
        fmt::format("the jitter measurement needs at least 100 calls, not {}", calls));
  }
  auto cal = timing::Calibrate();
  if (!cal.ok()) return cal.error();
  std::vector<uint64_t> ticks(calls);
  for (int i = 0; i < 1000; ++i) GetpidCall(nullptr);  // warm-up
  sampler::TimePerCall<timing::CycleClock, &GetpidCall>(nullptr, calls, ticks.data());
  JitterMeasurement m;
  m.counter_step_ns = cal->resolution_ns;
  auto ns = [&](uint64_t t) { return static_cast<double>(t) * 1e9 / cal->freq_hz; };
  // The order statistics from a tally of the tick counts (few distinct values), not a sorted
  // copy: ns() is monotonic, so the k-th smallest duration is ns(k-th smallest tick count).
  std::map<uint64_t, uint64_t> tally;
  for (uint64_t t : ticks) ++tally[t];
  auto kth = [&](uint64_t k) {  // 0-based
    for (const auto& [t, n] : tally) {
      if (k < n) return ns(t);
      k -= n;
    }
    return ns(tally.rbegin()->first);
  };
  const double median_ns = kth(calls / 2);
  m.robust_sigma_ns = (kth(calls * 3 / 4) - kth(calls / 4)) / kIqrPerSigma;
  tally.clear();
  m.errors_ns.reserve(calls);
  for (uint64_t t : ticks) m.errors_ns.push_back(ns(t) - median_ns);
  return m;
}

}  // namespace kstacklab::analysis
