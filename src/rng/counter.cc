#include "kstacklab/rng/counter.h"

#include "kstacklab/common/error.h"

namespace kstacklab::rng {

CounterSource::CounterSource(uint64_t counter_hz, uint64_t resolution_hz)
    : counter_hz_(counter_hz), resolution_hz_(resolution_hz) {
  KSTACKLAB_CHECK(counter_hz > 0);
  KSTACKLAB_CHECK(resolution_hz <= counter_hz);
  quantise_ = resolution_hz != 0 && resolution_hz != counter_hz;
  if (quantise_) {
    mult_ = static_cast<uint64_t>((Uint128{resolution_hz} << 64) / counter_hz);
  }
}

}  // namespace kstacklab::rng
