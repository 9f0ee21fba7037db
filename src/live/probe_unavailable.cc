// The live probe in a build without libbpf / clang / bpftool: everything pure still works
// (fixtures, statistics); attaching says how to get the probe.
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"

namespace kstacklab::live {

struct Probe::Impl {};

bool ProbeBuilt() { return false; }

Probe::Probe(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Probe::~Probe() = default;

Expected<std::unique_ptr<Probe>> Probe::Attach(const ProbeOptions& /*options*/) {
  return RuntimeError(
      "this kstacklab was built without the live probe (libbpf-dev, clang or bpftool were "
      "missing at configure time): run scripts/install-deps.sh, then re-run cmake and rebuild");
}

Status Probe::Drain(std::vector<LiveRecord>* /*out*/) {
  return RuntimeError("the live probe is not built");
}

uint64_t Probe::Dropped() const { return 0; }

const std::string& Probe::PrngStateUnreadable() const {
  static const std::string kNone;
  return kNone;
}

}  // namespace kstacklab::live

namespace kstacklab::live {

std::optional<BtfDesignHints> ReadBtfDesignHints() { return std::nullopt; }

}  // namespace kstacklab::live
