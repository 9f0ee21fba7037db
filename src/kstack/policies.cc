#include "kstacklab/kstack/policies.h"

#include <fmt/format.h>
#include <string.h>  // explicit_bzero
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace kstacklab::kstack {

Status FillFromGetrandom(void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    const ssize_t got = getrandom(p, len, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return RuntimeError(
          fmt::format("getrandom(2) failed: {} (the kstack models need the "
                      "kernel's random source to key themselves at boot)",
                      std::strerror(errno)));
    }
    p += got;
    len -= static_cast<size_t>(got);
  }
  return OkStatus();
}

Expected<std::shared_ptr<rng::Crng>> BootCrng(int num_cpus) {
  uint8_t key[rng::kChachaKeySize];
  KSTACKLAB_RETURN_IF_ERROR(FillFromGetrandom(key, sizeof key));
  auto crng = std::make_shared<rng::Crng>(num_cpus, key);
  explicit_bzero(key, sizeof key);
  return crng;
}

Expected<std::unique_ptr<LegacyX86Policy>> LegacyX86Policy::Boot() {
  return std::make_unique<LegacyX86Policy>(PossibleCpus(), TscRand{});
}

namespace {
template <class P>
Expected<std::unique_ptr<P>> BootWithCrng() {
  auto crng = BootCrng(PossibleCpus());
  if (!crng.ok()) return crng.error();
  return std::make_unique<P>(std::move(*crng));
}
}  // namespace

Expected<std::unique_ptr<LegacyArm64Policy>> LegacyArm64Policy::Boot() {
  return BootWithCrng<LegacyArm64Policy>();
}
Expected<std::unique_ptr<LegacyArm64NoLockPolicy>> LegacyArm64NoLockPolicy::Boot() {
  return BootWithCrng<LegacyArm64NoLockPolicy>();
}
Expected<std::unique_ptr<LegacyArm64U8Policy>> LegacyArm64U8Policy::Boot() {
  return BootWithCrng<LegacyArm64U8Policy>();
}
Expected<std::unique_ptr<PerTaskPolicy>> PerTaskPolicy::Boot() {
  return BootWithCrng<PerTaskPolicy>();
}
Expected<std::unique_ptr<BufferedPrngPolicy>> BufferedPrngPolicy::Boot() {
  return BootWithCrng<BufferedPrngPolicy>();
}

Expected<std::unique_ptr<SiphashPolicy>> SiphashPolicy::Boot() {
  uint8_t key_bytes[16];
  KSTACKLAB_RETURN_IF_ERROR(FillFromGetrandom(key_bytes, sizeof key_bytes));
  const rng::SiphashKey key = rng::SiphashKeyFromBytes(key_bytes);
  explicit_bzero(key_bytes, sizeof key_bytes);
  std::vector<uint64_t> tweaks(static_cast<size_t>(PossibleCpus()));
  KSTACKLAB_RETURN_IF_ERROR(FillFromGetrandom(tweaks.data(), tweaks.size() * sizeof(uint64_t)));
  return std::make_unique<SiphashPolicy>(key, tweaks);
}

Expected<std::unique_ptr<PercpuPrngPolicy>> PercpuPrngPolicy::Boot() {
  std::vector<rng::PrandomState> states(static_cast<size_t>(PossibleCpus()));
  KSTACKLAB_RETURN_IF_ERROR(rng::PrandomSeedFullState(states));  // the late_initcall
  return std::make_unique<PercpuPrngPolicy>(states);
}

const PolicyDef* FindPolicy(std::string_view name) {
  for (const PolicyDef& p : kPolicies) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

}  // namespace kstacklab::kstack
