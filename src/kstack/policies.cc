#include "kstacklab/kstack/policies.h"

#include <vector>

#include "kstacklab/rng/getrandom.h"

namespace kstacklab::kstack {

Expected<std::shared_ptr<rng::Crng>> BootCrng(int num_cpus) {
  uint8_t key[rng::kChachaKeySize];
  KSTACKLAB_RETURN_IF_ERROR(rng::FillFromGetrandom(key, sizeof key));
  auto crng = std::make_shared<rng::Crng>(num_cpus, key);
  rng::SecureZero(key, sizeof key);
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
  KSTACKLAB_RETURN_IF_ERROR(rng::FillFromGetrandom(key_bytes, sizeof key_bytes));
  const rng::SiphashKey key = rng::SiphashKeyFromBytes(key_bytes);
  rng::SecureZero(key_bytes, sizeof key_bytes);
  std::vector<uint64_t> tweaks(static_cast<size_t>(PossibleCpus()));
  KSTACKLAB_RETURN_IF_ERROR(
      rng::FillFromGetrandom(tweaks.data(), tweaks.size() * sizeof(uint64_t)));
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
