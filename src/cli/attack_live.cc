#include "attack_live.h"

#include <fmt/format.h>

#include <cmath>
#include <string>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/live/attacks.h"
#include "kstacklab/live/infer.h"
#include "kstacklab/live/probe.h"
#include "kstacklab/live/records.h"
#include "kstacklab/results/results.h"
#include "kstacklab/sysinfo/sysinfo.h"

namespace kstacklab::cli {

namespace {

// records: consecutive syscalls of each thread (their inputs are diagnosed), or empty.
std::string KernelDesignLine(const std::vector<live::LiveRecord>& records) {
  live::BtfDesignHints hints;
  if (auto h = live::ReadBtfDesignHints()) hints = *h;
  const live::KernelDesign d =
      live::InferDesign(hints.task_field, hints.prng_state, hints.percpu_counter,
                        records.empty() ? live::InputDiagnosis{} : live::DiagnoseInputs(records));
  return d.summary;
}

std::string KernelRelease() {
  return EnvironmentFactsOf(sysinfo::CaptureEnvironment(sysinfo::SysinfoOptionsFromEnvironment()))
      .kernel_release.value_or("?");
}

// The chance level of a live report: `chance` for the kernel's offset geometry, on `basis`.
void SetChance(const live::DerivedOffsets& d, double chance,
               analysis::AttackChanceBasis::Kind basis, analysis::AttackReport* rep) {
  const kstack::OffsetGeometry& g = d.geometry;
  rep->chance = chance;
  rep->chance_basis = {basis, g.name, analysis::IdealShannonBits(g)};
  rep->notes.emplace_back(analysis::GeometryNote{g.name, false});
  for (const kstack::OffsetGeometry& alt : d.also_consistent) {
    rep->notes.emplace_back(analysis::GeometryNote{alt.name, true});
  }
}

}  // namespace

Expected<analysis::AttackReport> TimerLiveReport(uint64_t calls) {
  auto data = live::CollectTimerAttack(calls, -1);
  if (!data.ok()) return data.error();
  auto derived = live::DeriveOffsets(data->records);
  if (!derived.ok()) return derived.error();
  auto result = live::AnalyzeTimerAttack(*data, derived->offsets, derived->geometry);
  if (!result.ok()) return result.error();
  analysis::AttackReport rep;
  rep.attack = "timer";
  rep.mode = "live";
  SetChance(*derived, analysis::BestBlindGuess(derived->geometry),
            analysis::AttackChanceBasis::Kind::kBestBlindGuess, &rep);
  rep.claim = analysis::AttackClaim::kLiveCounterRead;
  const std::string design = fmt::format("kernel {}", KernelRelease());
  for (const live::AttackerScore& a : result->attackers) {
    analysis::AttackRow row;
    row.design = design;
    row.setting = a.name;
    row.observations = result->training;
    row.predicted = a.predictions;
    row.correct = a.correct;
    analysis::SetAccuracy(row);
    row.remaining_bits = a.conditional_entropy_bits;
    row.chance = rep.chance;
    row.verdict = a.name == "guess"
                      ? "baseline"
                      : analysis::PredictionVerdict(row.correct, row.predicted, rep.chance);
    analysis::AddEvidence(row, "delta_ticks", static_cast<double>(result->delta));
    analysis::AddEvidence(row, "error_p05_ticks", result->error_p05);
    analysis::AddEvidence(row, "error_p95_ticks", result->error_p95);
    rep.rows.push_back(std::move(row));
  }
  rep.notes.emplace_back(analysis::DesignNote{KernelDesignLine(data->records)});
  for (const live::AttackerScore& a : result->attackers) {
    rep.notes.emplace_back(analysis::AttackerKnowsNote{a.name, a.knows});
  }
  rep.notes.emplace_back(analysis::LiveTimerMethodNote{result->calls, result->training,
                                                       result->delta, result->error_p05,
                                                       result->error_p95, result->within_16});
  rep.notes.emplace_back(analysis::AttackFixedNote::kLiveTimerInterrupts);
  return rep;
}

}  // namespace kstacklab::cli

namespace kstacklab::cli {

Expected<analysis::AttackReport> MigrationLiveReport(uint64_t rounds) {
  auto data = live::CollectMigration(rounds);
  if (!data.ok()) return data.error();
  auto derived = live::DeriveOffsets(data->records);
  if (!derived.ok()) return derived.error();
  const live::MigrationScore score =
      live::ScoreMigration(*data, derived->offsets, derived->geometry);
  analysis::AttackReport rep;
  rep.attack = "migration";
  rep.mode = "live";
  SetChance(*derived, analysis::ChanceOfEqualOffsets(derived->geometry),
            analysis::AttackChanceBasis::Kind::kEqualOffsets, &rep);
  rep.claim = analysis::AttackClaim::kLiveMigrationOldCpu;
  analysis::AttackRow row;
  row.design = fmt::format("kernel {}", KernelRelease());
  row.setting = "read(2) migrated, next getpid on old CPU";
  row.observations = score.rounds;
  row.predicted = score.migrated;
  row.correct = score.stale;
  analysis::SetAccuracy(row);
  row.remaining_bits = score.conditional_entropy_bits;
  row.chance = rep.chance;
  row.verdict = analysis::PredictionVerdict(row.correct, row.predicted, rep.chance);
  analysis::AddEvidence(row, "rounds", static_cast<double>(score.rounds));
  analysis::AddEvidence(row, "migrated", static_cast<double>(score.migrated));
  rep.rows.push_back(std::move(row));
  rep.notes.emplace_back(analysis::DesignNote{KernelDesignLine({})});
  rep.notes.emplace_back(analysis::AttackFixedNote::kLiveMigrationMethod);
  rep.notes.emplace_back(analysis::AttackFixedNote::kLiveMigrationOtherTasks);
  return rep;
}

}  // namespace kstacklab::cli
