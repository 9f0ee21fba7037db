// prng-recover: the final design's per-CPU LFSR113 (percpu-prng, a96ef5848cb0) is linear over
// GF(2), so each leaked offset (bits 4..9 of one prandom_u32_state() output) is 6 linear
// equations in the 128 state bits (113 of which matter: the low 1, 3, 4 and 7 bits of s1..s4 are
// masked off by the first step of prandom_u32_state(), lib/random32.c). The attacker solves
// them (analysis/gf2.h) and predicts every later offset. The same attacker against designs
// that are not LFSR113 (the siphash designs, the crng-fed legacy and per-task designs, a uniform
// source) finds no consistent state or a wrong one, and stays at chance.
//
// The linear map is not re-derived from the algorithm: column v of "state -> output n" is the
// output of the real rng::PrandomU32State() started from the state with only bit v set (the
// step is XORs, shifts and constant masks, hence linear; a test checks it on random states, and
// another recovers the state prandom_seed_full_state()'s seeding gives known raw seeds).
//
// Gaps (--gaps G): between two observations up to G outputs the attacker does not see (other
// tasks' syscalls on that CPU), their number unknown to it. The attacker searches the gap
// patterns depth first: every node adds one observation at one candidate position to an
// incremental elimination and is pruned as soon as the system is inconsistent. The cost is about
// (G+1)^(observations needed for full rank, 19) nodes before pruning starts: G = 1 is ~10^6
// nodes, G >= 2 exceeds any practical --search-budget, and the attack then says so. The search
// does not stop at the first few fits: with too few observations thousands of gap patterns fit
// (G = 1, 20 observations: ~2^19 patterns, 7 check bits, ~4000 fit), and the next offset's
// entropy over all of them is what the attacker is left with.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <utility>

#include "attack_util.h"
#include "gf2.h"
#include "kstacklab/analysis/attack.h"
#include "kstacklab/analysis/entropy.h"
#include "kstacklab/kstack/policies.h"
#include "kstacklab/rng/prandom.h"

namespace kstacklab::analysis {
namespace {

constexpr int kStateBits = 128;  // s1..s4, 32 bits each (15 of them never reach an output)
constexpr int kEffectiveBits = 113;
constexpr int kWords = kStateBits / 64;
constexpr int kVerifyBits = 12;  // redundant equations needed before claiming recovery

using Row = std::array<uint64_t, kWords>;

// How the attacked design turns LFSR113 outputs into offsets (the attacker's model).
enum class Model {
  kDirect,    // percpu-prng: offset k = bits 4..9 of output k
  kBuffered,  // buffered-prng: offset k = bits 6(k%5)..+5 of output k/5
};

// The attacker assumes LFSR113: the design's own output layout when it is linear, else the
// direct one (percpu-prng's).
Model ModelFor(const kstack::PolicyDef* policy) {
  const bool buffered = policy != nullptr && kstack::LinearOverGf2(policy->facts) &&
                        policy->facts.offsets_per_output == 5;
  return buffered ? Model::kBuffered : Model::kDirect;
}

// Output n (0-based: the (n+1)-th step from the unknown state) and the bit of it that holds
// offset bit 4 for offset index k.
std::pair<uint64_t, int> Locate(Model m, uint64_t k) {
  if (m == Model::kBuffered) return {k / 5, static_cast<int>(6 * (k % 5))};
  return {k, 4};
}

rng::PrandomState StateFromBits(const std::vector<uint64_t>& x) {
  auto word = [&](int i) { return static_cast<uint32_t>(x[i / 2] >> (32 * (i % 2))); };
  return {word(0), word(1), word(2), word(3)};
}

// coef[n][b]: the state bits whose XOR is bit b of output n. Columns from the real generator.
class LinearMap {
 public:
  void Extend(uint64_t outputs) {
    if (outputs <= coef_.size()) return;
    const size_t from = coef_.size();
    coef_.resize(outputs);
    for (int v = 0; v < kStateBits; ++v) {
      uint32_t w[4] = {0, 0, 0, 0};
      w[v / 32] = uint32_t{1} << (v % 32);
      rng::PrandomState s{w[0], w[1], w[2], w[3]};
      for (size_t n = 0; n < outputs; ++n) {
        const uint32_t out = rng::PrandomU32State(s);
        if (n < from) continue;
        for (int b = 0; b < 32; ++b) {
          if ((out >> b & 1) != 0) coef_[n][b][v / 64] |= uint64_t{1} << (v % 64);
        }
      }
    }
  }
  const Row& At(uint64_t n, int bit) const { return coef_[n][bit]; }

 private:
  std::vector<std::array<Row, 32>> coef_;
};

// The offsets a design produces on one CPU, from a fresh boot keyed by `dice`: its row's
// Simulate (the real policy objects of kstack/) with an injected cpu (always 0); policy nullptr =
// the uniform reference.
Expected<std::vector<uint32_t>> DrawStream(const kstack::PolicyDef* policy, Dice& dice,
                                           uint64_t n) {
  std::vector<uint32_t> out;
  out.reserve(n);
  if (policy == nullptr) {
    UniformSource u(dice);
    for (uint64_t i = 0; i < n; ++i) out.push_back(kstack::KstackOffsetMax(u.Next()));
    return out;
  }
  kstack::CpuScript script;
  auto sim = policy->simulate({1, &script, &dice, nullptr});
  if (!sim.ok()) return sim.error();
  for (uint64_t i = 0; i < n; ++i) {
    out.push_back(sim->entry());
    if (sim->exit) sim->exit();
  }
  return out;
}

struct Leaf {
  std::vector<uint64_t> solution;
  int rank = 0;
  uint64_t check_bits = 0;
  uint64_t last_pos = 0;
  uint64_t next_values = ~uint64_t{0};  // bit v: the next offset can be 16 v under the system
};

bool Parity(const Row& r, const std::vector<uint64_t>& x) {
  int p = 0;
  for (int w = 0; w < kWords; ++w) p ^= std::popcount(r[w] & x[w]) & 1;
  return p != 0;
}

class Search {
 public:
  Search(Model model, const LinearMap& map, std::span<const uint32_t> observed, uint64_t gaps,
         uint64_t budget)
      : model_(model),
        map_(map),
        observed_(observed),
        gaps_(gaps),
        budget_(budget),
        system_(kStateBits) {}

  void Run() { Visit(0, 0); }

  // Entropy of the next offset over every fitting gap pattern found, bits: each pattern's
  // likelihood is 2^-rank (a uniform state satisfies rank independent equations with that
  // probability; the patterns are equally likely a priori), and given the pattern the next
  // offset is uniform over the values its system allows. 6 when nothing fits.
  double NextOffsetBits() const {
    if (next_by_rank_.empty()) return kOffsetEntropyBits;
    const int min_rank = next_by_rank_.begin()->first;
    std::array<double, 64> mass{};
    for (const auto& [rank, by_value] : next_by_rank_) {
      const double w = std::exp2(min_rank - rank);
      for (size_t v = 0; v < mass.size(); ++v) mass[v] += w * by_value[v];
    }
    return ShannonBits(std::span<const double>(mass));
  }

  std::optional<Leaf> first;  // the first candidate found: the attacker predicts from it
  uint64_t candidates = 0;    // distinct (solution, last position) among the fitting patterns
  uint64_t nodes = 0;
  bool exhausted = false;
  size_t best_depth = 0;
  Leaf best;  // the deepest consistent prefix (what the attacker predicts from without a leaf)

 private:
  // Equations of offset `offset` at stream index k; false when they made it inconsistent.
  bool AddOffset(uint64_t k, uint32_t offset) {
    const auto [n, shift] = Locate(model_, k);
    for (int j = 0; j < 6; ++j) {
      const Row& r = map_.At(n, shift + j);
      if (system_.Add(r, ((offset >> (4 + j)) & 1) != 0) == Gf2System::AddResult::kInconsistent) {
        return false;
      }
    }
    return true;
  }

  // The values the next offset (index pos + 1) can take under the current system: v0 (the
  // solution's) plus whatever the system leaves free. A combination c of the offset's 6 bit rows
  // is fixed iff their residuals XOR to 0; v is possible iff it agrees with v0 on every such c.
  uint64_t NextValues(uint64_t pos, const std::vector<uint64_t>& solution) const {
    const auto [n, shift] = Locate(model_, pos + 1);
    uint32_t v0 = 0;
    std::array<std::vector<uint64_t>, 6> residual;
    for (int j = 0; j < 6; ++j) {
      const Row& r = map_.At(n, shift + j);
      if (Parity(r, solution)) v0 |= 1u << j;
      residual[j] = system_.Residual(r);
    }
    std::vector<uint32_t> fixed;  // the combinations c the system fixes
    for (uint32_t c = 1; c < 64; ++c) {
      Row sum{};
      for (int j = 0; j < 6; ++j) {
        if ((c >> j & 1) == 0) continue;
        for (int w = 0; w < kWords; ++w) sum[w] ^= residual[j][w];
      }
      if (sum == Row{}) fixed.push_back(c);
    }
    uint64_t values = 0;
    for (uint32_t v = 0; v < 64; ++v) {
      const bool ok = std::all_of(fixed.begin(), fixed.end(), [&](uint32_t c) {
        return (std::popcount(c & (v ^ v0)) & 1) == 0;
      });
      if (ok) values |= uint64_t{1} << v;
    }
    return values;
  }

  Leaf Snapshot(uint64_t pos) const {
    Leaf l;
    l.solution = system_.Solve();
    l.rank = system_.rank();
    l.check_bits = system_.equations() - static_cast<uint64_t>(system_.rank());
    l.last_pos = pos;
    l.next_values = NextValues(pos, l.solution);
    return l;
  }

  void AddLeaf(Leaf leaf) {
    std::array<double, 64>& by_value = next_by_rank_[leaf.rank];
    const double share = 1.0 / std::popcount(leaf.next_values);
    for (size_t v = 0; v < by_value.size(); ++v) {
      if ((leaf.next_values >> v & 1) != 0) by_value[v] += share;
    }
    // Two gap patterns can embed the observations in the same stream (two equal adjacent
    // offsets): one candidate, though both patterns count in the posterior above. At full rank
    // the solution is canonical (the 15 bits no output depends on are free columns, set to 0).
    // Each fit is kept as its 24-byte key and counted once at the end (Finish).
    leaves_.push_back({leaf.solution[0], leaf.solution[1], leaf.last_pos});
    if (!first) first = std::move(leaf);
  }

 public:
  // After Run(): candidates = the distinct (solution, last position) among the fits.
  void Finish() {
    std::sort(leaves_.begin(), leaves_.end());
    candidates =
        static_cast<uint64_t>(std::unique(leaves_.begin(), leaves_.end()) - leaves_.begin());
    leaves_ = {};
  }

 private:
  void Visit(size_t i, uint64_t pos) {
    if (++nodes > budget_) {
      exhausted = true;
      return;
    }
    const Gf2System::Mark mark = system_.GetMark();
    if (AddOffset(pos, observed_[i])) {
      if (i + 1 > best_depth) {
        best_depth = i + 1;
        best = Snapshot(pos);
      }
      if (i + 1 == observed_.size()) {
        AddLeaf(Snapshot(pos));
      } else {
        for (uint64_t g = 0; g <= gaps_ && !exhausted; ++g) Visit(i + 1, pos + 1 + g);
      }
    }
    system_.Rollback(mark);
  }

  Model model_;
  const LinearMap& map_;
  std::span<const uint32_t> observed_;
  uint64_t gaps_;
  uint64_t budget_;
  Gf2System system_;
  std::vector<std::array<uint64_t, kWords + 1>> leaves_;  // every fit: solution, last position
  std::map<int, std::array<double, 64>> next_by_rank_;    // rank -> summed next-offset shares
};

// The attacker on `observed` (RecoverPrandomState without the checks), against a map that
// reaches every output the search can touch.
PrandomRecovery Solve(Model model, const LinearMap& map, std::span<const uint32_t> observed,
                      uint64_t gaps, uint64_t budget) {
  Search search(model, map, observed, gaps, budget);
  search.Run();
  search.Finish();
  PrandomRecovery r;
  r.nodes = search.nodes;
  r.candidates = search.candidates;
  r.candidates_complete = !search.exhausted;
  r.next_bits = search.NextOffsetBits();
  const Leaf& used = search.first ? *search.first : search.best;
  r.rank = used.rank;
  r.check_bits = used.check_bits;
  r.state = StateFromBits(used.solution);
  r.last_pos = used.last_pos;
  if (search.exhausted) {
    r.outcome = "search budget exhausted: not recovered";
  } else if (search.candidates == 0) {
    r.outcome = "no LFSR113 state fits: not recovered";
  } else if (search.candidates > 1) {
    r.outcome = "several candidate states: not recovered";
  } else if (used.rank < kEffectiveBits) {
    r.outcome = "rank below 113: not recovered";
  } else if (used.check_bits < kVerifyBits) {
    r.outcome = "full rank, unverified";
  } else {
    r.outcome = "recovered";
    r.recovered = true;
  }
  return r;
}

// Outputs the equations of `observations` offsets with up to `gaps` unseen outputs between two
// can reach: the last observed index plus the next offset's.
uint64_t OutputsNeeded(Model model, uint64_t observations, uint64_t gaps) {
  const uint64_t max_index = (observations - 1) * (gaps + 1) + 1;
  return Locate(model, max_index).first + 1;
}

// The attacker's predictions of offsets first..first+count-1 from a solved state.
std::vector<uint32_t> Predict(Model m, const rng::PrandomState& start, uint64_t first,
                              uint64_t count) {
  std::vector<uint32_t> out;
  out.reserve(count);
  if (m == Model::kDirect) {
    kstack::CpuScript script;
    kstack::PercpuPrandomPolicy<kstack::InjectedCpu> p(std::span(&start, 1),
                                                       kstack::InjectedCpu{&script});
    for (uint64_t k = 0; k < first; ++k) p.NextOffset();
    for (uint64_t k = 0; k < count; ++k) out.push_back(p.NextOffset());
    return out;
  }
  rng::PrandomState s = start;
  uint32_t word = 0;
  for (uint64_t k = 0; k < first + count; ++k) {
    if (k % 5 == 0) word = rng::PrandomU32State(s);
    if (k >= first) out.push_back(((word >> (6 * (k % 5))) & 0x3F) << 4);
  }
  return out;
}

struct Trial {
  PrandomRecovery attacker;
  uint64_t correct = 0;
};

Expected<Trial> RunTrial(const PrngRecoverOptions& o, const kstack::PolicyDef* policy,
                         const LinearMap& map, uint64_t trial) {
  Dice dice(o.seed * 0x100000001B3ull + trial);
  // Where the attacker's observations sit in the CPU's stream: index 0, then gaps in [0, G].
  std::vector<uint64_t> positions = {0};
  for (uint64_t i = 1; i < o.observations; ++i) {
    positions.push_back(positions.back() + 1 + dice.Below(o.gaps + 1));
  }
  const uint64_t last = positions.back();
  auto stream = DrawStream(policy, dice, last + 1 + o.predict);
  if (!stream.ok()) return stream.error();
  std::vector<uint32_t> observed;
  for (uint64_t p : positions) observed.push_back((*stream)[p]);

  const Model model = ModelFor(policy);
  Trial t;
  t.attacker = Solve(model, map, observed, o.gaps, o.search_budget);
  // The attacker predicts from its solution either way; the truth decides.
  const std::vector<uint32_t> guess =
      Predict(model, t.attacker.state, t.attacker.last_pos + 1, o.predict);
  for (uint64_t k = 0; k < o.predict; ++k) {
    if (guess[k] == (*stream)[last + 1 + k]) ++t.correct;
  }
  return t;
}

// The attack's row: o.trials trials against `map`, aggregated (worst trial for the evidence).
Expected<AttackRow> RecoverRow(const PrngRecoverOptions& o, const kstack::PolicyDef* policy,
                               const LinearMap& map, uint64_t* incomplete_trials) {
  AttackRow row;
  row.design = o.policy;
  row.setting = o.gaps == 0 ? "consecutive" : fmt::format("gaps<={} (unknown)", o.gaps);
  row.observations = o.observations;
  int rank_min = kStateBits;
  uint64_t check_min = UINT64_MAX;
  uint64_t candidates_max = 0;
  bool candidates_lower_bound = false;
  uint64_t nodes_max = 0;
  uint64_t recovered = 0;
  double next_bits = 0;
  std::map<std::string, uint64_t> outcomes;
  for (uint64_t trial = 0; trial < o.trials; ++trial) {
    if (o.progress) o.progress(trial, o.trials);
    auto t = RunTrial(o, policy, map, trial);
    if (!t.ok()) return t.error();
    const PrandomRecovery& a = t->attacker;
    row.predicted += o.predict;
    row.correct += t->correct;
    rank_min = std::min(rank_min, a.rank);
    check_min = std::min(check_min, a.check_bits);
    candidates_max = std::max(candidates_max, a.candidates);
    if (!a.candidates_complete) {
      candidates_lower_bound = true;
      ++*incomplete_trials;
    }
    nodes_max = std::max(nodes_max, a.nodes);
    recovered += a.recovered ? 1 : 0;
    next_bits += a.next_bits;
    ++outcomes[a.outcome];
  }
  SetAccuracy(row);
  row.remaining_bits = next_bits / static_cast<double>(o.trials);
  if (outcomes.size() == 1) {
    row.verdict = outcomes.begin()->first;
  } else if (recovered > 0) {
    row.verdict = fmt::format("recovered in {}/{} trials", recovered, o.trials);
  } else {
    const auto most =
        std::max_element(outcomes.begin(), outcomes.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    row.verdict = fmt::format("{} ({}/{})", most->first, most->second, o.trials);
  }
  AddEvidence(row, "rank", rank_min);
  AddEvidence(row, "check bits", static_cast<double>(check_min));
  // A trial cut short by the budget found some of its candidates: the max is then a lower bound.
  AddCountEvidence(row, "candidates", candidates_max, candidates_lower_bound);
  AddEvidence(row, "recovered", fmt::format("{}/{}", recovered, o.trials));
  AddEvidence(row, "search nodes", static_cast<double>(nodes_max));
  return row;
}

// prng-recover's order of the rows it attacks: the attacker's own model first.
int PrngOrder(kstack::Generator g) {
  switch (g) {
    case kstack::Generator::kPrandom:
      return 0;
    case kstack::Generator::kSiphash:
      return 1;
    case kstack::Generator::kCrng:
      return 2;
    case kstack::Generator::kNone:
    case kstack::Generator::kCounter:
      break;
  }
  return -1;  // not attacked: no secret generator (off), or counter-fed (attack timer)
}

// The rows PrngRecoverPolicies() names, in its order.
std::vector<const kstack::PolicyDef*> PrngRecoverRows(std::span<const kstack::PolicyDef> table) {
  std::vector<const kstack::PolicyDef*> rows;
  for (int order = 0; order <= 2; ++order) {
    for (const kstack::PolicyDef& p : table) {
      if (PrngOrder(p.facts.generator) == order && p.facts.variant_of == nullptr) {
        rows.push_back(&p);
      }
    }
  }
  return rows;
}

// The row of `name` if prng-recover attacks it (*found: it does; the row is nullptr for uniform).
const kstack::PolicyDef* PrngRecoverRow(const std::string& name,
                                        std::span<const kstack::PolicyDef> table, bool* found) {
  *found = name == "uniform";
  if (*found) return nullptr;
  for (const kstack::PolicyDef* p : PrngRecoverRows(table)) {
    if (name == p->name) {
      *found = true;
      return p;
    }
  }
  return nullptr;
}

// Which model each row is attacked with. Default table: siphash, siphash-task, legacy-arm64 and
// per-task (with uniform) get the percpu-prng (direct) model; buffered-prng its own.
PrngModelsNote ModelNote(std::span<const kstack::PolicyDef> table) {
  PrngModelsNote note;
  for (const kstack::PolicyDef* p : PrngRecoverRows(table)) {
    if (!kstack::LinearOverGf2(p->facts)) {
      note.other.emplace_back(p->name);
    } else if (ModelFor(p) == Model::kDirect) {
      if (note.direct.empty()) note.direct = p->name;
    } else {
      note.own.emplace_back(p->name);
    }
  }
  return note;
}

}  // namespace

// Observations after which a fitting pattern is at full rank (ceil(113 / 6) = 19) and each
// further one prunes all but (G + 1) / 64 of the patterns: the search grows (G + 1)-fold per
// observation up to here, then shrinks.
constexpr uint64_t kPruningDepth = 20;
// ~1 us per search node (0.8-1.6 us measured on this project's machine, gaps 1..8).
constexpr double kPrngSecondsPerNode = 1e-6;

AttackCost EstimatePrngRecoverCost(const PrngRecoverOptions& o) {
  // Nodes of one trial: sum over depths d < min(K, 20) of (G + 1)^d, capped by the budget.
  const uint64_t depth = std::min(o.observations, kPruningDepth);
  double nodes = 0;
  double level = 1;
  for (uint64_t d = 0; d < depth && nodes < static_cast<double>(o.search_budget); ++d) {
    nodes += level;
    level *= static_cast<double>(o.gaps + 1);
  }
  nodes =
      std::min(nodes + static_cast<double>(o.observations), static_cast<double>(o.search_budget));
  AttackCost c;
  c.seconds = static_cast<double>(o.trials) * nodes * kPrngSecondsPerNode +
              static_cast<double>(o.trials) * static_cast<double>(o.predict) * 20e-9;
  const double outputs = static_cast<double>((o.observations - 1) * (o.gaps + 1) + 2);
  c.bytes = nodes * 2 * sizeof(std::array<uint64_t, kWords + 1>) +  // the fits kept (x2: growth)
            outputs * 32 * sizeof(Row) +                            // the linear map
            static_cast<double>(o.predict) * 2 * sizeof(uint32_t);  // stream and predictions
  return c;
}

std::vector<std::string> PrngRecoverPolicies(std::span<const kstack::PolicyDef> table) {
  std::vector<std::string> names;
  for (const kstack::PolicyDef* p : PrngRecoverRows(table)) names.emplace_back(p->name);
  names.emplace_back("uniform");
  return names;
}

Expected<PrandomRecovery> RecoverPrandomState(const std::string& policy,
                                              std::span<const uint32_t> observed, uint64_t gaps,
                                              uint64_t search_budget,
                                              std::span<const kstack::PolicyDef> table) {
  bool found = false;
  const kstack::PolicyDef* row = PrngRecoverRow(policy, table, &found);
  if (!found) {
    return UsageError(fmt::format("prng-recover does not support policy '{}'", policy));
  }
  if (observed.empty() || search_budget < 1) {
    return UsageError("prng-recover: at least one observed offset and a search budget >= 1");
  }
  for (size_t i = 0; i < observed.size(); ++i) {
    if (!kstack::IsMaskedOffset(observed[i])) {
      return UsageError(fmt::format("observed offset {} (index {}) is not one of 0, 16, ..., 1008",
                                    observed[i], i));
    }
  }
  const Model model = ModelFor(row);
  LinearMap map;
  map.Extend(OutputsNeeded(model, observed.size(), gaps));
  return Solve(model, map, observed, gaps, search_budget);
}

Expected<AttackReport> RunPrngRecover(const PrngRecoverOptions& o) {
  bool found = false;
  const kstack::PolicyDef* policy = PrngRecoverRow(o.policy, o.policy_table, &found);
  if (!found) {
    return UsageError(fmt::format("prng-recover does not support policy '{}'", o.policy));
  }
  if (o.observations < 1 || o.observations > 10000 || o.predict < 1 || o.trials < 1 || o.gaps > 8 ||
      o.search_budget < 1) {
    return UsageError("prng-recover: observations 1..10000, predict >= 1, trials >= 1, gaps 0..8");
  }
  LinearMap map;
  map.Extend(OutputsNeeded(ModelFor(policy), o.observations, o.gaps));

  uint64_t incomplete = 0;
  auto row = RecoverRow(o, policy, map, &incomplete);
  if (!row.ok()) return row.error();

  AttackReport r;
  r.attack = "prng-recover";
  r.seed = o.seed;
  r.claim = AttackClaim::kPrngPeriod;
  r.rows.push_back(std::move(*row));
  r.notes = {PrngMethodNote{o.predict}, AttackFixedNote::kPrngColumns, ModelNote(o.policy_table)};
  if (incomplete > 0) r.notes.emplace_back(PrngBudgetNote{incomplete, o.trials});
  if (o.gaps > 0) r.notes.emplace_back(PrngGapsNote{o.gaps, o.search_budget});
  return r;
}

}  // namespace kstacklab::analysis
