// RenderGrid / RenderMarkdownTable (include/kstacklab/report/grid_table.h).
#include "kstacklab/report/grid_table.h"

#include <algorithm>

#include "kstacklab/common/text.h"

namespace kstacklab::report {
namespace {

size_t ColumnCount(const GridTable& t) {
  size_t n = t.right_align.size();
  for (const auto& line : t.header) n = std::max(n, line.size());
  for (const auto& g : t.groups)
    for (const auto& row : g) n = std::max(n, row.size());
  return n;
}

// A cell with control characters escaped (a newline would break the row, ESC would reach the
// terminal, NUL would truncate the output): labels are checked at input, this is the backstop.
std::string CellAt(const std::vector<std::string>& row, size_t i) {
  return i < row.size() ? EscapeControl(row[i]) : std::string();
}

std::string Pad(const std::string& s, size_t width, bool right) {
  const size_t shown = DisplayWidth(s);  // columns on the terminal, not bytes (UTF-8 labels)
  std::string fill(width > shown ? width - shown : 0, ' ');
  return right ? fill + s : s + fill;
}

}  // namespace

std::string RenderGrid(const GridTable& t) {
  const size_t cols = ColumnCount(t);
  std::vector<size_t> width(cols, 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < cols; ++i) width[i] = std::max(width[i], DisplayWidth(CellAt(row, i)));
  };
  for (const auto& line : t.header) widen(line);
  for (const auto& g : t.groups)
    for (const auto& row : g) widen(row);
  auto rule = [&](char c) {
    std::string s = "+";
    for (size_t i = 0; i < cols; ++i) s += std::string(width[i] + 2, c) + "+";
    return s + "\n";
  };
  auto line = [&](const std::vector<std::string>& row) {
    std::string s = "|";
    for (size_t i = 0; i < cols; ++i) {
      bool right = i < t.right_align.size() && t.right_align[i];
      s += ' ';
      s += Pad(CellAt(row, i), width[i], right);
      s += " |";
    }
    return s + "\n";
  };
  std::string out = rule('-');
  for (const auto& h : t.header) out += line(h);
  out += rule('=');
  for (const auto& g : t.groups) {
    if (g.empty()) continue;
    for (const auto& row : g) out += line(row);
    out += rule('-');
  }
  return out;
}

std::string RenderMarkdownTable(const GridTable& t) {
  const size_t cols = ColumnCount(t);
  auto escape = [](const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '|') o += '\\';
      o += c;
    }
    return o;
  };
  std::string out = "|";
  for (size_t i = 0; i < cols; ++i) {
    std::string title;
    for (const auto& h : t.header) {
      const std::string part = CellAt(h, i);
      if (part.empty()) continue;
      title += (title.empty() ? "" : " ") + part;
    }
    out += ' ';
    out += escape(title);
    out += " |";
  }
  out += "\n|";
  for (size_t i = 0; i < cols; ++i) {
    bool right = i < t.right_align.size() && t.right_align[i];
    out += right ? "---:|" : "---|";
  }
  out += "\n";
  for (const auto& g : t.groups) {
    for (const auto& row : g) {
      out += "|";
      for (size_t i = 0; i < cols; ++i) {
        out += ' ';
        out += escape(CellAt(row, i));
        out += " |";
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace kstacklab::report
