// The lava engine's pieces: the job definition of one boot, and what comes back in a LAVA job
// log. The engine itself (engine.h: MakeLavaEngine) submits and follows jobs with lavacli.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/error.h"

namespace kstacklab::campaign {

// The LAVA job (YAML) that boots `profile` once on plan.lava.device_type and runs the job script
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
