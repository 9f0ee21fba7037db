#include "kstacklab/kstack/percpu.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>

#include "kstacklab/common/cpu_list.h"

namespace kstacklab::kstack {

int PossibleCpus() {
  int n = 0;
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string line;
  if (in && std::getline(in, line)) {
    if (std::optional<CpuListInfo> cpus = ParseCpuList(line)) n = cpus->highest + 1;
  }
  if (n <= 0) n = static_cast<int>(sysconf(_SC_NPROCESSORS_CONF));
  n = std::max(n, 1);
  return std::max(n, sched_getcpu() + 1);
}

void PreemptModel::Schedule() {
  ++schedules;
  count = count | kNeedReschedInverted;  // the reschedule is done: none pending
  sched_yield();
}

}  // namespace kstacklab::kstack
