#include "cli_util.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>

#include "command.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/store/store.h"

namespace kstacklab::cli {

// A message of at most kMaxErrorMessageBytes: a longer one (a 1 MB field of a hostile file quoted
// in it) keeps its head and tail, and says how much of the middle was cut.
namespace {
constexpr size_t kMaxErrorMessageBytes = 1000;
std::string BoundedMessage(const std::string& message) {
  if (message.size() <= kMaxErrorMessageBytes) return message;
  constexpr size_t kHead = 700, kTail = 200;
  return fmt::format("{} [... {} bytes cut ...] {}", message.substr(0, kHead),
                     message.size() - kHead - kTail, message.substr(message.size() - kTail));
}
}  // namespace

// One line each: control characters in the message (a file name with a newline, bytes of a
// hostile file) are escaped, so an error never spans lines or drives the terminal.
std::string MessageLine(const std::string& message) {
  return EscapeControl(BoundedMessage(message));
}

int Fail(const Error& error) {
  std::fprintf(stderr, "kstacklab: error: %s\n", MessageLine(error.message).c_str());
  return error.exit_code;
}

void Warn(const std::string& message) {
  std::fprintf(stderr, "kstacklab: warning: %s\n", MessageLine(message).c_str());
}

Status CheckGridOrJson(const std::string& format) {
  if (format == "grid" || format == "table" || format == "json") return OkStatus();
  return UsageError(fmt::format("--format {} is unknown; give grid or json", format));
}

Error WithFlag(std::string_view flag, Error error) {
  error.message = fmt::format("{}: {}", flag, error.message);
  return error;
}

CLI::Option* AddStoreOption(CLI::App& app, std::string* store) {
  return app
      .add_option("--store", *store,
                  "Results store: a file, or postgresql://[USER@]HOST[:PORT]/DB (default: "
                  "$KSTACKLAB_STORE, else $XDG_DATA_HOME/kstacklab/results.db)")
      ->check(CLI::Validator(
          [](const std::string& s) {
            return s.empty() ? std::string("is empty; give a file path such as results.db")
                             : std::string();
          },
          "PATH"));
}

std::string StorePath(const std::string& store_flag) {
  return store_flag.empty() ? store::DefaultStorePath() : store_flag;
}

int PrintStdout(std::string_view text) {
  Status st = WriteStdout(text);
  return st.ok() ? kExitOk : Fail(st.error());
}

Expected<uint64_t> ParseUnsigned(const std::string& text, const std::string& flag, int bits) {
  auto bad = [&] {
    return UsageError(fmt::format("{} '{}' is not an unsigned {}-bit integer (decimal or 0x-hex)",
                                  flag, text, bits));
  };
  if (text.empty()) return bad();
  int base = 10;
  size_t pos = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    pos = 2;
  }
  const uint64_t limit = bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
  uint64_t v = 0;
  for (; pos < text.size(); ++pos) {
    char c = text[pos];
    uint64_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<uint64_t>(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f')
      d = static_cast<uint64_t>(c - 'a') + 10;
    else if (base == 16 && c >= 'A' && c <= 'F')
      d = static_cast<uint64_t>(c - 'A') + 10;
    else
      return bad();
    if (d > limit || v > (limit - d) / static_cast<uint64_t>(base)) return bad();  // > limit
    v = v * static_cast<uint64_t>(base) + d;
  }
  return static_cast<uint64_t>(v);
}

Expected<std::vector<uint8_t>> ParseHexBytes(const std::string& text, const std::string& flag,
                                             size_t bytes) {
  if ((bytes && text.size() != 2 * bytes) || text.size() % 2) {
    return UsageError(
        fmt::format("{} needs {} hex digits, got {}", flag,
                    bytes ? fmt::format("exactly {}", 2 * bytes) : std::string("an even number of"),
                    text.size()));
  }
  std::vector<uint8_t> out(text.size() / 2);
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return UsageError(fmt::format("{}: '{}' at position {} is not a hex digit", flag, c, i));
    out[i / 2] = static_cast<uint8_t>(out[i / 2] << 4 | d);
  }
  return out;
}

std::string HexBytes(const uint8_t* data, size_t n) {
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) s += fmt::format("{:02x}", data[i]);
  return s;
}

bool StderrIsTty() { return ::isatty(STDERR_FILENO) == 1; }

// Carriage return, then erase to the end of the line (ECMA-48 EL).
void AddTextOrJsonFormat(CLI::App& sub, bool* json, const char* json_help) {
  CLI::Option* json_flag = sub.add_flag("--json", *json, json_help);
  sub.add_option_function<std::string>(
         "--format", [json](const std::string& f) { *json = *json || f == "json"; },
         "output: text (the default) or json (the same as --json)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_str("text")
      ->excludes(json_flag);
}

constexpr const char* kEraseLine = "\r\033[K";

void StatusLine::Show(std::string_view text) {
  if (!terminal_) return;
  std::fprintf(stderr, "%s%.*s", kEraseLine, static_cast<int>(text.size()), text.data());
  std::fflush(stderr);
  shown_ = true;
}

void StatusLine::Note(std::string_view text) {
  Clear();
  std::fprintf(stderr, "%.*s\n", static_cast<int>(text.size()), text.data());
}

void StatusLine::Clear() {
  if (shown_) std::fputs(kEraseLine, stderr);
  shown_ = false;
}

std::string ProgressText(double fraction, double elapsed_s, std::string_view what) {
  const std::string eta =
      fraction > 0.01 ? fmt::format("{:.0f}s", elapsed_s / fraction * (1 - fraction)) : "--";
  return fmt::format("[{:3.0f}%] ETA {}  {}", fraction * 100, eta, what);
}

ProgressLine::ProgressLine(std::string what) : what_(std::move(what)), start_(Clock::now()) {}

ProgressLine::Callback ProgressLine::Part(uint64_t part, uint64_t parts) {
  if (!line_.terminal()) return {};
  return [this, part, parts](uint64_t done, uint64_t total) {
    const double within = total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total);
    Update((static_cast<double>(part) + within) / static_cast<double>(parts));
  };
}

void ProgressLine::Update(double fraction) {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (elapsed < 1 || now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  line_.Show(ProgressText(fraction, elapsed, what_));
}

}  // namespace kstacklab::cli
