// The campaign's readers on arbitrary bytes: the plan file (YAML), the guest's data channel, a
// campaign.json handed to --resume (with its journal: the text after the first NUL byte, if
// any), and a LAVA job log (`lavacli jobs logs --raw`) with the job id of `lavacli jobs submit`.
// The first byte picks the reader. Contracts: never crash or throw; an accepted plan's JSON form
// reads back to the same plan; decoded channel files are only the names asked for; a LAVA log
// yields no more records than it has lines, and a job id is digits.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "kstacklab/campaign/engine.h"
#include "kstacklab/campaign/lava.h"
#include "kstacklab/campaign/plan.h"
#include "kstacklab/campaign/state.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kstacklab;  // NOLINT(google-build-using-namespace): fuzz entry point
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
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
    case 3: {
      const campaign::LavaLog log = campaign::ParseLavaLog(text);
      const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
      if (log.results.size() + log.errors.size() + log.bad_lines > lines) std::abort();
      const std::string id = campaign::LavaJobId(text);
      if (id.find_first_not_of("0123456789.") != std::string::npos) std::abort();
      (void)campaign::ParseChannel(log.target, {"result.json"});
      break;
    }
    default: {
      const size_t nul = text.find('\0');
      if (nul != std::string::npos) {
        std::optional<campaign::JournalLineIgnored> ignored;
        (void)campaign::StateFromFiles(text.substr(0, nul), text.substr(nul + 1), "fuzz", &ignored);
        break;
      }
      const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!j.is_discarded()) (void)campaign::StateFromJson(j, "fuzz.json");
      break;
    }
  }
  return 0;
}
