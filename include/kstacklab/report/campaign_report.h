// The report of a boot campaign (`kstacklab campaign --report DIR`, printed at its end): what was
// booted and how (engine, accelerator, and above the table when the times are an emulator's),
// boots done and failed per profile, what differs between the profiles (kernels, command lines,
// sysctls, as mmtests prints them), what each profile buys (effective randomisation, offsets and
// entropy from `entropy --kernel`), the lists' table across profiles (compare's renderers) and
// the precision reached per row with the boots the plan says are still needed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kstacklab/campaign/runner.h"
#include "kstacklab/campaign/state.h"
#include "kstacklab/report/compare_report.h"
#include "kstacklab/stats/compare.h"

namespace kstacklab::report {

// `precision` is the MDC per row (EvaluateTarget) or nullopt when fewer than two boots per
// profile were accepted. grid and markdown: header lines, the tables, then the precision; csv:
// the header as "# " lines, then the tables; json: {"campaign": {...}, "comparison": ...}.
std::string RenderCampaignReport(const campaign::CampaignState& state,
                                 const std::vector<stats::CompareTable>& tables,
                                 const std::optional<campaign::TargetStatus>& precision,
                                 CompareFormat format);

// The campaign block of the JSON report (and the header's facts): status, engine, accelerator,
// per-profile boots, kernels, command lines and strength.
Json CampaignSummaryJson(const campaign::CampaignState& state);

}  // namespace kstacklab::report
