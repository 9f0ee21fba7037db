// The words of `entropy --kernel` (include/kstacklab/kernel_entropy_report.h).
#include "kstacklab/report/kernel_entropy_report.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "kstacklab/report/entropy_report.h"
#include "kstacklab/report/grid_table.h"
#include "kstacklab/results/json.h"

namespace kstacklab::report {
namespace {

Json EnvironmentJson(const KernelEntropyReport& r) {
  Json env = Json::object();
  env["kernel_release"] = OptionalJson(r.environment.kernel_release);
  env["randomize_kstack_offset"] = OptionalJson(r.environment.randomize_kstack_offset);
  env["effective_kstack_randomization"] =
      OptionalJson(r.environment.effective_kstack_randomization);
  env["design_state"] = r.design.state;
  env["design_input"] = r.design.input;
  env["design"] = r.design.summary;
  env["prng_state_unreadable"] =
      r.prng_unreadable.empty() ? Json(nullptr) : Json(r.prng_unreadable);
  return env;
}

std::string JsonText(const Json& v) {
  if (v.is_null()) return "?";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// One row per lag: mutual information between offsets i and i+lag, and the shuffled baseline.
GridTable DependenceTable(const std::vector<live::LagDependence>& dependence) {
  GridTable t;
  t.header = {
      {"lag", "pairs", "MI plug-in", "MI M-M", "shuffled avg", "shuffled max", "H(next|prev)"}};
  t.right_align = std::vector<bool>(7, true);
  std::vector<std::vector<std::string>> rows;
  for (const live::LagDependence& d : dependence) {
    rows.push_back({fmt::format("{}", d.lag), fmt::format("{}", d.mi.pairs),
                    fmt::format("{:.5f}", d.mi.plugin_bits),
                    fmt::format("{:.5f}", d.mi.miller_madow_bits),
                    fmt::format("{:.5f}", d.shuffled_plugin_bits),
                    fmt::format("{:.5f}", d.shuffled_plugin_max_bits),
                    fmt::format("{:.4f}", d.mi.conditional_bits)});
  }
  t.groups = {std::move(rows)};
  return t;
}

// Record indices as "3, 17, ..." (the first live::kMaxPrngListed), with how many in all.
std::string IndexList(const std::vector<size_t>& listed, uint64_t total) {
  std::string out;
  for (size_t i : listed) out += fmt::format("{}{}", out.empty() ? "" : ", ", i);
  if (total > listed.size()) out += fmt::format(", ... ({} in all)", total);
  return out;
}

// The per-record and succession checks of the per-CPU generator (live::CheckPrngStates).
std::string PrngText(const live::PrngCheck& c, const kstack::OffsetGeometry& g) {
  std::string out = fmt::format(
      "per-CPU generator (kstack_rnd_state read at sys_exit): offset = (s1^s2^s3^s4) & 0x{:X}{} in "
      "{} of {} records",
      g.mask, g.mask % g.align == 0 ? "" : fmt::format(" rounded up to {}", g.align), c.agreeing,
      c.checked);
  if (c.agreeing < c.checked) {
    out +=
        fmt::format("; disagreeing: records {}", IndexList(c.mismatches, c.checked - c.agreeing));
  }
  out += fmt::format(
      "\nsuccession on each CPU: {} of {} consecutive pairs follow by k LFSR113 steps (k: median "
      "{}, max {}; k - 1 = other syscalls on that CPU)",
      c.following, c.pairs, c.median_steps, c.max_steps);
  if (c.unchanged > 0) {
    out +=
        fmt::format(", {} repeat the state (no draw there in between: a migration)", c.unchanged);
  }
  if (c.broken > 0) {
    out += fmt::format(
        ", {} do not follow within {} steps (records {}: a reseed, another "
        "generator, or another CPU's state)",
        c.broken, live::kMaxPrngSteps, IndexList(c.breaks, c.broken));
  }
  return out + "\n";
}

}  // namespace

std::string RenderKernelEntropyTable(const KernelEntropyReport& r) {
  const Json env = EnvironmentJson(r);
  std::string out =
      fmt::format("kernel {}  randomize_kstack_offset: {} (effective: {})\ndesign: {}\n",
                  JsonText(env["kernel_release"]), JsonText(env["randomize_kstack_offset"]),
                  JsonText(env["effective_kstack_randomization"]), r.design.summary);
  out += fmt::format("source: {}, syscall {}, {} thread(s), {} CPU(s){}\n", r.source, r.syscall,
                     r.threads_seen, r.cpus_seen,
                     r.cpu >= 0 ? fmt::format(" (pinned to CPU {})", r.cpu) : std::string());
  const kstack::OffsetGeometry& g = r.derived.geometry;
  out +=
      fmt::format("offsets: H0 - (local address - task stack base), H0 = {} bytes, spread {} bytes",
                  r.derived.anchor_height, r.derived.spread);
  if (r.derived.state_checked > 0) {
    out +=
        fmt::format("; equal to task_struct.kstack_offset & 0x{:X}{} in {} of {} records", g.mask,
                    g.mask % g.align == 0 ? "" : fmt::format(" rounded up to {}", g.align),
                    r.derived.state_agreeing, r.derived.state_checked);
  }
  out += fmt::format(
      "\ngeometry (read off the heights): {}; ideal {:.4f} bits (Shannon), chi2 against that "
      "ideal distribution\n",
      g.name, analysis::IdealShannonBits(g));
  if (r.prng.checked > 0) out += PrngText(r.prng, g);
  if (!r.prng_unreadable.empty()) out += "note: " + r.prng_unreadable + "\n";
  for (const kstack::OffsetGeometry& alt : r.derived.also_consistent) {
    out += fmt::format(
        "also consistent with these heights (likelihood ratio >= {:g} against the geometry above; "
        "more samples tell them apart): {}\n",
        live::kAlsoConsistentLikelihood, alt.name);
  }
  out += "\n";
  out += RenderGrid(EntropyStatsTable("kernel", {{r.syscall, r.stats}}));
  out +=
      "\nserial dependence: mutual information between offsets i and i+lag of the same thread "
      "on the same CPU, bits (0 = independent; the offsets' entropy = next offset determined)\n";
  out += RenderGrid(DependenceTable(r.dependence));
  out += fmt::format(
      "MI M-M: plug-in with the Miller-Madow bias correction; shuffled: plug-in MI of the same "
      "pairs with the later offset shuffled ({} shuffles) — the estimator's bias under "
      "independence. Dependence shows as MI plug-in well above shuffled max. H(next|prev): "
      "conditional entropy, Miller-Madow corrected.\n",
      r.shuffles);
  const uint64_t cells = uint64_t{g.count()} * g.count();
  if (!r.dependence.empty() && r.dependence.front().mi.pairs < 10 * cells) {
    out += fmt::format(
        "note: {} pairs for {} cells is sparse: the plug-in bias is large and Miller-Madow "
        "under-corrects; compare with the shuffled columns (or use --samples {}+)\n",
        r.dependence.front().mi.pairs, cells, 10 * cells);
  }
  if (r.inputs.pairs > 0) {
    out += fmt::format(
        "kernel input (state_(n+1) xor ror32(state_n, 5)): increases in {} of {} consecutive "
        "pairs, median step {:.0f}\n",
        r.inputs.increasing, r.inputs.pairs, r.inputs.median_step);
  }
  return out;
}

namespace {

// The names of the other geometries the heights fit about as well (DerivedOffsets).
Json AlsoConsistentJson(const live::DerivedOffsets& d) {
  Json names = Json::array();
  for (const kstack::OffsetGeometry& g : d.also_consistent) names.push_back(g.name);
  return names;
}

}  // namespace

std::string RenderKernelEntropyJson(const KernelEntropyReport& r) {
  Json j = Json::object();
  j["mode"] = "kernel";
  j["source"] = r.source;
  j["syscall"] = r.syscall;
  j["cpu"] = r.cpu >= 0 ? Json(r.cpu) : Json(nullptr);
  j["environment"] = EnvironmentJson(r);
  const kstack::OffsetGeometry& g = r.derived.geometry;
  j["offsets"] = {{"anchor_height", r.derived.anchor_height},
                  {"spread", r.derived.spread},
                  {"geometry",
                   {{"name", g.name},
                    {"mask", g.mask},
                    {"align", g.align},
                    {"max", g.max()},
                    {"count", g.count()},
                    {"ideal_shannon_bits", analysis::IdealShannonBits(g)}}},
                  {"also_consistent", AlsoConsistentJson(r.derived)},
                  {"state_checked", r.derived.state_checked},
                  {"state_agreeing", r.derived.state_agreeing}};
  const live::PrngCheck& c = r.prng;
  j["prng_state"] = {{"checked", c.checked},
                     {"agreeing", c.agreeing},
                     {"mismatches", c.mismatches},
                     {"pairs", c.pairs},
                     {"following", c.following},
                     {"unchanged", c.unchanged},
                     {"broken", c.broken},
                     {"breaks", c.breaks},
                     {"median_steps", c.median_steps},
                     {"max_steps", c.max_steps},
                     {"max_steps_searched", live::kMaxPrngSteps}};
  j["entropy"] = EntropyStatsJson(r.stats);
  Json lags = Json::array();
  for (const live::LagDependence& d : r.dependence) {
    lags.push_back({{"lag", d.lag},
                    {"pairs", d.mi.pairs},
                    {"mi_plugin_bits", d.mi.plugin_bits},
                    {"mi_miller_madow_bits", d.mi.miller_madow_bits},
                    {"mi_shuffled_mean_bits", d.shuffled_plugin_bits},
                    {"mi_shuffled_max_bits", d.shuffled_plugin_max_bits},
                    {"shuffles", d.shuffles},
                    {"conditional_entropy_bits", d.mi.conditional_bits}});
  }
  j["serial_dependence"] = std::move(lags);
  j["kernel_input"] = {{"inputs", r.inputs.inputs},
                       {"increasing", r.inputs.increasing},
                       {"pairs", r.inputs.pairs},
                       {"median_step", r.inputs.median_step}};
  return DumpJson(j);
}

}  // namespace kstacklab::report
