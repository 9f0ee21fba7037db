// The macro suite (opt-in: `--suite macro`, never in the default run): macro/kernbench, a
// reproducible compile load timed as a whole, as mmtests' kernbench times `make -jN vmlinux`
// (mmtests shellpack_src/src/kernbench/kernbench-bench). Every machine that built kstacklab has its
// sources and its compiler, so the load is: compile the .cc files of a fixed set of kstacklab's own
// modules with the C++ compiler kstacklab was built with (never through ccache), -O2, -j = online
// CPUs, objects into a private temporary directory. One timed call = one whole build; per build the
// row stores elapsed seconds (the sampler's mean...max) and the children's user and system seconds
// (getrusage RUSAGE_CHILDREN around the build, outside the timed region) as the metrics "user" and
// "sys". System time is where per-syscall hardening shows.
//
// A build takes tens of seconds, so the row makes 1 timed build per repetition, at most 3
// repetitions and no warm-up calls; its setup runs one untimed build first, which checks that the
// compile works and warms the page cache (kernbench's warm-up build).
#include "macro.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "kstacklab/common/subprocess.h"
#include "kstacklab/timing/timing.h"
#include "suites.h"

namespace kstacklab::workloads {

std::string KernbenchSourceDir() { return KSTACKLAB_SOURCE_DIR; }
std::string KernbenchCompiler() { return KSTACKLAB_CXX_COMPILER; }

namespace {

using Clock = timing::CycleClock;
namespace fs = std::filesystem;

// Modules compiled by one build: leaf modules with few heavy headers, so one build stays near a
// minute of CPU time on the project's 2-vCPU machines.
constexpr const char* kDefaultKernbenchDirs[] = {"src/histogram", "src/rng", "src/kstack",
                                                 "src/timing"};

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

struct BuildState {
  std::string compiler;
  std::string source_dir;
  std::vector<std::string> sources;
  std::string out_dir;
  int jobs = 1;
  // Over the builds since the last extra_metrics call.
  uint64_t builds = 0, failures = 0;
  double user_s = 0, sys_s = 0;
  ~BuildState() {
    std::error_code ec;
    if (!out_dir.empty()) fs::remove_all(out_dir, ec);
  }
};

// Runs the build: at most `jobs` compiler processes at a time. Returns the number that failed.
uint64_t Build(const BuildState& s) {
  const std::string inc = "-I" + s.source_dir + "/include";
  const std::string src = "-I" + s.source_dir + "/src";
  std::vector<pid_t> running;
  uint64_t failed = 0;
  auto reap_one = [&] {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno != EINTR) running.clear();
      return;
    }
    auto it = std::find(running.begin(), running.end(), pid);
    if (it == running.end()) return;
    running.erase(it);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  };
  for (size_t i = 0; i < s.sources.size(); ++i) {
    while (static_cast<int>(running.size()) >= s.jobs) reap_one();
    const std::string out = fmt::format("{}/{}.o", s.out_dir, i);
    std::vector<std::string> args = {s.compiler,
                                     "-std=c++20",
                                     "-O2",
                                     "-g0",
                                     "-w",
                                     inc,
                                     src,
                                     "-DKSTACKLAB_VERSION=\"kernbench\"",
                                     "-DKSTACKLAB_BUILD_TYPE=\"kernbench\"",
                                     "-c",
                                     s.sources[i],
                                     "-o",
                                     out};
    // The compiler inherits this process's streams and signals; reaped by reap_one.
    ChildSpec spec;
    spec.argv = std::move(args);
    spec.in = ChildStream::Inherit();
    spec.own_group = false;
    spec.default_signals = false;
    ChildProcess child;
    if (!child.Start(spec).ok()) {
      ++failed;
      continue;
    }
    running.push_back(child.Release());
  }
  while (!running.empty()) reap_one();
  return failed;
}

// Widens the CPU affinity to every online CPU for its lifetime (`run` pins itself to one CPU;
// the compilers inherit the mask) and restores it.
class ScopedAllCpus {
 public:
  explicit ScopedAllCpus(int cpus) {
    ok_ = ::sched_getaffinity(0, sizeof saved_, &saved_) == 0;
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int c = 0; c < cpus && c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
    if (ok_) ::sched_setaffinity(0, sizeof all, &all);
  }
  ~ScopedAllCpus() {
    if (ok_) ::sched_setaffinity(0, sizeof saved_, &saved_);
  }
  ScopedAllCpus(const ScopedAllCpus&) = delete;
  ScopedAllCpus& operator=(const ScopedAllCpus&) = delete;

 private:
  bool ok_ = false;
  cpu_set_t saved_{};
};

void TimeBuild(void* state, uint64_t n, uint64_t* out_ticks) {
  auto* s = static_cast<BuildState*>(state);
  ScopedAllCpus all(s->jobs);
  for (uint64_t i = 0; i < n; ++i) {
    rusage before{}, after{};
    ::getrusage(RUSAGE_CHILDREN, &before);
    const uint64_t t0 = Clock::Now();
    const uint64_t failed = Build(*s);
    const uint64_t t1 = Clock::Now();
    out_ticks[i] = t1 - t0;
    ::getrusage(RUSAGE_CHILDREN, &after);
    ++s->builds;
    s->failures += failed;
    s->user_s += Seconds(after.ru_utime) - Seconds(before.ru_utime);
    s->sys_s += Seconds(after.ru_stime) - Seconds(before.ru_stime);
  }
}

std::map<std::string, double> BuildMetrics(void* state) {
  auto* s = static_cast<BuildState*>(state);
  std::map<std::string, double> m;
  if (s->builds) {
    m["user"] = s->user_s / static_cast<double>(s->builds);
    m["sys"] = s->sys_s / static_cast<double>(s->builds);
  }
  if (s->failures) m["failures"] = static_cast<double>(s->failures);
  s->builds = s->failures = 0;
  s->user_s = s->sys_s = 0;
  return m;
}

std::string Unavailable() {
  std::error_code ec;
  if (!fs::is_directory(KernbenchSourceDir() + "/src", ec)) {
    return fmt::format("the kstacklab source tree it was built from ({}) is gone",
                       KernbenchSourceDir());
  }
  if (::access(KernbenchCompiler().c_str(), X_OK) != 0) {
    return fmt::format("the compiler kstacklab was built with ({}) is gone", KernbenchCompiler());
  }
  return {};
}

int OnlineCpus() { return static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))); }

}  // namespace

std::vector<std::string> KernbenchSources(size_t max_files) {
  std::vector<std::string> out;
  for (const char* dir : kDefaultKernbenchDirs) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(KernbenchSourceDir() + "/" + dir, ec)) {
      if (e.path().extension() == ".cc") out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  if (max_files > 0 && out.size() > max_files) out.resize(max_files);
  return out;
}

WorkloadDef KernbenchRow(size_t max_files) {
  const int jobs = OnlineCpus();
  const std::vector<std::string> sources = KernbenchSources(max_files);
  WorkloadDef w;
  w.name = "macro/kernbench";
  w.params = Json{{"files", sources.size()}, {"j", jobs}};
  w.summary = "a parallel -O2 build of kstacklab modules (elapsed; user and sys as metrics)";
  w.unit = std::string("s");  // not the literal: GCC 12 warns a false -Wrestrict on it here
  w.unavailable = Unavailable;
  w.max_iterations = 1;
  w.max_repetitions = 3;
  w.max_warmup = 0;
  w.setup = [sources, jobs]() -> Expected<std::shared_ptr<void>> {
    if (sources.empty()) {
      return RuntimeError(fmt::format("no sources under {}", KernbenchSourceDir()));
    }
    auto s = std::make_shared<BuildState>();
    s->compiler = KernbenchCompiler();
    s->source_dir = KernbenchSourceDir();
    s->sources = sources;
    s->jobs = jobs;
    std::string tmpl = (fs::temp_directory_path() / "kstacklab-kernbench-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      return RuntimeError(fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
    }
    s->out_dir = tmpl;
    uint64_t ticks = 0;
    TimeBuild(s.get(), 1, &ticks);  // the untimed warm-up build, checked
    if (s->failures) {
      return RuntimeError(fmt::format("{} of {} compiles failed ({} with kstacklab's sources)",
                                      s->failures, sources.size(), s->compiler));
    }
    for (size_t i = 0; i < sources.size(); ++i) {
      std::error_code ec;
      if (!fs::exists(fmt::format("{}/{}.o", s->out_dir, i), ec))
        return RuntimeError(fmt::format("the compile of {} left no object", sources[i]));
    }
    BuildMetrics(s.get());  // forget the warm-up
    return std::shared_ptr<void>(s);
  };
  w.percall = &TimeBuild;
  w.loop = &sampler::SumOfPerCallTicks<&TimeBuild>;
  w.extra_metrics = &BuildMetrics;
  return w;
}

std::vector<WorkloadDef> MacroRows() { return {KernbenchRow(0)}; }

}  // namespace kstacklab::workloads
