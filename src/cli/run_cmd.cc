// `kstacklab run`: measure, print the summary, write the result file (and record it in the store).
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <memory>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/run_support.h"
#include "kstacklab/fileio.h"
#include "kstacklab/knobs.h"
#include "kstacklab/runner.h"
#include "kstacklab/summary.h"
#include "kstacklab/timing.h"

extern char** environ;

namespace kstacklab::cli {
namespace {

struct RunArgs {
  std::vector<std::string> suites;
  std::vector<std::string> benches;
  uint64_t iterations = 200000;
  int repetitions = 15;
  uint64_t warmup = 10000;
  int cpu = -1;
  std::string timing = "percall";
  std::string sched = "normal";
  int sessions = 1;
  std::string label;
  std::string output;
  std::string store;
  bool no_store = false;
  int internal_session = -1;    // >= 0: this process is session K of a parent run
  std::vector<std::string> ab;  // --ab KNOB=V1,V2 (knobs/)
};

std::atomic<bool> g_stop{false};
volatile sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  g_signal = sig;
  g_stop.store(true, std::memory_order_relaxed);
}

// Installs SIGINT/SIGTERM handlers for its lifetime and restores the previous ones.
class ScopedSignals {
 public:
  ScopedSignals() {
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~ScopedSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

std::string DefaultOutputPath(const std::string& label) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  std::string safe;
  for (char c : label)
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return fmt::format("kstacklab-{}-{}.json", safe.empty() ? "run" : safe, buf);
}

class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  ~Progress() { Done(); }
  void Update(double fraction, double elapsed, const std::string& row) {
    if (!enabled_) return;
    double eta = fraction > 0.01 ? elapsed / fraction * (1 - fraction) : NAN;
    std::string eta_text = std::isnan(eta) ? "--" : fmt::format("{:.0f}s", eta);
    std::fprintf(stderr, "\r\033[K[%3.0f%%] ETA %s  %s", fraction * 100, eta_text.c_str(),
                 row.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void Done() {
    if (shown_) std::fputs("\r\033[K", stderr);
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

// Runs one session in a fresh process (new address space and stack placement) and reads back
// its result. Forwards a stop request to the child.
Expected<RunResult> RunChildSession(const RunArgs& a, int session, const std::string& tmp_path) {
  std::vector<std::string> args = {"/proc/self/exe",
                                   "run",
                                   "--iterations",
                                   std::to_string(a.iterations),
                                   "--repetitions",
                                   std::to_string(a.repetitions),
                                   "--warmup",
                                   std::to_string(a.warmup),
                                   "--timing",
                                   a.timing,
                                   "--sched",
                                   a.sched,
                                   "--cpu",
                                   std::to_string(a.cpu),
                                   "--label",
                                   a.label,
                                   "--no-store",
                                   "--internal-session",
                                   std::to_string(session),
                                   "-o",
                                   tmp_path};
  for (const auto& s : a.suites) args.insert(args.end(), {"--suite", s});
  for (const auto& b : a.benches) args.insert(args.end(), {"--bench", b});
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ);
  if (rc != 0)
    return RuntimeError(fmt::format("cannot start session {}: {}", session, std::strerror(rc)));
  int status = 0;
  bool forwarded = false;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return RuntimeError(fmt::format("waiting for session {}: {}", session, std::strerror(errno)));
    if (g_stop.load() && !forwarded) {
      kill(pid, g_signal ? g_signal : SIGTERM);
      forwarded = true;
    }
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto result = ReadResultFile(tmp_path);
  ::unlink(tmp_path.c_str());
  if (!result.ok()) {
    return RuntimeError(
        fmt::format("session {} exited with code {} and left no result", session, code));
  }
  if (code != 0 && !result->partial) {
    return RuntimeError(fmt::format("session {} failed with exit code {}", session, code));
  }
  return result;
}

// Appends session `other` into `into` (same rows in the same order).
Status MergeSession(RunResult& into, const RunResult& other) {
  if (into.benchmarks.size() != other.benchmarks.size()) {
    return RuntimeError("sessions measured different benchmarks");
  }
  for (size_t i = 0; i < into.benchmarks.size(); ++i) {
    BenchmarkResult& b = into.benchmarks[i];
    const BenchmarkResult& o = other.benchmarks[i];
    b.repetitions.insert(b.repetitions.end(), o.repetitions.begin(), o.repetitions.end());
    KSTACKLAB_RETURN_IF_ERROR(b.histogram.Merge(o.histogram));
  }
  into.partial = into.partial || other.partial;
  return OkStatus();
}

int Execute(RunArgs a) {
  // Validate everything before measuring anything.
  if (a.iterations == 0) return Fail(UsageError("--iterations must be at least 1"));
  if (a.repetitions < 1) return Fail(UsageError("--repetitions must be at least 1"));
  if (a.sessions < 1 || a.sessions > 100)
    return Fail(UsageError("--sessions must be between 1 and 100"));
  auto rows = SelectWorkloads(a.suites, a.benches);
  if (!rows.ok()) return Fail(rows.error());
  if (a.label.empty()) a.label = DefaultLabel();
  const bool child = a.internal_session >= 0;
  if (a.output.empty()) a.output = DefaultOutputPath(a.label);
  if (Status st = CheckWritable(a.output); !st.ok()) return Fail(st.error());
  if (a.cpu < 0) a.cpu = sched_getcpu();

  ScopedSignals signals;
  ScopedCpuPin pin;
  if (Status st = pin.Pin(a.cpu); !st.ok()) return Fail(st.error());
  ScopedFifo fifo;
  std::vector<std::string> warnings;
  if (a.sched == "fifo") {
    if (Status st = fifo.Enable(); !st.ok()) {
      warnings.push_back(st.error().message +
                         "; running with the normal scheduler (run as root "
                         "or grant CAP_SYS_NICE for --sched fifo)");
    }
  }

  RunResult result;
  const bool tty = StderrIsTty();
  if (a.sessions > 1 && !child) {
    // Parent: one fresh process per session; they pin and calibrate themselves.
    for (int s = 0; s < a.sessions && !g_stop.load(); ++s) {
      if (tty) std::fprintf(stderr, "session %d/%d\n", s + 1, a.sessions);
      std::string tmp = a.output == "-"
                            ? fmt::format("/tmp/.kstacklab-session-{}-{}.json", getpid(), s)
                            : a.output + fmt::format(".session{}", s);
      auto r = RunChildSession(a, s, tmp);
      if (!r.ok()) {
        if (g_stop.load() && s > 0) break;
        return Fail(r.error());
      }
      if (s == 0) {
        result = std::move(*r);
        // The sessions captured the environment; report its warnings once, here.
        if (result.run.contains("warnings")) {
          for (const auto& w : result.run["warnings"]) warnings.push_back(w.get<std::string>());
        }
        PrintWarnings(warnings);
      } else if (Status st = MergeSession(result, *r); !st.ok()) {
        return Fail(st.error());
      }
      if (result.partial) break;
    }
    result.partial = result.partial || g_stop.load();
  } else {
    auto cal = timing::Calibrate();
    if (!cal.ok()) return Fail(cal.error());
    for (const auto& w : cal->warnings) warnings.push_back(w);
    RunOptions opt;
    opt.repetitions = a.repetitions;
    opt.session = child ? a.internal_session : 0;
    opt.sampler.iterations = a.iterations;
    opt.sampler.warmup = a.warmup;
    opt.sampler.mode = a.timing == "loop" ? TimingMode::kLoop : TimingMode::kPerCall;
    opt.sampler.chunk = std::min<uint64_t>(a.iterations, 65536);
    ClockParams clock{cal->freq_hz, cal->overhead_ticks};
    Json environment = CaptureRunEnvironment(&warnings);
    if (!child) PrintWarnings(warnings);
    Progress progress(tty && !child);
    auto measured = knobs::RunWithKnobs(
        *rows, opt, clock, &g_stop,
        [&](double f, double e, const std::string& row) { progress.Update(f, e, row); }, a.ab,
        Warn);
    progress.Done();
    if (!measured.ok()) return Fail(measured.error());
    result = std::move(*measured);
    result.environment = std::move(environment);
    result.timer = TimerInfo{cal->source, cal->freq_hz, cal->overhead_ns, cal->invariant};
    if (g_stop.load()) result.partial = true;
  }
  result.tool_version = KSTACKLAB_VERSION;
  result.created = UtcTimestamp();
  result.label = a.label;
  result.run = Json{{"iterations", a.iterations}, {"repetitions", a.repetitions},
                    {"warmup", a.warmup},         {"cpu", a.cpu},
                    {"timing", a.timing},         {"sched", a.sched},
                    {"sessions", a.sessions},     {"suites", a.suites},
                    {"benches", a.benches},       {"order", "round-robin by repetition"}};
  if (!warnings.empty()) result.run["warnings"] = warnings;

  if (Status st = WriteFileAtomic(a.output, ResultToJson(result)); !st.ok())
    return Fail(st.error());
  if (!child) {
    std::FILE* table_out = a.output == "-" ? stderr : stdout;
    std::fputs(RenderSummary(result).c_str(), table_out);
    if (a.output != "-") std::fprintf(stderr, "kstacklab: wrote %s\n", a.output.c_str());
    if (!a.no_store) RecordRunInStore(result, a.store.empty() ? std::string() : a.store);
  }
  if (result.partial) {
    if (!child)
      Warn("interrupted: the file holds only the completed repetitions (\"partial\": true)");
    int sig = g_signal ? g_signal : SIGINT;
    return 128 + sig;
  }
  return kExitOk;
}

}  // namespace

Runner SetupRunCommand(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("--suite", a->suites,
                 "Suite to run (repeatable; default: syscall; see `kstacklab list`)");
  sub.add_option("--bench", a->benches,
                 "Benchmark glob, matched against name or name:variant (repeatable)");
  sub.add_option("--iterations", a->iterations,
                 "Timed calls per repetition (the lists' runs: 10000000)")
      ->capture_default_str();
  sub.add_option("--repetitions", a->repetitions,
                 "Repetitions per benchmark (the statistical samples)")
      ->capture_default_str();
  sub.add_option("--warmup", a->warmup, "Untimed calls before each repetition")
      ->capture_default_str();
  sub.add_option("--cpu", a->cpu, "CPU to pin to (default: the one we start on)");
  sub.add_option("--timing", a->timing,
                 "percall: time every call (tails); loop: time the batch (mean only)")
      ->check(CLI::IsMember({"percall", "loop"}))
      ->capture_default_str();
  sub.add_option("--sched", a->sched,
                 "Scheduling class while measuring: normal or fifo (needs root)")
      ->check(CLI::IsMember({"normal", "fifo"}))
      ->capture_default_str();
  sub.add_option("--sessions", a->sessions,
                 "Run the repetitions in this many fresh processes (each runs --repetitions)")
      ->capture_default_str();
  sub.add_option("--label", a->label,
                 "Name of the configuration measured (default: kernel release)");
  sub.add_option("-o,--output", a->output,
                 "Result file ('-' = stdout; default: kstacklab-LABEL-TIME.json)");
  sub.add_option("--store", a->store,
                 "Results store (default: $XDG_DATA_HOME/kstacklab/results.db)");
  sub.add_flag("--no-store", a->no_store, "Do not record the result in the store");
  sub.add_option("--ab", a->ab,
                 "Interleaved A/B of a runtime knob, e.g. sysctl:kernel.stack_erasing=0,1: one "
                 "variant per value, original always restored (docs/ab.md)")
      ->excludes(sub.get_option("--sessions"));
  sub.add_option("--internal-session", a->internal_session)->group("");  // hidden: session worker
  return [a] { return Execute(*a); };
}

}  // namespace kstacklab::cli
