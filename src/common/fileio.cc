#include "kstacklab/fileio.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kstacklab {
namespace {

std::string DirOf(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status WriteAll(int fd, const std::string& content, const std::string& what) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return RuntimeError(fmt::format("cannot write {}: {}", what, std::strerror(errno)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

Expected<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return UsageError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return UsageError(fmt::format("cannot read '{}': I/O error", path));
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, const std::string& content) {
  if (path == "-") {
    if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() ||
        std::fflush(stdout) != 0) {
      return RuntimeError("cannot write to stdout");
    }
    return OkStatus();
  }
  std::string tmpl = DirOf(path) + "/.kstacklab-tmp-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    return RuntimeError(fmt::format("cannot create a file in '{}' for '{}': {}", DirOf(path), path,
                                    std::strerror(errno)));
  }
  Status st = WriteAll(fd, content, path);
  if (st.ok() && ::fsync(fd) != 0) {
    st = RuntimeError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  if (::fchmod(fd, 0644) != 0 && st.ok()) {
    st = RuntimeError(fmt::format("cannot set mode of {}: {}", path, std::strerror(errno)));
  }
  ::close(fd);
  if (st.ok() && ::rename(tmpl.c_str(), path.c_str()) != 0) {
    st = RuntimeError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  }
  if (!st.ok()) ::unlink(tmpl.c_str());
  return st;
}

Status CheckWritable(const std::string& path) {
  if (path == "-") return OkStatus();
  std::string tmpl = DirOf(path) + "/.kstacklab-probe-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    return RuntimeError(fmt::format("cannot write '{}': {} (choose another path with -o)", path,
                                    std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(tmpl.c_str());
  return OkStatus();
}

}  // namespace kstacklab
