// A linear system over GF(2) with incremental elimination and rollback (for the prng-recover
// attack, analysis/attack_prng.cc).
//
// Why a compact bitset elimination and not M4RI (libm4ri-dev): the systems here have 128
// unknowns (the LFSR113 state words; 113 of them matter) and at most a few hundred equations,
// so a row is two 64-bit words and a full elimination is ~10^4 word operations (microseconds).
// M4RI's Method of Four Russians pays off from thousands of columns. What the attack needs is
// what M4RI does not offer directly: adding equations one at a time to an echelon form and
// rolling them back cheaply, so a depth-first search over unseen-output (gap) patterns costs
// one row reduction per node instead of one full elimination. No dependency is needed.
//
// Form: rows are kept in "semi-echelon" form: each stored row has a pivot (its lowest set
// column) and is zero at the pivots of every earlier row. Back substitution runs from the
// newest row to the oldest with free variables set to 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace kstacklab::analysis {

class Gf2System {
 public:
  enum class AddResult { kIndependent, kRedundant, kInconsistent };

  // A system in `num_vars` unknowns (>= 1), no equations.
  explicit Gf2System(int num_vars);

  int num_vars() const { return num_vars_; }
  size_t words() const { return words_; }
  int rank() const { return static_cast<int>(pivots_.size()); }
  // Equations added (independent, redundant or inconsistent) since construction.
  uint64_t equations() const { return equations_; }
  // False once an added equation reduced to 0 = 1.
  bool consistent() const { return inconsistent_ == 0; }

  // Adds sum_j coeffs[j] x_j = rhs; coeffs has words() words, bit j of word j/64 = x_j (bits at
  // or above num_vars must be 0).
  AddResult Add(std::span<const uint64_t> coeffs, bool rhs);

  // Rank the equation would add (1 or 0) without adding it.
  bool IsIndependent(std::span<const uint64_t> coeffs) const;

  // coeffs reduced against the stored rows (words() words). A linear map whose kernel is the
  // row space: a combination of rows is fixed by the system iff its residuals XOR to 0.
  std::vector<uint64_t> Residual(std::span<const uint64_t> coeffs) const;

  // A state to roll back to: Rollback(mark) removes everything added after Mark().
  struct Mark {
    size_t rows;
    uint64_t equations;
    uint64_t inconsistent;
  };
  Mark GetMark() const { return {pivots_.size(), equations_, inconsistent_}; }
  void Rollback(const Mark& mark);

  // One solution (free variables 0) as words() words; only meaningful when consistent().
  std::vector<uint64_t> Solve() const;

 private:
  // Reduces `row` (words_ words) and its rhs against the stored rows.
  void Reduce(uint64_t* row, bool& rhs) const;

  int num_vars_;
  size_t words_;
  std::vector<uint64_t> rows_;  // rank() rows of words_ words
  std::vector<int> pivots_;
  std::vector<uint8_t> rhs_;
  uint64_t equations_ = 0;
  uint64_t inconsistent_ = 0;  // inconsistent equations added
};

}  // namespace kstacklab::analysis
