// `kstacklab run`: measure, print the summary, write the result file (and record it in the store).
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "cli/cli_util.h"
#include "cli/command.h"
#include "cli/run_support.h"
#include "kstacklab/fileio.h"
#include "kstacklab/knobs.h"
#include "kstacklab/runner.h"
#include "kstacklab/sessions.h"
#include "kstacklab/store.h"
#include "kstacklab/summary.h"
#include "kstacklab/text.h"
#include "kstacklab/timing.h"

namespace kstacklab::cli {
namespace {

// Counts arrive as text and go through ParseCount (CLI11 2.1 accepts "-5" and wraps).
struct RunArgs {
  std::vector<std::string> suites;
  std::vector<std::string> benches;
  std::string iterations_text = "50000";
  std::string repetitions_text = "60";
  std::string warmup_text = "10000";
  std::string cpu_text;  // "" = the CPU we start on
  std::string sessions_text = "1";
  std::string stall_threshold_text;  // --stall-threshold as given; parsed in Validate
  double stall_threshold_ns = kDefaultStallThresholdNs;
  std::string timing = "percall";
  std::string sched = "normal";
  std::string label;
  std::string output;
  bool output_given = false;
  std::string default_stem;  // the default name without ".json" (when -o is not given)
  int default_number = 1;    // 1: STEM.json; N > 1: STEM-N.json (a name taken in the same second)
  std::string store;
  bool no_store = false;
  int internal_session = -1;        // >= 0: this process is session K of a parent run
  bool internal_validate = false;   // check everything, measure nothing (`campaign` uses it)
  std::vector<std::string> ab;      // --ab KIND:NAME=V1,V2 (knobs/)
  std::vector<std::string> params;  // --param KEY=VALUE (WorkloadDef::run_params)
  // Parsed by Validate().
  uint64_t iterations = 0;
  uint64_t repetitions = 0;
  uint64_t warmup = 0;
  int cpu = -1;
  int sessions = 1;
};

constexpr uint64_t kMaxIterations = ResultLimits::kMaxIterations;
constexpr uint64_t kMaxSessions = 100;

std::string DefaultOutputStem(const std::string& label);

// The default name of collision number `n`: STEM.json, then STEM-2.json, STEM-3.json, ...
std::string DefaultOutputName(const std::string& stem, int n) {
  return n <= 1 ? stem + ".json" : fmt::format("{}-{}.json", stem, n);
}

// The number of the first default name that is free now (runs in the same second share a stem;
// the write itself is exclusive, so a name taken later is skipped there too).
constexpr int kMaxDefaultNumber = 10000;
int FirstFreeDefault(const std::string& stem) {
  for (int n = 1; n < kMaxDefaultNumber; ++n) {
    struct stat st {};
    if (::lstat(DefaultOutputName(stem, n).c_str(), &st) != 0) return n;
  }
  return kMaxDefaultNumber;
}

// Everything checkable before the first timed call: counts, label, output path.
Status Validate(RunArgs& a) {
  auto count = [](const std::string& text, const char* flag, uint64_t lo,
                  uint64_t hi) -> Expected<uint64_t> { return ParseCount(text, flag, lo, hi); };
  KSTACKLAB_ASSIGN_OR_RETURN(a.iterations,
                             count(a.iterations_text, "--iterations", 1, kMaxIterations));
  KSTACKLAB_ASSIGN_OR_RETURN(
      a.repetitions, count(a.repetitions_text, "--repetitions", 1, ResultLimits::kMaxRepetitions));
  KSTACKLAB_ASSIGN_OR_RETURN(a.warmup, count(a.warmup_text, "--warmup", 0, kMaxIterations));
  uint64_t sessions = 0;
  KSTACKLAB_ASSIGN_OR_RETURN(sessions, count(a.sessions_text, "--sessions", 1, kMaxSessions));
  a.sessions = static_cast<int>(sessions);
  if (!a.stall_threshold_text.empty()) {
    KSTACKLAB_ASSIGN_OR_RETURN(a.stall_threshold_ns,
                               ParseDurationNs(a.stall_threshold_text, "--stall-threshold",
                                               /*bare_seconds=*/false, 1, 1e10, "10us"));
  }
  if (a.repetitions * sessions > ResultLimits::kMaxRepetitions) {
    return UsageError(fmt::format(
        "--repetitions {} x --sessions {} is more than the {} repetitions a result file holds; "
        "give fewer repetitions per session, or split the measurement over several runs",
        a.repetitions, sessions, ResultLimits::kMaxRepetitions));
  }
  if (!a.cpu_text.empty()) {
    uint64_t cpu = 0;
    KSTACKLAB_ASSIGN_OR_RETURN(cpu, count(a.cpu_text, "--cpu", 0, CPU_SETSIZE - 1));
    a.cpu = static_cast<int>(cpu);
  }
  if (a.label.empty()) a.label = DefaultLabel();
  if (auto problem = LabelProblem(a.label)) {
    return UsageError(fmt::format("--label {}; use printable UTF-8 text", *problem));
  }
  if (a.output_given && a.output.empty()) {
    return UsageError("-o needs a file name ('-' for stdout); omit -o for the default name");
  }
  if (a.output.empty()) {
    a.default_stem = DefaultOutputStem(a.label);
    a.default_number = FirstFreeDefault(a.default_stem);
    a.output = DefaultOutputName(a.default_stem, a.default_number);
  }
  if (!a.no_store && a.internal_session < 0) {
    if (Status st = CheckStoreLocation(StorePath(a.store)); !st.ok()) {
      Error e = st.error();
      e.message += " (--store FILE, or --no-store)";
      return e;
    }
  }
  if (Status st = CheckWritable(a.output); !st.ok()) {
    Error e = st.error();
    e.message = (a.output_given ? "-o: " : "the default output name (from --label; or give -o): ") +
                e.message;
    return e;
  }
  if (!a.no_store && a.output != "-") {
    std::error_code ec1, ec2;
    const auto out = std::filesystem::weakly_canonical(a.output, ec1);
    const auto db = std::filesystem::weakly_canonical(StorePath(a.store), ec2);
    if (!ec1 && !ec2 && out == db) {
      return UsageError(fmt::format(
          "-o: '{}' is also the results store (--store); give the result file another name",
          a.output));
    }
  }
  return OkStatus();
}

// Drops the benchmarks of an interrupted run that completed no repetition (a reader refuses
// them); false when nothing at all was measured.
bool DropEmptyBenchmarks(RunResult& result) {
  std::erase_if(result.benchmarks, [](const BenchmarkResult& b) { return b.repetitions.empty(); });
  return !result.benchmarks.empty();
}

std::atomic<bool> g_stop{false};
volatile sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  g_signal = sig;
  g_stop.store(true, std::memory_order_relaxed);
}

// Installs SIGINT/SIGTERM/SIGHUP handlers for its lifetime and restores the previous ones: each
// ends the run after the current repetition with a partial file (exit 128 + signal). SIGHUP (a
// dropped ssh session) is left alone when it was ignored (`nohup`). SIGPIPE is ignored: a reader
// that goes away (`run | head`) makes stdout fail with EPIPE, reported after the file is written
// and the run recorded, instead of killing the run before either.
class ScopedSignals {
 public:
  ScopedSignals() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old_pipe_);
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      sigaction(kSignals[i], nullptr, &old_[i]);
      if (kSignals[i] == SIGHUP && old_[i].sa_handler == SIG_IGN) continue;
      sigaction(kSignals[i], &sa, nullptr);
      installed_[i] = true;
    }
  }
  ~ScopedSignals() {
    for (size_t i = 0; i < std::size(kSignals); ++i) {
      if (installed_[i]) sigaction(kSignals[i], &old_[i], nullptr);
    }
    sigaction(SIGPIPE, &old_pipe_, nullptr);
  }
  ScopedSignals(const ScopedSignals&) = delete;
  ScopedSignals& operator=(const ScopedSignals&) = delete;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3]{};
  struct sigaction old_pipe_ {};
  bool installed_[3] = {false, false, false};
};

std::string DefaultOutputStem(const std::string& label) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  std::string safe;
  for (char c : label)
    safe += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return fmt::format("kstacklab-{}-{}", safe.empty() ? "run" : safe, buf);
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

// The command line of session K: the same run, one session, result on stdout, no store.
std::vector<std::string> SessionArgv(const RunArgs& a, int session) {
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
                                   "--stall-threshold",
                                   fmt::format("{}ns", a.stall_threshold_ns),
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
                                   "-"};
  for (const auto& s : a.suites) args.insert(args.end(), {"--suite", s});
  for (const auto& b : a.benches) args.insert(args.end(), {"--bench", b});
  for (const auto& p : a.params) args.insert(args.end(), {"--param", p});
  return args;
}

// The rows of --suite/--bench with --param applied; an error names the flag that caused it.
Expected<std::vector<WorkloadDef>> SelectRows(const RunArgs& a) {
  // One selection per --suite and --bench first, so that an error names its flag.
  for (const std::string& s : a.suites) {
    if (auto one = SelectWorkloads({s}, {}); !one.ok()) return WithFlag("--suite", one.error());
  }
  for (const std::string& g : a.benches) {
    if (auto one = SelectWorkloads({}, {g}); !one.ok()) return WithFlag("--bench", one.error());
  }
  auto selected = SelectWorkloads(a.suites, a.benches);
  if (!selected.ok()) return selected.error();
  // Each --param alone first, likewise; then all of them (a key given twice).
  for (const std::string& p : a.params) {
    if (auto one = ApplyRunParams(*selected, {p}); !one.ok()) {
      return WithFlag("--param " + p, one.error());
    }
  }
  auto rows = ApplyRunParams(std::move(*selected), a.params);
  if (!rows.ok()) return WithFlag("--param", rows.error());
  return rows;
}

// The whole run's repetitions (rows x values of --ab x repetitions x sessions) must fit a result
// file the readers accept (ResultLimits): at about 450 bytes of JSON per repetition, 100 000
// repetitions are 45 MB of the 64 MiB a reader takes, leaving room for the histograms. Checked
// before measuring: the alternative is a run that ends in an out-of-memory kill, or a file
// that show/compare refuse.
constexpr uint64_t kMaxRunRepetitions = 100000;
static_assert(kMaxRunRepetitions * 450 < ResultLimits::kMaxFileBytes * 3 / 4);

Status CheckRunSize(const RunArgs& a, size_t rows) {
  uint64_t values = 1;
  for (const std::string& spec : a.ab) {
    if (auto ab = knobs::ParseAbSpec(spec); ab.ok()) values *= ab->values.size();
  }
  const uint64_t total =
      static_cast<uint64_t>(rows) * values * a.repetitions * static_cast<uint64_t>(a.sessions);
  if (total <= kMaxRunRepetitions) return OkStatus();
  return UsageError(fmt::format(
      "{} rows{} x {} repetitions x {} sessions = {} repetitions, more than the {} one result "
      "file holds; lower --repetitions (a repetition can hold more --iterations), or split the "
      "run by --suite/--bench",
      rows, values > 1 ? fmt::format(" x {} --ab values", values) : std::string(), a.repetitions,
      a.sessions, total, kMaxRunRepetitions));
}

// Exit code of a run stopped by a signal.
int SignalExit() { return 128 + (g_signal ? g_signal : SIGINT); }

// Parent of --sessions S: one fresh process per session (each pins and calibrates itself),
// merged. nullopt (after a warning) when interrupted before the first repetition completed.
Expected<std::optional<RunResult>> RunSessions(const RunArgs& a, bool tty,
                                               std::vector<std::string>* warnings) {
  RunResult result;
  for (int s = 0; s < a.sessions && !g_stop.load(); ++s) {
    if (tty) std::fprintf(stderr, "session %d/%d\n", s + 1, a.sessions);
    auto r = RunSession(SessionArgv(a, s), s, &g_stop, &g_signal);
    if (!r.ok()) {
      if (g_stop.load() && s > 0) break;
      if (g_stop.load()) {
        Warn("interrupted before the first repetition completed: nothing was written");
        return std::optional<RunResult>();
      }
      return r.error();
    }
    if (s == 0) {
      // Session 0 printed its environment warnings itself; keep them for the file.
      PrintWarnings(*warnings);
      result = std::move(*r);
      if (result.run.contains("warnings") && result.run["warnings"].is_array()) {
        for (const auto& w : result.run["warnings"]) {
          if (w.is_string()) warnings->push_back(w.get<std::string>());
        }
      }
    } else if (Status st = MergeSession(result, *r); !st.ok()) {
      return st.error();
    }
    if (result.partial) break;
  }
  result.partial = result.partial || g_stop.load();
  return std::optional<RunResult>(std::move(result));
}

// One process measuring: calibrate, capture the environment, run the rows (with --ab knobs).
Expected<RunResult> MeasureHere(const RunArgs& a, std::vector<WorkloadDef>& rows, bool child,
                                bool tty, std::vector<std::string>* warnings) {
  auto cal = timing::Calibrate();
  if (!cal.ok()) return cal.error();
  for (auto& n : DropUnavailable(&rows)) warnings->push_back(std::move(n));  // no THP, no PKU
  RunOptions opt;
  opt.repetitions = static_cast<int>(a.repetitions);
  opt.session = child ? a.internal_session : 0;
  opt.sampler.iterations = a.iterations;
  opt.sampler.warmup = a.warmup;
  opt.sampler.mode = a.timing == "loop" ? TimingMode::kLoop : TimingMode::kPerCall;
  opt.sampler.chunk = std::min<uint64_t>(a.iterations, kDefaultChunk);
  opt.sampler.stall_threshold_ns = a.stall_threshold_ns;
  ClockParams clock{cal->freq_hz, cal->overhead_ticks};
  Json environment = CaptureRunEnvironment(warnings);
  if (!child || a.internal_session == 0) PrintWarnings(*warnings);
  Progress progress(tty && !child);
  auto measured = knobs::RunWithKnobs(
      rows, opt, clock, &g_stop,
      [&](double f, double e, const std::string& row) { progress.Update(f, e, row); }, a.ab, Warn);
  progress.Done();
  if (!measured.ok()) return measured.error();
  RunResult result = std::move(*measured);
  result.environment = std::move(environment);
  result.timer =
      TimerInfo{cal->source, cal->freq_hz, cal->overhead_ns, cal->invariant, cal->resolution_ns};
  if (g_stop.load()) result.partial = true;
  return result;
}

// The run's own record: version, time, label and how it was run.
void StampRun(const RunArgs& a, const std::vector<std::string>& warnings, RunResult* result) {
  result->tool_version = KSTACKLAB_VERSION;
  result->created = UtcTimestamp();
  result->label = a.label;
  result->run = Json{{"iterations", a.iterations},
                     {"repetitions", a.repetitions},
                     {"warmup", a.warmup},
                     {"cpu", a.cpu},
                     {"timing", a.timing},
                     {"sched", a.sched},
                     {"sessions", a.sessions},
                     {"suites", a.suites},
                     {"benches", a.benches},
                     {"order", a.ab.empty() ? "interleaved by repetition, alternating direction"
                                            : "ABBA by repetition over the --ab values, the rows "
                                              "within a value alternating direction too"}};
  result->run["stall_threshold_ns"] = a.stall_threshold_ns;
  if (!a.params.empty()) result->run["params"] = a.params;
  if (!a.ab.empty()) result->run["ab"] = a.ab;
  if (!warnings.empty()) result->run["warnings"] = warnings;
}

// Writes the file; a parent also prints the summary and records the run in the store — even
// when the file cannot be written (a full disk), so the measurement is not lost: the store and
// the printed summary keep it, and the error says where.
// The default name is never replaced: another run of the same label in the same second took
// STEM.json, so this one takes STEM-2.json (created exclusively: no race between the two).
Status WriteResult(RunArgs& a, const std::string& json) {
  if (a.default_stem.empty()) return WriteFileAtomic(a.output, json);
  for (;;) {
    bool taken = false;
    Status st = WriteNewFile(a.output, json, &taken);
    if (!taken || a.default_number >= kMaxDefaultNumber) return st;
    a.output = DefaultOutputName(a.default_stem, ++a.default_number);
  }
}

int Publish(RunArgs& a, bool child, const RunResult& result) {
  const Status written = WriteResult(a, ResultToJson(result));
  if (child && !written.ok()) return Fail(written.error());
  if (!child) {
    const std::string table = RenderSummary(result);
    int printed = kExitOk;  // a failed stdout exits 1, after the file and the store are done
    if (a.output == "-") {
      std::fputs(table.c_str(), stderr);
    } else {
      printed = PrintStdout(table);
      if (written.ok()) {
        std::fprintf(stderr, "kstacklab: wrote %s\n", EscapeControl(a.output).c_str());
      }
    }
    std::error_code ec;
    const bool importable =
        written.ok() && a.output != "-" && std::filesystem::is_regular_file(a.output, ec);
    const std::optional<int64_t> id =
        a.no_store ? std::nullopt
                   : RecordRunInStore(result, a.store, importable ? a.output : std::string());
    if (!written.ok()) {
      Error e = written.error();
      e.message += id ? fmt::format(
                            "; the measurement is kept as store id {} (`kstacklab results "
                            "export {} -o FILE` writes the file)",
                            *id, *id)
                      : std::string("; the summary above is all that is left of the measurement");
      // A signal that cut the write short (SIGINT while a FIFO waits for its reader) ends the
      // run as a signal does: 128 + its number, not a runtime failure.
      if (g_stop.load()) e.exit_code = SignalExit();
      return Fail(e);
    }
    if (printed != kExitOk) return printed;
  }
  if (!result.failure.empty()) {
    return Fail(
        RuntimeError(fmt::format("{}; the file holds the repetitions measured before{}",
                                 result.failure, result.partial ? " (\"partial\": true)" : "")));
  }
  if (result.partial) {
    if (!child) {
      Warn("interrupted: the file holds only the completed repetitions (\"partial\": true)");
    }
    return SignalExit();
  }
  return kExitOk;
}

int Execute(RunArgs a) {
  // Validate everything before measuring anything.
  if (Status st = Validate(a); !st.ok()) return Fail(st.error());
  auto rows = SelectRows(a);
  if (!rows.ok()) return Fail(rows.error());
  if (Status st = CheckRunSize(a, rows->size()); !st.ok()) return Fail(st.error());
  if (a.internal_validate) return kExitOk;
  const bool child = a.internal_session >= 0;
  if (a.cpu < 0) a.cpu = sched_getcpu();

  ScopedSignals signals;
  // Pinning and the scheduling class last as long as the measurement, not the write after it
  // (a FIFO output waits for its reader, with the run still SCHED_FIFO on one CPU otherwise).
  std::optional<ScopedCpuPin> pin(std::in_place);
  if (Status st = pin->Pin(a.cpu); !st.ok()) {
    return Fail(WithFlag("--cpu " + std::to_string(a.cpu), st.error()));
  }
  std::optional<ScopedFifo> fifo(std::in_place);
  std::vector<std::string> warnings;
  if (a.sched == "fifo") {
    if (Status st = fifo->Enable(); !st.ok()) {
      warnings.push_back(st.error().message +
                         "; running with the normal scheduler (run as root "
                         "or grant CAP_SYS_NICE for --sched fifo)");
    }
  }

  const bool tty = StderrIsTty();
  RunResult result;
  if (a.sessions > 1 && !child) {
    auto sessions = RunSessions(a, tty, &warnings);
    if (!sessions.ok()) return Fail(sessions.error());
    if (!sessions->has_value()) return SignalExit();
    result = std::move(**sessions);
  } else {
    auto measured = MeasureHere(a, *rows, child, tty, &warnings);
    if (!measured.ok()) return Fail(measured.error());
    result = std::move(*measured);
  }
  fifo.reset();
  pin.reset();
  StampRun(a, warnings, &result);
  if (result.partial && !DropEmptyBenchmarks(result)) {
    if (!child) Warn("interrupted before the first repetition completed: nothing was written");
    return SignalExit();
  }
  return Publish(a, child, result);
}

}  // namespace

Runner SetupRunCommand(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  sub.add_option("--suite", a->suites,
                 "Suite to run (repeatable; default: syscall; see `kstacklab list`)");
  sub.add_option("--bench", a->benches,
                 "Benchmark glob, matched against name or name:variant (repeatable)");
  sub.add_option("--iterations", a->iterations_text,
                 "Timed calls per repetition (the lists' runs: 10000000 x 1 repetition)")
      ->capture_default_str();
  sub.add_option("--repetitions", a->repetitions_text,
                 "Repetitions per benchmark (the statistical samples)")
      ->capture_default_str();
  sub.add_option("--warmup", a->warmup_text, "Untimed calls before each repetition")
      ->capture_default_str();
  sub.add_option("--cpu", a->cpu_text, "CPU to pin to (default: the one we start on)");
  sub.add_option("--stall-threshold", a->stall_threshold_text,
                 "Count a call above this as a host stall (e.g. 10us, 500ns, 1ms; 1ns to 10s)")
      ->type_name("DURATION")
      ->default_str("10us");
  sub.add_option("--timing", a->timing,
                 "percall: time every call (tails); loop: time the batch (mean only)")
      ->check(CLI::IsMember({"percall", "loop"}))
      ->capture_default_str();
  sub.add_option("--sched", a->sched,
                 "Scheduling class while measuring: normal or fifo (needs root)")
      ->check(CLI::IsMember({"normal", "fifo"}))
      ->capture_default_str();
  sub.add_option("--sessions", a->sessions_text,
                 "Run the repetitions in this many fresh processes (each runs --repetitions)")
      ->capture_default_str();
  sub.add_option("--label", a->label,
                 "Name of the configuration measured (default: kernel release)");
  CLI::Option* out = sub.add_option(
      "-o,--output", a->output, "Result file ('-' = stdout; default: kstacklab-LABEL-TIME.json)");
  CLI::Option* store = AddStoreOption(sub, &a->store);
  sub.add_flag("--no-store", a->no_store, "Do not record the result in the store")->excludes(store);
  sub.add_option("--param", a->params,
                 "KEY=VALUE setting of the rows that take it (repeatable): size=256M for micromm "
                 "(the mapping, a multiple of 2 MiB; default 1G)");
  sub.add_option("--ab", a->ab,
                 "Interleaved A/B of a knob, e.g. sysctl:kernel.stack_erasing=0,1, "
                 "model:policy=off,percpu-prng, model:strategy=generic,rep-stos: one variant per "
                 "value, a sysctl's original always restored (docs/ab.md)")
      ->excludes(sub.get_option("--sessions"));
  sub.add_option("--internal-session", a->internal_session)->group("");  // hidden: session worker
  // hidden: `campaign` checks a plan's run arguments exactly as `run` parses them, before boot 1
  sub.add_flag("--internal-validate", a->internal_validate)->group("");
  return [a, out] {
    a->output_given = out->count() > 0;
    return Execute(*a);
  };
}

}  // namespace kstacklab::cli
