// The micromm, pkeys and macro suites: the mappings are what the rows claim, a pkey write window
// really guards its page, a small kernbench build runs, and the runner honours a row's caps,
// unit and extra metrics (fake durations, no timing thresholds).
#include "micromm.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <string>
#include <utility>
#include <vector>

#include "interleave.h"
#include "kstacklab/common/text.h"
#include "kstacklab/timing/timing.h"
#include "kstacklab/workloads/workload.h"
#include "macro.h"
#include "pkeys.h"
#include "test_support.h"

namespace kstacklab {
namespace {

using run::RunOptions;
using run::RunWorkloads;

using workloads::AnonHugeBytes;
using workloads::BuildMapping;
using workloads::kPmdBytes;

// The cycle counter's rate, for real rows run through the runner.
double TestFreq() {
  static const double freq = [] {
    auto c = timing::Calibrate(20, 1000);
    return c.ok() ? c->freq_hz : 1e9;
  }();
  return freq;
}

// 64 MiB keeps the tests quick; the rows use 1 GiB the same way.
constexpr size_t kTestBytes = 32 * kPmdBytes;

TEST(Micromm, SuiteRowsAreForkAndMunmapAtH0AndH1InMicroseconds) {
  auto rows = workloads::SelectWorkloads({"micromm"}, {});
  ASSERT_TRUE(rows.ok());
  std::vector<std::string> ids;
  for (const workloads::WorkloadDef& w : *rows) {
    ids.push_back(w.name + " h:" + w.params["h"].dump());
    EXPECT_EQ(w.unit, "us");
    EXPECT_GT(w.max_iterations, 0u) << "a 1 GiB fork must not run the run's 200000 iterations";
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"micromm/fork h:0", "micromm/fork h:1",
                                           "micromm/munmap h:0", "micromm/munmap h:1"}));
}

TEST(Micromm, H0MappingHasNoHugePages) {
  auto m = BuildMapping(kTestBytes, /*huge=*/false);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto thp = AnonHugeBytes(m->base());
  ASSERT_TRUE(thp.ok()) << thp.error().message;
  EXPECT_EQ(*thp, 0u);
  auto sample = workloads::SampleThpPages(*m, 64);
  if (!sample.ok()) GTEST_SKIP() << "kpageflags check not possible: " << sample.error().message;
  EXPECT_EQ(sample->pages, 64u);
  EXPECT_EQ(sample->thp, 0u) << "page-sized folios expected";
}

TEST(Micromm, H1IsPmdMappedThpThenPteMappedLargeFolios) {
  KSTACKLAB_SKIP_IF_EMULATED(
      "qemu-user does not pass madvise(MADV_HUGEPAGE) to the kernel: no huge pages");
  if (std::string why = workloads::ThpUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  auto m = BuildMapping(kTestBytes, /*huge=*/true, /*split=*/false);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto before = AnonHugeBytes(m->base());
  ASSERT_TRUE(before.ok()) << before.error().message;
  EXPECT_GT(*before, 0u) << "populating with MADV_HUGEPAGE gave no THP";
  ASSERT_TRUE(workloads::PteMap(*m).ok());
  auto after = AnonHugeBytes(m->base());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, 0u) << "AnonHugePages counts PMD mappings: the split must remove them all";
  // khugepaged must not collapse them back while a row runs: the VMA is VM_NOHUGEPAGE ("nh"),
  // no longer VM_HUGEPAGE ("hg").
  auto flags = workloads::VmaFlags(m->base());
  ASSERT_TRUE(flags.ok()) << flags.error().message;
  const std::vector<std::string> words = Split(*flags, ' ');
  EXPECT_NE(std::find(words.begin(), words.end(), "nh"), words.end()) << *flags;
  EXPECT_EQ(std::find(words.begin(), words.end(), "hg"), words.end()) << *flags;
  // The folios must stay large: KPF_THP on the pages (root only).
  auto sample = workloads::SampleThpPages(*m, 128);
  if (!sample.ok())
    GTEST_SKIP() << "smaps checked; kpageflags not possible: " << sample.error().message;
  EXPECT_EQ(sample->pages, 128u);
  EXPECT_GE(sample->thp * 10, sample->pages * 9) << sample->thp << " of " << sample->pages;
}

TEST(Micromm, ForkAndMunmapRowsRunAtASmallSize) {
  KSTACKLAB_SKIP_IF_EMULATED(
      "qemu-user does not pass madvise(MADV_HUGEPAGE) to the kernel: no huge pages");
  // The rows' own loops on the real kernel, through the runner, at the caps (64 MiB).
  std::vector<workloads::WorkloadDef> rows = workloads::MicrommRowsOfSize(kTestBytes, "");
  std::vector<std::string> notes = workloads::DropUnavailable(&rows);
  ASSERT_FALSE(rows.empty());
  RunOptions opt;
  opt.repetitions = 2;
  opt.sampler.iterations = 1000;  // capped by the rows
  opt.sampler.warmup = 1000;
  opt.sampler.chunk = 1000;
  auto r = RunWorkloads(rows, opt, sampler::ClockParams{TestFreq(), 0}, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const BenchmarkResult& b : r->benchmarks) {
    EXPECT_EQ(b.params["size_mib"], 64) << b.name;
    ASSERT_EQ(b.repetitions.size(), 2u) << b.name;
    for (const Repetition& rep : b.repetitions) {
      EXPECT_LE(rep.iterations, 3u) << b.name;
      EXPECT_GT(rep.metrics.at("mean"), 0) << b.name;
      EXPECT_EQ(rep.metrics.count("failures"), 0u) << b.name;
    }
  }
}

// --- run --param size=… ------------------------------------------------------------------------

TEST(MicrommSize, ParsesBinaryUnitsAndPlainBytes) {
  const std::vector<std::pair<std::string, size_t>> good = {
      {"256M", size_t{256} << 20}, {"1G", size_t{1} << 30},     {"268435456", size_t{256} << 20},
      {"2m", size_t{2} << 20},     {"64MiB", size_t{64} << 20}, {"2048K", size_t{2} << 20},
      {"4GiB", size_t{4} << 30}};
  for (const auto& [text, bytes] : good) {
    auto b = workloads::ParseMappingSize(text);
    ASSERT_TRUE(b.ok()) << text << ": " << b.error().message;
    EXPECT_EQ(*b, bytes) << text;
  }
}

TEST(MicrommSize, RefusesHostileSizesWithTheAcceptedForm) {
  for (const char* bad : {"",
                          "-256M",
                          "+256M",
                          "0",
                          "0G",
                          "1.5G",
                          "1M",
                          "3M",
                          "1000000",
                          " 256M",
                          "256M ",
                          "256MB",
                          "256mib",
                          "M",
                          "0x10000000",
                          "256T",
                          "18446744073709551616",
                          "99999999999999999999999G",
                          "17179869184G",
                          "1e9"}) {
    auto b = workloads::ParseMappingSize(bad);
    EXPECT_FALSE(b.ok()) << "'" << bad << "' -> " << (b.ok() ? *b : 0);
    if (!b.ok()) {
      EXPECT_EQ(b.error().exit_code, kExitUsage) << bad;
      EXPECT_NE(b.error().message.find("multiple of 2 MiB"), std::string::npos) << bad;
      EXPECT_NE(b.error().message.find("256M"), std::string::npos) << bad;
    }
  }
}

TEST(MicrommSize, MustFitInHalfOfMemAvailable) {
  // 4 mappings at once within half of MemAvailable: 1 GiB needs 8 GiB available.
  const uint64_t eight_gib_kb = uint64_t{8} << 20;
  EXPECT_TRUE(workloads::CheckMappingFits(size_t{1} << 30, eight_gib_kb).ok());
  EXPECT_TRUE(workloads::CheckMappingFits(size_t{1} << 40, 0).ok());  // unknown: fits
  auto big = workloads::CheckMappingFits((size_t{1} << 30) + (size_t{2} << 20), eight_gib_kb);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().exit_code, kExitUsage);
  EXPECT_NE(big.error().message.find("at most 1024 MiB"), std::string::npos) << big.error().message;
  // The largest size offered is a multiple of 2 MiB: 8 GiB + 5 MiB available -> 1 GiB still.
  auto odd = workloads::CheckMappingFits(size_t{2} << 30, eight_gib_kb + uint64_t{5} * 1024);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("at most 1024 MiB"), std::string::npos) << odd.error().message;
}

TEST(RunParams, SizeRebuildsTheMicrommRowsAndIsRecordedInParams) {
  auto rows = workloads::SelectWorkloads({"micromm"}, {});
  ASSERT_TRUE(rows.ok());
  auto sized = workloads::ApplyRunParams(*rows, {"size=64M"});
  ASSERT_TRUE(sized.ok()) << sized.error().message;
  ASSERT_EQ(sized->size(), rows->size());
  for (size_t i = 0; i < sized->size(); ++i) {
    const workloads::WorkloadDef& w = (*sized)[i];
    EXPECT_EQ(w.name, (*rows)[i].name);
    EXPECT_EQ(w.params["h"], (*rows)[i].params["h"]);
    EXPECT_EQ(w.params["size_mib"], 64) << workloads::WorkloadId(w);
    EXPECT_NE(w.summary.find("64 MiB"), std::string::npos) << w.summary;
    EXPECT_TRUE(w.note.empty()) << w.note;  // a size given is not scaled
  }
  auto gib = workloads::ApplyRunParams(*rows, {"size=1G"});
  ASSERT_TRUE(gib.ok()) << gib.error().message;
  EXPECT_FALSE((*gib)[0].params.contains("size_mib"));  // the default size is not recorded
  // Rows that do not take the key are kept as they are.
  auto mixed = workloads::SelectWorkloads({"micromm"}, {"syscall/getpid"});
  ASSERT_TRUE(mixed.ok());
  auto kept = workloads::ApplyRunParams(*mixed, {"size=64M"});
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  EXPECT_EQ(kept->size(), mixed->size());
  EXPECT_FALSE(kept->back().params.contains("size_mib"));
}

TEST(RunParams, RefusesWhatNoRowTakes) {
  auto micromm = workloads::SelectWorkloads({"micromm"}, {});
  auto syscall = workloads::SelectWorkloads({"syscall"}, {});
  ASSERT_TRUE(micromm.ok() && syscall.ok());
  struct Case {
    const std::vector<workloads::WorkloadDef>* rows;
    std::vector<std::string> params;
    const char* says;
  };
  const std::vector<Case> cases = {
      {&*micromm, {"colour=blue"}, "unknown key 'colour' (keys: size)"},
      {&*micromm, {"size"}, "expected KEY=VALUE"},
      {&*micromm, {"=64M"}, "expected KEY=VALUE"},
      {&*micromm, {"size="}, "expected KEY=VALUE"},
      {&*micromm, {"size=64M", "size=128M"}, "given twice"},
      {&*micromm, {"size=1.5G"}, "size takes a positive multiple of 2 MiB"},
      {&*micromm, {"size=-2M"}, "multiple of 2 MiB"},
      {&*micromm, {"size=16777216G"}, "give at most"},
      {&*syscall,
       {"size=64M"},
       "no selected benchmark takes 'size'; select the suite that does: micromm"},
  };
  for (const Case& c : cases) {
    auto r = workloads::ApplyRunParams(*c.rows, c.params);
    ASSERT_FALSE(r.ok()) << c.params[0];
    EXPECT_EQ(r.error().exit_code, kExitUsage) << c.params[0];
    EXPECT_NE(r.error().message.find(c.says), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find("--"), std::string::npos)
        << "names a flag: " << r.error().message;
  }
  EXPECT_TRUE(workloads::ApplyRunParams(*syscall, {}).ok());
}

// --- runner: caps, unit and extra metrics with a fake call of exactly 2500 ticks at 1 GHz ----

int g_calls = 0;
void FakeCall(void*, uint64_t n, uint64_t* out) {
  for (uint64_t i = 0; i < n; ++i) out[i] = 2500;
  g_calls += static_cast<int>(n);
}

TEST(Runner, RowCapsUnitAndExtraMetrics) {
  workloads::WorkloadDef w;
  w.name = "test/slow";
  w.unit = "us";
  w.setup = [] { return Expected<std::shared_ptr<void>>(std::shared_ptr<void>()); };
  w.percall = &FakeCall;
  w.max_iterations = 4;
  w.max_repetitions = 2;
  w.max_warmup = 1;
  w.extra_metrics = [](void*) { return std::map<std::string, double>{{"sys", 0.5}}; };
  RunOptions opt;
  opt.repetitions = 5;
  opt.sampler.iterations = 100;
  opt.sampler.warmup = 10;
  opt.sampler.chunk = 100;
  g_calls = 0;
  auto r = RunWorkloads({w}, opt, sampler::ClockParams{1e9, 0}, nullptr, nullptr);
  ASSERT_TRUE(r.ok());
  const BenchmarkResult& b = r->benchmarks.at(0);
  ASSERT_EQ(b.repetitions.size(), 2u);
  EXPECT_EQ(g_calls, 2 * (4 + 1));
  for (const Repetition& rep : b.repetitions) {
    EXPECT_EQ(rep.iterations, 4u);
    EXPECT_NEAR(rep.metrics.at("mean"), 2.5, 2.5e-3);  // 2500 ns = 2.5 us (histogram: exact mean)
    EXPECT_NEAR(rep.metrics.at("p50"), 2.5, 2.5e-3);
    EXPECT_DOUBLE_EQ(rep.metrics.at("sys"), 0.5);
  }
  EXPECT_EQ(b.unit, "us");
}

TEST(Registry, DropUnavailableSkipsWithTheReasonAndKeepsNotes) {
  std::vector<workloads::WorkloadDef> rows(3);
  rows[0].name = "a/x";
  rows[1].name = "a/y";
  rows[1].params = Json{{"h", 1}};
  rows[1].unavailable = [] { return std::string("no THP here"); };
  rows[2].name = "a/z";
  rows[2].unavailable = [] { return std::string(); };
  rows[2].note = "scaled down";
  auto notes = workloads::DropUnavailable(&rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "a/x");
  EXPECT_EQ(rows[1].name, "a/z");
  EXPECT_EQ(notes,
            (std::vector<std::string>{"a/y(h:1): skipped: no THP here", "a/z: scaled down"}));
}

// --- pkeys --------------------------------------------------------------------------------

// Runs `fn` in a child; returns its wait status.
template <class Fn>
int InChild(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) {
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(Pkeys, SuiteIsSkippedWithAReasonWithoutPku) {
  auto rows = workloads::SelectWorkloads({"pkeys"}, {});
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 7u);  // wrpkru + update x {1,16,256} x {unbatched, batched}
  const std::string why = workloads::PkeysUnavailableReason();
  auto notes = workloads::DropUnavailable(&*rows);
  if (why.empty()) {
    EXPECT_EQ(rows->size(), 7u);
  } else {
    EXPECT_TRUE(rows->empty());
    ASSERT_EQ(notes.size(), 7u);
    EXPECT_NE(notes[0].find(why), std::string::npos) << notes[0];
  }
}

TEST(Pkeys, WriteOutsideTheWindowFaultsInsideSucceeds) {
  if (std::string why = workloads::PkeysUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  auto region = workloads::PkeyRegion::Create();
  ASSERT_TRUE(region.ok()) << region.error().message;
  const workloads::PkeyRegion& r = **region;
  EXPECT_EQ(r.ReadPkru(), r.closed_pkru());
  int inside = InChild([&] {
    r.OpenWindow();
    r.slots()[3] = 42;
    r.CloseWindow();
  });
  EXPECT_TRUE(WIFEXITED(inside) && WEXITSTATUS(inside) == 0) << "a write inside the window";
  int outside = InChild([&] {
    // The kernel's action, not a sanitizer's handler (ASan's exits 1).
    std::signal(SIGSEGV, SIG_DFL);
    r.slots()[3] = 42;
  });
  EXPECT_TRUE(WIFSIGNALED(outside) && WTERMSIG(outside) == SIGSEGV) << "a write outside it";
  EXPECT_EQ(r.slots()[3], 0u) << "the parent's page is untouched";
}

// What the child's SIGSEGV handler compares the fault with (set before the fork).
volatile int g_fault_key = -1;
volatile void* g_fault_addr = nullptr;

// Exits 3 for a protection-key fault on our key at our address, 4 for any other SIGSEGV.
void ExitWithFaultKind(int /*sig*/, siginfo_t* info, void* /*ctx*/) {
  const bool pku = info->si_code == SEGV_PKUERR && static_cast<int>(info->si_pkey) == g_fault_key &&
                   info->si_addr == g_fault_addr;
  _exit(pku ? 3 : 4);
}

TEST(Pkeys, TheFaultOutsideTheWindowIsAProtectionKeyFaultOnOurKey) {
  // A plain SIGSEGV would also come from a bad pointer or a read-only page: the kernel's
  // si_code SEGV_PKUERR and si_pkey say the protection key refused the store.
  if (std::string why = workloads::PkeysUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  auto region = workloads::PkeyRegion::Create();
  ASSERT_TRUE(region.ok()) << region.error().message;
  const workloads::PkeyRegion& r = **region;
  g_fault_key = r.key();
  g_fault_addr = const_cast<uint64_t*>(&r.slots()[5]);
  int status = InChild([&] {
    struct sigaction sa = {};
    sa.sa_sigaction = &ExitWithFaultKind;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
    r.slots()[5] = 7;  // window closed: must fault
    _exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 3) << "0: the store went through; 4: a SIGSEGV that is not "
                                       "SEGV_PKUERR on key "
                                    << r.key() << " at the slot";
}

TEST(Pkeys, NeitherTheProbeNorARegionLeavesPkruChanged) {
  if (std::string why = workloads::PkeysUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  auto outer = workloads::PkeyRegion::Create();
  ASSERT_TRUE(outer.ok()) << outer.error().message;
  const uint32_t before = (*outer)->ReadPkru();
  EXPECT_EQ(before, (*outer)->closed_pkru());
  {
    auto inner = workloads::PkeyRegion::Create();
    ASSERT_TRUE(inner.ok()) << inner.error().message;
    EXPECT_NE((*inner)->key(), (*outer)->key());
    EXPECT_NE((*inner)->ReadPkru(), before) << "the inner key's write-disable bit is set";
    (*inner)->OpenWindow();  // destroyed with its window open: the destructor still restores
  }
  EXPECT_EQ((*outer)->ReadPkru(), before);
  EXPECT_TRUE(workloads::PkeysUnavailableReason().empty());
  EXPECT_EQ((*outer)->ReadPkru(), before) << "the availability probe (pkey_alloc + pkey_free)";
}

TEST(Pkeys, RowsRunThroughTheRunner) {
  if (std::string why = workloads::PkeysUnavailableReason(); !why.empty()) GTEST_SKIP() << why;
  auto rows = workloads::SelectWorkloads({"pkeys"}, {});
  ASSERT_TRUE(rows.ok());
  RunOptions opt;
  opt.repetitions = 2;
  opt.sampler.iterations = 100;
  opt.sampler.warmup = 10;
  opt.sampler.chunk = 100;
  auto r = RunWorkloads(*rows, opt, sampler::ClockParams{TestFreq(), 0}, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->benchmarks.size(), 7u);
  std::vector<std::string> ids;
  for (const BenchmarkResult& b : r->benchmarks) {
    ids.push_back(b.name + " " + b.params.dump() + " " + b.variant);
    EXPECT_EQ(b.baseline, b.variant == "unbatched") << ids.back();
    ASSERT_EQ(b.repetitions.size(), 2u) << ids.back();
    for (const Repetition& rep : b.repetitions) {
      EXPECT_EQ(rep.iterations, 100u) << ids.back();
      EXPECT_GT(rep.metrics.at("max"), 0.0) << ids.back() << ": a WRPKRU takes time";
    }
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "pkeys/update {\"n\":16} batched", "pkeys/update {\"n\":16} unbatched",
                     "pkeys/update {\"n\":1} batched", "pkeys/update {\"n\":1} unbatched",
                     "pkeys/update {\"n\":256} batched", "pkeys/update {\"n\":256} unbatched",
                     "pkeys/wrpkru {} "}));
}

// --- macro --------------------------------------------------------------------------------

TEST(Macro, NotInTheDefaultRun) {
  auto rows = workloads::SelectWorkloads({}, {});
  ASSERT_TRUE(rows.ok());
  for (const workloads::WorkloadDef& w : *rows) EXPECT_NE(w.name.rfind("macro/", 0), 0u) << w.name;
}

TEST(Macro, OneFileKernbenchBuildReportsElapsedUserSys) {
  workloads::WorkloadDef w = workloads::KernbenchRow(1);
  if (std::string why = w.unavailable(); !why.empty()) GTEST_SKIP() << why;
  EXPECT_EQ(w.params["files"], 1);
  EXPECT_EQ(w.unit, "s");
  RunOptions opt;
  opt.repetitions = 1;
  opt.sampler.iterations = 100;  // capped to 1 build by the row
  opt.sampler.chunk = 100;
  auto r = RunWorkloads({w}, opt, sampler::ClockParams{TestFreq(), 0}, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Repetition& rep = r->benchmarks.at(0).repetitions.at(0);
  EXPECT_EQ(rep.iterations, 1u);
  EXPECT_GT(rep.metrics.at("mean"), 0);
  EXPECT_GT(rep.metrics.at("user") + rep.metrics.at("sys"), 0) << "the compiler used CPU time";
  EXPECT_EQ(rep.metrics.count("failures"), 0u);
}

}  // namespace
}  // namespace kstacklab
