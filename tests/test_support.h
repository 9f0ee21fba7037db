// Helpers the unit tests share: a scratch directory, and a small result with variants, params and
// histograms (what the store tests store).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <utility>

#include "kstacklab/results/results.h"

namespace kstacklab::testing_support {

// A fresh directory under /tmp, removed with everything in it when the object goes.
class TempDir {
 public:
  explicit TempDir(const std::string& stem = "kstacklab-test") {
    std::string tmpl = "/tmp/" + stem + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // "" when mkdtemp failed.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The user-mode emulator the tests run under, from KSTACKLAB_EMULATED (the aarch64 test preset
// sets "qemu-user"); empty on a real machine. A test whose subject is the host kernel or the CPU
// itself (BPF, perf events, real-kernel facts, cycle counts) skips under emulation only:
// KSTACKLAB_SKIP_IF_EMULATED("BPF programs run in the host kernel"). Never skips on a real arm64.
inline std::string Emulator() {
  const char* e = ::getenv("KSTACKLAB_EMULATED");
  return e == nullptr ? std::string() : std::string(e);
}
#define KSTACKLAB_SKIP_IF_EMULATED(reason)                                                        \
  do {                                                                                            \
    if (const std::string emulator = ::kstacklab::testing_support::Emulator(); !emulator.empty()) \
      GTEST_SKIP() << "under " << emulator << ": " << (reason);                                   \
  } while (0)

// A result labelled `label`: model/kstack with variants off and percpu-prng (2 repetitions and a
// histogram each) and syscall/getpid with params {"h":1}; kernel 6.18.0-test on host testbox.
inline RunResult SampleResult(const std::string& label) {
  RunResult r;
  r.tool_version = "0.1.0";
  r.created = "2026-11-29T12:00:00Z";
  r.label = label;
  r.environment = Json{{"kernel", {{"release", "6.18.0-test"}, {"hostname", "testbox"}}}};
  r.run.iterations = 1000;
  r.run.repetitions = 2;
  r.timer = TimerInfo{"fake", 1e9, 12.5, true, std::nullopt};
  for (const char* variant : {"off", "percpu-prng"}) {
    BenchmarkResult b;
    b.name = "model/kstack";
    b.variant = variant;
    for (int i = 0; i < 2; ++i) {
      Repetition rep;
      rep.iterations = 1000;
      rep.metrics = {{"mean", 100.25 + i}, {"p99", 150.0 + i}};
      b.repetitions.push_back(rep);
    }
    b.histogram.RecordN(100000, 1500);
    b.histogram.RecordN(250000, 500);
    r.benchmarks.push_back(std::move(b));
  }
  BenchmarkResult g;
  g.name = "syscall/getpid";
  g.params = Json{{"h", 1}};
  g.repetitions.push_back(Repetition{1000, 0, {{"mean", 210.0}}, std::nullopt, std::nullopt});
  r.benchmarks.push_back(std::move(g));
  return r;
}

}  // namespace kstacklab::testing_support
