// The worked example of CONTRIBUTING.md "Adding a campaign engine", compiled:
// tests/contributing_test.cc checks that the guide's block is this code, verbatim, and that its
// one row reaches the plan's readers, its checks, campaign.json and the factory.
// Included inside namespace kstacklab::campaign (where the guide's code goes).
#pragma once

// include/kstacklab/campaign/replay.h (a larger engine declares its settings there and defines
// the rest in src/campaign/replay.cc, as qemu, ssh and lava do): the engine boots nothing; each
// boot hands back the files a real boot left in DIR/PROFILE/ (a campaign replayed from its
// guests' files, e.g. to test the runner).
class ReplayEngine : public Engine {
 public:
  explicit ReplayEngine(std::string dir) : dir_(std::move(dir)) {}
  Status Check() override {
    std::error_code ec;
    if (std::filesystem::is_directory(dir_, ec)) return OkStatus();
    return UsageError(fmt::format("engine dir '{}' is not a directory", EscapeControl(dir_)));
  }
  Status Prepare() override { return OkStatus(); }
  GuestReport Boot(const GuestJob& job, const std::atomic<bool>& /*stop*/) override {
    GuestReport r;
    for (const char* name : {"uname", "cmdline", "env.json", "result.json", "run.rc", "run.log"}) {
      auto text = ReadWholeFile(dir_ + "/" + job.profile->name + "/" + name, kMaxGuestFileBytes);
      if (text.ok()) r.files[name] = std::move(*text);
    }
    r.completed = r.files.count("result.json") == 1;
    if (!r.completed) r.failure = "nothing to replay: no result.json";
    r.facts = Facts();
    return r;
  }
  BootFacts Facts() const override { return {"none", "a replay boots nothing", false}; }

 private:
  std::string dir_;
};

struct ReplaySettings : EngineSettingsOf<ReplaySettings> {
  static constexpr const char* kName = "replay";
  static constexpr const char* kSummary = "no boot: the files a boot left in a directory";
  static constexpr ProfileFiles kFiles = ProfileFiles::kUrls;  // kernels named, never read here
  static constexpr bool kBootEntries = false;
  static constexpr const char* kJsonKey = "replay";  // campaign.json's section
  static constexpr std::array<std::string_view, 1> kYamlKeys = {"dir"};

  std::string dir;  // required

  Status Read(const PlanSection& e) {
    if (!e.Has("dir")) return e.Bad("engine replay needs a dir (DIR/PROFILE/result.json, ...)");
    KSTACKLAB_ASSIGN_OR_RETURN(dir, e.Path("dir"));
    return OkStatus();
  }
  Status CheckValues() const { return TextValue("engine dir", dir); }
  Status Check(const CampaignPlan& /*plan*/) const { return OkStatus(); }
  Status CheckProfile(Profile& /*profile*/) const { return OkStatus(); }
  Json ToJson() const { return {{"dir", dir}}; }
  void FromJson(const Json& j) {
    KnownJsonKeys(j, {"dir"}, "plan replay");
    dir = j.at("dir").get<std::string>();
  }
  EngineMachine Machine() const { return {"replay", "", ""}; }
  static std::unique_ptr<Engine> Make(const CampaignPlan& plan, const std::string& /*work_dir*/,
                                      const std::string& /*guest_binary*/) {
    return std::make_unique<ReplayEngine>(SettingsOf<ReplaySettings>(plan).dir);
  }
};
