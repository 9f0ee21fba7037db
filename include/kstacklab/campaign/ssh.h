// Engine ssh (docs/campaign.md "Engine ssh"): a machine reached with the system OpenSSH client
// (the user's ~/.ssh/config, keys and agent), switched to each profile's kernel by kexec or by a
// reboot into a boot entry. The struct is its row of the engine table (engines.h).
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

struct SshSettings : EngineSettingsOf<SshSettings> {
  static constexpr const char* kName = "ssh";
  static constexpr const char* kSummary = "a real machine over SSH, switched by kexec or reboot";
  static constexpr ProfileFiles kFiles = ProfileFiles::kLocal;
  static constexpr bool kBootEntries = true;
  static constexpr const char* kJsonKey = "ssh";
  static constexpr std::array<std::string_view, 13> kYamlKeys = {
      "host",       "port",       "user",           "ssh_config", "switch",          "sudo",
      "cmdline",    "remote_dir", "reboot_command", "recover",    "connect_timeout", "boot_timeout",
      "run_timeout"};

  std::string host;  // required
  uint64_t port = 22;
  std::string user = "root";
  std::string ssh_config;             // ssh -F FILE; "" = the user's own configuration
  std::string switch_mode = "kexec";  // kexec, reboot, alternate (kexec on odd boots, reboot even)
  bool sudo = false;                  // prefix the machine's privileged commands with `sudo -n`
  std::string cmdline;  // kexec: the machine's own arguments (root=...) before each profile's
  std::string remote_dir = "/var/tmp/kstacklab";  // where kernels and the binary are copied
  // reboot: words run on the machine before `reboot`, "{entry}" standing for the profile's
  // boot_entry; default grub-reboot {entry}.
  std::vector<std::string> reboot_command = {"grub-reboot", "{entry}"};
  std::vector<std::string> recover;  // run here (argv) when the machine does not come back
  double connect_timeout_s = 10;     // ssh -o ConnectTimeout
  double boot_timeout_s = 600;       // switch to SSH answering from the new kernel
  double run_timeout_s = 7200;       // the run (and entropy) on the machine

  Status Read(const PlanSection& section);
  Status CheckValues() const;
  Status Check(const CampaignPlan& plan) const;
  // The machine's own configuration is read: a profile carries none in.
  Status CheckProfile(Profile& profile) const;
  Json ToJson() const;
  void FromJson(const Json& j);
  EngineMachine Machine() const { return {host, user, host}; }
  // `guest_binary` is copied to the machine.
  static std::unique_ptr<Engine> Make(const CampaignPlan& plan, const std::string& work_dir,
                                      const std::string& guest_binary);
};

}  // namespace kstacklab::campaign
