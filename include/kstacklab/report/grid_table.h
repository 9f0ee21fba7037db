// A text table in the layout used on the kernel lists (reStructuredText/PrettyTable grid,
// docs/reading-tables.md) and as GitHub Markdown. Plain strings in, text out; no statistics.
#pragma once

#include <string>
#include <vector>

namespace kstacklab::report {

struct GridTable {
  // Header lines, each with one string per column (a column title may span several lines,
  // e.g. {"randomize=off", "(baseline)"}).
  std::vector<std::vector<std::string>> header;
  std::vector<bool> right_align;  // per column; header cells follow their column's alignment
  // Groups of rows; the grid draws a +---+ rule after each group (Markdown has none).
  std::vector<std::vector<std::vector<std::string>>> groups;
};

// The grid:
//   +-----------+-------+      rules: '+', then '-' x (width + 2) per column
//   | Benchmark | base  |      one space of padding on each side
//   +===========+=======+      '=' rule under the header
//   | getpid    |  0.19 |
//   +-----------+-------+      a rule after every group
// Widths are in bytes (cells are expected to be ASCII).
std::string RenderGrid(const GridTable& table);

// GitHub Markdown: header lines joined with a space, "---" / "---:" alignment row, no group rules.
// '|' inside a cell is escaped as "\|".
std::string RenderMarkdownTable(const GridTable& table);

}  // namespace kstacklab::report
