// A kernel CPU list (Documentation/admin-guide/cputopology.rst: "0-3,6,8-9"), as sysfs prints
// /sys/devices/system/cpu/{possible,online} and the environment capture reads them. In common/,
// so the models (kstack/, the possible CPUs) need not link the environment capture.
#pragma once

#include <optional>
#include <string_view>

namespace kstacklab {

// How many CPUs a list names and the highest id. ParseCpuList gives nullopt when the list is
// malformed or implausible: an empty list or item, a non-number, a negative id, a range whose
// end is below its start, trailing characters, an id or a total count above 2^20.
struct CpuListInfo {
  int count = 0;    // "0-3,6,8-9" -> 7
  int highest = 0;  // "0-3,6,8-9" -> 9
};
std::optional<CpuListInfo> ParseCpuList(std::string_view list);

// ParseCpuList(list)->count; nullopt when malformed.
std::optional<int> CountCpuList(std::string_view list);

}  // namespace kstacklab
