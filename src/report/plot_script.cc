// The gnuplot script builders of `kstacklab plot` (include/kstacklab/report/plot.h, docs/plots.md):
// latency CDF / tail panels and the %-change chart of a comparison, as a GnuplotJob (script +
// data files). Running gnuplot is src/report/gnuplot.cc; the CDF maths is plot_cdf.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "kstacklab/report/plot.h"
#include "kstacklab/results/naming.h"
#include "plot_cdf.h"

namespace kstacklab::report {
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

std::string PlotNumber(double v) { return fmt::format("{:.9g}", v); }

// Benchmark identity across inputs: name plus params.
std::string BenchmarkKey(const BenchmarkResult& b) {
  return BenchmarkLabel(b.name, ParamsText(b.params));
}

// ---- latency CDF / tail ----

struct Curve {
  std::string title;
  std::vector<CdfPoint> points;
  double overhead_ns;
  std::optional<double> step_ns;  // timer.resolution_ns
};

struct Panels {
  std::vector<std::string> order;  // benchmark keys in order of first appearance
  std::map<std::string, std::vector<Curve>> curves;
};

// Curve names: label or label:variant; the source is appended when two inputs share one.
std::string CurveName(const std::vector<PlotInput>& inputs, const PlotInput& in,
                      const BenchmarkResult& b) {
  const std::string config = ConfigurationName(in.run, b);
  if (config.empty()) return in.source;
  size_t sources = 0;
  for (const PlotInput& other : inputs) {
    sources += std::any_of(
        other.run.benchmarks.begin(), other.run.benchmarks.end(),
        [&](const BenchmarkResult& ob) { return ConfigurationName(other.run, ob) == config; });
  }
  return sources > 1 ? config + " (" + in.source + ")" : config;
}

// One panel per benchmark key, one curve per input that has a drawable histogram for it; what
// cannot be drawn goes to `notes`.
Panels CollectPanels(const std::vector<PlotInput>& inputs, PlotKind kind,
                     std::vector<std::string>& notes) {
  Panels panels;
  for (const PlotInput& in : inputs) {
    for (const BenchmarkResult& b : in.run.benchmarks) {
      const std::string name = CurveName(inputs, in, b);
      const std::string key = BenchmarkKey(b);
      if (b.histogram.count() == 0) {
        notes.push_back(
            fmt::format("{} [{}]: no histogram (loop-mode timing), not drawn", key, name));
        continue;
      }
      std::vector<CdfPoint> pts = LatencyCdf(b.histogram, in.run.timer.overhead_ns);
      if (kind == PlotKind::kTail) pts = TailCurve(pts);
      if (pts.empty()) {
        notes.push_back(fmt::format(
            "{} [{}]: every call is at or below the timer overhead, not drawn", key, name));
        continue;
      }
      if (!panels.curves.count(key)) panels.order.push_back(key);
      panels.curves[key].push_back(
          Curve{name, std::move(pts), in.run.timer.overhead_ns, in.run.timer.resolution_ns});
    }
  }
  return panels;
}

// Terminal, layout and the axes shared by every panel.
std::string LatencyHeader(PlotKind kind, PlotFormat format, size_t panel_count) {
  const int cols = panel_count == 1 ? 1 : 2;
  const int rows = static_cast<int>((panel_count + cols - 1) / cols);
  std::string s = "# kstacklab latency plot (docs/plots.md)\n";
  s += TerminalLines(format, cols * kPanelWidth, rows * kPanelHeight + (panel_count > 1 ? 30 : 0));
  s += "set output 'plot.out'\n";
  s += "set datafile commentschars '#'\n";
  const char* title =
      kind == PlotKind::kCdf ? "Latency CDF per benchmark" : "Latency tail per benchmark";
  s += fmt::format("set multiplot layout {},{}{}\n", rows, cols,
                   panel_count > 1 ? " title " + GnuplotQuote(title) : std::string());
  s += "set logscale x 10\nset format x '%g'\nset grid xtics ytics mxtics\nset mxtics 10\n";
  if (kind == PlotKind::kCdf) {
    s += "set yrange [0:1]\nset format y '%.1f'\nset ytics 0.1\nset key bottom right box opaque\n";
    s += "set ylabel 'fraction of calls faster than x'\n";
    return s;
  }
  s += "set logscale y 10\nset format y '%g'\nset key top right box opaque\n";
  s += "set ylabel 'fraction of calls slower than x (log)'\n";
  // Reference lines at the percentiles the tables report.
  s += "set arrow 1 from graph 0, first 0.01 to graph 1, first 0.01 nohead dt 2 lc rgb 'gray40'\n";
  s += "set arrow 2 from graph 0, first 0.001 to graph 1, first 0.001 nohead dt 2 lc rgb "
       "'gray40'\n";
  s += "set label 1 'p99' at graph 0.01, first 0.012 tc rgb 'gray30'\n";
  s += "set label 2 'p99.9' at graph 0.01, first 0.0012 tc rgb 'gray30'\n";
  return s;
}

// The x label of a panel: the overhead subtracted and, when all curves share it, the timer step
// (every per-call value is a multiple of it).
std::string PanelXLabel(const std::vector<Curve>& curves) {
  const bool same_overhead = std::all_of(curves.begin(), curves.end(), [&](const Curve& c) {
    return c.overhead_ns == curves[0].overhead_ns;
  });
  std::string xlabel =
      same_overhead
          ? fmt::format("latency per call, ns (log; timer overhead {:g} ns subtracted)",
                        curves[0].overhead_ns)
          : std::string("latency per call, ns (log; each input's timer overhead subtracted)");
  if (curves[0].step_ns && std::all_of(curves.begin(), curves.end(), [&](const Curve& c) {
        return c.step_ns == curves[0].step_ns;
      })) {
    xlabel.insert(xlabel.size() - 1, fmt::format("; timer step {:.1f} ns", *curves[0].step_ns));
  }
  return xlabel;
}

// The x range of a CDF panel. Rare multi-millisecond samples (preemption, VM exits) would
// squeeze the body of the distribution into one pixel column: cut the x axis at twice the
// largest p99.9 (and say so in `xlabel`).
std::string CdfXRange(const std::vector<Curve>& curves, std::string& xlabel) {
  double x999 = 0;
  for (const Curve& c : curves) x999 = std::max(x999, NsAtFraction(c.points, 0.999));
  if (x999 <= 0) return "set xrange [*:*]\nset xtics autofreq\n";
  xlabel += "; cut at 2 x p99.9, the tail plot shows all";
  return fmt::format("set xrange [*:{}]\nset xtics 2\n", PlotNumber(2 * x999));
}

// Panel `p` (benchmark `key`): its script lines; its data files go to `job`.
std::string PanelScript(size_t p, const std::string& key, const std::vector<Curve>& curves,
                        PlotKind kind, GnuplotJob& job) {
  std::string xlabel = PanelXLabel(curves);
  std::string s = kind == PlotKind::kCdf ? CdfXRange(curves, xlabel) : std::string();
  s += "set title " + GnuplotQuote(key) + "\n";
  s += "set xlabel " + GnuplotQuote(xlabel) + "\n";
  std::string plot = "plot ";
  for (size_t c = 0; c < curves.size(); ++c) {
    std::string file = fmt::format("p{}_c{}.dat", p, c);
    std::string data = fmt::format("# {} | {}\n# ns fraction\n", key, curves[c].title);
    for (const CdfPoint& pt : curves[c].points)
      data += PlotNumber(pt.ns) + " " + PlotNumber(pt.fraction) + "\n";
    job.data_files.emplace_back(file, std::move(data));
    plot += fmt::format("{}'{}' using 1:2 with lines lw 2 title {}", c ? ", \\\n     " : "", file,
                        GnuplotQuote(curves[c].title));
  }
  return s + plot + "\n";
}

// ---- comparison chart ----

struct ChartLine {
  std::string label;  // benchmark, params, metric
  const stats::CompareRow* row;
};

// The rows with at least one computable % change; the others go to `notes`.
std::vector<ChartLine> ChartLines(const stats::CompareTable& table,
                                  std::vector<std::string>& notes) {
  std::vector<ChartLine> lines;
  for (const stats::CompareRow& row : table.rows) {
    const bool any = std::any_of(
        row.variants.begin(), row.variants.end(),
        [](const stats::CompareCell& c) { return c.present() && std::isfinite(c.change_pct); });
    std::string label = CompareRowLabel(row.key) + " " + row.metric;
    if (!any) {
      const bool base_unresolved =
          std::any_of(row.variants.begin(), row.variants.end(),
                      [](const stats::CompareCell& c) { return c.BaselineUnresolved(); });
      notes.push_back(label + ": no % change computable (" +
                      (base_unresolved ? "the baseline's value is <= 0 or below one timer step"
                                       : "missing in a column") +
                      "), not drawn");
      continue;
    }
    lines.push_back({label, &row});
  }
  return lines;
}

// Per variant column j: its points ("change y ci_low ci_high") and verdict marks ("x y (R)"),
// one line per chart line, offset vertically around the line's y; and the y tics.
struct ChartData {
  std::vector<std::string> points, marks;
  std::string ytics;
};

ChartData ChartSeries(const std::vector<ChartLine>& lines, size_t m) {
  ChartData d{std::vector<std::string>(m), std::vector<std::string>(m), std::string()};
  const double spread = m > 1 ? 0.6 / static_cast<double>(m - 1) : 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const double y0 = static_cast<double>(-static_cast<long>(i));  // integer negation: no -0
    d.ytics += fmt::format("{}{} {}", i ? ", " : "", GnuplotQuote(lines[i].label), PlotNumber(y0));
    for (size_t j = 0; j < m && j < lines[i].row->variants.size(); ++j) {
      const stats::CompareCell& c = lines[i].row->variants[j];
      if (!c.present() || !std::isfinite(c.change_pct)) continue;
      const double y = y0 + (m > 1 ? 0.3 - spread * static_cast<double>(j) : 0);
      const double lo = std::isfinite(c.ci_low_pct) ? c.ci_low_pct : c.change_pct;
      const double hi = std::isfinite(c.ci_high_pct) ? c.ci_high_pct : c.change_pct;
      d.points[j] += fmt::format("{} {} {} {}\n", PlotNumber(c.change_pct), PlotNumber(y),
                                 PlotNumber(lo), PlotNumber(hi));
      if (c.verdict != stats::Verdict::kNone) {
        d.marks[j] += fmt::format("{} {} ({})\n", PlotNumber(hi), PlotNumber(y),
                                  stats::VerdictCode(c.verdict));
      }
    }
  }
  return d;
}

// Terminal, titles, axes and the zero line of the chart.
std::string ChartHeader(const stats::CompareTable& table, PlotFormat format, size_t line_count,
                        size_t m, const std::string& ytics) {
  const int lines = static_cast<int>(line_count);
  const int height = std::max(320, 110 + lines * (m > 1 ? 34 + 12 * static_cast<int>(m) : 34));
  const double conf = 100.0 * (1.0 - table.options.alpha);
  std::string s = "# kstacklab comparison chart (docs/plots.md)\n";
  s += TerminalLines(format, 1000, height);
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
  s += fmt::format("set yrange [{}:0.6]\n", PlotNumber(-static_cast<double>(line_count) + 0.4));
  s += "set grid xtics\nset offsets graph 0.08, graph 0.12, 0, 0\n";
  s += "set arrow 1 from 0, graph 0 to 0, graph 1 nohead lw 1.5 lc rgb 'black'\n";
  s += "set key outside top center horizontal box\n";
  s += "set format x '%g%%'\n";
  return s;
}

// The plot command: one whisker series per variant column and its verdict labels; the data
// files go to `job`.
std::string ChartPlotCommand(const stats::CompareTable& table, const ChartData& d,
                             GnuplotJob& job) {
  std::string plot = "plot ";
  bool first = true;
  for (size_t j = 0; j < d.points.size(); ++j) {
    if (d.points[j].empty()) continue;
    std::string file = fmt::format("v{}.dat", j);
    job.data_files.emplace_back(file, "# change_pct y ci_low ci_high\n" + d.points[j]);
    plot += fmt::format("{}'{}' using 1:2:3:4 with xerrorbars lw 2 pt 7 ps 1.2 lc {} title {}",
                        first ? "" : ", \\\n     ", file, j + 1,
                        GnuplotQuote(table.columns[j + 1].name));
    first = false;
    if (!d.marks[j].empty()) {
      std::string mfile = fmt::format("v{}_marks.dat", j);
      job.data_files.emplace_back(mfile, "# x y verdict\n" + d.marks[j]);
      plot += fmt::format(
          ", \\\n     '{}' using 1:2:3 with labels left offset 1,0 tc lt {} notitle", mfile, j + 1);
    }
  }
  return plot + "\n";
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

Expected<GnuplotJob> BuildLatencyPlot(const std::vector<PlotInput>& inputs, PlotKind kind,
                                      PlotFormat format) {
  KSTACKLAB_CHECK(kind == PlotKind::kCdf || kind == PlotKind::kTail);
  GnuplotJob job;
  Panels panels = CollectPanels(inputs, kind, job.notes);
  if (panels.order.empty()) {
    return UsageError(
        "nothing to plot: no benchmark in the inputs has a latency histogram "
        "(loop-mode runs have none; measure in per-call timing mode)");
  }
  std::string s = LatencyHeader(kind, format, panels.order.size());
  for (size_t p = 0; p < panels.order.size(); ++p) {
    const std::string& key = panels.order[p];
    s += PanelScript(p, key, panels.curves[key], kind, job);
  }
  s += "unset multiplot\nunset output\n";
  job.script = std::move(s);
  return job;
}

Expected<GnuplotJob> BuildComparePlot(const stats::CompareTable& table, PlotFormat format) {
  GnuplotJob job;
  if (table.columns.size() < 2) {
    return UsageError("a comparison chart needs a baseline and at least one other configuration");
  }
  const size_t m = table.columns.size() - 1;
  const std::vector<ChartLine> lines = ChartLines(table, job.notes);
  if (lines.empty()) return UsageError("nothing to plot: no row of the comparison has a % change");
  const ChartData data = ChartSeries(lines, m);
  std::string s = ChartHeader(table, format, lines.size(), m, data.ytics);
  s += ChartPlotCommand(table, data, job) + "unset output\n";
  job.script = std::move(s);
  return job;
}

}  // namespace kstacklab::report
