// Pure parsers of kernel-provided text: kstrtobool, the command line, .config, /proc/cpuinfo,
// CPU lists, gzip.
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "kstacklab/sysinfo/sysinfo.h"
#include "text.h"

namespace kstacklab::sysinfo {

// lib/kstrtox.c kstrtobool(): looks at the first one or two characters only, so "yes" is true
// and "offline" is false, exactly as the kernel accepts them.
std::optional<bool> KernelStrToBool(std::string_view text) {
  if (text.empty()) return std::nullopt;
  switch (text[0]) {
    case 'y':
    case 'Y':
    case '1':
      return true;
    case 'n':
    case 'N':
    case '0':
      return false;
    case 'o':
    case 'O':
      if (text.size() < 2) return std::nullopt;
      if (text[1] == 'n' || text[1] == 'N') return true;
      if (text[1] == 'f' || text[1] == 'F') return false;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

namespace {

using sysinfo_text::IsSpace;

std::string StripQuotes(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c != '"') out.push_back(c);
  }
  return out;
}

}  // namespace

// Mirrors lib/cmdline.c next_arg(): a double quote toggles grouping (spaces inside quotes do not
// split), the first '=' splits name and value, quotes are not part of the name or value.
std::vector<CmdlineParam> ParseCmdline(std::string_view cmdline) {
  std::vector<CmdlineParam> params;
  size_t i = 0;
  while (i < cmdline.size()) {
    while (i < cmdline.size() && IsSpace(cmdline[i])) ++i;
    if (i >= cmdline.size()) break;
    size_t start = i;
    bool in_quote = false;
    while (i < cmdline.size() && (in_quote || !IsSpace(cmdline[i]))) {
      if (cmdline[i] == '"') in_quote = !in_quote;
      ++i;
    }
    std::string_view token = cmdline.substr(start, i - start);
    size_t eq = token.find('=');
    CmdlineParam param;
    if (eq == std::string_view::npos) {
      param.name = StripQuotes(token);
      // parse_args(): a bare "--" ends the kernel's arguments; the rest is for init.
      if (param.name == "--" && token == "--") break;
    } else {
      param.name = StripQuotes(token.substr(0, eq));
      param.value = StripQuotes(token.substr(eq + 1));
    }
    params.push_back(std::move(param));
  }
  return params;
}

namespace {

bool ValidConfigName(std::string_view name) {
  if (name.size() <= 7 || name.substr(0, 7) != "CONFIG_") return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// One .config line into `options`: "CONFIG_X=value" or "# CONFIG_X is not set"; anything else
// is ignored.
void ParseConfigLine(std::string_view line, Json& options) {
  while (!line.empty() && (line.back() == '\r' || IsSpace(line.back()))) line.remove_suffix(1);
  constexpr std::string_view kNotSetPrefix = "# ";
  constexpr std::string_view kNotSetSuffix = " is not set";
  if (line.size() > kNotSetPrefix.size() + kNotSetSuffix.size() &&
      line.substr(0, 2) == kNotSetPrefix &&
      line.substr(line.size() - kNotSetSuffix.size()) == kNotSetSuffix) {
    std::string_view name = line.substr(2, line.size() - 2 - kNotSetSuffix.size());
    if (ValidConfigName(name)) options[std::string(name)] = "n";
    return;
  }
  size_t eq = line.find('=');
  if (eq == std::string_view::npos) return;
  std::string_view name = line.substr(0, eq);
  std::string_view value = line.substr(eq + 1);
  if (!ValidConfigName(name) || value.empty()) return;
  std::string v;
  if (value.front() == '"') {
    // Kconfig string: "..." with \" and \\ escapes.
    if (value.size() < 2 || value.back() != '"') return;
    value = value.substr(1, value.size() - 2);
    for (size_t k = 0; k < value.size(); ++k) {
      if (value[k] == '\\' && k + 1 < value.size()) ++k;
      v.push_back(value[k]);
    }
  } else {
    for (char c : value) {
      if (!std::isgraph(static_cast<unsigned char>(c))) return;
    }
    v = std::string(value);
  }
  options[std::string(name)] = v;
}

}  // namespace

std::optional<Json> ParseKernelConfig(std::string_view text) {
  Json options = Json::object();
  sysinfo_text::ForEachLine(text, [&](std::string_view line) { ParseConfigLine(line, options); });
  if (options.empty()) return std::nullopt;
  return options;
}

KstackCmdline ParseKstackCmdline(const std::vector<CmdlineParam>& params) {
  KstackCmdline out;
  std::optional<std::string> last_invalid;
  for (const CmdlineParam& p : params) {
    std::string name = p.name;
    std::replace(name.begin(), name.end(), '-', '_');
    if (name != "randomize_kstack_offset") continue;
    std::optional<bool> b = p.value ? KernelStrToBool(*p.value) : std::nullopt;
    if (b) {
      out.value = b;
    } else {
      last_invalid = p.value.value_or("");
    }
  }
  if (out.value) {
    out.state = *out.value ? "on" : "off";
  } else if (last_invalid) {
    out.state = "invalid:" + *last_invalid;
  }
  return out;
}

CpuInfo ParseCpuInfo(std::string_view text) {
  CpuInfo info;
  sysinfo_text::ForEachLine(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    std::string key = sysinfo_text::Trim(line.substr(0, colon));
    std::string value = sysinfo_text::Trim(line.substr(colon + 1));
    if (key == "processor") ++info.processors;
    if (info.processors <= 1 && !info.first.count(key)) info.first[key] = value;
  });
  return info;
}

std::optional<std::string> GunzipString(std::string_view compressed) {
  constexpr size_t kMaxOutput = size_t{64} << 20;  // a kernel config is ~250 KiB
  if (compressed.empty() || compressed.size() > kMaxOutput) return std::nullopt;
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return std::nullopt;  // 16: gzip wrapper only
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  zs.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buf[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buf);
    zs.avail_out = sizeof buf;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - zs.avail_out);
    if (out.size() > kMaxOutput) {
      rc = Z_MEM_ERROR;
      break;
    }
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      rc = Z_BUF_ERROR;
      break;
    }
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return std::nullopt;  // corrupt or truncated
  return out;
}

}  // namespace kstacklab::sysinfo
