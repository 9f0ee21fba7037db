// Renderers of an attack report (include/kstacklab/report/attack_report.h).
#include "kstacklab/report/attack_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <string>
#include <variant>
#include <vector>

#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/json.h"

namespace kstacklab::report {
namespace {

// Rounded to 6 significant digits so JSON output is stable across printf implementations.
double Round6(double v) {
  if (!std::isfinite(v) || v == 0) return v;
  return RoundSignificant(v, 6);
}

// "check bits" -> "check_bits": JSON keys are snake_case; the table shows the key as given.
std::string JsonKey(std::string key) {
  for (char& c : key) {
    if (c == ' ' || c == '-') c = '_';
  }
  return key;
}

std::string EvidenceText(const analysis::AttackRow& row, const std::string& key) {
  for (const analysis::Evidence& e : row.evidence) {
    if (e.key == key) return e.lower_bound.value_or(false) ? ">=" + e.text : e.text;
  }
  return "";
}

// The claim an attack tests, as argued on the list.
std::string ClaimText(analysis::AttackClaim claim) {
  using analysis::AttackClaim;
  switch (claim) {
    case AttackClaim::kNone:
      return "";
    case AttackClaim::kPrngPeriod:
      return "\"the prng has a period of 2^113, so as long as its state stays secret it cannot be "
             "guessed\" (percpu-prng, a96ef5848cb0)";
    case AttackClaim::kMigrationOldCpu:
      return "\"an attacker forced to migrate mid-syscall leaves the old CPU's offset unchanged, "
             "so knows the next one\" (the per-CPU designs before 37beb4256016)";
    case AttackClaim::kCounterTooFewBits:
      return "\"a 24 MHz counter gives too few bits\" (legacy-x86, per-task-x86 and the "
             "counter-fed arches: offset = ror32(old, 5) ^ counter at syscall exit)";
    case AttackClaim::kLiveCounterRead:
      return "the x86 counter design mixes rdtsc() into the offset at every return to user mode; "
             "an unprivileged process reads the same counter, so it can predict its next offset";
    case AttackClaim::kLiveMigrationOldCpu:
      return "a task migrated in the middle of a syscall never updates the old CPU's offset, so "
             "the next syscall on that CPU gets a predictable (the same) offset";
  }
  return "";
}

// What the "bits left" column means for the attack of `claim`.
std::string RemainingBitsMeaning(analysis::AttackClaim claim) {
  using analysis::AttackClaim;
  switch (claim) {
    case AttackClaim::kNone:
      return "";
    case AttackClaim::kPrngPeriod:
      return "entropy of the next offset given the attacker's equations, over every gap pattern "
             "that fits (each weighted 2^-rank; one candidate: the bits its system leaves free), "
             "mean over trials; 6 when no LFSR113 state fits";
    case AttackClaim::kMigrationOldCpu:
      return "conditional entropy H(offset | attacker's belief) over all attacker syscalls, bits "
             "(Miller-Madow corrected estimate)";
    case AttackClaim::kCounterTooFewBits:
      return "conditional entropy H(next offset | attacker's prediction), bits (Miller-Madow "
             "corrected estimate)";
    case AttackClaim::kLiveCounterRead:
      return "conditional entropy H(actual offset | predicted offset) of the scored calls, bits, "
             "Miller-Madow corrected (no information = the entropy of the offsets)";
    case AttackClaim::kLiveMigrationOldCpu:
      return "conditional entropy H(next offset on the old CPU | offset of the migrated syscall), "
             "bits, Miller-Madow corrected (no information = the entropy of the offsets; still "
             "biased low when the migrated rounds are few against the cells)";
  }
  return "";
}

std::string ChanceMeaning(const analysis::AttackChanceBasis& b) {
  using Kind = analysis::AttackChanceBasis::Kind;
  if (b.kind == Kind::kOneOf64) return "1/64: one of 64 offsets, 6 bits";
  return fmt::format("{}; offsets of this kernel: {}, {:.2f} bits ideal",
                     b.kind == Kind::kBestBlindGuess
                         ? "the best guess with no knowledge of the state"
                         : "two independent offsets equal",
                     b.geometry, b.ideal_bits);
}

std::string FixedNoteText(analysis::AttackFixedNote note) {
  using analysis::AttackFixedNote;
  switch (note) {
    case AttackFixedNote::kPrngColumns:
      return "rank/check bits/candidates/nodes: the worst trial (min rank, min redundant "
             "equations, max candidates = distinct states that fit every observation, max search "
             "nodes). `recovered` only with a unique state of rank 113 confirmed by >= 12 "
             "redundant equations; `full rank, unverified` predicts but could still be a "
             "coincidence.";
    case AttackFixedNote::kMigrationMethod:
      return "Method: deterministic simulation (seeded); the real policy objects of kstack/ with "
             "an injected cpu source; p(mig) = mid-syscall / user-mode migration probability; "
             "observed = attacker syscalls; predicted = those on a CPU it had left by migration "
             "(it predicts the offset it saw there); accuracy = correct / predicted.";
    case AttackFixedNote::kMigrationNotModelled:
      return "Not modelled: the kernel's preemption rules inside a step (a migration happens only "
             "between the entry and the exit step here), interrupts, CPU hotplug.";
    case AttackFixedNote::kTimerMethod:
      return "Method: per row, `observed` simulated syscalls; the attacker knows the design's "
             "state before each exit step and its counter reading has error e (normal, sd = "
             "jitter; or resampled from the measured jitter); it predicts the next offset; "
             "accuracy = correct / predicted.";
    case AttackFixedNote::kTimerUniformRow:
      return "uniform: the same design fed by a uniform source instead of a counter (the "
             "reference).";
    case AttackFixedNote::kTimerBit4Step:
      return "bit-4 step ns: how long counter bit 4 (the offset's lowest bit, 16 ticks) takes; an "
             "error well below it leaves the offset predictable, one well above leaves 6 bits.";
    case AttackFixedNote::kLiveTimerInterrupts:
      return "everything the kernel mixes between two syscalls (interrupt returns to user mode "
             "also call rdtsc) is in the measurement: such pairs simply fail to be predicted";
    case AttackFixedNote::kLiveMigrationMethod:
      return "method: thread A pinned to CPU X blocks in read(2) on a pipe; the main thread (kept "
             "on the other CPU) moves A's affinity to the other CPU and writes to the pipe, so "
             "A's read enters on X and exits elsewhere; thread C, moved to X beforehand, then "
             "makes the next syscall of the process on X (getpid). Prediction = C's offset equals "
             "the offset of A's read. CPUs and offsets from the live probe; rounds where the read "
             "did not leave X are not scored";
    case AttackFixedNote::kLiveMigrationOtherTasks:
      return "other processes' returns to user mode on X in between are part of the measurement";
  }
  return "";
}

// "a, b and uniform are attacked with the percpu-prng model (the attacker assumes LFSR113);
// buffered-prng with its own 5-offsets-per-output model, first observation at the first offset
// after seeding."
std::string PrngModelsText(const analysis::PrngModelsNote& n) {
  std::vector<std::string> other = n.other;
  const std::string last = other.empty() ? "uniform" : other.back() + " and uniform";
  if (!other.empty()) other.pop_back();
  other.push_back(last);
  std::string text = fmt::format("{} are attacked with the {} model (the attacker assumes LFSR113)",
                                 fmt::join(other, ", "),
                                 n.direct.empty() ? std::string("LFSR113 direct") : n.direct);
  for (const std::string& name : n.own) {
    text += fmt::format(
        "; {} with its own 5-offsets-per-output model, first observation at the first offset "
        "after seeding",
        name);
  }
  return text + ".";
}

std::string MigrationOverallText(const analysis::MigrationOverallNote& n) {
  const std::string counter_fed =
      n.counter_fed.empty()
          ? std::string()
          : fmt::format("{} {} the simulation's clock as rdtsc(). ", fmt::join(n.counter_fed, ", "),
                        n.counter_fed.size() == 1 ? "uses" : "use");
  return fmt::format(
      "overall accuracy: over all attacker syscalls, the others guessed as offset 0. {}per-task: "
      "other tasks run their own task state.",
      counter_fed);
}

std::string JitterAtResolutionText(const analysis::JitterAtResolutionNote& n) {
  return fmt::format(
      "The measured jitter is at the counter's resolution: IQR {:.4g} ns {} one step of the "
      "counter ({:.4g} ns; every duration is a multiple of it), so `jitter ns` {:.4g} = IQR / "
      "1.349 shows how coarse the counter is, not how large the error is: the true error is not "
      "resolved below one step and may be smaller.",
      n.iqr_ns, n.iqr_ns < 0.5 * n.step_ns ? "is below" : "is", n.step_ns, n.robust_sigma_ns);
}

std::string LiveTimerMethodText(const analysis::LiveTimerMethodNote& n) {
  return fmt::format(
      "ground truth: the live BPF probe (offset of every getpid; the kernel's input recovered as "
      "state_(n+1) xor ror32(state_n, 5) from task_struct.kstack_offset). {} calls: the first {} "
      "calibrate the attacker's error model (kernel input - its TSC read after return: median "
      "delta {} ticks, 5-95% {:+.0f}..{:+.0f} ticks around it, {:.1f}% within 16 ticks), the rest "
      "are predicted; each prediction is the offset with the largest weight over the calibrated "
      "errors",
      n.calls, n.training, n.delta_ticks, n.error_p05, n.error_p95, 100 * n.within_16);
}

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

std::string NoteText(const analysis::AttackNote& note) {
  return std::visit(
      Overloaded{
          [](analysis::AttackFixedNote n) { return FixedNoteText(n); },
          [](const analysis::PrngMethodNote& n) {
            return fmt::format(
                "Method: per trial, a fresh seeded boot of the design on one CPU; the attacker "
                "learns `observed` offsets, solves the GF(2) system in the 128 LFSR113 state bits "
                "(113 effective), then predicts the next {} offsets from its solution.",
                n.predict);
          },
          [](const analysis::PrngModelsNote& n) { return PrngModelsText(n); },
          [](const analysis::PrngBudgetNote& n) {
            return fmt::format(
                "Search budget exhausted in {} of {} trials: their candidates are only those "
                "found (candidates >=N, candidates_lower_bound in JSON) and their bits left count "
                "only those; more candidates may spread the next offset further, or not.",
                n.incomplete, n.trials);
          },
          [](const analysis::PrngGapsNote& n) {
            return fmt::format(
                "Gaps: between two observations 0..{} unseen outputs (drawn uniformly), their "
                "number unknown to the attacker, which searches all patterns depth first (budget "
                "{} nodes).",
                n.gaps, n.budget);
          },
          [](const analysis::MigrationOverallNote& n) { return MigrationOverallText(n); },
          [](const analysis::JitterMeasuredNote& n) {
            return fmt::format(
                "jitter measured here: {} per-call durations of a raw getpid(2) timed by the "
                "engine's CycleClock, each minus their median (an upper-bound proxy for the error "
                "of timing the kernel's exit read from user space); `jitter ns` = robust sigma = "
                "IQR / 1.349 (the sd of a normal law with that IQR).",
                n.calls);
          },
          [](const analysis::JitterAtResolutionNote& n) { return JitterAtResolutionText(n); },
          [](const analysis::GeometryNote& n) {
            return n.also_consistent
                       ? fmt::format(
                             "also consistent with the heights (more samples tell them apart; "
                             "chance level above is for the first): {}",
                             n.geometry)
                       : fmt::format("offset geometry (read off the sampled stack heights): {}",
                                     n.geometry);
          },
          [](const analysis::DesignNote& n) { return fmt::format("design: {}", n.summary); },
          [](const analysis::AttackerKnowsNote& n) {
            return fmt::format("{}: knows {}", n.attacker, n.knows);
          },
          [](const analysis::LiveTimerMethodNote& n) { return LiveTimerMethodText(n); },
      },
      note);
}

std::vector<std::string> NoteLines(const analysis::AttackReport& report) {
  std::vector<std::string> lines;
  lines.reserve(report.notes.size());
  for (const analysis::AttackNote& n : report.notes) lines.push_back(NoteText(n));
  return lines;
}

}  // namespace

std::string RenderAttackTable(const analysis::AttackReport& report) {
  GridTable t;
  std::vector<std::string> keys;
  if (!report.rows.empty()) {
    for (const analysis::Evidence& e : report.rows.front().evidence) keys.push_back(e.key);
  }
  std::vector<std::string> header = {"design",   "setting",  "observed",  "predicted", "correct",
                                     "accuracy", "x chance", "bits left", "verdict"};
  t.right_align = {false, false, true, true, true, true, true, true, false};
  for (const std::string& k : keys) {
    header.push_back(k);
    t.right_align.push_back(true);
  }
  t.header.push_back(header);
  std::vector<std::vector<std::string>> group;
  for (const analysis::AttackRow& r : report.rows) {
    std::vector<std::string> cells = {
        r.design,
        r.setting,
        fmt::format("{}", r.observations),
        fmt::format("{}", r.predicted),
        fmt::format("{}", r.correct),
        r.predicted == 0 ? "-" : fmt::format("{:.4f}", r.accuracy),
        r.predicted == 0 || r.chance <= 0 ? "-" : fmt::format("{:.1f}", r.accuracy / r.chance),
        fmt::format("{:.2f}", r.remaining_bits),
        r.verdict};
    for (const std::string& k : keys) cells.push_back(EvidenceText(r, k));
    group.push_back(std::move(cells));
  }
  t.groups.push_back(std::move(group));
  std::string out =
      fmt::format("attack {} ({}, seed {})\n", report.attack, report.mode, report.seed);
  out += RenderGrid(t);
  out += fmt::format("Claim: {}\n", ClaimText(report.claim));
  out += fmt::format("Chance: {:.5f} ({}); x chance = accuracy / chance.\n", report.chance,
                     ChanceMeaning(report.chance_basis));
  if (const std::string meaning = RemainingBitsMeaning(report.claim); !meaning.empty()) {
    out += fmt::format("bits left: {}\n", meaning);
  }
  for (const std::string& line : NoteLines(report)) out += line + "\n";
  return out;
}

Json AttackReportToJson(const analysis::AttackReport& report) {
  Json j = Json::object();
  j["schema"] = "kstacklab-attack/1";
  j["attack"] = report.attack;
  j["mode"] = report.mode;
  j["seed"] = report.seed;
  j["claim"] = ClaimText(report.claim);
  j["chance"] = report.chance;
  j["chance_meaning"] = ChanceMeaning(report.chance_basis);
  j["remaining_bits_meaning"] = RemainingBitsMeaning(report.claim);
  Json rows = Json::array();
  for (const analysis::AttackRow& r : report.rows) {
    Json row = {{"design", r.design},
                {"setting", r.setting},
                {"observations", r.observations},
                {"predicted", r.predicted},
                {"correct", r.correct},
                {"accuracy", Round6(r.accuracy)},
                {"chance", r.chance},
                {"remaining_bits", Round6(r.remaining_bits)},
                {"verdict", r.verdict}};
    for (const analysis::Evidence& e : r.evidence) {
      if (e.number) {
        row[JsonKey(e.key)] = Round6(std::strtod(e.text.c_str(), nullptr));
      } else {
        row[JsonKey(e.key)] = e.text;
      }
      if (e.lower_bound) row[JsonKey(e.key) + "_lower_bound"] = *e.lower_bound;
    }
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  j["notes"] = NoteLines(report);
  return j;
}

std::string RenderAttackJson(const analysis::AttackReport& report) {
  return DumpJson(AttackReportToJson(report));
}

}  // namespace kstacklab::report
