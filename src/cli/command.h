// The subcommand table contract. Each subcommand lives in its own file src/cli/<name>_cmd.cc and
// exposes one Setup function: it adds its options to the CLI11 subcommand it is given (the CLI11
// App already carries the name and summary from the table in commands.cc) and returns the
// Runner to call if that subcommand was chosen. The Runner returns the process exit code
// (kExitOk / kExitRuntime / kExitUsage) and never calls exit(); errors go through Fail().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "kstacklab/error.h"

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

// Prints "kstacklab: error: <message>" on stderr; returns the error's exit code.
int Fail(const Error& error);
// Prints "kstacklab: warning: <message>" on stderr.
void Warn(const std::string& message);

// Parses argv and runs the chosen subcommand; what main() calls. Usage errors exit 2.
int Main(int argc, char** argv);

// What `kstacklab --version` prints: "kstacklab 0.1.0 (commit 1a2b3c4d5e6f, Release build)"; the
// commit is "unknown" outside a git checkout and ends in "+changes" for a modified work tree.
std::string VersionText();

}  // namespace kstacklab::cli
