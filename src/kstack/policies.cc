#include "kstacklab/kstack/policies.h"

#include <pthread.h>

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

Expected<rng::SiphashKey> BootSiphashKey() {
  uint8_t key_bytes[16];
  KSTACKLAB_RETURN_IF_ERROR(rng::FillFromGetrandom(key_bytes, sizeof key_bytes));
  const rng::SiphashKey key = rng::SiphashKeyFromBytes(key_bytes);
  rng::SecureZero(key_bytes, sizeof key_bytes);
  return key;
}

Expected<std::unique_ptr<SiphashPolicy>> SiphashPolicy::Boot() {
  auto key = BootSiphashKey();
  if (!key.ok()) return key.error();
  std::vector<uint64_t> tweaks(static_cast<size_t>(PossibleCpus()));
  KSTACKLAB_RETURN_IF_ERROR(
      rng::FillFromGetrandom(tweaks.data(), tweaks.size() * sizeof(uint64_t)));
  return std::make_unique<SiphashPolicy>(*key, tweaks);
}

std::string KernelsLine(const KernelVersions& k) {
  return std::string("mainline: ") + k.mainline + "; stable: " + k.stable;
}

void ResetTaskStateAtFork(void (*task_init)()) {
  // Fails only with ENOMEM for the handler list; a child would then keep its parent's state.
  KSTACKLAB_CHECK(::pthread_atfork(nullptr, nullptr, task_init) == 0);
}

Expected<std::vector<rng::PrandomState>> BootPrandomStates() {
  std::vector<rng::PrandomState> states(static_cast<size_t>(PossibleCpus()));
  KSTACKLAB_RETURN_IF_ERROR(rng::PrandomSeedFullState(states));  // the late_initcall
  return states;
}

Expected<std::unique_ptr<PercpuPrngPolicy>> PercpuPrngPolicy::Boot() {
  auto states = BootPrandomStates();
  if (!states.ok()) return states.error();
  return std::make_unique<PercpuPrngPolicy>(*states);
}

Expected<std::unique_ptr<PercpuPrngIrqsoffPolicy>> PercpuPrngIrqsoffPolicy::Boot() {
  auto states = BootPrandomStates();
  if (!states.ok()) return states.error();
  return std::make_unique<PercpuPrngIrqsoffPolicy>(*states);
}

const PolicyDef* FindPolicy(std::string_view name, std::span<const PolicyDef> table) {
  for (const PolicyDef& p : table) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

}  // namespace kstacklab::kstack
