// Engine lava (docs/campaign.md "Engine lava"): one LAVA job per boot, submitted and followed with
// lavacli. Its settings (the struct is its row of the engine table, engines.h), the job definition
// of one boot, and what comes back in a LAVA job log.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/channel.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/common/error.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {

struct LavaSettings : EngineSettingsOf<LavaSettings> {
  static constexpr const char* kName = "lava";
  static constexpr const char* kSummary = "one LAVA job per boot, with lavacli";
  static constexpr ProfileFiles kFiles = ProfileFiles::kUrls;  // the lab fetches them per job
  static constexpr bool kBootEntries = false;
  static constexpr const char* kJsonKey = "lava";
  static constexpr std::array<std::string_view, 10> kYamlKeys = {
      "device_type",   "identity", "boot_method", "deploy_to",   "rootfs",
      "kstacklab_url", "prompts",  "tags",        "job_timeout", "lavacli"};

  std::string device_type = "qemu";  // qemu, or a bootloader device type (x86, ...)
  std::string identity;              // lavacli -i IDENTITY; "" = lavacli's default
  std::string boot_method;           // boot action method; default qemu / grub
  std::string deploy_to;             // deploy action target; default tmpfs / tftp
  std::string rootfs;                // URL of the root filesystem (ramdisk or nfsrootfs)
  std::string kstacklab_url;         // URL the DUT downloads kstacklab from ("" = on PATH)
  std::vector<std::string> prompts = {"/ #", "root@"};
  std::vector<std::string> tags;  // device tags
  double job_timeout_s = 7200;    // the job's `timeouts: job`
  std::string lavacli = "lavacli";

  Status Read(const PlanSection& section);
  Status CheckValues() const;
  Status Check(const CampaignPlan& plan) const;
  // The files are URLs the lab fetches; the release is the plan's, if given.
  Status CheckProfile(Profile& profile) const;
  Json ToJson() const;
  void FromJson(const Json& j);
  EngineMachine Machine() const { return {"lava-" + device_type, "", ""}; }
  static std::unique_ptr<Engine> Make(const CampaignPlan& plan, const std::string& work_dir,
                                      const std::string& guest_binary);
};

// The LAVA job (YAML) that boots `profile` once on the plan's device_type and runs the job script
// (remote.h) in an inline test definition. On `qemu` the profile's command line is the kernel
// image's -append argument; on a bootloader device type it is `context: extra_kernel_args`.
// `boot` names the job ("kstacklab off boot 1"). Written with yaml-cpp's emitter, so every value
// is quoted as YAML needs; shell words in the test steps are quoted by ShellQuote.
// On qemu without a rootfs the initrd is `format: cpio.newc` with `overlays: {lava: true}` (LAVA
// adds its test overlay into it) and its `compression` from LavaCompression.
std::string LavaJobYaml(const CampaignPlan& plan, const Profile& profile, uint64_t boot);

// LAVA's `compression` of an image at `url`, from the name's suffix (query and fragment ignored):
// gz (.gz, .tgz), xz, zstd (.zst, .zstd), bz2; "" for any other name (read as uncompressed).
std::string LavaCompression(std::string_view url);

// A LAVA job log as `lavacli jobs logs --raw` prints it (the server's output.yaml): one YAML flow
// mapping per line, `- {"dt": ..., "lvl": ..., "msg": ...}`. (lava-run itself prints each record
// on stderr without the leading "- "; the server adds it as it stores the line.)
struct LavaTestCase {
  std::string definition;
  std::string name;
  std::string result;  // pass, fail, skip, unknown
  std::string measurement;
  std::string units;
};
struct LavaLog {
  std::string target;  // the DUT's output (lvl "target"), one line per record
  std::vector<LavaTestCase> results;
  std::vector<std::string> errors;  // lvl "error" messages
  // Why the dispatcher failed the job: the lava/job result's "ERROR_TYPE error: ERROR_MSG" ("" when
  // the job passed or the record says nothing). lava-dispatcher's own error record holds only
  // the generic help for the error type ("JobError: Your job cannot terminate cleanly.").
  std::string job_error;
  size_t bad_lines = 0;  // lines that are not such records (skipped)
};
// Never throws; a line that is not a record is counted in bad_lines and skipped.
LavaLog ParseLavaLog(const std::string& text);

// A LAVA log line longer than this is not read (counted in bad_lines).
inline constexpr size_t kMaxLavaLineBytes = size_t{1} << 20;

// The log in the file at `path`, read in pieces whatever its length (memory: a line, the
// channel's caps): as ParseLavaLog, except that the DUT's output goes straight into a
// ChannelReader (*channel: the kstacklab files between the markers) and `target` stays empty.
// RuntimeError when the file cannot be read.
Expected<LavaLog> ParseLavaLogFile(const std::string& path, ChannelData* channel);

// `lavacli jobs submit` output: the job id (the last line of digits), or "" when there is none.
std::string LavaJobId(const std::string& submit_output);

// Writes DIR/jobs/PROFILE-N.yaml for every boot the plan may make (MaxBlocks per profile) and
// returns their paths: `campaign --dry-run`. Runtime error when a file cannot be written.
Expected<std::vector<std::string>> WriteLavaJobs(const std::string& dir, const CampaignPlan& plan);

}  // namespace kstacklab::campaign
