// The sysinfo parsers on arbitrary bytes: the public ones directly (ParseKernelConfig,
// ParseCmdline, KernelStrToBool, GunzipString), and the /proc/cpuinfo and /proc/cmdline parsers
// that are still private to capture.cc through CaptureEnvironment on a fixture root holding the
// input. The capture must never fail or throw, whatever the files hold.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "kstacklab/sysinfo/sysinfo.h"

namespace {

const std::string& RootOnce() {
  static const std::string root = [] {
    char dir[] = "/tmp/kstacklab-fuzz-sysroot-XXXXXX";
    if (::mkdtemp(dir) == nullptr) std::abort();
    std::string r = dir;
    for (const char* sub : {"/proc", "/proc/sys", "/proc/sys/kernel", "/boot"}) {
      ::mkdir((r + sub).c_str(), 0755);
    }
    std::ofstream(r + "/proc/sys/kernel/osrelease") << "6.1.0-fuzz\n";
    return r;
  }();
  return root;
}

void Write(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto config = sysinfo::ParseKernelConfig(text);
      if (config && !config->is_object()) std::abort();
      break;
    }
    case 1: {
      for (const sysinfo::CmdlineParam& p : sysinfo::ParseCmdline(text)) {
        if (p.value) (void)sysinfo::KernelStrToBool(*p.value);
      }
      break;
    }
    case 2: {
      auto plain = sysinfo::GunzipString(text);
      if (plain) (void)sysinfo::ParseKernelConfig(*plain);
      break;
    }
    default: {
      // Input split in three at the first two NUL bytes: cpuinfo, cmdline, config.
      const std::string& root = RootOnce();
      size_t a = text.find('\0');
      size_t b = a == std::string::npos ? a : text.find('\0', a + 1);
      Write(root + "/proc/cpuinfo", text.substr(0, a));
      Write(root + "/proc/cmdline", a == std::string::npos ? "" : text.substr(a + 1, b - a - 1));
      Write(root + "/boot/config-6.1.0-fuzz", b == std::string::npos ? "" : text.substr(b + 1));
      sysinfo::SysinfoOptions options;
      options.root = root;
      Json env = sysinfo::CaptureEnvironment(options);
      if (!env.is_object()) std::abort();
      (void)sysinfo::EnvironmentWarnings(env);
      (void)sysinfo::EnvironmentSummary(env);
      (void)env.dump(-1, ' ', false, Json::error_handler_t::replace);
      break;
    }
  }
  return 0;
}
