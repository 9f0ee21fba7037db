// Attacks on the kstack offset designs (DESIGN.md job 4): each claim argued on the
// list ("only 6 bits", "period 2^113, so it cannot be guessed", "a migrated task leaves the old
// CPU's offset unchanged", "a 24 MHz counter gives too few bits") made an experiment on the
// bit-exact models of rng/ and kstack/, measured against the chance baseline (1/64, 6 bits).
//
// The attacks know no design by name: each iterates a policy table (kstack::Policies() unless an
// option gives another, as tests do) and chooses its rows and method by each row's AttackFacts;
// it drives the design through the row's Simulate.
//
// Every attack fills one AttackReport: plain data, rendered by report/ (attack_report.h) as a
// table or JSON. A live mode (the real kernel) fills the same struct with mode = "live".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "kstacklab/common/error.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/rng/prandom.h"

namespace kstacklab::analysis {

// Chance baseline for a 64-bit v6.11+ offset: one of 64 values (KSTACK_OFFSET_MAX = 0x3F0).
inline constexpr double kChanceAccuracy = 1.0 / 64;
inline constexpr double kOffsetEntropyBits = 6.0;

// One extra measured quantity of a row ("rank" = 113, "candidates" = 1, "jitter_ns" = 20.5).
// number: the value is a JSON number (text holds its decimal form); else a string.
// lower_bound: set for a count that a search can cut short; true = the true value is at least
// this (the table shows ">=N", the JSON adds "<key>_lower_bound": true), false = exact.
struct Evidence {
  std::string key;
  std::string text;
  bool number = false;
  std::optional<bool> lower_bound;
};

// One row: one design (or counter resolution) under one setting.
struct AttackRow {
  std::string design;         // policy name, "uniform", or a counter description ("24 MHz")
  std::string setting;        // what varies between rows of one design ("gaps<=1", "jitter 20 ns")
  uint64_t observations = 0;  // offsets (or syscalls) the attacker saw
  uint64_t predicted = 0;     // offsets it then predicted
  uint64_t correct = 0;       // of those, predicted exactly
  double accuracy = 0;        // correct / predicted (0 when predicted == 0)
  double chance = kChanceAccuracy;
  double remaining_bits = kOffsetEntropyBits;  // what the attacker is left with (see note)
  std::string verdict;                         // one short phrase: "recovered", "chance", ...
  std::vector<Evidence> evidence;              // per-attack fields, same keys on every row
};

// --- findings: what a report says around its table, as data ----------------------------------
// The attacks and the live glue fill these; report/ words them (attack_report.h), so the figures
// are tested as numbers and the words live in one place.

// The claim from the list an attack tests; report/ words it and what the attack's "bits left"
// mean.
enum class AttackClaim {
  kNone,                 // none (a report built by hand): no claim, no meaning of bits left
  kPrngPeriod,           // prng-recover: a period of 2^113 keeps a secret state unguessable
  kMigrationOldCpu,      // migration: a task migrated mid-syscall leaves the old CPU's offset
  kCounterTooFewBits,    // timer: a 24 MHz counter gives too few bits
  kLiveCounterRead,      // timer --live: the process reads the counter the kernel mixes in
  kLiveMigrationOldCpu,  // migration --live: the old CPU's offset is left for the next syscall
};

// What the report's chance level is.
struct AttackChanceBasis {
  enum class Kind {
    kOneOf64,         // one of 64 offsets (the models, v6.11+ geometry)
    kBestBlindGuess,  // the best guess with no knowledge of the state, on `geometry`
    kEqualOffsets,    // two independent offsets of `geometry` equal
  };
  Kind kind = Kind::kOneOf64;
  std::string geometry;   // the kernel's offset geometry (live); its name
  double ideal_bits = 0;  // its ideal Shannon entropy, bits
};

// A note whose words take no figure.
enum class AttackFixedNote {
  kPrngColumns,              // prng-recover: what rank/check bits/candidates/nodes are
  kMigrationMethod,          // migration: the simulation
  kMigrationNotModelled,     // migration: what is not modelled
  kTimerMethod,              // timer: the simulation
  kTimerUniformRow,          // timer: what the uniform row is
  kTimerBit4Step,            // timer: how to read "bit-4 step ns"
  kLiveTimerInterrupts,      // timer --live: other returns to user mode are in the measurement
  kLiveMigrationMethod,      // migration --live: the threads and pipe of one round
  kLiveMigrationOtherTasks,  // migration --live: other processes on the CPU are measured too
};
struct PrngMethodNote {
  uint64_t predict = 0;  // offsets predicted after the observed ones
};
// Which model each prng-recover row is attacked with.
struct PrngModelsNote {
  std::vector<std::string> other;  // not linear over GF(2): the direct model at chance
  std::string direct;              // the row of the direct LFSR113 model ("" = none)
  std::vector<std::string> own;    // rows with their own (5-offsets-per-output) model
};
struct PrngBudgetNote {
  uint64_t incomplete = 0, trials = 0;  // trials whose search budget ran out, of all
};
struct PrngGapsNote {
  uint64_t gaps = 0, budget = 0;  // unseen outputs between observations; search nodes
};
struct MigrationOverallNote {
  std::vector<std::string> counter_fed;  // rows that use the simulation's clock as rdtsc()
};
struct JitterMeasuredNote {
  uint64_t calls = 0;  // timed getpid calls the jitter comes from
};
// The measured jitter is at the counter's resolution (its IQR within a step or so).
struct JitterAtResolutionNote {
  double iqr_ns = 0, step_ns = 0, robust_sigma_ns = 0;
};
struct GeometryNote {
  std::string geometry;          // read off the sampled stack heights
  bool also_consistent = false;  // another geometry that fits the heights about as well
};
struct DesignNote {
  std::string summary;  // live::KernelDesign::summary
};
struct AttackerKnowsNote {
  std::string attacker, knows;
};
// How timer --live scored: its ground truth, calibration and prediction rule.
struct LiveTimerMethodNote {
  uint64_t calls = 0, training = 0;
  int64_t delta_ticks = 0;
  double error_p05 = 0, error_p95 = 0, within_16 = 0;  // ticks around delta; fraction
};
using AttackNote =
    std::variant<AttackFixedNote, PrngMethodNote, PrngModelsNote, PrngBudgetNote, PrngGapsNote,
                 MigrationOverallNote, JitterMeasuredNote, JitterAtResolutionNote, GeometryNote,
                 DesignNote, AttackerKnowsNote, LiveTimerMethodNote>;

struct AttackReport {
  std::string attack;                      // "prng-recover", "migration", "timer"
  std::string mode = "model";              // "model" (user-space bit-exact models) or "live"
  uint64_t seed = 0;                       // everything random derives from it (model mode)
  AttackClaim claim = AttackClaim::kNone;  // the claim from the list this experiment tests
  std::vector<AttackRow> rows;
  std::vector<AttackNote> notes;  // footer lines: method, assumptions, what is not modelled
  // The chance baseline of the whole report and what it is (live reports on a kernel older than
  // v6.11 have 129 unevenly likely offsets: a different chance).
  double chance = kChanceAccuracy;
  AttackChanceBasis chance_basis;
};

// Adds a numeric / text evidence field to a row.
void AddEvidence(AttackRow& row, std::string key, double value);
void AddEvidence(AttackRow& row, std::string key, std::string text);
// A count that may be a lower bound (Evidence::lower_bound).
void AddCountEvidence(AttackRow& row, std::string key, uint64_t count, bool lower_bound);
// accuracy = correct / predicted (0 when nothing was predicted).
void SetAccuracy(AttackRow& row);

// --- cost and progress (every attack) --------------------------------------------------------

// Called by a long attack as it goes: `done` of `total` work units (the attack's own unit:
// trials, syscalls, samples), from the attack's thread, at most every few thousand units. Empty:
// nothing is reported. The CLI draws it on stderr when stderr is a terminal.
using AttackProgress = std::function<void(uint64_t done, uint64_t total)>;

// What an attack will cost, estimated from its options alone before it runs: wall time on one
// core of this project's machine (docs/strength.md "Limits": the rates each estimate assumes)
// and peak memory of the data it keeps.
struct AttackCost {
  double seconds = 0;
  double bytes = 0;
};
// The bound above which the CLI refuses an attack unless asked to run it anyway.
inline constexpr double kAttackSecondsBound = 60;
inline constexpr double kAttackBytesBound = 512.0 * 1024 * 1024;
inline bool WithinAttackBounds(const AttackCost& c) {
  return c.seconds <= kAttackSecondsBound && c.bytes <= kAttackBytesBound;
}
// "about 3.2 h and 1.5 GiB", "under 1 s and 1 MiB".
std::string DescribeAttackCost(const AttackCost& c);

// The one verdict rule of the prediction attacks (timer, migration, live): "nothing predicted";
// "chance" unless the hits lie more than kVerdictSigmas binomial standard deviations above
// `chance` x predicted (so a few lucky hits in a short run stay "chance", and a small real edge
// in a long one is not waved away); then "predictable" when at least half the predictions hit,
// else "above chance". The x-chance column says by how much.
inline constexpr double kVerdictSigmas = 4;
std::string PredictionVerdict(uint64_t correct, uint64_t predicted, double chance);

// --- 1. prng-recover -----------------------------------------------------------------------

struct PrngRecoverOptions {
  std::string policy = "percpu-prng";
  uint64_t observations = 24;  // offsets the attacker learns
  uint64_t predict = 1000;     // later offsets it predicts
  uint64_t gaps = 0;           // up to this many unseen outputs between two observations
  uint64_t seed = 1;
  uint64_t trials = 1;               // independent seeded states (seed, seed+1, ...)
  uint64_t search_budget = 4000000;  // max search nodes per trial (gap-pattern search)
  std::span<const kstack::PolicyDef> policy_table = kstack::Policies();
  AttackProgress progress;  // units: trials
};

// The cost of RunPrngRecover(options): trials x the search nodes a trial visits (every gap
// pattern up to 20 observations, where full rank starts to prune, capped by the budget) at
// ~1 us a node; memory of the fitting patterns kept for the candidate count (24 bytes each, x2
// for growth) and of the linear map.
AttackCost EstimatePrngRecoverCost(const PrngRecoverOptions& options);

// Policies prng-recover can be run against ("uniform" = a ChaCha20 stream, the reference): the
// rows with a secret generator (not off, not counter-fed: attack timer) that are not a lock or
// batch variant of another row; the linear ones (LFSR113, the attacker's model) first, then the
// keyed-hash ones, then the crng-fed ones, each in table order, then uniform.
std::vector<std::string> PrngRecoverPolicies(
    std::span<const kstack::PolicyDef> table = kstack::Policies());

// What the prng-recover attacker concludes from observed offsets of one CPU's stream, assuming
// LFSR113 (the offset model of `policy`: buffered-prng's 5 offsets per output, else percpu-prng's
// one), with 0..gaps unseen outputs between two observations (the first observation is stream
// index 0). Every gap pattern is searched depth first; a "candidate" is a distinct (state, last
// position) that fits every observation.
struct PrandomRecovery {
  // "recovered", "full rank, unverified", "rank below 113: not recovered", "several candidate
  // states: not recovered", "no LFSR113 state fits: not recovered" or "search budget exhausted:
  // not recovered" (then the candidates found are not all there are).
  std::string outcome;
  bool recovered = false;   // a unique state of rank 113 with >= 12 redundant equations
  int rank = 0;             // of the first candidate (no candidate: the deepest consistent prefix)
  uint64_t check_bits = 0;  // redundant equations of the same system
  uint64_t candidates = 0;  // distinct candidates found
  bool candidates_complete = true;  // false: the search budget ran out first
  // Entropy of the next offset, bits: the posterior over every fitting gap pattern (each weighted
  // 2^-rank, uniform over the offsets its system allows); over the candidates found when the
  // search was cut short; 6 when nothing fits.
  double next_bits = 6;
  // The first candidate's state before the first observed output (the 15 bits no output depends
  // on are 0) and the stream index of the last observation under it: the attacker predicts from
  // them (no candidate: the deepest consistent prefix).
  rng::PrandomState state;
  uint64_t last_pos = 0;
  uint64_t nodes = 0;  // search nodes visited
};
// UsageError for an unknown policy, no observations, or an offset that is not a multiple of 16
// below 1024.
Expected<PrandomRecovery> RecoverPrandomState(
    const std::string& policy, std::span<const uint32_t> observed, uint64_t gaps,
    uint64_t search_budget, std::span<const kstack::PolicyDef> table = kstack::Policies());

// The attack; UsageError (no flag names) for an unknown policy or out-of-range numbers.
Expected<AttackReport> RunPrngRecover(const PrngRecoverOptions& options);

// --- 2. migration --------------------------------------------------------------------------

struct MigrationOptions {
  std::vector<std::string> policies;  // empty = every supported design
  int cpus = 2;
  uint64_t syscalls = 100000;      // attacker syscalls
  double migrate_prob = 0.5;       // P(the attacker is migrated during one of its syscalls)
  double user_migrate_prob = 0.5;  // P(it is moved while in user mode after a syscall)
  double other_rate = 0.2;         // mean other-task syscalls per CPU between two attacker ones
  uint64_t seed = 1;
  std::span<const kstack::PolicyDef> policy_table = kstack::Policies();
  AttackProgress progress;  // units: attacker syscalls over all designs
};

// The cost of RunMigration(options): designs x syscalls x (cpus x (1 + other_rate) + 2)
// simulated steps at ~15 ns each; memory is a few KiB per CPU.
AttackCost EstimateMigrationCost(const MigrationOptions& options);

// Every row of the table, in table order, then "uniform".
std::vector<std::string> MigrationPolicies(
    std::span<const kstack::PolicyDef> table = kstack::Policies());
Expected<AttackReport> RunMigration(const MigrationOptions& options);

// --- 3. timer ------------------------------------------------------------------------------

// --measure: per-call durations (ns) of a raw getpid(2) timed by the engine's CycleClock here;
// the attacker's error is each duration minus their median.
struct JitterMeasurement {
  std::vector<double> errors_ns;  // duration - median, per call
  double robust_sigma_ns = 0;     // IQR / 1.349 of the durations (a normal law's sd for that IQR)
  // The counter's effective step (timing::Calibration::resolution_ns): every duration is a
  // multiple of it, so an IQR of one step is the counter's resolution, not the call's jitter.
  double counter_step_ns = 0;
};
// UsageError below 100 calls; RuntimeError if the counter fails.
Expected<JitterMeasurement> MeasureSyscallJitter(uint64_t calls);

struct TimerOptions {
  std::vector<double> resolutions_hz;  // empty = 24 MHz, 125 MHz, 1 GHz and this TSC
  std::vector<double> jitters_ns;      // standard deviations of the attacker's read error
  // Measured jitter (errors_ns empty: none); when given, a row per resolution draws the error
  // from its samples instead of a normal law.
  JitterMeasurement measured;
  double tsc_hz = 0;        // this machine's counter rate (0 = leave the TSC row out)
  bool uniform_row = true;  // a reference row: the design fed by a uniform source
  uint64_t samples = 200000;
  uint64_t seed = 1;
  // The counter-fed rows (AttackFacts) are attacked, each at every resolution; with more than
  // one, the design column names the policy before the resolution.
  std::span<const kstack::PolicyDef> policy_table = kstack::Policies();
  AttackProgress progress;  // units: simulated syscalls over all rows
};

// The cost of MeasureSyscallJitter(measure_calls) (0: no measurement; ~0.5 us and 16 bytes at
// peak per call, 8 kept) and then RunTimer(options) (rows x samples at ~60 ns each).
AttackCost EstimateTimerCost(const TimerOptions& options, uint64_t measure_calls);

Expected<AttackReport> RunTimer(const TimerOptions& options);

}  // namespace kstacklab::analysis
