#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "command.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"

namespace kstacklab::cli {

// Setup functions, one per file src/cli/<name>_cmd.cc.
Runner SetupRunCommand(CLI::App& sub);
Runner SetupCompareCommand(CLI::App& sub);
Runner SetupPlanCommand(CLI::App& sub);
Runner SetupListCommand(CLI::App& sub);
Runner SetupShowCommand(CLI::App& sub);
Runner SetupEnvCommand(CLI::App& sub);
Runner SetupRngCommand(CLI::App& sub);
Runner SetupResultsCommand(CLI::App& sub);
Runner SetupPlotCommand(CLI::App& sub);
Runner SetupEntropyCommand(CLI::App& sub);
Runner SetupRecoverCommand(CLI::App& sub);
Runner SetupAttackCommand(CLI::App& sub);
Runner SetupCampaignCommand(CLI::App& sub);
Runner SetupBisectCommand(CLI::App& sub);
Runner SetupCompletionCommand(CLI::App& sub);

const std::vector<CommandDef>& Commands() {
  static const std::vector<CommandDef> k = {
      {"run", "Measure benchmarks on this kernel and write a result file", SetupRunCommand},
      {"list", "List every benchmark, grouped by suite", SetupListCommand},
      {"show", "Print the summary table of a result file", SetupShowCommand},
      {"compare", "Compare result files or configurations: % change, CI, (R)/(I)",
       SetupCompareCommand},
      {"plan", "Estimate repetitions needed to detect a target effect from a pilot run",
       SetupPlanCommand},
      {"env", "Print the environment capture (kernel, config, CPU, timer)", SetupEnvCommand},
      {"rng", "Dump a model random source's raw output to check it against the kernel",
       SetupRngCommand},
      {"results", "List, show, export, import and copy stored results (SQLite or PostgreSQL)",
       SetupResultsCommand},
      {"plot", "Draw latency CDFs or the %-change chart of results (gnuplot)", SetupPlotCommand},
      {"entropy",
       "Offset entropy of each kstack design (model): distinct, Shannon, min-entropy, chi-square",
       SetupEntropyCommand},
      {"recover", "Restore a knob a killed `run --ab` left changed (from the recovery file)",
       SetupRecoverCommand},
      {"attack", "Attack the kstack designs (model): prng-recover, migration, timer; vs chance",
       SetupAttackCommand},
      {"campaign",
       "Boot each profile (kernel, cmdline) as often as needed, run in each boot, compare",
       SetupCampaignCommand},
      {"bisect",
       "Find the first bad kernel of a list: each step boots a candidate with both ends until a "
       "rule decides, or skips it",
       SetupBisectCommand},
      {"completion", "Print shell completion (bash, zsh) or the man page, from these definitions",
       SetupCompletionCommand},
  };
  return k;
}

namespace {

// "The following arguments were not expected: json --format" -> "'--format json'": CLI11
// lists the left-over words last first.
std::string Unexpected(const CLI::ExtrasError& e) {
  std::string what = e.what();
  auto colon = what.rfind(": ");
  std::vector<std::string> words =
      Split(colon == std::string::npos ? what : what.substr(colon + 2), ' ');
  std::reverse(words.begin(), words.end());
  return fmt::format("'{}'", fmt::join(words, " "));
}

// CLI11's "Could not convert: --alpha = 0.05x" -> "--alpha: '0.05x' is not a number"; other
// messages unchanged.
std::string ConversionMessage(const std::string& what) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  const size_t eq = what.find(" = ");
  if (what.rfind(kPrefix, 0) != 0 || eq == std::string::npos) return what;
  const std::string name = what.substr(kPrefix.size(), eq - kPrefix.size());
  return fmt::format("{}: '{}' is not a number", name, what.substr(eq + 3));
}

// An empty argument ("" or --opt=) means nothing to any option here, but CLI11 reads it as 0 or
// as the default (--alpha '' -> "alpha 0 is out of range", --label '' -> the default label).
// `rng … --message ""` is the one exception: the empty message is a SipHash test vector.
std::optional<std::string> EmptyArgument(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    std::string option;
    if (arg.empty()) {
      if (i > 1 && !args[i - 1].empty() && args[i - 1][0] == '-') option = args[i - 1];
    } else if (arg.size() > 3 && arg.rfind("--", 0) == 0 && arg.back() == '=') {
      option = std::string(arg.substr(0, arg.size() - 1));
    } else {
      continue;
    }
    if (option == "--message") continue;
    if (option.empty())
      return std::string("an argument is empty (\"\"); give a file name or store id");
    const bool path = option == "-o" || option == "--output" || option == "--store";
    return fmt::format("{}: is empty; give {}, or leave {} out", option,
                       path ? "a file path" : "a value", option);
  }
  return std::nullopt;
}

// The parsed commands below the top, in order: {attack, timer} for `kstacklab attack timer …`.
std::vector<const CLI::App*> ParsedChain(const CLI::App& app) {
  std::vector<const CLI::App*> chain;
  const CLI::App* at = &app;
  for (;;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands({})) {
      if (sub->parsed()) next = sub;
    }
    if (next == nullptr) return chain;
    chain.push_back(next);
    at = next;
  }
}

// " results" when `kstacklab results frob` failed inside `results`; "" at the top.
std::string ParsedPath(const CLI::App& app) {
  std::string path;
  for (const CLI::App* c : ParsedChain(app)) path += " " + c->get_name();
  return path;
}

// For a command that needs a subcommand and got none: "`attack` needs a subcommand, one of: …",
// naming the word given instead (CLI11 says only "A subcommand is required"). Empty when that is
// not the error.
std::string MissingSubcommand(const CLI::App& app, const std::vector<std::string>& args) {
  const std::vector<const CLI::App*> chain = ParsedChain(app);
  if (chain.empty() || chain.back()->get_require_subcommand_min() == 0) return {};
  const CLI::App* at = chain.back();
  std::vector<std::string> names;
  for (const CLI::App* sub : at->get_subcommands({})) names.push_back(sub->get_name());
  std::string given;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == at->get_name()) {
      if (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-') {
        given = args[i + 1];
      }
      break;
    }
  }
  return fmt::format("{}`{}` needs a subcommand, one of: {}",
                     given.empty() ? "" : fmt::format("'{}' is not a subcommand here; ", given),
                     at->get_name(), fmt::join(names, ", "));
}

// CLI11 reads an argument "[a,b]" given to a list option (FILE..., --bench) as the list a, b,
// and "[]" as nothing, so a file named "[]" or "[x].json" could not be given. Such an argument
// is passed to the parser with kLiteralMark appended (it no longer ends in ']') and every option
// strips the mark first (a transform runs before any other check), so each argument is taken
// as it is.
constexpr char kLiteralMark = '\x1f';
bool LooksLikeCli11List(std::string_view arg) {
  return arg.size() >= 2 && arg.front() == '[' && arg.back() == ']';
}

// --help and --version: CLI11's text goes to stdout through WriteStdout, so a stdout that cannot
// take it (/dev/full, a closed pipe) is a failure (exit 1), not exit 0.
int PrintedExit(const CLI::App& app, const CLI::Error& e) {
  std::ostringstream out;
  std::ostringstream err;
  const int rc = app.exit(e, out, err);
  if (const std::string text = err.str(); !text.empty()) std::fputs(text.c_str(), stderr);
  if (Status st = WriteStdout(out.str()); !st.ok()) return Fail(st.error());
  return rc;
}

}  // namespace

void StripLiteralMarks(CLI::App& app) {
  for (CLI::Option* opt : app.get_options()) {
    opt->transform([](std::string v) {
      if (!v.empty() && v.back() == kLiteralMark && LooksLikeCli11List(v.substr(0, v.size() - 1))) {
        v.pop_back();
      }
      return v;
    });
  }
  for (CLI::App* sub : app.get_subcommands({})) StripLiteralMarks(*sub);
}

std::optional<std::string> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                                     std::exception_ptr* request) {
  if (std::optional<std::string> empty = EmptyArgument(args)) return MessageLine(*empty);
  std::vector<std::string> marked = args;
  for (size_t i = 1; i < marked.size(); ++i) {
    if (LooksLikeCli11List(marked[i])) marked[i] += kLiteralMark;
  }
  std::vector<const char*> marked_argv;
  for (const std::string& a : marked) marked_argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(marked_argv.size()), marked_argv.data());
  } catch (const CLI::CallForHelp&) {
    *request = std::current_exception();
  } catch (const CLI::CallForAllHelp&) {
    *request = std::current_exception();
  } catch (const CLI::CallForVersion&) {
    // CLI11 stops at --version and never sees what follows it: the flag must stand alone.
    if (args.size() != 2) {
      return fmt::format("--version takes no other argument: give `kstacklab --version` alone");
    }
    *request = std::current_exception();
  } catch (const CLI::ExtrasError& e) {
    // An unknown command or subcommand word, or a stray argument.
    return fmt::format("{}: not a command or argument here (see `kstacklab{} --help`)",
                       EscapeControl(Unexpected(e)), ParsedPath(app));
  } catch (const CLI::ParseError& e) {
    std::string what = ConversionMessage(e.what());
    if (args.size() < 2) what = "no command given; try `kstacklab --help`";
    if (what.find("subcommand") != std::string::npos) {  // CLI11: "A subcommand is required"
      if (std::string missing = MissingSubcommand(app, args); !missing.empty()) {
        what = std::move(missing);
      }
    }
    return fmt::format("{} (see `kstacklab{} --help`)", EscapeControl(what), ParsedPath(app));
  }
  return std::nullopt;
}

int Main(int argc, char** argv) {
  // A file size limit (`ulimit -f`) makes a write fail with EFBIG, reported like a full disk
  // (ENOSPC), instead of killing the process (SIGXFSZ) with a temporary file left and the
  // measurement lost.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"kstacklab: measure and model Linux kernel stack hardening"};
  // At most one; none is reported below. (require_subcommand(1) would turn `kstacklab bogus`
  // into "A subcommand is required" without naming the word; this way CLI11 names it.)
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", VersionText());
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const CommandDef& def : Commands()) {
    CLI::App* sub = app.add_subcommand(def.name, def.summary);
    runners.emplace_back(sub, def.setup(*sub));
  }
  StripLiteralMarks(app);
  std::exception_ptr request;
  if (auto error = ParseArgs(app, std::vector<std::string>(argv, argv + argc), &request)) {
    std::fprintf(stderr, "kstacklab: error: %s\n", error->c_str());
    return kExitUsage;
  }
  if (request) {
    try {
      std::rethrow_exception(request);
    } catch (const CLI::Error& e) {
      return PrintedExit(app, e);
    }
  }
  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    // A stray exception must not abort: catching it unwinds the stack, so every guard that
    // restores the machine (sysctl, affinity, scheduling class) runs, and the user gets one line.
    try {
      return run();
    } catch (const std::exception& e) {
      return Fail(RuntimeError(
          fmt::format("internal error: {}; please report it with the command line", e.what())));
    }
  }
  return Fail(UsageError("no command given; try `kstacklab --help`"));
}

}  // namespace kstacklab::cli
