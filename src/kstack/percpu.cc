#include "kstacklab/kstack/percpu.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace kstacklab::kstack {
namespace {

// 1 + the highest cpu id in a kernel cpu list ("0-1", "0,2-7"); 0 if unparsable.
int CountFromCpuList(const std::string& list) {
  int highest = -1;
  size_t i = 0;
  while (i < list.size()) {
    size_t end = list.find(',', i);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(i, end - i);
    const size_t dash = item.find('-');
    const std::string last = dash == std::string::npos ? item : item.substr(dash + 1);
    char* stop = nullptr;
    const long v = std::strtol(last.c_str(), &stop, 10);
    if (last.empty() || stop == last.c_str() || v < 0 || v > 1 << 20) return 0;
    highest = std::max(highest, static_cast<int>(v));
    i = end + 1;
  }
  return highest + 1;
}

}  // namespace

int PossibleCpus() {
  int n = 0;
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string line;
  if (in && std::getline(in, line)) n = CountFromCpuList(line);
  if (n <= 0) n = static_cast<int>(sysconf(_SC_NPROCESSORS_CONF));
  n = std::max(n, 1);
  return std::max(n, sched_getcpu() + 1);
}

}  // namespace kstacklab::kstack
