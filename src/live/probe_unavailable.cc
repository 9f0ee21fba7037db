// The live sampler in a build without libbpf / clang / bpftool: everything pure still works
// (fixtures, statistics); attaching says how to get the sampler.
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

struct Sampler::Impl {};

bool SamplerBuilt() { return false; }

Sampler::Sampler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sampler::~Sampler() = default;

Expected<std::unique_ptr<Sampler>> Sampler::Attach(const SamplerOptions& /*options*/) {
  return RuntimeError(
      "this kstacklab was built without the live sampler (libbpf-dev, clang or bpftool were "
      "missing at configure time): run scripts/install-deps.sh, then re-run cmake and rebuild");
}

Status Sampler::Drain(std::vector<LiveRecord>* /*out*/) {
  return RuntimeError("the live sampler is not built");
}

uint64_t Sampler::Dropped() const { return 0; }

}  // namespace kstacklab::live

namespace kstacklab::live {

std::optional<BtfDesignHints> ReadBtfDesignHints() { return std::nullopt; }

}  // namespace kstacklab::live
