#include "kstacklab/common/cpu_list.h"

#include <algorithm>
#include <charconv>
#include <string_view>

namespace kstacklab {

namespace {

// One decimal id at the start of `s` (digits only), advancing `s` past it; nullopt otherwise.
std::optional<long> LeadingId(std::string_view& s) {
  long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data() || v < 0) return std::nullopt;
  s.remove_prefix(static_cast<size_t>(end - s.data()));
  return v;
}

}  // namespace

std::optional<CpuListInfo> ParseCpuList(std::string_view list) {
  constexpr long kMaxCpuId = 1 << 20;  // far above any NR_CPUS; keeps the sums in int
  CpuListInfo out;
  out.highest = -1;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    std::string_view piece = list.substr(pos, comma - pos);
    const std::optional<long> a = LeadingId(piece);
    if (!a) return std::nullopt;
    long b = *a;
    if (!piece.empty() && piece.front() == '-') {
      piece.remove_prefix(1);
      const std::optional<long> end = LeadingId(piece);
      if (!end || *end < *a) return std::nullopt;
      b = *end;
    }
    if (!piece.empty() || b > kMaxCpuId || out.count + (b - *a + 1) > kMaxCpuId) {
      return std::nullopt;
    }
    out.count += static_cast<int>(b - *a + 1);
    out.highest = std::max(out.highest, static_cast<int>(b));
    pos = comma + 1;
  }
  if (out.count <= 0) return std::nullopt;
  return out;
}

std::optional<int> CountCpuList(std::string_view list) {
  std::optional<CpuListInfo> info = ParseCpuList(list);
  if (!info) return std::nullopt;
  return info->count;
}

}  // namespace kstacklab
