// A campaign in Arm Fastpath's terms (docs/campaign.md "Fastpath"): the plan as a Fastpath plan
// file (sut, swprofiles, benchmarks, defaults; the layout of the Fastpath Learning Path's
// example), and the accepted boots' results as one CSV row per benchmark, result class, profile,
// boot and repetition. What does not map is said in comments in the plan file and in the docs.
#pragma once

#include <string>
#include <vector>

#include "kstacklab/campaign/state.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::report {

// The Fastpath plan (YAML). sut.connection is SSH with the ssh engine's host and user; a
// profile's kernel, cmdline and sysctls become a swprofile; each benchmark the campaign measured
// becomes an `include: SUITE/NAME.yaml` entry; defaults.benchmark: sessions = boots per profile,
// repeats = repetitions per boot, warmups 0.
std::string FastpathPlanYaml(const campaign::CampaignState& state,
                             const std::vector<stats::CompareInput>& inputs);

// The results CSV: header `sut,swprofile,benchmark,resultclass,unit,session,repeat,value`, then
// one row per accepted boot (session = boot index), repetition (repeat, from 0) and metric of
// mean, p99, p99.9 (result class "mean (ns)"). Fields as CsvField (compare_report.h) writes them.
std::string FastpathResultsCsv(const campaign::CampaignState& state,
                               const std::vector<stats::CompareInput>& inputs);

}  // namespace kstacklab::report
