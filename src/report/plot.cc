// gnuplot jobs for `kstacklab plot` (docs/plots.md) and the runner that turns one into an image.
#include "kstacklab/plot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "kstacklab/fileio.h"

extern char** environ;

namespace kstacklab {
namespace {

constexpr int kPanelWidth = 760;
constexpr int kPanelHeight = 480;

// The terminal line(s); pngcairo draws anti-aliased text and lines, plain png is the fallback
// for a gnuplot built without cairo.
std::string TerminalLines(PlotFormat format, int width, int height) {
  if (format == PlotFormat::kSvg) {
    return fmt::format(
        "set terminal svg size {},{} noenhanced font 'Sans,12' background rgb 'white'\n", width,
        height);
  }
  return fmt::format(
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{\n"
      "  set terminal pngcairo size {0},{1} noenhanced font 'Sans,10'\n"
      "}} else {{\n"
      "  set terminal png size {0},{1} noenhanced\n"
      "}}\n",
      width, height);
}

std::string Num(double v) { return fmt::format("{:.9g}", v); }

// Benchmark identity across inputs: name plus params.
std::string BenchmarkKey(const BenchmarkResult& b) {
  std::string p = ParamsText(b.params);
  return p.empty() ? b.name : b.name + " " + p;
}

}  // namespace

std::string GnuplotQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'')
      out += "''";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out + "'";
}

Expected<PlotKind> ParsePlotKind(const std::string& text) {
  if (text == "cdf") return PlotKind::kCdf;
  if (text == "tail") return PlotKind::kTail;
  if (text == "compare") return PlotKind::kCompare;
  return UsageError(fmt::format("--kind '{}' is not known; use cdf, tail or compare", text));
}

Expected<PlotFormat> PlotFormatForPath(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (ext == ".png") return PlotFormat::kPng;
  if (ext == ".svg") return PlotFormat::kSvg;
  return UsageError(fmt::format(
      "-o '{}': the image type comes from the file name; use a name ending in .png or .svg", path));
}

std::vector<CdfPoint> LatencyCdf(const Histogram& histogram, double overhead_ns) {
  std::vector<CdfPoint> out;
  const uint64_t total = histogram.count();
  if (total == 0) return out;
  const double min_ns = PsToNs(static_cast<double>(histogram.min())) - overhead_ns;
  if (min_ns > 0) out.push_back({min_ns, 0.0});
  uint64_t below = 0;
  for (const Histogram::Bucket& b : histogram.NonEmptyBuckets()) {
    below += b.count;
    const double x = PsToNs(static_cast<double>(b.high)) - overhead_ns;
    if (x > 0) out.push_back({x, static_cast<double>(below) / static_cast<double>(total)});
  }
  if (histogram.overflow() > 0) {
    const double x = PsToNs(static_cast<double>(histogram.max())) - overhead_ns;
    if (x > 0) out.push_back({x, 1.0});
  }
  return out;
}

Expected<GnuplotJob> BuildLatencyPlot(const std::vector<PlotInput>& inputs, PlotKind kind,
                                      PlotFormat format) {
  KSTACKLAB_CHECK(kind == PlotKind::kCdf || kind == PlotKind::kTail);
  GnuplotJob job;

  // Curve names: label or label:variant; the source is appended when two inputs share one.
  std::map<std::string, std::vector<size_t>> inputs_by_name;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const BenchmarkResult& b : inputs[i].run.benchmarks) {
      auto& v = inputs_by_name[ConfigurationName(inputs[i].run, b)];
      if (std::find(v.begin(), v.end(), i) == v.end()) v.push_back(i);
    }
  }
  struct Curve {
    std::string title;
    std::vector<CdfPoint> points;
    double overhead_ns;
    std::optional<double> step_ns;  // timer.resolution_ns
  };
  std::vector<std::string> order;  // panels in order of first appearance
  std::map<std::string, std::vector<Curve>> panels;
  for (const PlotInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      std::string name = ConfigurationName(in.run, b);
      if (name.empty())
        name = in.source;
      else if (inputs_by_name[ConfigurationName(in.run, b)].size() > 1)
        name += " (" + in.source + ")";
      const std::string key = BenchmarkKey(b);
      if (b.histogram.count() == 0) {
        job.notes.push_back(
            fmt::format("{} [{}]: no histogram (loop-mode timing), not drawn", key, name));
        continue;
      }
      std::vector<CdfPoint> pts = LatencyCdf(b.histogram, in.run.timer.overhead_ns);
      if (kind == PlotKind::kTail) {
        std::vector<CdfPoint> tail;
        for (const CdfPoint& p : pts) {
          if (p.fraction < 1.0) tail.push_back({p.ns, 1.0 - p.fraction});
        }
        pts = std::move(tail);
      }
      if (pts.empty()) {
        job.notes.push_back(fmt::format(
            "{} [{}]: every call is at or below the timer overhead, not drawn", key, name));
        continue;
      }
      if (!panels.count(key)) order.push_back(key);
      panels[key].push_back(
          Curve{name, std::move(pts), in.run.timer.overhead_ns, in.run.timer.resolution_ns});
    }
  }
  if (order.empty()) {
    return UsageError(
        "nothing to plot: no benchmark in the inputs has a latency histogram "
        "(loop-mode runs have none; measure with --timing percall)");
  }

  const int cols = order.size() == 1 ? 1 : 2;
  const int rows = static_cast<int>((order.size() + cols - 1) / cols);
  const int width = cols * kPanelWidth;
  const int height = rows * kPanelHeight + (order.size() > 1 ? 30 : 0);
  std::string s = "# kstacklab latency plot (docs/plots.md)\n";
  s += TerminalLines(format, width, height);
  s += "set output 'plot.out'\n";
  s += "set datafile commentschars '#'\n";
  s += fmt::format("set multiplot layout {},{}{}\n", rows, cols,
                   order.size() > 1 ? " title " + GnuplotQuote(kind == PlotKind::kCdf
                                                                   ? "Latency CDF per benchmark"
                                                                   : "Latency tail per benchmark")
                                    : std::string());
  s += "set logscale x 10\nset format x '%g'\nset grid xtics ytics mxtics\nset mxtics 10\n";
  if (kind == PlotKind::kCdf) {
    s += "set yrange [0:1]\nset format y '%.1f'\nset ytics 0.1\nset key bottom right box opaque\n";
    s += "set ylabel 'fraction of calls faster than x'\n";
  } else {
    s += "set logscale y 10\nset format y '%g'\nset key top right box opaque\n";
    s += "set ylabel 'fraction of calls slower than x (log)'\n";
    // Reference lines at the percentiles the tables report.
    s +=
        "set arrow 1 from graph 0, first 0.01 to graph 1, first 0.01 nohead dt 2 lc rgb 'gray40'\n";
    s += "set arrow 2 from graph 0, first 0.001 to graph 1, first 0.001 nohead dt 2 lc rgb "
         "'gray40'\n";
    s += "set label 1 'p99' at graph 0.01, first 0.012 tc rgb 'gray30'\n";
    s += "set label 2 'p99.9' at graph 0.01, first 0.0012 tc rgb 'gray30'\n";
  }
  for (size_t p = 0; p < order.size(); ++p) {
    const std::vector<Curve>& curves = panels[order[p]];
    bool same_overhead = std::all_of(curves.begin(), curves.end(), [&](const Curve& c) {
      return c.overhead_ns == curves[0].overhead_ns;
    });
    std::string xlabel =
        same_overhead
            ? fmt::format("latency per call, ns (log; timer overhead {:g} ns subtracted)",
                          curves[0].overhead_ns)
            : std::string("latency per call, ns (log; each input's timer overhead subtracted)");
    // The timer step: every per-call value is a multiple of it (timer.resolution_ns).
    if (curves[0].step_ns && std::all_of(curves.begin(), curves.end(), [&](const Curve& c) {
          return c.step_ns == curves[0].step_ns;
        })) {
      xlabel.insert(xlabel.size() - 1, fmt::format("; timer step {:.1f} ns", *curves[0].step_ns));
    }
    if (kind == PlotKind::kCdf) {
      // Rare multi-millisecond samples (preemption, VM exits) would squeeze the body of the
      // distribution into one pixel column: cut the x axis at twice the largest p99.9.
      double x999 = 0;
      for (const Curve& c : curves) {
        for (const CdfPoint& pt : c.points) {
          if (pt.fraction >= 0.999) {
            x999 = std::max(x999, pt.ns);
            break;
          }
        }
      }
      if (x999 > 0) {
        s += fmt::format("set xrange [*:{}]\nset xtics 2\n", Num(2 * x999));
        xlabel += "; cut at 2 x p99.9, see --kind tail";
      } else {
        s += "set xrange [*:*]\nset xtics autofreq\n";
      }
    }
    s += "set title " + GnuplotQuote(order[p]) + "\n";
    s += "set xlabel " + GnuplotQuote(xlabel) + "\n";
    std::string plot = "plot ";
    for (size_t c = 0; c < curves.size(); ++c) {
      std::string file = fmt::format("p{}_c{}.dat", p, c);
      std::string data = fmt::format("# {} | {}\n# ns fraction\n", order[p], curves[c].title);
      for (const CdfPoint& pt : curves[c].points)
        data += Num(pt.ns) + " " + Num(pt.fraction) + "\n";
      job.data_files.emplace_back(file, std::move(data));
      plot += fmt::format("{}'{}' using 1:2 with lines lw 2 title {}", c ? ", \\\n     " : "", file,
                          GnuplotQuote(curves[c].title));
    }
    s += plot + "\n";
  }
  s += "unset multiplot\nunset output\n";
  job.script = std::move(s);
  return job;
}

Expected<GnuplotJob> BuildComparePlot(const CompareTable& table, PlotFormat format) {
  GnuplotJob job;
  if (table.columns.size() < 2) {
    return UsageError("a comparison chart needs a baseline and at least one other configuration");
  }
  const size_t m = table.columns.size() - 1;
  struct Line {
    std::string label;
    const CompareRow* row;
  };
  std::vector<Line> lines;
  for (const CompareRow& row : table.rows) {
    bool any = std::any_of(row.variants.begin(), row.variants.end(), [](const CompareCell& c) {
      return c.present && std::isfinite(c.change_pct);
    });
    std::string label =
        row.benchmark + (row.params_text.empty() ? "" : " " + row.params_text) + " " + row.metric;
    if (!any) {
      job.notes.push_back(label + ": no % change computable (missing in a column), not drawn");
      continue;
    }
    lines.push_back({label, &row});
  }
  if (lines.empty()) return UsageError("nothing to plot: no row of the comparison has a % change");

  std::vector<std::string> points(m), marks(m);
  std::string ytics;
  const double spread = m > 1 ? 0.6 / static_cast<double>(m - 1) : 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const double y0 = static_cast<double>(-static_cast<long>(i));  // integer negation: no -0
    ytics += fmt::format("{}{} {}", i ? ", " : "", GnuplotQuote(lines[i].label), Num(y0));
    for (size_t j = 0; j < m && j < lines[i].row->variants.size(); ++j) {
      const CompareCell& c = lines[i].row->variants[j];
      if (!c.present || !std::isfinite(c.change_pct)) continue;
      const double y = y0 + (m > 1 ? 0.3 - spread * static_cast<double>(j) : 0);
      const double lo = std::isfinite(c.ci_low_pct) ? c.ci_low_pct : c.change_pct;
      const double hi = std::isfinite(c.ci_high_pct) ? c.ci_high_pct : c.change_pct;
      points[j] += fmt::format("{} {} {} {}\n", Num(c.change_pct), Num(y), Num(lo), Num(hi));
      if (c.verdict != Verdict::kNone) {
        marks[j] += fmt::format("{} {} ({})\n", Num(hi), Num(y), VerdictCode(c.verdict));
      }
    }
  }

  const int width = 1000;
  const int height = std::max(
      320, 110 + static_cast<int>(lines.size()) * (m > 1 ? 34 + 12 * static_cast<int>(m) : 34));
  const double conf = 100.0 * (1.0 - table.options.alpha);
  std::string s = "# kstacklab comparison chart (docs/plots.md)\n";
  s += TerminalLines(format, width, height);
  s += "set output 'plot.out'\n";
  s += "set title " +
       GnuplotQuote(fmt::format("% change vs {} (baseline)", table.columns[0].name)) + "\n";
  s += "set xlabel " +
       GnuplotQuote(fmt::format("% change of the metric (+ = larger than the baseline; for ns, + "
                                "is slower); whiskers: {:g}% CI; "
                                "(R) regression, (I) improvement",
                                conf)) +
       "\n";
  s += "set ytics (" + ytics + ") nomirror\n";
  s += fmt::format("set yrange [{}:0.6]\n", Num(-static_cast<double>(lines.size()) + 0.4));
  s += "set grid xtics\nset offsets graph 0.08, graph 0.12, 0, 0\n";
  s += "set arrow 1 from 0, graph 0 to 0, graph 1 nohead lw 1.5 lc rgb 'black'\n";
  s += "set key outside top center horizontal box\n";
  s += "set format x '%g%%'\n";
  std::string plot = "plot ";
  bool first = true;
  for (size_t j = 0; j < m; ++j) {
    if (points[j].empty()) continue;
    std::string file = fmt::format("v{}.dat", j);
    job.data_files.emplace_back(file, "# change_pct y ci_low ci_high\n" + points[j]);
    plot += fmt::format("{}'{}' using 1:2:3:4 with xerrorbars lw 2 pt 7 ps 1.2 lc {} title {}",
                        first ? "" : ", \\\n     ", file, j + 1,
                        GnuplotQuote(table.columns[j + 1].name));
    first = false;
    if (!marks[j].empty()) {
      std::string mfile = fmt::format("v{}_marks.dat", j);
      job.data_files.emplace_back(mfile, "# x y verdict\n" + marks[j]);
      plot += fmt::format(
          ", \\\n     '{}' using 1:2:3 with labels left offset 1,0 tc lt {} notitle", mfile, j + 1);
    }
  }
  s += plot + "\nunset output\n";
  job.script = std::move(s);
  return job;
}

}  // namespace kstacklab
