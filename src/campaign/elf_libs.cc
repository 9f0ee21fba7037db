// The shared libraries an executable needs, read from ELF headers without running anything: the
// guest's kstacklab may be built for another architecture than this host's (an aarch64 binary
// given to a campaign of arm64 kernels on an x86-64 host), which neither ldd nor the host's
// loader can read.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"

namespace kstacklab::campaign {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPtDynamic = 2;
constexpr uint32_t kPtInterp = 3;
constexpr uint64_t kDtNeeded = 1;
constexpr uint64_t kDtStrtab = 5;
constexpr uint64_t kDtRpath = 15;
constexpr uint64_t kDtRunpath = 29;
// Libraries are read whole: libc is 2 MB, the largest the tool links (libstdc++) 2.4 MB.
constexpr size_t kMaxElfBytes = size_t{512} << 20;
constexpr size_t kMaxLibraries = 256;

uint64_t Le(const std::string& b, uint64_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(b[static_cast<size_t>(at) + static_cast<size_t>(i)]);
  }
  return v;
}

struct Segment {
  uint32_t type;
  uint64_t offset, vaddr, filesz;
};

// What one ELF file asks of the loader.
struct DynamicInfo {
  std::string interp;               // PT_INTERP, "" for none
  std::vector<std::string> needed;  // DT_NEEDED, in order
  std::vector<std::string> paths;   // DT_RUNPATH or DT_RPATH entries, $ORIGIN replaced
};

Expected<std::vector<Segment>> Segments(const std::string& b, const std::string& path) {
  const auto bad = [&path](const char* what) {
    return RuntimeError(
        fmt::format("'{}' is not a readable ELF64 file ({})", EscapeControl(path), what));
  };
  if (b.size() < 64 ||
      std::memcmp(b.data(),
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      b[4] != 2 || b[5] != 1) {
    return bad("no little-endian ELF64 header");
  }
  const uint64_t phoff = Le(b, 0x20, 8);
  const uint64_t phentsize = Le(b, 0x36, 2);
  const uint64_t phnum = Le(b, 0x38, 2);
  if (phentsize < 56 || phnum > 256 || phoff > b.size() || phnum * phentsize > b.size() - phoff) {
    return bad("program headers outside the file");
  }
  std::vector<Segment> out;
  for (uint64_t i = 0; i < phnum; ++i) {
    const uint64_t at = phoff + i * phentsize;
    Segment s{static_cast<uint32_t>(Le(b, at, 4)), Le(b, at + 8, 8), Le(b, at + 16, 8),
              Le(b, at + 32, 8)};
    if (s.offset > b.size() || s.filesz > b.size() - s.offset) return bad("a segment past its end");
    out.push_back(s);
  }
  return out;
}

// The NUL-terminated string at virtual address `vaddr` (mapped through the PT_LOAD segments).
std::string StringAt(const std::string& b, const std::vector<Segment>& segs, uint64_t vaddr) {
  for (const Segment& s : segs) {
    if (s.type != kPtLoad || vaddr < s.vaddr || vaddr - s.vaddr >= s.filesz) continue;
    const size_t at = static_cast<size_t>(s.offset + (vaddr - s.vaddr));
    const size_t end = b.find('\0', at);
    return end == std::string::npos ? std::string() : b.substr(at, end - at);
  }
  return "";
}

Expected<DynamicInfo> ReadDynamic(const std::string& path) {
  std::string b;
  KSTACKLAB_ASSIGN_OR_RETURN(b, ReadRegularFile(path, kMaxElfBytes));
  std::vector<Segment> segs;
  KSTACKLAB_ASSIGN_OR_RETURN(segs, Segments(b, path));
  DynamicInfo info;
  const Segment* dynamic = nullptr;
  for (const Segment& s : segs) {
    if (s.type == kPtInterp) info.interp = b.substr(s.offset, b.find('\0', s.offset) - s.offset);
    if (s.type == kPtDynamic) dynamic = &s;
  }
  if (dynamic == nullptr) return info;
  std::vector<std::pair<uint64_t, uint64_t>> entries;
  uint64_t strtab = 0;
  for (uint64_t at = dynamic->offset; at + 16 <= dynamic->offset + dynamic->filesz; at += 16) {
    const uint64_t tag = Le(b, at, 8);
    if (tag == 0) break;
    if (tag == kDtStrtab) strtab = Le(b, at + 8, 8);
    entries.emplace_back(tag, Le(b, at + 8, 8));
  }
  const std::string origin = fs::path(path).parent_path().string();
  for (const auto& [tag, value] : entries) {
    const std::string text = StringAt(b, segs, strtab + value);
    if (tag == kDtNeeded && !text.empty()) info.needed.push_back(text);
    if (tag == kDtRunpath || tag == kDtRpath) {
      for (std::string dir : Split(text, ':')) {
        if (dir.rfind("$ORIGIN", 0) == 0) dir.replace(0, 7, origin);
        if (!dir.empty()) info.paths.push_back(dir);
      }
    }
  }
  return info;
}

}  // namespace

Expected<std::vector<std::string>> SharedLibraries(const std::string& binary) {
  const Architecture* arch = nullptr;
  KSTACKLAB_ASSIGN_OR_RETURN(arch, ElfArchitecture(binary, "the guest's kstacklab"));
  // The loader's own directories on Debian (multiarch first; /lib64 holds x86-64's loader).
  const std::vector<std::string> system = {fmt::format("/lib/{}", arch->multiarch),
                                           fmt::format("/usr/lib/{}", arch->multiarch), "/lib64",
                                           "/lib", "/usr/lib"};
  std::vector<std::string> libs;
  std::vector<std::string> pending = {binary};
  for (size_t next = 0; next < pending.size(); ++next) {
    DynamicInfo info;
    KSTACKLAB_ASSIGN_OR_RETURN(info, ReadDynamic(pending[next]));
    if (!info.interp.empty() && std::find(libs.begin(), libs.end(), info.interp) == libs.end()) {
      libs.push_back(info.interp);
    }
    for (const std::string& name : info.needed) {
      // libc names the loader (ld-linux-*.so): the loader itself, already listed as PT_INTERP.
      if (!libs.empty() && fs::path(libs.front()).filename() == name) continue;
      std::string found;
      std::vector<std::string> dirs = info.paths;
      dirs.insert(dirs.end(), system.begin(), system.end());
      for (const std::string& dir : dirs) {
        std::error_code ec;
        const std::string candidate = fmt::format("{}/{}", dir, name);
        if (fs::is_regular_file(candidate, ec)) {
          found = candidate;
          break;
        }
      }
      if (found.empty()) {
        return RuntimeError(fmt::format(
            "'{}' needs {}, found in none of {}: install it for {} (Debian: the package's :{} "
            "form)",
            EscapeControl(pending[next]), EscapeControl(name), fmt::join(dirs, ", "), arch->name,
            arch->debian_arch));
      }
      if (std::find(libs.begin(), libs.end(), found) != libs.end()) continue;
      if (libs.size() >= kMaxLibraries) {
        return RuntimeError(
            fmt::format("'{}' needs more than {} libraries", EscapeControl(binary), kMaxLibraries));
      }
      libs.push_back(found);
      pending.push_back(found);
    }
  }
  return libs;
}

}  // namespace kstacklab::campaign
