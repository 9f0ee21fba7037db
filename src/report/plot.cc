// The words of `kstacklab plot` (include/kstacklab/report/plot.h): the plot kind and the image
// format. The script builders are plot_script.cc, the CDF maths plot_cdf.cc, the gnuplot runner
// gnuplot.cc. Messages name values, not flags: the CLI adds the flag.
#include "kstacklab/report/plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace kstacklab::report {

Expected<PlotKind> ParsePlotKind(const std::string& text) {
  if (text == "cdf") return PlotKind::kCdf;
  if (text == "tail") return PlotKind::kTail;
  if (text == "compare") return PlotKind::kCompare;
  return UsageError(fmt::format("plot kind '{}' is not known; use cdf, tail or compare", text));
}

Expected<PlotFormat> PlotFormatForPath(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (ext == ".png") return PlotFormat::kPng;
  if (ext == ".svg") return PlotFormat::kSvg;
  return UsageError(fmt::format(
      "image file '{}': the type comes from the file name; use a name ending in .png or .svg",
      path));
}

}  // namespace kstacklab::report
