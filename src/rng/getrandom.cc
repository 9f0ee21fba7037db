#include "kstacklab/rng/getrandom.h"

#include <fmt/format.h>
#include <string.h>  // explicit_bzero
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace kstacklab::rng {

Status FillFromGetrandom(void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    const ssize_t got = getrandom(p, len, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return RuntimeError(
          fmt::format("getrandom(2) failed: {} (the models key and seed themselves from the "
                      "kernel's random source at boot)",
                      std::strerror(errno)));
    }
    p += got;
    len -= static_cast<size_t>(got);
  }
  return OkStatus();
}

void SecureZero(void* p, size_t n) { explicit_bzero(p, n); }

}  // namespace kstacklab::rng
