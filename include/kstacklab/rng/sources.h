// The table of model random sources: one row per source, used by `kstacklab rng` help text.
#pragma once

#include <span>

namespace kstacklab::rng {

struct RngSourceInfo {
  const char* name;     // as accepted by `kstacklab rng NAME`
  const char* summary;  // one line: what it models, state size, period, cryptographic or not
};

std::span<const RngSourceInfo> RngSources();

}  // namespace kstacklab::rng
