// The campaign's readers on arbitrary bytes: the plan file (YAML), the guest's data channel, and
// a campaign.json handed to --resume. The first byte picks the reader. Contracts: never crash or
// throw; an accepted plan's JSON form reads back to the same plan; decoded channel files are
// only the names asked for.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto plan = campaign::ParsePlanYaml(text, "fuzz.yaml", "/tmp");
      if (plan.ok()) {
        auto back = campaign::PlanFromJson(campaign::PlanToJson(*plan));
        if (back.ok() && campaign::PlanToJson(*back) != campaign::PlanToJson(*plan)) std::abort();
      }
      break;
    }
    case 1: {
      const campaign::ChannelData d = campaign::ParseChannel(text, {"uname", "result.json"});
      for (const auto& [name, body] : d.files) {
        if (name != "uname" && name != "result.json") std::abort();
      }
      break;
    }
    default: {
      const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded()) (void)campaign::StateFromJson(j, "fuzz.json");
      break;
    }
  }
  return 0;
}
