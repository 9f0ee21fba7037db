// Pure parts of the live probe: offsets from addresses, serial dependence, what the per-task
// state says about the random input, CSV fixtures. No BPF here (always built, tested on fixtures).
#include "kstacklab/live/infer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cinttypes>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "kstacklab/analysis/entropy.h"
#include "kstacklab/common/dice.h"
#include "kstacklab/common/text.h"
#include "kstacklab/live/records.h"
#include "kstacklab/rng/prandom.h"

namespace kstacklab::live {

namespace {

constexpr uint64_t kMaxHeight =
    uint64_t{64} * 1024;  // larger than any x86-64 THREAD_SIZE (16/32 KiB)

// Fisher-Yates with the dice (the same permutation on every platform, unlike std::shuffle).
void Shuffle(std::vector<uint8_t>* v, Dice* dice) {
  for (size_t i = v->size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(dice->Below(i));
    std::swap((*v)[i - 1], (*v)[j]);
  }
}

// One geometry's explanation of the heights: the largest height is offset `top`, and the heights'
// log-likelihood under the geometry's ideal distribution (kstack::OffsetGeometry::Probability).
struct GeometryFit {
  kstack::OffsetGeometry geometry;
  uint64_t top = 0;
  double log_likelihood = 0;
};

// The best `top` for g, given each depth below the largest height (a multiple of `step`) with its
// number of records; nullopt when g cannot give these heights.
std::optional<GeometryFit> FitOne(const kstack::OffsetGeometry& g,
                                  const std::map<uint64_t, uint64_t>& depths, uint64_t spread,
                                  uint64_t step) {
  if (spread > g.max() || step % g.align != 0) return std::nullopt;
  std::vector<double> log_p(g.count());
  for (uint32_t bin = 0; bin < g.count(); ++bin) log_p[bin] = std::log(g.Probability(bin));
  std::optional<GeometryFit> best;
  for (uint64_t top = 0; top + spread <= g.max(); top += g.align) {
    double ll = 0;
    for (const auto& [depth, n] : depths) {
      ll += static_cast<double>(n) * log_p[(top + depth) / g.align];
    }
    if (!best || ll > best->log_likelihood) best = GeometryFit{g, top, ll};  // ties: smaller top
  }
  return best;
}

struct FittedGeometry {
  GeometryFit best;
  std::vector<kstack::OffsetGeometry> also_consistent;
};

// The row of kstack::kGeometries that explains the heights best (DerivedOffsets explains the
// rules; ties go to the earlier row); RuntimeError when no row can give them.
Expected<FittedGeometry> FitGeometry(const std::map<uint64_t, uint64_t>& depths, uint64_t spread,
                                     uint64_t step) {
  if (spread == 0) return FittedGeometry{{kstack::kGeometries[0], 0, 0}, {}};
  std::vector<GeometryFit> fits;
  uint32_t widest = 0;
  uint32_t finest = UINT32_MAX;
  for (const kstack::OffsetGeometry& g : kstack::kGeometries) {
    widest = std::max(widest, g.max());
    finest = std::min(finest, g.align);
    if (auto f = FitOne(g, depths, spread, step)) fits.push_back(*f);
  }
  if (fits.empty()) {
    return RuntimeError(fmt::format(
        "sampled stack heights span {} bytes in steps of {}: no kernel's offsets give that (at "
        "most {} bytes in steps of a multiple of {}), so the records come from more than one call "
        "path to sys_exit; sample one syscall",
        spread, step, widest, finest));
  }
  const auto best = std::max_element(fits.begin(), fits.end(), [](const auto& a, const auto& b) {
    return a.log_likelihood < b.log_likelihood;
  });
  FittedGeometry out{*best, {}};
  const double floor = best->log_likelihood + std::log(kAlsoConsistentLikelihood);
  for (auto f = fits.begin(); f != fits.end(); ++f) {
    if (f != best && f->log_likelihood >= floor) out.also_consistent.push_back(f->geometry);
  }
  return out;
}

}  // namespace

Expected<DerivedOffsets> DeriveOffsets(std::span<const LiveRecord> records) {
  if (records.empty()) return RuntimeError("no probe records to derive offsets from");
  uint64_t lo = UINT64_MAX;
  uint64_t hi = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const LiveRecord& r = records[i];
    if (r.local_addr <= r.stack_base || r.local_addr - r.stack_base >= kMaxHeight) {
      return RuntimeError(fmt::format(
          "record {}: local at {:#x} is not on the task stack based at {:#x} (probe bug or "
          "unexpected kernel stack layout)",
          i, r.local_addr, r.stack_base));
    }
    const uint64_t h = r.local_addr - r.stack_base;
    lo = std::min(lo, h);
    hi = std::max(hi, h);
  }
  uint64_t step = 0;                    // gcd of the differences (0 when every height is the same)
  std::map<uint64_t, uint64_t> depths;  // hi - height -> records
  for (const LiveRecord& r : records) {
    const uint64_t h = r.local_addr - r.stack_base;
    step = std::gcd(step, h - lo);
    ++depths[hi - h];
  }
  auto fit = FitGeometry(depths, hi - lo, step);
  if (!fit.ok()) return fit.error();
  DerivedOffsets d;
  d.geometry = fit->best.geometry;
  d.anchor_height = hi + fit->best.top;
  d.spread = hi - lo;
  d.also_consistent = std::move(fit->also_consistent);
  d.offsets.reserve(records.size());
  for (const LiveRecord& r : records) {
    const auto off = static_cast<uint32_t>(d.anchor_height - (r.local_addr - r.stack_base));
    d.offsets.push_back(off);
    if ((r.flags & kHasTaskState) != 0) {
      ++d.state_checked;
      if (d.geometry.Apply(r.task_state) == off) ++d.state_agreeing;
    }
  }
  return d;
}

namespace {

// The state's draw as the kernel returns it: prandom_u32_state() steps, then XORs the new words.
uint32_t DrawOf(const rng::PrandomState& s) { return s.s1 ^ s.s2 ^ s.s3 ^ s.s4; }

// The k in [0, kMaxPrngSteps] with `to` = `from` stepped k times; nullopt when there is none.
std::optional<uint64_t> StepsBetween(rng::PrandomState from, const rng::PrandomState& to) {
  for (uint64_t k = 0; k <= kMaxPrngSteps; ++k) {
    if (from == to) return k;
    rng::PrandomU32State(from);
  }
  return std::nullopt;
}

}  // namespace

Expected<PrngCheck> CheckPrngStates(std::span<const LiveRecord> records,
                                    std::span<const uint32_t> offsets,
                                    const kstack::OffsetGeometry& geometry) {
  if (records.size() != offsets.size()) {
    return RuntimeError(fmt::format("{} records but {} offsets", records.size(), offsets.size()));
  }
  PrngCheck c;
  std::map<uint32_t, size_t> last_on_cpu;  // cpu -> index of its latest record with a state
  std::vector<uint64_t> steps;
  for (size_t i = 0; i < records.size(); ++i) {
    const LiveRecord& r = records[i];
    if ((r.flags & kHasPrngState) == 0) continue;
    ++c.checked;
    if (geometry.Apply(DrawOf(r.prng_state)) == offsets[i]) {
      ++c.agreeing;
    } else if (c.mismatches.size() < kMaxPrngListed) {
      c.mismatches.push_back(i);
    }
    const auto [last, first_on_cpu] = last_on_cpu.try_emplace(r.cpu, i);
    if (first_on_cpu) continue;
    ++c.pairs;
    const std::optional<uint64_t> k = StepsBetween(records[last->second].prng_state, r.prng_state);
    last->second = i;
    if (k && *k == 0) {
      ++c.unchanged;
    } else if (k) {
      ++c.following;
      steps.push_back(*k);
    } else if (c.breaks.size() < kMaxPrngListed) {
      c.breaks.push_back(i);
    }
  }
  c.broken = c.pairs - c.following - c.unchanged;
  if (!steps.empty()) {
    const auto mid = steps.begin() + static_cast<ptrdiff_t>((steps.size() - 1) / 2);
    std::nth_element(steps.begin(), mid, steps.end());
    c.median_steps = *mid;
    c.max_steps = *std::max_element(steps.begin(), steps.end());
  }
  return c;
}

Expected<std::vector<LagDependence>> SerialDependence(std::span<const LiveRecord> records,
                                                      std::span<const uint32_t> offsets,
                                                      const kstack::OffsetGeometry& geometry,
                                                      int max_lag, int shuffles, uint64_t seed) {
  if (records.size() != offsets.size()) {
    return RuntimeError(fmt::format("{} records but {} offsets", records.size(), offsets.size()));
  }
  // Each thread's records, in order.
  std::map<uint32_t, std::vector<size_t>> by_thread;
  for (size_t i = 0; i < records.size(); ++i) by_thread[records[i].tid].push_back(i);
  std::vector<LagDependence> out;
  for (int lag = 1; lag <= max_lag; ++lag) {
    std::vector<uint8_t> x;
    std::vector<uint8_t> y;
    for (const auto& [tid, idx] : by_thread) {
      for (size_t k = 0; k + static_cast<size_t>(lag) < idx.size(); ++k) {
        const size_t a = idx[k];
        const size_t b = idx[k + static_cast<size_t>(lag)];
        if (records[a].cpu != records[b].cpu) continue;
        x.push_back(static_cast<uint8_t>(offsets[a] / geometry.align));
        y.push_back(static_cast<uint8_t>(offsets[b] / geometry.align));
      }
    }
    LagDependence d;
    d.lag = lag;
    auto mi = analysis::MutualInformationBits(x, y, geometry.count());
    if (!mi.ok()) return mi.error();
    d.mi = *mi;
    Dice dice(seed ^ static_cast<uint64_t>(lag));
    double sum = 0;
    for (int s = 0; s < shuffles; ++s) {
      std::vector<uint8_t> ys = y;
      Shuffle(&ys, &dice);
      auto base = analysis::MutualInformationBits(x, ys, geometry.count());
      if (!base.ok()) return base.error();
      sum += base->plugin_bits;
      d.shuffled_plugin_max_bits = std::max(d.shuffled_plugin_max_bits, base->plugin_bits);
    }
    d.shuffles = shuffles;
    d.shuffled_plugin_bits = shuffles > 0 ? sum / shuffles : 0;
    out.push_back(d);
  }
  return out;
}

InputDiagnosis DiagnoseInputs(std::span<const LiveRecord> records) {
  InputDiagnosis d;
  std::map<uint32_t, std::vector<uint32_t>> states;  // per thread, in order
  for (const LiveRecord& r : records) {
    if ((r.flags & kHasTaskState) != 0) states[r.tid].push_back(r.task_state);
  }
  std::vector<uint32_t> steps;
  for (const auto& [tid, s] : states) {
    uint32_t previous_input = 0;
    for (size_t i = 1; i < s.size(); ++i) {
      const uint32_t input = s[i] ^ std::rotr(s[i - 1], 5);
      ++d.inputs;
      if (i >= 2) {
        const uint32_t step = input - previous_input;
        ++d.pairs;
        if (step < 0x80000000u) ++d.increasing;
        steps.push_back(step);
      }
      previous_input = input;
    }
  }
  if (!steps.empty()) {
    std::nth_element(steps.begin(), steps.begin() + static_cast<ptrdiff_t>(steps.size() / 2),
                     steps.end());
    d.median_step = steps[steps.size() / 2];
  }
  return d;
}

KernelDesign InferDesign(bool btf_task_field, bool btf_prng_state, bool btf_percpu_counter,
                         const InputDiagnosis& inputs) {
  KernelDesign k;
  if (btf_prng_state) {
    k.state = "per-cpu-prng";
  } else if (btf_task_field) {
    k.state = "per-task";
  } else if (btf_percpu_counter) {
    k.state = "per-cpu-counter";
  } else {
    k.state = "unknown";
  }
  k.input = "unknown";
  if (inputs.pairs >= 100) {
    const double frac = static_cast<double>(inputs.increasing) / static_cast<double>(inputs.pairs);
    k.input = frac > 0.95 ? "tsc-like" : (frac < 0.6 ? "random-like" : "unknown");
  }
  if (k.state == "per-cpu-prng") {
    k.summary =
        "per-CPU prandom state (kstack_rnd_state, mainline v7.1+): offset = prandom_u32_state() "
        "& 0x3F0 (kstacklab policy percpu-prng; its v7.3 irqsoff entry on x86, "
        "percpu-prng-irqsoff, draws the same offsets: BTF and offsets cannot tell the two apart, "
        "the release can)";
  } else if (k.state == "per-task") {
    k.summary = fmt::format(
        "per-task counter (task_struct.kstack_offset, the stable-only backport of 37beb4256016: "
        "6.12.86+, 6.1.y, 6.18.y ...): state = ror32(state, 5) ^ input at each return to user "
        "mode; input {}",
        k.input == "tsc-like"
            ? "increases like a time-stamp counter (rdtsc): kstacklab policy per-task-x86"
            : (k.input == "random-like" ? "random-like: kstacklab policy per-task (arm64)"
                                        : k.input));
  } else if (k.state == "per-cpu-counter") {
    k.summary =
        "per-CPU counter (kstack_offset): state = ror32(state, 5) ^ input at each return to user "
        "mode since v6.9 (and stable 5.15.155, 6.1.86, 6.6.27, 6.8.y), state = state ^ input "
        "before; the offset geometry tells which (kstacklab policies legacy-x86, legacy-arm64)";
  } else {
    k.summary = "design not identified from BTF";
  }
  return k;
}

// The first line RecordsToCsv writes; RecordsFromCsv skips it, or the header of the 8-column form
// written before the prng columns, when a file starts with it (and reads a first line that is
// neither as a record: a file without the header loses none).
constexpr const char* kRecordsHeader =
    "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags,prng_s1,prng_s2,prng_s3,prng_s4";
constexpr const char* kRecordsHeader8 =
    "local_addr,stack_base,ktime_ns,cpu,tid,nr,task_state,flags";

std::string RecordsToCsv(std::span<const LiveRecord> records) {
  std::string out = std::string(kRecordsHeader) + "\n";
  for (const LiveRecord& r : records) {
    const rng::PrandomState& p = r.prng_state;
    out += fmt::format("{:#x},{:#x},{},{},{},{},{:#x},{},{:#x},{:#x},{:#x},{:#x}\n", r.local_addr,
                       r.stack_base, r.ktime_ns, r.cpu, r.tid, r.nr, r.task_state, r.flags, p.s1,
                       p.s2, p.s3, p.s4);
  }
  return out;
}

namespace {

// One unsigned field of a records line: hexadecimal with a 0x prefix, or decimal; digits only
// (no sign, no spaces), at most `max`. nullopt otherwise.
std::optional<uint64_t> RecordField(std::string_view f, uint64_t max) {
  int base = 10;
  if (f.size() > 2 && f[0] == '0' && (f[1] == 'x' || f[1] == 'X')) {
    base = 16;
    f.remove_prefix(2);
  }
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v, base);
  if (f.empty() || ec != std::errc() || end != f.data() + f.size() || v > max) return std::nullopt;
  return v;
}

// One line of 8 or 12 fields (RecordsToCsv); line_no names it in errors.
Expected<LiveRecord> RecordFromLine(std::string_view line, size_t line_no) {
  static constexpr const char* kFields[] = {"local_addr", "stack_base", "ktime_ns",   "cpu",
                                            "tid",        "nr",         "task_state", "flags",
                                            "prng_s1",    "prng_s2",    "prng_s3",    "prng_s4"};
  const std::vector<std::string> f = Split(line, ',', true);
  if (f.size() != 8 && f.size() != std::size(kFields)) {
    return UsageError(
        fmt::format("records line {}: {} fields, expected 12 ({}) or the 8 before "
                    "the prng columns",
                    line_no, f.size(), kRecordsHeader));
  }
  constexpr uint64_t k32 = UINT32_MAX;
  const uint64_t max[] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, k32, k32, INT32_MAX,
                          k32,        k32,        k32,        k32, k32, k32};
  uint64_t v[std::size(kFields)] = {};
  for (size_t i = 0; i < f.size(); ++i) {
    const std::optional<uint64_t> x = RecordField(f[i], max[i]);
    if (!x) {
      return UsageError(fmt::format(
          "records line {}: {} '{}' is not an unsigned number (decimal, or hex with 0x) of at "
          "most {}",
          line_no, kFields[i], f[i].size() > 40 ? f[i].substr(0, 40) + "..." : f[i], max[i]));
    }
    v[i] = *x;
  }
  if (f.size() == 8 && (v[7] & kHasPrngState) != 0) {
    return UsageError(fmt::format(
        "records line {}: flags {} say the generator state was recorded, but the line has no "
        "prng_s1..prng_s4 columns",
        line_no, v[7]));
  }
  LiveRecord r;
  r.local_addr = v[0];
  r.stack_base = v[1];
  r.ktime_ns = v[2];
  r.cpu = static_cast<uint32_t>(v[3]);
  r.tid = static_cast<uint32_t>(v[4]);
  r.nr = static_cast<int>(v[5]);
  r.task_state = static_cast<uint32_t>(v[6]);
  r.flags = static_cast<uint32_t>(v[7]);
  r.prng_state = {static_cast<uint32_t>(v[8]), static_cast<uint32_t>(v[9]),
                  static_cast<uint32_t>(v[10]), static_cast<uint32_t>(v[11])};
  return r;
}

}  // namespace

Expected<std::vector<LiveRecord>> RecordsFromCsv(std::string_view text) {
  std::vector<LiveRecord> out;
  size_t pos = 0;
  size_t line_no = 0;
  bool first = true;  // the first non-empty line: the header if it is one, else a record
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // a CRLF file
    if (line.empty()) continue;
    if (std::exchange(first, false) &&
        (Trim(line) == kRecordsHeader || Trim(line) == kRecordsHeader8)) {
      continue;  // the header
    }
    auto r = RecordFromLine(line, line_no);
    if (!r.ok()) return r.error();
    out.push_back(*r);
  }
  return out;
}

}  // namespace kstacklab::live
