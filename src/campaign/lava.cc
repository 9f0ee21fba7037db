// The lava engine: one LAVA job per boot, submitted and followed with lavacli (the user's identity
// from lavacli's own configuration), the result extracted from the job's log.
#include "kstacklab/campaign/lava.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kstacklab/campaign/arch.h"
#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/engine_events.h"
#include "kstacklab/campaign/engines.h"
#include "kstacklab/campaign/process.h"
#include "kstacklab/campaign/remote.h"
#include "kstacklab/common/fileio.h"
#include "kstacklab/common/text.h"
#include "kstacklab/results/json.h"

namespace kstacklab::campaign {
namespace {

constexpr const char* kDutDir = "/tmp/kstacklab";
// lavacli's own deadlines: a submit, show or logs call; and the cancel of a job left behind
// when the campaign is stopped (short: the user is waiting for the campaign to end).
constexpr double kLavacliTimeoutS = 300;
constexpr double kLogsTimeoutS = 600;
constexpr double kCancelTimeoutS = 10;

// A LAVA timeout: whole minutes, at least one.
void Minutes(YAML::Emitter& y, double seconds) {
  y << YAML::BeginMap << YAML::Key << "minutes" << YAML::Value
    << std::max<int64_t>(1, static_cast<int64_t>(std::ceil(seconds / 60))) << YAML::EndMap;
}

// Base64 (RFC 4648) of `data`: the job script travels to the DUT as one word of a test step.
std::string Base64(const std::string& data) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < data.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(data[i]) << 16) |
                       (static_cast<uint8_t>(data[i + 1]) << 8) | static_cast<uint8_t>(data[i + 2]);
    for (int s : {18, 12, 6, 0}) out += k[(v >> s) & 63];
  }
  if (i < data.size()) {
    uint32_t v = static_cast<uint8_t>(data[i]) << 16;
    if (i + 1 < data.size()) v |= static_cast<uint8_t>(data[i + 1]) << 8;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < data.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

// The inline test definition's steps: fetch kstacklab if the plan says where, write the job
// script, run it with the profile's values as quoted words.
std::vector<std::string> TestSteps(const CampaignPlan& plan, const Profile& p) {
  const std::string dir = kDutDir;
  std::vector<std::string> steps = {ShellCommand({"mkdir", "-p", dir})};
  std::string kstacklab = "kstacklab";
  if (!SettingsOf<LavaSettings>(plan).kstacklab_url.empty()) {
    kstacklab = dir + "/kstacklab";
    steps.push_back(
        ShellCommand({"sh", "-c", "wget -q -O \"$1\" \"$2\" || curl -fsSL -o \"$1\" \"$2\"",
                      "fetch", kstacklab, SettingsOf<LavaSettings>(plan).kstacklab_url}));
    steps.push_back(ShellCommand({"chmod", "+x", kstacklab}));
  }
  steps.push_back(fmt::format("echo {} | base64 -d > {}/job.sh", Base64(JobScript()), dir));
  std::vector<std::string> words = {"sh", dir + "/job.sh"};
  for (const std::string& a : JobScriptArgs(kstacklab, dir + "/out", p, plan.run_args,
                                            plan.strength, plan.strength_samples)) {
    words.push_back(a);
  }
  // The first argument after the script is $0 for `sh -c`, but a script file takes its own
  // name as $0: drop the placeholder so KSTACKLAB is $1 either way.
  words.erase(words.begin() + 2);
  steps.push_back(ShellCommand(words));
  return steps;
}

void EmitTest(YAML::Emitter& y, const CampaignPlan& plan, const Profile& p) {
  y << YAML::BeginMap << YAML::Key << "test" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "timeout" << YAML::Value;
  Minutes(y, SettingsOf<LavaSettings>(plan).job_timeout_s * 0.75);  // deploy and boot take the rest
  y << YAML::Key << "definitions" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  y << YAML::Key << "repository" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "format"
    << YAML::Value << "Lava-Test Test Definition 1.0" << YAML::Key << "name" << YAML::Value
    << "kstacklab" << YAML::Key << "description" << YAML::Value
    << "kstacklab run in one boot of a campaign" << YAML::EndMap;
  y << YAML::Key << "run" << YAML::Value << YAML::BeginMap << YAML::Key << "steps" << YAML::Value
    << YAML::BeginSeq;
  for (const std::string& s : TestSteps(plan, p)) y << YAML::DoubleQuoted << s;
  y << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  y << YAML::Key << "from" << YAML::Value << "inline" << YAML::Key << "name" << YAML::Value
    << "kstacklab" << YAML::Key << "path" << YAML::Value << "inline/kstacklab.yaml";
  y << YAML::EndMap << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
}

// The profile's architecture row (CheckPlan gave it one; a plan not checked is x86_64's).
const Architecture& ProfileArchitecture(const Profile& p) {
  const Architecture* a = FindArchitecture(p.arch.empty() ? "x86_64" : p.arch);
  KSTACKLAB_CHECK(a != nullptr);
  return *a;
}

void EmitUrl(YAML::Emitter& y, const std::string& key, const std::string& url,
             const std::string& image_arg = "") {
  y << YAML::Key << key << YAML::Value << YAML::BeginMap;
  if (!image_arg.empty()) y << YAML::Key << "image_arg" << YAML::Value << image_arg;
  y << YAML::Key << "url" << YAML::Value << url << YAML::EndMap;
}

}  // namespace

std::string LavaCompression(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  auto ends = [url](std::string_view suffix) {
    return url.size() > suffix.size() && url.substr(url.size() - suffix.size()) == suffix;
  };
  if (ends(".gz") || ends(".tgz")) return "gz";
  if (ends(".xz")) return "xz";
  if (ends(".zst") || ends(".zstd")) return "zstd";
  if (ends(".bz2")) return "bz2";
  return "";
}

namespace {

// The qemu job's initramfs. Without a rootfs it is all the DUT has, so LAVA's test overlay
// (lava-test-runner, the test definition) goes into it: `format: cpio.newc` with `overlays:
// {lava: true}` makes lava-dispatcher unpack the image, add the overlay and repack it. Without
// that, a tmpfs deploy puts the overlay on a qcow2 disk built with libguestfs, which the DUT must
// mount from /dev/disk/by-uuid: a busybox initramfs has no udev to make that link (and the
// dispatcher needs a working libguestfs appliance).
void EmitInitrd(YAML::Emitter& y, const std::string& url, bool overlay) {
  y << YAML::Key << "initrd" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "image_arg" << YAML::Value << "-initrd {initrd}";
  y << YAML::Key << "url" << YAML::Value << url;
  if (overlay) {
    if (const std::string c = LavaCompression(url); !c.empty()) {
      y << YAML::Key << "compression" << YAML::Value << c;
    }
    y << YAML::Key << "format" << YAML::Value << "cpio.newc";
    y << YAML::Key << "overlays" << YAML::Value << YAML::BeginMap << YAML::Key << "lava"
      << YAML::Value << true << YAML::EndMap;
  }
  y << YAML::EndMap;
}

// deploy + boot on the qemu device type: the command line goes into the kernel's -append.
void EmitQemu(YAML::Emitter& y, const CampaignPlan& plan, const Profile& p) {
  const LavaSettings& l = SettingsOf<LavaSettings>(plan);
  y << YAML::BeginMap << YAML::Key << "deploy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "to" << YAML::Value << (l.deploy_to.empty() ? "tmpfs" : l.deploy_to);
  y << YAML::Key << "timeout" << YAML::Value;
  Minutes(y, 900);
  y << YAML::Key << "images" << YAML::Value << YAML::BeginMap;
  const Architecture& arch = ProfileArchitecture(p);
  const std::string console = fmt::format("console={}", arch.serial_console);
  const std::string append = p.cmdline.empty() ? console : console + " " + p.cmdline;
  EmitUrl(y, "kernel", p.kernel, fmt::format("-kernel {{kernel}} -append \"{}\"", append));
  if (!p.initrd.empty()) EmitInitrd(y, p.initrd, l.rootfs.empty());
  if (!l.rootfs.empty()) EmitUrl(y, "rootfs", l.rootfs, "-drive format=raw,file={rootfs}");
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  y << YAML::BeginMap << YAML::Key << "boot" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "method" << YAML::Value << (l.boot_method.empty() ? "qemu" : l.boot_method);
  y << YAML::Key << "media" << YAML::Value << "tmpfs";
  y << YAML::Key << "timeout" << YAML::Value;
  Minutes(y, 600);
  y << YAML::Key << "prompts" << YAML::Value << l.prompts;
  y << YAML::EndMap << YAML::EndMap;
}

// deploy + boot on a bootloader device type (tftp, then ipxe or grub): the command line goes
// into context: extra_kernel_args (set in the job's context, LavaJobYaml).
void EmitBootloader(YAML::Emitter& y, const CampaignPlan& plan, const Profile& p) {
  const LavaSettings& l = SettingsOf<LavaSettings>(plan);
  y << YAML::BeginMap << YAML::Key << "deploy" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "to" << YAML::Value << (l.deploy_to.empty() ? "tftp" : l.deploy_to);
  y << YAML::Key << "timeout" << YAML::Value;
  Minutes(y, 900);
  // A bootloader boots an arm64 Image with booti (`type: image`), uncompressed: LAVA inflates
  // an Image.gz it is told is compressed.
  const Architecture& arch = ProfileArchitecture(p);
  y << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
  if (*arch.lava_kernel_type != '\0') {
    y << YAML::Key << "type" << YAML::Value << arch.lava_kernel_type;
    if (const std::string c = LavaCompression(p.kernel); !c.empty()) {
      y << YAML::Key << "compression" << YAML::Value << c;
    }
  }
  y << YAML::Key << "url" << YAML::Value << p.kernel << YAML::EndMap;
  if (!p.initrd.empty()) EmitUrl(y, "ramdisk", p.initrd);
  if (!l.rootfs.empty()) EmitUrl(y, "nfsrootfs", l.rootfs);
  y << YAML::EndMap << YAML::EndMap;
  y << YAML::BeginMap << YAML::Key << "boot" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "method" << YAML::Value << (l.boot_method.empty() ? "ipxe" : l.boot_method);
  y << YAML::Key << "commands" << YAML::Value << (l.rootfs.empty() ? "ramdisk" : "nfs");
  y << YAML::Key << "timeout" << YAML::Value;
  Minutes(y, 600);
  y << YAML::Key << "prompts" << YAML::Value << l.prompts;
  y << YAML::EndMap << YAML::EndMap;
}

}  // namespace

std::string LavaJobYaml(const CampaignPlan& plan, const Profile& p, uint64_t boot) {
  const LavaSettings& l = SettingsOf<LavaSettings>(plan);
  const bool qemu = l.device_type == "qemu";
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "device_type" << YAML::Value << l.device_type;
  y << YAML::Key << "job_name" << YAML::Value
    << fmt::format("kstacklab campaign: profile {} boot {}", p.name, boot);
  if (!l.tags.empty()) y << YAML::Key << "tags" << YAML::Value << l.tags;
  y << YAML::Key << "priority" << YAML::Value << "medium";
  y << YAML::Key << "visibility" << YAML::Value << "public";
  y << YAML::Key << "timeouts" << YAML::Value << YAML::BeginMap << YAML::Key << "job"
    << YAML::Value;
  Minutes(y, l.job_timeout_s);
  y << YAML::Key << "connection" << YAML::Value;
  Minutes(y, 120);
  y << YAML::EndMap;
  y << YAML::Key << "context" << YAML::Value << YAML::BeginMap;
  if (qemu) {
    const Architecture& arch = ProfileArchitecture(p);
    y << YAML::Key << "arch" << YAML::Value << arch.lava_arch;
    if (*arch.lava_machine != '\0') y << YAML::Key << "machine" << YAML::Value << arch.lava_machine;
    if (*arch.lava_cpu != '\0') y << YAML::Key << "cpu" << YAML::Value << arch.lava_cpu;
  } else if (!p.cmdline.empty()) {
    y << YAML::Key << "extra_kernel_args" << YAML::Value << p.cmdline;
  }
  y << YAML::EndMap;
  y << YAML::Key << "actions" << YAML::Value << YAML::BeginSeq;
  if (qemu) {
    EmitQemu(y, plan, p);
  } else {
    EmitBootloader(y, plan, p);
  }
  EmitTest(y, plan, p);
  y << YAML::EndSeq << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

namespace {

constexpr size_t kMaxLavaErrors = 100;       // the last error records kept
constexpr size_t kMaxLavaErrorBytes = 4096;  // of the job's error message kept

// One line of a LAVA log into `log`; the DUT's output (a target record's msg, with a newline) to
// `target`.
template <class Target>
void ParseLavaLine(const std::string& line, LavaLog& log, Target&& target) {
  if (Trim(line).empty()) return;
  if (YamlFlowDepth(line) > kMaxYamlFlowDepth) {  // a record nests 3 deep; refuse a bomb
    ++log.bad_lines;
    return;
  }
  try {
    const YAML::Node doc = YAML::Load(line);
    if (!doc.IsSequence() || doc.size() != 1 || !doc[0].IsMap() || !doc[0]["lvl"] ||
        !doc[0]["lvl"].IsScalar() || !doc[0]["msg"]) {
      ++log.bad_lines;
      return;
    }
    const YAML::Node rec = doc[0];
    const std::string lvl = rec["lvl"].Scalar();
    const YAML::Node msg = rec["msg"];
    if (lvl == "target" && msg.IsScalar()) {
      target(msg.Scalar() + "\n");
    } else if (lvl == "error" && msg.IsScalar()) {
      if (log.errors.size() == kMaxLavaErrors) log.errors.erase(log.errors.begin());
      log.errors.push_back(msg.Scalar());
    } else if (lvl == "results" && msg.IsMap()) {
      auto field = [&msg](const char* k) {
        return msg[k] && msg[k].IsScalar() ? msg[k].Scalar() : std::string();
      };
      log.results.push_back({field("definition"), field("case"), field("result"),
                             field("measurement"), field("units")});
      if (field("definition") == "lava" && field("case") == "job" && field("result") == "fail" &&
          !field("error_msg").empty()) {
        const std::string type = field("error_type");
        log.job_error = Trim((type.empty() ? "" : type + " error: ") + field("error_msg"))
                            .substr(0, kMaxLavaErrorBytes);
      }
    }
  } catch (const YAML::Exception&) {
    ++log.bad_lines;
  }
}

}  // namespace

LavaLog ParseLavaLog(const std::string& text) {
  LavaLog log;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ParseLavaLine(text.substr(pos, end - pos), log,
                  [&log](const std::string& t) { log.target += t; });
    pos = end + 1;
  }
  return log;
}

Expected<LavaLog> ParseLavaLogFile(const std::string& path, ChannelData* channel) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return RuntimeError(fmt::format("cannot read '{}'", EscapeControl(path)));
  LavaLog log;
  ChannelReader reader(ChannelFileNames());
  auto feed = [&reader](const std::string& t) { reader.Feed(t); };
  std::string line;
  bool too_long = false;
  std::string buf(size_t{1} << 16, '\0');
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    for (const char c : std::string_view(buf.data(), static_cast<size_t>(in.gcount()))) {
      if (c != '\n') {
        if (line.size() < kMaxLavaLineBytes) {
          line += c;
        } else {
          too_long = true;
        }
        continue;
      }
      if (too_long) {
        ++log.bad_lines;
      } else {
        ParseLavaLine(line, log, feed);
      }
      line.clear();
      too_long = false;
    }
  }
  if (too_long) {
    ++log.bad_lines;
  } else if (!line.empty()) {
    ParseLavaLine(line, log, feed);
  }
  *channel = reader.Finish();
  return log;
}

std::string LavaJobId(const std::string& submit_output) {
  std::string id;
  for (const std::string& raw : Split(submit_output, '\n')) {
    const std::string line = Trim(raw);
    if (!line.empty() && line.size() <= 20 &&
        line.find_first_not_of("0123456789.") == std::string::npos && line[0] != '.') {
      id = line;
    }
  }
  return id;
}

Expected<std::vector<std::string>> WriteLavaJobs(const std::string& dir, const CampaignPlan& plan) {
  const std::string jobs = dir + "/jobs";
  if (mkdir(jobs.c_str(), 0755) != 0 && errno != EEXIST) {
    return RuntimeError(
        fmt::format("cannot create '{}': {}", EscapeControl(jobs), strerror(errno)));
  }
  std::vector<std::string> paths;
  for (uint64_t boot = 1; boot <= plan.MaxBlocks(); ++boot) {
    for (const Profile& p : plan.profiles) {
      const std::string path = fmt::format("{}/{}-{}.yaml", jobs, p.name, boot);
      KSTACKLAB_RETURN_IF_ERROR(WriteFileAtomic(path, LavaJobYaml(plan, p, boot)));
      paths.push_back(path);
    }
  }
  return paths;
}

namespace {

// Follows one job with lavacli: submit, wait (the job's own timeout plus a margin; `stop` cancels
// it), show (its health), logs (kept as the attempt's console log, then read).
class LavaEngine : public Engine {
 public:
  LavaEngine(CampaignPlan plan, std::string work_dir)
      : plan_(std::move(plan)), l_(SettingsOf<LavaSettings>(plan_)), work_(std::move(work_dir)) {}

  Status Check() override {
    if (!FindProgram(l_.lavacli)) {
      return UsageError(fmt::format(
          "{} is not installed: apt-get install lavacli (and set up an identity: lavacli "
          "identities add), or only write the job files (a dry run needs no lavacli)",
          EscapeControl(l_.lavacli)));
    }
    return OkStatus();
  }
  Status Prepare() override { return OkStatus(); }
  GuestReport Boot(const GuestJob& job, const std::atomic<bool>& stop) override;
  BootFacts Facts() const override {
    return {"lava", fmt::format("LAVA device type {}", l_.device_type), false};
  }

 private:
  std::vector<std::string> Lavacli(std::vector<std::string> words) const {
    std::vector<std::string> argv = {l_.lavacli};
    if (!l_.identity.empty()) argv.insert(argv.end(), {"-i", l_.identity});
    argv.insert(argv.end(), words.begin(), words.end());
    return argv;
  }
  Expected<std::string> Submit(const std::string& job_file, const std::atomic<bool>& stop);
  std::string Wait(const std::string& id, const std::atomic<bool>& stop, bool* interrupted);
  std::string Health(const std::string& id, const std::atomic<bool>& stop);
  std::string FetchLog(const std::string& id, const std::string& path,
                       const std::atomic<bool>& stop);

  CampaignPlan plan_;
  const LavaSettings& l_;  // plan_'s
  std::string work_;
};

Expected<std::string> LavaEngine::Submit(const std::string& job_file,
                                         const std::atomic<bool>& stop) {
  ProcessResult r;
  KSTACKLAB_ASSIGN_OR_RETURN(
      r, RunProcess(Lavacli({"jobs", "submit", job_file}), kLavacliTimeoutS, "", &stop));
  if (r.interrupted) return RuntimeError("interrupted");
  const std::string id = LavaJobId(r.out);
  if (r.exit_code != 0 || id.empty()) {
    return RuntimeError(fmt::format("lavacli jobs submit failed (exit {}): {}", r.exit_code,
                                    EscapeControl(Trim(r.out + " " + r.err).substr(0, 300))));
  }
  return id;
}

// "" when the job finished; else why not.
std::string LavaEngine::Wait(const std::string& id, const std::atomic<bool>& stop,
                             bool* interrupted) {
  const double limit = l_.job_timeout_s + 3600;  // queueing and the lab's own margin
  Child child;
  const std::string log = work_ + "/lavacli-wait.log";
  if (Status st = child.Start(Lavacli({"jobs", "wait", id, "--polling", "10", "--timeout",
                                       std::to_string(static_cast<int64_t>(limit))}),
                              log, {});
      !st.ok()) {
    return st.error().message;
  }
  const double deadline = MonotonicSeconds() + limit + 60;
  int code = -1;
  while (!child.Poll(&code)) {
    if (stop.load() || MonotonicSeconds() > deadline) {
      child.Kill();
      *interrupted = stop.load();
      (void)RunProcess(Lavacli({"jobs", "cancel", id}), kCancelTimeoutS);
      return *interrupted ? "interrupted: the job was canceled"
                          : fmt::format("job {} did not finish within {:g} s: canceled", id, limit);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (code != 0) return fmt::format("lavacli jobs wait {} failed (exit {})", id, code);
  return "";
}

// `lavacli jobs logs ID --raw` into the file at `path` (never whole in memory: a log may be of any
// length), under kLogsTimeoutS and the stop flag. "" when it ran to its end; else what went wrong.
std::string LavaEngine::FetchLog(const std::string& id, const std::string& path,
                                 const std::atomic<bool>& stop) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  Child child;
  if (Status st = child.Start(Lavacli({"jobs", "logs", id, "--raw", "--no-follow"}), path, {},
                              work_ + "/lavacli-logs.err");
      !st.ok()) {
    return st.error().message;
  }
  const double deadline = MonotonicSeconds() + kLogsTimeoutS;
  int code = -1;
  while (!child.Poll(&code)) {
    if (stop.load() || MonotonicSeconds() > deadline) {
      child.Kill();
      return stop.load()
                 ? "interrupted"
                 : fmt::format("lavacli jobs logs did not end within {:g} s", kLogsTimeoutS);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return code == 0 ? "" : fmt::format("lavacli jobs logs exited {}", code);
}

// The job's health (Complete, Incomplete, Canceled, ...), "" when lavacli cannot say.
std::string LavaEngine::Health(const std::string& id, const std::atomic<bool>& stop) {
  auto r = RunProcess(Lavacli({"jobs", "show", id, "--yaml"}), kLavacliTimeoutS, "", &stop);
  if (!r.ok() || r->exit_code != 0 || YamlFlowDepth(r->out) > kMaxYamlFlowDepth) return "";
  try {
    const YAML::Node n = YAML::Load(r->out);
    if (n.IsMap() && n["health"] && n["health"].IsScalar()) return n["health"].Scalar();
  } catch (const YAML::Exception&) {
  }
  return "";
}

GuestReport LavaEngine::Boot(const GuestJob& job, const std::atomic<bool>& stop) {
  GuestReport r;
  r.facts = Facts();
  const double start = MonotonicSeconds();
  std::string job_file = job.console_path;  // PROFILE/boot-N-try-K.console.log -> .job.yaml
  job_file = job_file.substr(0, job_file.rfind(".console.log")) + ".job.yaml";
  if (Status st = WriteFileAtomic(job_file, LavaJobYaml(plan_, *job.profile, job.boot_index));
      !st.ok()) {
    r.failure = st.error().message;
    if (IsHostWriteFault(st.error())) r.host_fault = st.error();
    return r;
  }
  auto id = Submit(job_file, stop);
  if (!id.ok() || stop.load()) {
    r.interrupted = stop.load();
    r.failure = r.interrupted ? "interrupted" : id.error().message;
    return r;
  }
  const std::string why = Wait(*id, stop, &r.interrupted);
  if (r.interrupted) {
    r.failure = why;
    return r;
  }
  const std::string logs_failed = FetchLog(*id, job.console_path, stop);
  r.seconds = MonotonicSeconds() - start;
  if (!why.empty()) {
    r.failure = why;
    return r;
  }
  const std::string health = Health(*id, stop);
  if (stop.load()) {
    r.interrupted = true;
    r.failure = "interrupted";
    return r;
  }
  ChannelData data;
  auto parsed = ParseLavaLogFile(job.console_path, &data);
  const LavaLog log = parsed.ok() ? std::move(*parsed) : LavaLog{};
  if (job.note) {
    for (const GuestFileCut& cut : data.cut) job.note(cut);
    if (auto cut = CapFile(job.console_path, kMaxConsoleBytes)) {
      job.note(LogCut{LogKind::kLava, std::move(*cut)});
    }
  }
  r.files = std::move(data.files);
  if (health != "Complete") {
    // The dispatcher's reason (the lava/job result), else its last error record.
    std::string why = log.job_error.substr(0, 300);
    if (why.empty() && !log.errors.empty()) why = log.errors.back().substr(0, 200);
    r.failure =
        fmt::format("LAVA job {} ended {}{}", *id, health.empty() ? "with no health" : health,
                    why.empty() ? "" : ": " + EscapeControl(why));
  } else if (!data.done) {
    r.failure =
        fmt::format("LAVA job {} completed, but its log holds no kstacklab results{} (see {})", *id,
                    logs_failed.empty() ? "" : ": " + logs_failed, job.console_path);
  } else {
    r.completed = true;
  }
  return r;
}

}  // namespace

std::unique_ptr<Engine> LavaSettings::Make(const CampaignPlan& plan, const std::string& work_dir,
                                           const std::string& /*guest_binary*/) {
  return std::make_unique<LavaEngine>(plan, work_dir);
}

// ---- its settings: the plan's `engine:` keys, their checks and campaign.json's "lava" ---------

Status LavaSettings::Read(const PlanSection& e) {
  if (e.Has("device_type")) KSTACKLAB_ASSIGN_OR_RETURN(device_type, e.Text("device_type", 64));
  if (e.Has("identity")) KSTACKLAB_ASSIGN_OR_RETURN(identity, e.Text("identity", 64));
  if (e.Has("boot_method")) KSTACKLAB_ASSIGN_OR_RETURN(boot_method, e.Text("boot_method", 32));
  if (e.Has("deploy_to")) KSTACKLAB_ASSIGN_OR_RETURN(deploy_to, e.Text("deploy_to", 32));
  if (e.Has("rootfs")) KSTACKLAB_ASSIGN_OR_RETURN(rootfs, e.Text("rootfs"));
  if (e.Has("kstacklab_url")) KSTACKLAB_ASSIGN_OR_RETURN(kstacklab_url, e.Text("kstacklab_url"));
  if (e.Has("prompts"))
    KSTACKLAB_ASSIGN_OR_RETURN(prompts, e.Words("prompts", CampaignLimits::kMaxQemuArgs));
  if (e.Has("tags"))
    KSTACKLAB_ASSIGN_OR_RETURN(tags, e.Words("tags", CampaignLimits::kMaxQemuArgs));
  if (e.Has("job_timeout"))
    KSTACKLAB_ASSIGN_OR_RETURN(job_timeout_s, e.DurationS("job_timeout", 60, 7 * 86400, "2h"));
  if (e.Has("lavacli")) KSTACKLAB_ASSIGN_OR_RETURN(lavacli, e.Text("lavacli"));
  return OkStatus();
}

Status LavaSettings::CheckValues() const {
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine device_type", device_type, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine identity", identity, 64));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine boot_method", boot_method, 32));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine deploy_to", deploy_to, 32));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine rootfs", rootfs));
  KSTACKLAB_RETURN_IF_ERROR(TextValue("engine kstacklab_url", kstacklab_url));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine prompts", prompts, CampaignLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(ListValue("engine tags", tags, CampaignLimits::kMaxQemuArgs));
  KSTACKLAB_RETURN_IF_ERROR(SecondsValue("engine job_timeout", job_timeout_s, 60, 7 * 86400));
  return ProgramValue("engine lavacli", lavacli);
}

Status LavaSettings::Check(const CampaignPlan& plan) const {
  if (!OptionWord(device_type)) {
    return UsageError(fmt::format("engine device_type '{}' is not a LAVA device type name",
                                  EscapeControl(device_type)));
  }
  if (!identity.empty() && !OptionWord(identity)) {
    return UsageError(fmt::format("engine identity '{}' is not a lavacli identity name",
                                  EscapeControl(identity)));
  }
  for (const std::string* url : {&rootfs, &kstacklab_url}) {
    if (!url->empty() && !IsFetchableUrl(*url)) {
      return UsageError(
          fmt::format("engine '{}' is not a URL the lab can fetch", EscapeControl(*url)));
    }
  }
  if (!plan.kstacklab.empty()) {
    return UsageError(
        fmt::format("kstacklab '{}': engine lava runs the kstacklab its DUT downloads from engine "
                    "kstacklab_url (or finds on PATH); leave kstacklab out and give kstacklab_url",
                    EscapeControl(plan.kstacklab)));
  }
  if (device_type == "qemu") {
    for (const Profile& p : plan.profiles) {
      if (p.cmdline.find_first_of("\"'\\") != std::string::npos) {
        return UsageError(fmt::format(
            "profile '{}' cmdline: the LAVA qemu device type passes it inside -append \"...\", "
            "which cannot hold quotes or backslashes",
            p.name));
      }
    }
  }
  for (const auto& list : {prompts, tags}) {
    for (const std::string& w : list) {
      if (w.empty() || !PrintableAscii(w))
        return UsageError("engine prompts and tags must be printable ASCII");
    }
  }
  return OkStatus();
}

Status LavaSettings::CheckProfile(Profile& p) const {
  const std::string who = fmt::format("profile '{}'", p.name);
  if (!IsFetchableUrl(p.kernel)) {
    return UsageError(fmt::format(
        "{} kernel '{}' is not a URL (engine lava: the lab fetches it; give http(s)://, ftp:// or "
        "file:// without spaces or quotes)",
        who, EscapeControl(p.kernel)));
  }
  if (!p.initrd.empty() && !IsFetchableUrl(p.initrd)) {
    return UsageError(
        fmt::format("{} initrd '{}' is not a URL (engine lava)", who, EscapeControl(p.initrd)));
  }
  if (!p.config.empty()) {
    return UsageError(fmt::format(
        "{} config: engine lava carries no file into the DUT; leave config out (the DUT's "
        "/boot/config-RELEASE is read if its rootfs has one)",
        who));
  }
  return OkStatus();
}

Json LavaSettings::ToJson() const {
  return {{"device_type", device_type}, {"identity", identity}, {"boot_method", boot_method},
          {"deploy_to", deploy_to},     {"rootfs", rootfs},     {"kstacklab_url", kstacklab_url},
          {"prompts", prompts},         {"tags", tags},         {"job_timeout_s", job_timeout_s},
          {"lavacli", lavacli}};
}

void LavaSettings::FromJson(const Json& lj) {
  KnownJsonKeys(lj,
                {"device_type", "identity", "boot_method", "deploy_to", "rootfs", "kstacklab_url",
                 "prompts", "tags", "job_timeout_s", "lavacli"},
                "plan lava");
  device_type = lj.at("device_type").get<std::string>();
  identity = lj.at("identity").get<std::string>();
  boot_method = lj.at("boot_method").get<std::string>();
  deploy_to = lj.at("deploy_to").get<std::string>();
  rootfs = lj.at("rootfs").get<std::string>();
  kstacklab_url = lj.at("kstacklab_url").get<std::string>();
  prompts = lj.at("prompts").get<std::vector<std::string>>();
  tags = lj.at("tags").get<std::vector<std::string>>();
  job_timeout_s = lj.at("job_timeout_s").get<double>();
  lavacli = lj.at("lavacli").get<std::string>();
}

}  // namespace kstacklab::campaign
