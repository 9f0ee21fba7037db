// Small parsing/printing helpers shared by subcommands. All parse errors are UsageErrors that
// name the flag and the expected form.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/common/error.h"

namespace kstacklab::cli {

// `error` worded with the flag it is about: "FLAG: message", exit code kept. Library errors name
// values, never flags (a library has callers that are not this CLI, and ctest flag_names
// checks it); this is the one place the CLI adds the flag. `flag` may carry
// the value too ("--cpu 3").
Error WithFlag(std::string_view flag, Error error);

// Adds `--store PATH` (empty rejected at parse time) to `app`. The default store path is
// resolved in one place: StorePath().
CLI::Option* AddStoreOption(CLI::App& app, std::string* store);
// `--store` value, or DefaultStorePath() when it was not given.
std::string StorePath(const std::string& store_flag);

// Writes `text` to stdout, checked (WriteStdout); returns kExitOk or the Fail() exit code.
int PrintStdout(std::string_view text);

// --format of the commands that print a table or JSON (attack, entropy, results list): "grid",
// the word compare, plan and campaign use for the same table, or "json"; "table", these
// commands' word for grid before, is still taken. Anything else is a UsageError naming the two.
inline constexpr const char* kGridOrJsonHelp = "output: grid (a table, the default) or json";

// `--format text|json` of a command whose plain form is text, not a table (env, list), with the
// older `--json` kept as its synonym; *json is true for either.
void AddTextOrJsonFormat(CLI::App& sub, bool* json, const char* json_help);
Status CheckGridOrJson(const std::string& format);

// Decimal or 0x-prefixed hexadecimal unsigned integer that fits in `bits` bits: for seeds, state
// words and counters, which are bit patterns. Counts go through ParseCount.
Expected<uint64_t> ParseUnsigned(const std::string& text, const std::string& flag, int bits = 64);

// Exactly `bytes` bytes as 2*bytes hex digits (no 0x, either case). bytes == 0: any even length.
Expected<std::vector<uint8_t>> ParseHexBytes(const std::string& text, const std::string& flag,
                                             size_t bytes);

// Lowercase hex of bytes in order.
std::string HexBytes(const uint8_t* data, size_t n);

// True when stderr is a terminal (progress is shown only then).
bool StderrIsTty();

// The one status line on stderr. On a terminal, Show redraws it in place ("\r\033[K" TEXT, no
// newline), Note prints a permanent line (erasing a shown status first) and Clear erases it. Not
// on a terminal (a log), Show prints nothing and Note prints a plain line. Destruction clears.
class StatusLine {
 public:
  explicit StatusLine(bool terminal = StderrIsTty()) : terminal_(terminal) {}
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;
  ~StatusLine() { Clear(); }

  bool terminal() const { return terminal_; }
  void Show(std::string_view text);
  void Note(std::string_view text);
  void Clear();

 private:
  bool terminal_;
  bool shown_ = false;
};

// "[ 42%] ETA 12s  WHAT": the progress text of `fraction` (0..1) of the work done in `elapsed_s`
// seconds (ETA "--" below 1 %).
std::string ProgressText(double fraction, double elapsed_s, std::string_view what);

// Progress of long work on stderr, on a terminal only: ProgressText on the StatusLine, from the
// first second on, redrawn at most 4 times a second, erased when it goes out of scope.
class ProgressLine {
 public:
  using Callback = std::function<void(uint64_t done, uint64_t total)>;
  explicit ProgressLine(std::string what);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // The callback for part `part` of `parts` equal parts of the work (an attack run several
  // times, once per row); empty when stderr is not a terminal.
  Callback Part(uint64_t part, uint64_t parts);

 private:
  using Clock = std::chrono::steady_clock;
  void Update(double fraction);

  std::string what_;
  StatusLine line_;
  Clock::time_point start_;
  Clock::time_point last_{};
};

}  // namespace kstacklab::cli
