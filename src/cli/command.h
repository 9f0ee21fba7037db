// The subcommand table contract. Each subcommand lives in its own file src/cli/<name>_cmd.cc and
// exposes one Setup function: it adds its options to the CLI11 subcommand it is given (the CLI11
// App already carries the name and summary from the table in commands.cc) and returns the
// Runner to call if that subcommand was chosen. The Runner returns the process exit code
// (kExitOk / kExitRuntime / kExitUsage) and never calls exit(); errors go through Fail().
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab::cli {

using Runner = std::function<int()>;
using SetupFn = Runner (*)(CLI::App& sub);

struct CommandDef {
  const char* name;
  const char* summary;  // one line, shown by --help
  SetupFn setup;
};

// The table of subcommands (commands.cc). Adding a command = one row there + one file.
const std::vector<CommandDef>& Commands();

// A message as Fail and Warn print it: one line of at most 1000 bytes (a longer one keeps its
// head and tail), control characters escaped.
std::string MessageLine(const std::string& message);
// Prints "kstacklab: error: <message>" on stderr; returns the error's exit code.
int Fail(const Error& error);
// Prints "kstacklab: warning: <message>" on stderr.
void Warn(const std::string& message);

// Parses `args` (args[0] the program) with `app` as Main parses its command line: an empty
// argument is refused, an argument "[...]" is taken as it is (`app` prepared by
// StripLiteralMarks), and a parse error is one line naming the command's --help. Returns that
// line as Main prints it after "kstacklab: error: ", or nullopt when parsed; a --help or
// --version request sets `*request` instead (CLI11's exception, for the caller to print).
std::optional<std::string> ParseArgs(CLI::App& app, const std::vector<std::string>& args,
                                     std::exception_ptr* request);
// Lets every option of `app` and its subcommands take an argument "[...]" as it is (ParseArgs).
void StripLiteralMarks(CLI::App& app);

// Parses argv and runs the chosen subcommand; what main() calls. Usage errors exit 2.
int Main(int argc, char** argv);

// What `kstacklab --version` prints: "kstacklab 0.1.0 (commit 1a2b3c4d5e6f, Release build)"; the
// commit is "unknown" outside a git checkout and ends in "+changes" for a modified work tree.
std::string VersionText();

}  // namespace kstacklab::cli
