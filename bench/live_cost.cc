// Cost of observing: getpid per call, measured with the engine (RunRepetition, per-call
// timing), in three arms interleaved repetition by repetition (order rotated):
//   off       no BPF program attached;
//   filtered  the probe attached but filtering on another syscall (getppid): what every other
//             syscall on the machine pays while the probe is attached (tracepoint + filter);
//   recording the probe attached and recording every getpid (ring buffer write).
// Needs root. Usage: bench/live_cost [REPETITIONS=15] [CALLS_PER_REPETITION=100000]
// Prints per-arm medians over repetitions of the per-repetition p50 and mean (overhead-corrected
// ns), and the median of the per-repetition differences to `off`.
#include <fmt/format.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kstacklab/common/raw_syscall.h"
#include "kstacklab/histogram/histogram.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"
#include "kstacklab/sampler/sampler.h"
#include "kstacklab/timing/timing.h"

namespace {

using kstacklab::Expected;

inline void CallGetpid(void* /*state*/) { kstacklab::RawSyscall0(SYS_getpid); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 15;
  const uint64_t calls = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100000;
  if (repetitions < 1 || calls < 1000 || calls > 250000) {
    std::fputs("usage: live_cost [REPETITIONS>=1] [CALLS 1000..250000]\n", stderr);
    return 2;
  }
  auto cal = kstacklab::timing::Calibrate();
  if (!cal.ok()) {
    std::fprintf(stderr, "calibration failed: %s\n", cal.error().message.c_str());
    return 1;
  }
  kstacklab::sampler::ClockParams clock{cal->freq_hz, cal->overhead_ticks};
  kstacklab::sampler::SamplerConfig config;
  config.iterations = calls;
  config.chunk = calls;
  kstacklab::sampler::SamplerScratch scratch(config.chunk);
  kstacklab::sampler::TimedBody body{
      kstacklab::sampler::TimePerCall<kstacklab::timing::CycleClock, CallGetpid>, nullptr, nullptr};
  const std::array<const char*, 3> names = {"off", "filtered", "recording"};
  std::array<std::vector<double>, 3> p50;
  std::array<std::vector<double>, 3> mean;
  std::array<std::vector<double>, 3> dp50;  // arm - off, per repetition
  std::vector<kstacklab::live::LiveRecord> sink;
  for (int r = 0; r < repetitions; ++r) {
    std::array<double, 3> rep_p50{};
    for (int k = 0; k < 3; ++k) {
      const int arm = (k + r) % 3;  // rotate the order
      std::unique_ptr<kstacklab::live::Probe> probe;
      if (arm > 0) {
        auto s = kstacklab::live::Probe::Attach(
            kstacklab::live::ProbeOptions{arm == 1 ? SYS_getppid : SYS_getpid});
        if (!s.ok()) {
          std::fprintf(stderr, "live_cost: %s\n", s.error().message.c_str());
          return 1;
        }
        probe = std::move(*s);
      }
      kstacklab::histogram::Histogram merged;
      auto rep = kstacklab::sampler::RunRepetition(body, config, clock, scratch, merged, nullptr);
      if (!rep.ok()) {
        std::fprintf(stderr, "live_cost: %s\n", rep.error().message.c_str());
        return 1;
      }
      if (probe) {
        if (probe->Dropped() != 0) {
          std::fprintf(stderr, "live_cost: records dropped; use fewer calls per repetition\n");
          return 1;
        }
        sink.clear();
        (void)probe->Drain(&sink);
      }
      rep_p50[arm] = rep->metrics.at("p50");
      p50[arm].push_back(rep->metrics.at("p50"));
      mean[arm].push_back(rep->metrics.at("mean"));
    }
    for (int arm = 0; arm < 3; ++arm) dp50[arm].push_back(rep_p50[arm] - rep_p50[0]);
  }
  std::printf("getpid, %d repetitions x %llu calls, per-call timing (%s), overhead-corrected ns\n",
              repetitions, static_cast<unsigned long long>(calls), cal->source.c_str());
  std::printf("%-10s %10s %10s %14s\n", "arm", "p50", "mean", "p50 - off");
  for (int arm = 0; arm < 3; ++arm) {
    std::printf("%-10s %10.1f %10.1f %14.1f\n", names[arm], Median(p50[arm]), Median(mean[arm]),
                Median(dp50[arm]));
  }
  return 0;
}
