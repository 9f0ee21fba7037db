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
  return EnvironmentFactsOf(CaptureEnvironment(SysinfoOptionsFromEnvironment()))
      .kernel_release.value_or("?");
}

// The chance level of a live report: `chance` for the kernel's offset geometry, and what it is.
void SetChance(const live::DerivedOffsets& d, double chance, const char* what,
               analysis::AttackReport* rep) {
  const kstack::OffsetGeometry& g = d.geometry;
  rep->chance = chance;
  rep->chance_meaning = fmt::format("{}; offsets of this kernel: {}, {:.2f} bits ideal", what,
                                    g.name, analysis::IdealShannonBits(g));
  rep->notes.push_back(
      fmt::format("offset geometry (read off the sampled stack heights): {}", g.name));
  for (const kstack::OffsetGeometry& alt : d.also_consistent) {
    rep->notes.push_back(fmt::format(
        "also consistent with the heights (more samples tell them apart; chance level above is "
        "for the first): {}",
        alt.name));
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
            "the best guess with no knowledge of the state", &rep);
  rep.claim =
      "the x86 counter design mixes rdtsc() into the offset at every return to user mode; an "
      "unprivileged process reads the same counter, so it can predict its next offset";
  rep.remaining_bits_meaning =
      "conditional entropy H(actual offset | predicted offset) of the scored calls, bits, "
      "Miller-Madow corrected (no information = the entropy of the offsets)";
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
  rep.notes.push_back(fmt::format("design: {}", KernelDesignLine(data->records)));
  for (const live::AttackerScore& a : result->attackers) {
    rep.notes.push_back(fmt::format("{}: knows {}", a.name, a.knows));
  }
  rep.notes.push_back(fmt::format(
      "ground truth: the live BPF probe (offset of every getpid; the kernel's input recovered "
      "as state_(n+1) xor ror32(state_n, 5) from task_struct.kstack_offset). {} calls: the first "
      "{} calibrate the attacker's error model (kernel input - its TSC read after return: median "
      "delta {} ticks, 5-95% {:+.0f}..{:+.0f} ticks around it, {:.1f}% within 16 ticks), the rest "
      "are predicted; each prediction is the offset with the largest weight over the calibrated "
      "errors",
      result->calls, result->training, result->delta, result->error_p05, result->error_p95,
      100 * result->within_16));
  rep.notes.push_back(
      "everything the kernel mixes between two syscalls (interrupt returns to user mode also call "
      "rdtsc) is in the measurement: such pairs simply fail to be predicted");
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
            "two independent offsets equal", &rep);
  rep.claim =
      "a task migrated in the middle of a syscall never updates the old CPU's offset, so the "
      "next syscall on that CPU gets a predictable (the same) offset";
  rep.remaining_bits_meaning =
      "conditional entropy H(next offset on the old CPU | offset of the migrated syscall), "
      "bits, Miller-Madow corrected (no information = the entropy of the offsets; still biased "
      "low when the migrated rounds are few against the cells)";
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
  rep.notes.push_back(fmt::format("design: {}", KernelDesignLine({})));
  rep.notes.push_back(
      "method: thread A pinned to CPU X blocks in read(2) on a pipe; the main thread (kept on the "
      "other CPU) moves A's affinity to the other CPU and writes to the pipe, so A's read enters "
      "on X and exits elsewhere; thread C, moved to X beforehand, then makes the next syscall of "
      "the process on X (getpid). Prediction = C's offset equals the offset of A's read. CPUs "
      "and offsets from the live probe; rounds where the read did not leave X are not scored");
  rep.notes.push_back(
      "other processes' returns to user mode on X in between are part of the measurement");
  return rep;
}

}  // namespace kstacklab::cli
