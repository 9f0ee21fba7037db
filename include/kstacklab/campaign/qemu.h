// Engine qemu, the default: a local VM (KVM where the host can boot a guest with it, else TCG),
// docs/campaign.md "Engines". Its settings are the plan's `engine:` keys; the struct is its row
// of the engine table (engines.h: Row<QemuSettings>).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

struct QemuSettings : EngineSettingsOf<QemuSettings> {
  static constexpr const char* kName = "qemu";
  static constexpr const char* kSummary = "a local VM (KVM if it boots, else TCG)";
  static constexpr ProfileFiles kFiles = ProfileFiles::kLocal;
  static constexpr bool kBootEntries = false;
  static constexpr const char* kJsonKey = "engine";  // beside the name, as before ssh and lava
  static constexpr std::array<std::string_view, 9> kYamlKeys = {
      "cpus",         "memory",       "accel", "pin",    "qemu_args",
      "boot_timeout", "init_timeout", "qemu",  "busybox"};

  // The command line's shorthand (`campaign --kernel IMG ...`) boots on this engine: its flags.
  static constexpr ShorthandFlag kShorthand[] = {
      {"accel", "--accel", "{auto,kvm,tcg}", "Shorthand: auto (default), kvm or tcg"},
      {"cpus", "--cpus", nullptr, "Shorthand: guest CPUs (default 2)"},
      {"memory", "--memory", nullptr, "Shorthand: guest memory (default 2G)"},
      {"boot_timeout", "--boot-timeout", nullptr, "Shorthand: a boot's deadline (default 30min)"},
      {"init_timeout", "--init-timeout", nullptr,
       "Shorthand: the guest's init must start by then (default 2min)"},
  };

  // "" = the kernels' architecture's: qemu-system-x86_64 or qemu-system-aarch64 (arch.h).
  std::string binary;
  // A static busybox of the kernels' architecture; "" = the host's /bin/busybox (Debian's
  // busybox-static) for the host's, else Debian's busybox-static of theirs, fetched once.
  std::string busybox;
  // The ranges of `cpus` and the two deadlines, which Read, CheckValues and the campaign
  // command's shorthand flags (through Read) all hold a plan to.
  static constexpr uint64_t kMaxCpus = 64;
  static constexpr double kMinBootTimeoutS = 10, kMaxBootTimeoutS = 7 * 86400;
  static constexpr double kMinInitTimeoutS = 5, kMaxInitTimeoutS = 3600;
  // The least `memory` a plan may give: Debian's kernels decompress into ~30-40 MiB and the
  // guest's initramfs (kstacklab, its libraries, busybox) is unpacked into RAM beside them.
  static constexpr uint64_t kMinMemoryMiB = 64;

  uint64_t cpus = 2;
  std::string memory = "2G";
  std::string accel = "auto";  // auto (KVM if it boots, else TCG), kvm, tcg
  std::vector<uint64_t> pin;   // host CPUs for QEMU's threads; empty = not pinned
  std::vector<std::string> extra_args;
  double boot_timeout_s = 1800;  // a boot's whole deadline (QEMU start to power-off)
  double init_timeout_s = 120;   // the guest's init must speak by then (KVM hang detection)

  Status Read(const PlanSection& section);
  Status CheckValues() const;
  Status Check(const CampaignPlan& plan) const;
  // Only this engine carries the configuration into its guest (/boot/config-RELEASE there): a
  // profile without one takes config-RELEASE beside its image, if there is one.
  Status CheckProfile(Profile& profile) const;
  Json ToJson() const;
  void FromJson(const Json& j);
  EngineMachine Machine() const { return {"qemu-guest", "", ""}; }
  // Whether a guest run so (BootFacts::how: "kvm" or "tcg") has an emulated CPU: TCG.
  static bool Emulated(std::string_view how);
  // `work_dir` holds its scratch files (the initramfs, the data channel); `guest_binary` is the
  // kstacklab executable copied into the guest (this one: /proc/self/exe).
  static std::unique_ptr<Engine> Make(const CampaignPlan& plan, const std::string& work_dir,
                                      const std::string& guest_binary);
};

}  // namespace kstacklab::campaign
