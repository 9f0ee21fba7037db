// Stack erasing: the boundary scan and erase of kernel/kstack_erase.c on crafted stacks, and
// every poison strategy against a reference fill.
#include "kstacklab/erase/erase.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace kstacklab::erase {
namespace {

constexpr uint64_t kW = sizeof(uint64_t);
constexpr uint64_t kGarbage = 0x5A5A5A5A5A5A5A5Aull;  // what TaskStack::Create fills with

std::unique_ptr<TaskStack> NewStack() {
  auto s = TaskStack::Create();
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

// The reference fill: the definition of the contract, word by word.
void ReferenceFill(uintptr_t low, uintptr_t high, uint64_t poison) {
  for (uintptr_t a = low; a < high; a += kW) std::memcpy(reinterpret_cast<void*>(a), &poison, kW);
}

void FillWords(uintptr_t low, uintptr_t high, uint64_t value) { ReferenceFill(low, high, value); }

TEST(EraseConstants, KernelValues) {
  EXPECT_EQ(kPoison, 0xFFFFFFFFFFFF4111ull);
  EXPECT_EQ(static_cast<int64_t>(kPoison), -0xBEEF);
  EXPECT_EQ(kSearchDepthWords, 16u);
}

// --- stackleak_find_top_of_poison on crafted memory -------------------------------------------

class FindTop : public ::testing::Test {
 protected:
  // 64 words; low = &w[0], high = &w[64].
  uint64_t w[64]{};
  uintptr_t At(size_t i) const { return reinterpret_cast<uintptr_t>(&w[0]) + i * kW; }
  uintptr_t low() const { return At(0); }
  uintptr_t high() const { return At(64); }
  void SetAll(uint64_t v) {
    for (uint64_t& x : w) x = v;
  }
};

TEST_F(FindTop, AllPoisonReturnsHigh) {
  SetAll(kPoison);
  EXPECT_EQ(FindTopOfPoison(low(), high()), high());
}

TEST_F(FindTop, EmptyRangeReturnsHigh) {
  SetAll(1);
  EXPECT_EQ(FindTopOfPoison(At(10), At(10)), At(10));
}

TEST_F(FindTop, NoPoisonScansToLow) {
  SetAll(1);
  EXPECT_EQ(FindTopOfPoison(low(), high()), low());
  EXPECT_EQ(FindTopOfPoison(At(5), At(30)), At(5));  // low is inclusive: w[5] is read
}

TEST_F(FindTop, UsedWordsThenPoison) {
  SetAll(kPoison);
  for (size_t i = 50; i < 64; ++i) w[i] = i;  // the last syscall used w[50..63]
  EXPECT_EQ(FindTopOfPoison(low(), high()), At(50));
}

TEST_F(FindTop, FifteenPoisonWordsDoNotStopTheScan) {
  SetAll(kPoison);
  w[63] = 7;
  w[47] = 9;  // w[48..62]: 15 poison words, then a used word below them
  EXPECT_EQ(FindTopOfPoison(low(), high()), At(47));
}

TEST_F(FindTop, SixteenPoisonWordsStopTheScan) {
  SetAll(kPoison);
  w[63] = 7;
  w[46] = 9;  // w[47..62]: 16 poison words: the scan stops before reaching w[46]
  EXPECT_EQ(FindTopOfPoison(low(), high()), At(63));
}

TEST_F(FindTop, SixteenPoisonJustBelowHighReturnsHigh) {
  SetAll(kPoison);
  w[47] = 3;  // below 16 poison words w[48..63]
  EXPECT_EQ(FindTopOfPoison(low(), high()), high());
}

TEST_F(FindTop, ShortPoisonRunAtLowEnds) {
  SetAll(kPoison);
  w[10] = 1;  // w[0..9] poison (10 words < 16), w[11..63] poison
  // From high: 16 poison words w[48..63] stop it at once.
  EXPECT_EQ(FindTopOfPoison(low(), high()), high());
  // From w[11]: w[10] is not poison, then only 10 poison words before low.
  EXPECT_EQ(FindTopOfPoison(low(), At(11)), At(10));
}

TEST_F(FindTop, AlternatingNeverReachesDepth) {
  for (size_t i = 0; i < 64; ++i) w[i] = (i % 2 == 0) ? kPoison : i;
  EXPECT_EQ(FindTopOfPoison(low(), high()), At(1));  // lowest non-poison word
}

// --- TaskStack: bounds, tracking, erase --------------------------------------------------------

TEST(TaskStack, BoundsAndInit) {
  auto s = NewStack();
  EXPECT_EQ(s->base() % kDefaultThreadSize, 0u);
  EXPECT_EQ(s->low_bound(), s->base() + 8);
  EXPECT_EQ(s->high_bound(), s->base() + kDefaultThreadSize - kPtRegsSize);
  EXPECT_EQ(s->lowest_stack(), s->low_bound());
  EXPECT_EQ(s->word(s->base()), kStackEndMagic);
}

TEST(TaskStack, RejectsBadGeometry) {
  EXPECT_FALSE(TaskStack::Create(3000).ok());
  EXPECT_FALSE(TaskStack::Create(16384, 12).ok());
  EXPECT_FALSE(TaskStack::Create(4096, 2048).ok());
  EXPECT_TRUE(TaskStack::Create(8192, 0).ok());
}

TEST(TaskStack, TrackStackRoundsUpAndKeepsTheLowest) {
  auto s = NewStack();
  s->set_lowest_stack(s->high_bound());
  s->TrackStack(s->high_bound() - 101);  // rounds up to high - 96
  EXPECT_EQ(s->lowest_stack(), s->high_bound() - 96);
  s->TrackStack(s->high_bound() - 40);  // higher: ignored
  EXPECT_EQ(s->lowest_stack(), s->high_bound() - 96);
  s->TrackStack(s->base());  // below low_bound: ignored
  EXPECT_EQ(s->lowest_stack(), s->high_bound() - 96);
  s->TrackStack(s->low_bound());
  EXPECT_EQ(s->lowest_stack(), s->low_bound());
}

// After fork, the first erase poisons the whole erasable stack, never the magic or pt_regs.
TEST(TaskStack, FirstEraseCoversTheWholeStack) {
  auto s = NewStack();
  const EraseRange r = s->Erase(false, 0, Strategies()[0].fill);
  EXPECT_EQ(r.low, s->low_bound());
  EXPECT_EQ(r.high, s->high_bound());
  EXPECT_EQ(s->word(s->base()), kStackEndMagic);
  for (uintptr_t a = s->low_bound(); a < s->high_bound(); a += kW) ASSERT_EQ(s->word(a), kPoison);
  for (uintptr_t a = s->high_bound(); a < s->base() + s->thread_size(); a += kW)
    ASSERT_EQ(s->word(a), kGarbage);
  EXPECT_EQ(s->lowest_stack(), s->high_bound());
}

TEST(TaskStack, SyscallErasesExactlyTheUsedBytes) {
  auto s = NewStack();
  (void)s->Erase(false, 0, Strategies()[0].fill);
  for (size_t depth : {0u, 8u, 256u, 4096u, 8192u}) {
    const EraseRange r = s->Syscall(depth, Strategies()[0].fill);
    EXPECT_EQ(r.low, s->high_bound() - depth) << depth;
    EXPECT_EQ(r.high, s->high_bound()) << depth;
    for (uintptr_t a = s->low_bound(); a < s->high_bound(); a += kW)
      ASSERT_EQ(s->word(a), kPoison) << depth;
    EXPECT_EQ(s->word(s->base()), kStackEndMagic);
  }
  const size_t all = s->high_bound() - s->low_bound();
  const EraseRange r = s->Syscall(all, Strategies()[0].fill);
  EXPECT_EQ(r.low, s->low_bound());
  EXPECT_EQ(r.bytes(), all);
  EXPECT_EQ(s->word(s->base()), kStackEndMagic);
}

// Frames smaller than TRACK_MIN_SIZE are not tracked; the 128-byte scan below lowest_stack
// finds their writes when fewer than 16 poison words separate them from the tracked point.
TEST(TaskStack, ScanFindsUntrackedWritesWithinSearchDepth) {
  auto s = NewStack();
  (void)s->Erase(false, 0, Strategies()[0].fill);
  const uintptr_t tracked = s->high_bound() - 1024;
  FillWords(tracked, s->high_bound(), 7);
  s->TrackStack(tracked);
  const uintptr_t untracked = tracked - 15 * kW - kW;  // 15 poison words in between
  s->set_word(untracked, 3);
  const EraseRange r = s->Erase(false, 0, Strategies()[0].fill);
  EXPECT_EQ(r.low, untracked);
  for (uintptr_t a = s->low_bound(); a < s->high_bound(); a += kW) ASSERT_EQ(s->word(a), kPoison);
}

TEST(TaskStack, ScanMissesWritesBeyondSearchDepth) {
  auto s = NewStack();
  (void)s->Erase(false, 0, Strategies()[0].fill);
  const uintptr_t tracked = s->high_bound() - 1024;
  FillWords(tracked, s->high_bound(), 7);
  s->TrackStack(tracked);
  const uintptr_t untracked = tracked - 16 * kW - kW;  // 16 poison words in between
  s->set_word(untracked, 3);
  const EraseRange r = s->Erase(false, 0, Strategies()[0].fill);
  EXPECT_EQ(r.low, tracked);
  EXPECT_EQ(s->word(untracked), 3u);  // left behind: the documented limit of the scan
}

TEST(TaskStack, OnTaskStackStopsAtTheStackPointer) {
  auto s = NewStack();
  (void)s->Erase(false, 0, Strategies()[0].fill);
  FillWords(s->high_bound() - 2048, s->high_bound(), 7);
  s->TrackStack(s->high_bound() - 2048);
  const uintptr_t sp = s->high_bound() - 512;
  const EraseRange r = s->Erase(true, sp, Strategies()[0].fill);
  EXPECT_EQ(r.low, s->high_bound() - 2048);
  EXPECT_EQ(r.high, sp);
  for (uintptr_t a = r.low; a < sp; a += kW) ASSERT_EQ(s->word(a), kPoison);
  for (uintptr_t a = sp; a < s->high_bound(); a += kW) ASSERT_EQ(s->word(a), 7u);
  EXPECT_EQ(s->lowest_stack(), s->high_bound());
}

TEST(TaskStack, StackPointerBelowEraseLowWritesNothing) {
  auto s = NewStack();
  (void)s->Erase(false, 0, Strategies()[0].fill);
  FillWords(s->high_bound() - 256, s->high_bound(), 7);
  s->TrackStack(s->high_bound() - 256);
  const EraseRange r = s->Erase(true, s->high_bound() - 1024, Strategies()[0].fill);
  EXPECT_EQ(r.bytes(), 0u);
  for (uintptr_t a = s->high_bound() - 256; a < s->high_bound(); a += kW) ASSERT_EQ(s->word(a), 7u);
}

// Every strategy drives the model to the same memory as the generic loop.
TEST(TaskStack, EveryStrategyGivesTheSameStack) {
  auto ref = NewStack();
  const std::vector<size_t> depths = {0, 8, 120, 4096, 16, 8192, 1000, 24};
  std::vector<uintptr_t> ref_ranges;
  (void)ref->Erase(false, 0, Strategies()[0].fill);
  for (size_t d : depths) {
    const EraseRange r = ref->Syscall(d, Strategies()[0].fill);
    ref_ranges.push_back(r.low - ref->base());
  }
  for (const Strategy& st : Strategies()) {
    if (!st.available()) continue;
    auto s = NewStack();
    (void)s->Erase(false, 0, st.fill);
    for (size_t i = 0; i < depths.size(); ++i) {
      const EraseRange r = s->Syscall(depths[i], st.fill);
      EXPECT_EQ(r.low - s->base(), ref_ranges[i]) << st.name;
    }
    EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(s->base()), reinterpret_cast<void*>(ref->base()),
                          kDefaultThreadSize),
              0)
        << st.name;
  }
}

// --- poison strategies -------------------------------------------------------------------------

TEST(Strategies, TableOrderAndLookup) {
  std::vector<std::string> want = {"generic", "unrolled"};
#if defined(__x86_64__)
  want.insert(want.end(), {"rep-stos", "simd", "nt"});
#elif defined(__aarch64__)
  want.emplace_back("simd");
#endif
  ASSERT_EQ(Strategies().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(Strategies()[i].name, want[i]);
    EXPECT_NE(std::string(Strategies()[i].summary), "");
    EXPECT_EQ(FindStrategy(want[i]), &Strategies()[i]);
  }
  EXPECT_EQ(FindStrategy("memset"), nullptr);
  EXPECT_TRUE(FindStrategy("generic")->available());
}

// Each strategy at each size and 8-byte start offset (0..56 past a 64-byte boundary, and 0 or 8
// past a page boundary) writes exactly what the reference fill writes: the poison inside the
// range, nothing in the 512-byte guards on either side.
TEST(Strategies, MatchReferenceAtEverySizeAndStart) {
  constexpr size_t kGuard = 512;
  constexpr size_t kMax = 16384;
  constexpr size_t kBuf = kGuard + 4096 + kMax + kGuard;
  constexpr uint64_t kValue = 0x0123456789ABCDEFull;      // a poison other than kPoison, too
  constexpr size_t kAlloc = (kBuf + 4095) / 4096 * 4096;  // aligned_alloc: a multiple of 4096
  auto* got = static_cast<unsigned char*>(std::aligned_alloc(4096, kAlloc));
  auto* want = static_cast<unsigned char*>(std::aligned_alloc(4096, kAlloc));
  ASSERT_NE(got, nullptr);
  ASSERT_NE(want, nullptr);
  ASSERT_EQ((reinterpret_cast<uintptr_t>(got) + 4096) % 4096, 0u);
  int checked = 0;
  for (const Strategy& st : Strategies()) {
    if (!st.available()) {
      std::printf("strategy %s: not available on this CPU, not checked\n", st.name);
      continue;
    }
    for (size_t size : {0u, 8u, 16u, 24u, 56u, 64u, 120u, 4088u, 4096u, 16384u}) {
      // The buffers are page-aligned and the range starts kGuard + start into them, so
      // start = kPageStart (+8) is (8 bytes past) a page boundary.
      constexpr size_t kPageStart = 4096 - kGuard;
      for (size_t start : {size_t{0}, size_t{8}, size_t{16}, size_t{24}, size_t{32}, size_t{40},
                           size_t{48}, size_t{56}, kPageStart, kPageStart + 8}) {
        for (uint64_t poison : {kPoison, kValue}) {
          for (size_t i = 0; i < kBuf; ++i) got[i] = want[i] = static_cast<unsigned char>(i * 7);
          const uintptr_t lo = reinterpret_cast<uintptr_t>(got) + kGuard + start;
          const uintptr_t rlo = reinterpret_cast<uintptr_t>(want) + kGuard + start;
          st.fill(lo, lo + size, poison);
          ReferenceFill(rlo, rlo + size, poison);
          ASSERT_EQ(std::memcmp(got, want, kBuf), 0)
              << st.name << " size " << size << " start +" << start << " poison " << poison;
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 2 * 10 * 10 * 2);  // generic and unrolled exist everywhere
  std::free(got);
  std::free(want);
}

TEST(Strategies, MemsetReferenceFillsOnlyTheRange) {
  std::vector<unsigned char> b(256, 0);
  const uintptr_t lo = reinterpret_cast<uintptr_t>(b.data()) + 8;
  MemsetReference(lo, lo + 200);
  EXPECT_EQ(b[7], 0);
  EXPECT_EQ(b[8], 0x41);
  EXPECT_EQ(b[207], 0x41);
  EXPECT_EQ(b[208], 0);
}

}  // namespace
}  // namespace kstacklab::erase
