// Boot-time key material for the models: getrandom(2) and the one way key bytes are wiped.
// Not for timed regions (a syscall, may block until the kernel CRNG is ready).
#pragma once

#include <cstddef>

#include "kstacklab/common/error.h"

namespace kstacklab::rng {

// getrandom(2) into buf (flags 0), retrying short reads and EINTR. RuntimeError naming the
// errno otherwise; buf is then partly written.
[[nodiscard]] Status FillFromGetrandom(void* buf, size_t len);

// memzero_explicit() (include/linux/string.h): zeroes key material that is about to go out of
// scope; explicit_bzero(3), so the compiler cannot drop it as a dead store.
void SecureZero(void* p, size_t n);

}  // namespace kstacklab::rng
