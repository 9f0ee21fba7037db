#include "gf2.h"

#include <bit>

#include "kstacklab/common/error.h"

namespace kstacklab::analysis {

Gf2System::Gf2System(int num_vars)
    : num_vars_(num_vars), words_((static_cast<size_t>(num_vars) + 63) / 64) {
  KSTACKLAB_CHECK(num_vars >= 1);
}

void Gf2System::Reduce(uint64_t* row, bool& rhs) const {
  for (size_t r = 0; r < pivots_.size(); ++r) {
    const int p = pivots_[r];
    if ((row[p / 64] >> (p % 64) & 1) == 0) continue;
    const uint64_t* stored = &rows_[r * words_];
    for (size_t w = 0; w < words_; ++w) row[w] ^= stored[w];
    rhs ^= rhs_[r] != 0;
  }
}

Gf2System::AddResult Gf2System::Add(std::span<const uint64_t> coeffs, bool rhs) {
  KSTACKLAB_CHECK(coeffs.size() == words_);
  ++equations_;
  const size_t base = rows_.size();
  rows_.insert(rows_.end(), coeffs.begin(), coeffs.end());
  uint64_t* row = &rows_[base];
  Reduce(row, rhs);
  for (size_t w = 0; w < words_; ++w) {
    if (row[w] != 0) {
      pivots_.push_back(static_cast<int>(w * 64) + std::countr_zero(row[w]));
      rhs_.push_back(rhs ? 1 : 0);
      return AddResult::kIndependent;
    }
  }
  rows_.resize(base);
  if (rhs) {
    ++inconsistent_;
    return AddResult::kInconsistent;
  }
  return AddResult::kRedundant;
}

bool Gf2System::IsIndependent(std::span<const uint64_t> coeffs) const {
  for (uint64_t w : Residual(coeffs)) {
    if (w != 0) return true;
  }
  return false;
}

std::vector<uint64_t> Gf2System::Residual(std::span<const uint64_t> coeffs) const {
  KSTACKLAB_CHECK(coeffs.size() == words_);
  std::vector<uint64_t> row(coeffs.begin(), coeffs.end());
  bool rhs = false;
  Reduce(row.data(), rhs);
  return row;
}

void Gf2System::Rollback(const Mark& mark) {
  KSTACKLAB_CHECK(mark.rows <= pivots_.size());
  pivots_.resize(mark.rows);
  rhs_.resize(mark.rows);
  rows_.resize(mark.rows * words_);
  equations_ = mark.equations;
  inconsistent_ = mark.inconsistent;
}

std::vector<uint64_t> Gf2System::Solve() const {
  std::vector<uint64_t> x(words_, 0);
  for (size_t r = pivots_.size(); r-- > 0;) {
    const uint64_t* row = &rows_[r * words_];
    const int p = pivots_[r];
    // Row r is zero at older pivots; its other bits are free variables (0) or pivots of newer
    // rows (already solved), so the parity below excludes only the pivot itself.
    int parity = rhs_[r];
    for (size_t w = 0; w < words_; ++w) parity ^= std::popcount(row[w] & x[w]) & 1;
    if (parity != 0) x[p / 64] |= uint64_t{1} << (p % 64);
  }
  return x;
}

}  // namespace kstacklab::analysis
