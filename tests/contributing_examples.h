// The worked examples of CONTRIBUTING.md, compiled: tests/contributing_test.cc checks that each
// block of the guide is this code, verbatim, and that the rows it adds reach every consumer.
// Included inside namespace kstacklab::kstack (where the guide's code goes).
#pragma once

// --- "Adding a kstack offset policy" ------------------------------------------------------------

// policies.h, next to the other designs (the cpu source stays a template parameter, so tests
// and attack models can inject it; the named struct is the production configuration).
template <class Cpu = SchedCpu>
class CrngU16EntryPolicy : public OffsetSteps<CrngU16EntryPolicy<Cpu>> {
 public:
  explicit CrngU16EntryPolicy(std::shared_ptr<rng::Crng> crng, Cpu cpu = Cpu{})
      : crng_(std::move(crng)), cpu_(cpu) {}
  uint32_t Entry() { return crng_->RawGetRandomU16(cpu_.Cpu()); }

 private:
  std::shared_ptr<rng::Crng> crng_;
  [[no_unique_address]] Cpu cpu_;
};

struct CrngU16EntryPrngPolicy : CrngU16EntryPolicy<> {
  static constexpr const char* kName = "crng-u16-entry";
  static constexpr const char* kSummary = "a lockless get_random_u16() at every syscall entry";
  // Which kernels run it and how the model was checked (list, entropy and docs/models.md).
  static constexpr KernelVersions kKernels{.mainline = "never: an example design",
                                           .stable = "none",
                                           .verified = "crng: as legacy-arm64-nolock"};
  // What an attacker may assume of it, and the design on simulated CPUs (the attacks use both).
  static constexpr AttackFacts kFacts{.generator = Generator::kCrng};
  static Expected<SimPolicy> Simulate(const SimWorld& world) {
    uint8_t key[rng::kChachaKeySize];
    world.dice->Fill(key, sizeof key);
    return SimulateSteps(std::make_shared<CrngU16EntryPolicy<InjectedCpu>>(
        std::make_shared<rng::Crng>(world.cpus, key), InjectedCpu{world.script}));
  }
  using CrngU16EntryPolicy::CrngU16EntryPolicy;
};

// --- "Adding a random source" ------------------------------------------------------------------

struct CrngU32Source : CrngSource<&rng::Crng::GetRandomU32, 9> {  // ceil(200 / 24) = 9
  static constexpr const char* kName = "crng-u32";
  static constexpr const char* kSummary = "get_random_u32() on this CPU, locked (refill / 24)";
  using CrngSource::CrngSource;
};
