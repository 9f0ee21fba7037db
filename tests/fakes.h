// Fakes shared by the sampler, run and knob tests: a clock that only fake calls advance, a script
// of call costs, rows of the workload table built on them (nothing real is timed), and a fake
// /proc/sys.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/knobs/knobs.h"
#include "kstacklab/results/json.h"
#include "kstacklab/sampler/sampler.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab::fakes {

// A clock that only advances when the fake call says so: a call "costs" the next value from a
// script, and every clock read costs kReadTicks (the timer overhead).
struct FakeClock {
  static inline uint64_t now = 0;
  static constexpr uint64_t kReadTicks = 3;
  static uint64_t Now() {
    uint64_t t = now;
    now += kReadTicks;
    return t;
  }
};

struct Script {
  std::vector<uint64_t> costs;
  size_t next = 0;
  uint64_t calls = 0;
};

inline void FakeCall(void* s) {
  auto* script = static_cast<Script*>(s);
  FakeClock::now += script->costs[script->next++ % script->costs.size()];
  ++script->calls;
}

inline void Noop(void*) {}

inline sampler::TimedBody Body(Script* s) {
  return sampler::TimedBody{&sampler::TimePerCall<FakeClock, FakeCall>,
                            &sampler::TimeLoop<FakeClock, FakeCall>, s};
}

// Row "fake/call" (with `variant`) whose calls cost what `s` scripts.
inline workloads::WorkloadDef FakeRow(const std::string& variant, Script* s) {
  workloads::WorkloadDef w;
  w.name = "fake/call";
  w.variant = variant;
  w.setup = [s]() -> Expected<std::shared_ptr<void>> {
    return std::shared_ptr<void>(s, [](void*) {});
  };
  w.percall = &sampler::TimePerCall<FakeClock, FakeCall>;
  w.loop = &sampler::TimeLoop<FakeClock, FakeCall>;
  return w;
}

// A row as the model and erase suites have them (`off` and `generic` flagged as the baseline),
// doing nothing; its setup logs its variant to `seen` (when given): the order the rows are set
// up in, as a knob's A/B sees it.
inline workloads::WorkloadDef ModelRow(const std::string& name, const std::string& variant,
                                       const Json& params, std::vector<std::string>* seen) {
  workloads::WorkloadDef w;
  w.name = name;
  w.variant = variant;
  w.params = params;
  w.baseline = variant == "off" || variant == "generic";
  w.setup = [seen, variant]() -> Expected<std::shared_ptr<void>> {
    if (seen != nullptr) seen->push_back(variant);
    return std::shared_ptr<void>();
  };
  w.percall = &sampler::TimePerCall<FakeClock, Noop>;
  w.loop = &sampler::TimeLoop<FakeClock, Noop>;
  return w;
}

inline std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fake /proc/sys with kernel/stack_erasing = 1 and a private recovery file, in a directory of
// the test's own, for the length of each test.
class FakeSysctl : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kstacklab-knobs-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "sys/kernel");
    std::ofstream(dir_ / "sys/kernel/stack_erasing") << "1\n";
    ::setenv(knobs::kSysctlRootEnvVar, (dir_ / "sys").c_str(), 1);
    ::setenv(knobs::kRecoveryFileEnvVar, (dir_ / "state/recovery").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv(knobs::kSysctlRootEnvVar);
    ::unsetenv(knobs::kRecoveryFileEnvVar);
    std::filesystem::remove_all(dir_);
  }
  std::string Value() const { return ReadText(dir_ / "sys/kernel/stack_erasing"); }
  std::filesystem::path Recovery() const { return dir_ / "state/recovery"; }
  std::filesystem::path dir_;
};

}  // namespace kstacklab::fakes
