// The model suite's rows: names and variants from the policy table, setup succeeds, and a short
// timed loop of each row runs (no timing thresholds).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kstacklab/kstack/policies.h"
#include "kstacklab/workloads/workload.h"

namespace kstacklab {
namespace {

std::vector<workloads::WorkloadDef> ModelSuiteRows() {
  auto rows = workloads::SelectWorkloads({"model"}, {});
  if (!rows.ok()) {
    ADD_FAILURE() << rows.error().message;
    return {};
  }
  EXPECT_FALSE(rows->empty());
  return *rows;
}

TEST(ModelWorkloads, OneKstackRowPerPolicyAndOneRngRowPerSource) {
  const std::vector<workloads::WorkloadDef> rows = ModelSuiteRows();
  std::vector<std::string> kstack, sources;
  for (const workloads::WorkloadDef& w : rows) {
    if (w.name == "model/kstack" && w.params == Json{{"handler", "empty"}})
      kstack.push_back(w.variant);
    else if (w.name == "model/kstack")
      EXPECT_EQ(w.params, Json({{"handler", "getpid"}}));
    else if (w.name == "model/rng")
      sources.push_back(w.variant);
    else
      ADD_FAILURE() << "unexpected row " << w.name;
    EXPECT_FALSE(w.summary.empty());
    if (w.name == "model/rng") {
      EXPECT_TRUE(w.params.is_object() && w.params.empty());
    }
  }
  std::vector<std::string> policies;
  for (const kstack::PolicyDef& p : kstack::Policies()) policies.push_back(p.name);
  EXPECT_EQ(kstack, policies);
  // The source rows: the baseline first, then unique non-empty names (kstack::kSources).
  ASSERT_FALSE(sources.empty());
  EXPECT_EQ(sources[0], "off");
  EXPECT_EQ(std::set<std::string>(sources.begin(), sources.end()).size(), sources.size());
  for (const std::string& v : sources) EXPECT_FALSE(v.empty());
  EXPECT_EQ(rows.size(), 2 * policies.size() + sources.size());
  // name:variant selects the policy under both handlers; the full id selects one row.
  auto two = workloads::SelectWorkloads({}, {"model/kstack:percpu-prng"});
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  auto one = workloads::SelectWorkloads({}, {"model/kstack(handler:getpid):percpu-prng"});
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(workloads::WorkloadId((*one)[0]), "model/kstack(handler:getpid):percpu-prng");
}

TEST(ModelWorkloads, SetupSucceedsAndShortLoopsRun) {
  for (const workloads::WorkloadDef& w : ModelSuiteRows()) {
    SCOPED_TRACE(workloads::WorkloadId(w));
    auto state = w.setup();
    ASSERT_TRUE(state.ok()) << state.error().message;
    std::vector<uint64_t> ticks(500, UINT64_MAX);
    w.percall(state->get(), ticks.size(), ticks.data());
    for (uint64_t t : ticks) ASSERT_NE(t, UINT64_MAX);  // every call was timed
    EXPECT_GT(w.loop(state->get(), 500), 0u);           // 500 calls take at least one tick
  }
}

}  // namespace
}  // namespace kstacklab
