// Known-answer and cross-check tests for the model random sources (rng/): prandom (LFSR113),
// ChaCha20, SipHash / hsiphash / HalfSipHash, and the counter source. Vectors come from the
// kernel self-tests (lib/random32.c prandom_state_selftest), RFC 8439 §2.3.2 / §2.4.2 and the
// SipHash reference vectors (github.com/veorq/SipHash vectors.h, as in the kernel's
// lib/tests/siphash_kunit.c); libsodium is the independent cross-check.
#include <gtest/gtest.h>
#include <sodium.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kstacklab/rng/chacha20.h"
#include "kstacklab/rng/counter.h"
#include "kstacklab/rng/getrandom.h"
#include "kstacklab/rng/prandom.h"
#include "kstacklab/rng/siphash.h"

namespace kstacklab::rng {
namespace {

std::vector<uint8_t> Hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string ToHex(const uint8_t* p, size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// prandom

TEST(Prandom, SelftestTest1SeedBoundary) {
  const struct {
    uint32_t seed, result;
  } kTest1[] = {{1, 3484351685u}, {2, 2623130059u}, {3, 3125133893u}, {4, 984847254u}};
  for (const auto& t : kTest1) {
    PrandomState s;
    PrandomSeedSelftest(s, t.seed);
    EXPECT_EQ(PrandomU32State(s), t.result) << "seed " << t.seed;
  }
}

TEST(Prandom, SelftestTest2AllHundredRowsAgainstGslTaus113) {
  std::ifstream in(std::string(KSTACKLAB_TEST_DATA) + "/prandom_test2.txt");
  ASSERT_TRUE(in) << "missing tests/data/prandom_test2.txt";
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    uint64_t seed, iteration, result;
    ASSERT_TRUE(fields >> seed >> iteration >> result) << line;
    PrandomState s;
    PrandomSeedSelftest(s, static_cast<uint32_t>(seed));
    for (uint64_t i = 1; i < iteration; ++i) PrandomU32State(s);
    EXPECT_EQ(PrandomU32State(s), result) << "row " << line;
    ++rows;
  }
  EXPECT_EQ(rows, 100);
}

TEST(Prandom, SelftestSeedingMatchesHandComputedLcgChain) {
  // seed 1: s1 = 69069, s2 = 69069^2 mod 2^32, ... (all above the minima), then 10 steps.
  PrandomState s;
  PrandomSeedSelftest(s, 1);
  PrandomState expect{69069u, 69069u * 69069u, 69069u * 69069u * 69069u,
                      69069u * 69069u * 69069u * 69069u};
  PrandomWarmup(expect);
  EXPECT_EQ(s, expect);
}

TEST(Prandom, FullStateSeedingExtraVectors) {
  const uint32_t seeds[4] = {0xdeadbeef, 0xcafebabe, 0x12345678, 0x9abcdef0};
  PrandomState s;
  PrandomSeedFromWords(s, seeds);
  EXPECT_EQ(s, (PrandomState{3914310139u, 2884665896u, 2749798375u, 3161520175u}));
  const uint32_t expect[8] = {3294744933u, 4058280079u, 1569056555u, 1090071692u,
                              3459281033u, 1513817196u, 3209103463u, 1727775307u};
  const uint32_t masked[8] = {352, 128, 800, 128, 128, 96, 96, 576};
  for (int i = 0; i < 8; ++i) {
    const uint32_t v = PrandomU32State(s);
    EXPECT_EQ(v, expect[i]) << i;
    EXPECT_EQ(v & 0x3F0u, masked[i]) << i;
  }
}

TEST(Prandom, ZeroSeedsHitMinimaAndLowBitsDoNotMatter) {
  const uint32_t zero[4] = {0, 0, 0, 0};
  const uint32_t small[4] = {1, 2, 3, 4};
  PrandomState a, b;
  PrandomSeedFromWords(a, zero);
  PrandomSeedFromWords(b, small);
  EXPECT_EQ(a, (PrandomState{2215116993u, 8388608u, 537214984u, 151031840u}));
  const uint32_t expect[8] = {295707712u,  453775896u, 1683826726u, 1020670012u,
                              1317536342u, 469994581u, 1276399204u, 137183247u};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(PrandomU32State(a), expect[i]) << i;
    EXPECT_EQ(PrandomU32State(b), expect[i]) << i;
  }
}

TEST(Prandom, SeedStateNoWarmupVectors) {
  const struct {
    uint64_t seed;
    uint32_t out[4];
  } kCases[] = {
      {0, {1574944u, 268744u, 1109394980u, 8552980u}},
      {1, {276959246u, 18909696u, 2298495022u, 9442690u}},
      {0x0123456789abcdefull, {1976660935u, 2350886939u, 2896332784u, 2170846020u}},
  };
  for (const auto& c : kCases) {
    PrandomState s;
    PrandomSeedState(s, c.seed);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(PrandomU32State(s), c.out[i]) << c.seed << " " << i;
  }
  // Seed 0 folds to i = 0, so every word sits at its minimum.
  PrandomState s;
  PrandomSeedState(s, 0);
  EXPECT_EQ(s, (PrandomState{2, 8, 16, 128}));
}

TEST(Prandom, AllZeroStateIsAFixedPoint) {
  PrandomState s;
  for (int i = 0; i < 100; ++i) ASSERT_EQ(PrandomU32State(s), 0u);
}

TEST(Prandom, BytesStateIsLittleEndianWithLsbFirstTail) {
  PrandomState a, b;
  PrandomSeedSelftest(a, 7);
  b = a;
  uint8_t buf[11];
  PrandomBytesState(a, buf, sizeof buf);
  for (int w = 0; w < 2; ++w) {
    const uint32_t v = PrandomU32State(b);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(buf[4 * w + i], static_cast<uint8_t>(v >> (8 * i)));
  }
  const uint32_t tail = PrandomU32State(b);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(buf[8 + i], static_cast<uint8_t>(tail >> (8 * i)));
  EXPECT_EQ(a, b) << "a 3-byte tail consumes exactly one output";
}

// The getrandom(2) path of prandom_seed_full_state(): each CPU gets its own non-zero state (the
// words -> minima -> warm-up step itself is pinned by PrandomSeedFromWords' vectors above).
TEST(Prandom, SeedFullStateGivesEachCpuItsOwnNonZeroState) {
  std::vector<PrandomState> states(4);
  ASSERT_TRUE(PrandomSeedFullState(states).ok());
  for (const PrandomState& s : states) {
    EXPECT_NE(s, PrandomState{});
  }
  EXPECT_NE(states[0], states[1]);
}

TEST(Prandom, NextPseudoRandom32) {
  EXPECT_EQ(NextPseudoRandom32(0), 1013904223u);
  EXPECT_EQ(NextPseudoRandom32(1), 1013904223u + 1664525u);
  EXPECT_EQ(NextPseudoRandom32(0xffffffffu), 1013904223u - 1664525u);
}

// ---------------------------------------------------------------------------------------------
// ChaCha20

std::vector<uint8_t> Key0to31() {
  std::vector<uint8_t> key(32);
  for (int i = 0; i < 32; ++i) key[i] = static_cast<uint8_t>(i);
  return key;
}

TEST(Chacha20, QuarterRoundRfc8439_2_1_1) {
  uint32_t a = 0x11111111, b = 0x01020304, c = 0x9b8d6f43, d = 0x01234567;
  ChachaQuarterRound(a, b, c, d);
  EXPECT_EQ(a, 0xea2a92f4u);
  EXPECT_EQ(b, 0xcb1cf8ceu);
  EXPECT_EQ(c, 0x4581472eu);
  EXPECT_EQ(d, 0x5881c4bbu);
}

TEST(Chacha20, BlockFunctionRfc8439_2_3_2) {
  const auto key = Key0to31();
  const auto nonce = Hex("000000090000004a00000000");
  ChachaState st;
  ChachaInitRfc(st, key.data(), 1, nonce.data());
  const uint32_t initial[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574,
                                0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c,
                                0x13121110, 0x17161514, 0x1b1a1918, 0x1f1e1d1c,
                                0x00000001, 0x09000000, 0x4a000000, 0x00000000};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(st.x[i], initial[i]) << i;

  uint32_t permuted[16];
  std::memcpy(permuted, st.x, sizeof permuted);
  ChachaPermute(permuted, 20);
  const uint32_t after_rounds[16] = {0x837778ab, 0xe238d763, 0xa67ae21e, 0x5950bb2f,
                                     0xc4f2d0c7, 0xfc62bb2f, 0x8fa018fc, 0x3f5ec7b7,
                                     0x335271c2, 0xf29489f3, 0xeabda8fc, 0x82e46ebd,
                                     0xd19c12b4, 0xb04e16de, 0x9e83d0cb, 0x4e3c50a2};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(permuted[i], after_rounds[i]) << i;

  uint8_t out[64];
  Chacha20Block(st, out);
  EXPECT_EQ(ToHex(out, 64),
            "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
            "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e");
  const uint32_t output_words[16] = {0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3,
                                     0xc7f4d1c7, 0x0368c033, 0x9aaa2204, 0x4e6cd4c3,
                                     0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
                                     0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(LoadLe32(out + 4 * i), output_words[i]) << i;
  EXPECT_EQ(st.x[12], 2u) << "the block function increments word 12";
  EXPECT_EQ(st.x[13], 0x09000000u) << "and nothing else";
}

TEST(Chacha20, SunscreenKeystreamAndCiphertextRfc8439_2_4_2) {
  const auto key = Key0to31();
  const auto nonce = Hex("000000000000004a00000000");
  ChachaState st;
  ChachaInitRfc(st, key.data(), 1, nonce.data());
  uint8_t ks[128];
  Chacha20Block(st, ks);
  Chacha20Block(st, ks + 64);
  EXPECT_EQ(ToHex(ks, 64),
            "224f51f3401bd9e12fde276fb8631ded8c131f823d2c06e27e4fcaec9ef3cf78"
            "8a3b0aa372600a92b57974cded2b9334794cba40c63e34cdea212c4cf07d41b7");
  EXPECT_EQ(ToHex(ks + 64, 64),
            "69a6749f3f630f4122cafe28ec4dc47e26d4346d70b98c73f3e9c53ac40c5945"
            "398b6eda1a832c89c167eacd901d7e2bf363740373201aa188fbbce83991c4ed");
  const std::string plain =
      "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the "
      "future, sunscreen would be it.";
  ASSERT_EQ(plain.size(), 114u);
  std::vector<uint8_t> cipher(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) cipher[i] = static_cast<uint8_t>(plain[i]) ^ ks[i];
  EXPECT_EQ(ToHex(cipher.data(), cipher.size()),
            "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
            "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
            "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
            "5af90bbf74a35be6b40b8eedf2785e42874d");
}

TEST(Chacha20, AppendixA1Vector1AllZero) {
  const uint8_t key[32] = {};
  const uint8_t iv[16] = {};
  ChachaState st;
  ChachaInit(st, key, iv);
  uint8_t out[64];
  Chacha20Block(st, out);
  EXPECT_EQ(ToHex(out, 64),
            "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
            "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586");
}

TEST(Chacha20, CounterWrapsWithoutCarryIntoWord13) {
  const uint8_t key[32] = {};
  uint8_t iv[16] = {0xff, 0xff, 0xff, 0xff};
  ChachaState st;
  ChachaInit(st, key, iv);
  uint8_t out[64];
  Chacha20Block(st, out);
  EXPECT_EQ(st.x[12], 0u);
  EXPECT_EQ(st.x[13], 0u);
}

TEST(Chacha20, MatchesLibsodiumOnRandomKeyNonceCounter) {
  ASSERT_GE(sodium_init(), 0);
  std::mt19937_64 gen(20260101);
  for (int trial = 0; trial < 200; ++trial) {
    uint8_t key[32], nonce[12];
    for (auto& b : key) b = static_cast<uint8_t>(gen());
    for (auto& b : nonce) b = static_cast<uint8_t>(gen());
    // Keep 3 blocks inside the 32-bit counter (libsodium's IETF variant does not wrap either).
    const uint32_t counter = static_cast<uint32_t>(gen()) % 0xfffffff0u;
    ChachaState st;
    ChachaInitRfc(st, key, counter, nonce);
    uint8_t ours[192];
    for (int b = 0; b < 3; ++b) Chacha20Block(st, ours + 64 * b);
    uint8_t zeros[192] = {};
    uint8_t theirs[192];
    ASSERT_EQ(crypto_stream_chacha20_ietf_xor_ic(theirs, zeros, sizeof zeros, nonce, counter, key),
              0);
    ASSERT_EQ(ToHex(ours, 192), ToHex(theirs, 192)) << "trial " << trial;
  }
}

// ---------------------------------------------------------------------------------------------
// SipHash family

constexpr uint64_t kSiphash24Vectors[64] = {
    0x726fdb47dd0e0e31, 0x74f839c593dc67fd, 0x0d6c8009d9a94f5a, 0x85676696d7fb7e2d,
    0xcf2794e0277187b7, 0x18765564cd99a68d, 0xcbc9466e58fee3ce, 0xab0200f58b01d137,
    0x93f5f5799a932462, 0x9e0082df0ba9e4b0, 0x7a5dbbc594ddb9f3, 0xf4b32f46226bada7,
    0x751e8fbc860ee5fb, 0x14ea5627c0843d90, 0xf723ca908e7af2ee, 0xa129ca6149be45e5,
    0x3f2acc7f57c29bdb, 0x699ae9f52cbe4794, 0x4bc1b3f0968dd39c, 0xbb6dc91da77961bd,
    0xbed65cf21aa2ee98, 0xd0f2cbb02e3b67c7, 0x93536795e3a33e88, 0xa80c038ccd5ccec8,
    0xb8ad50c6f649af94, 0xbce192de8a85b8ea, 0x17d835b85bbb15f3, 0x2f2e6163076bcfad,
    0xde4daaaca71dc9a5, 0xa6a2506687956571, 0xad87a3535c49ef28, 0x32d892fad841c342,
    0x7127512f72f27cce, 0xa7f32346f95978e3, 0x12e0b01abb051238, 0x15e034d40fa197ae,
    0x314dffbe0815a3b4, 0x027990f029623981, 0xcadcd4e59ef40c4d, 0x9abfd8766a33735c,
    0x0e3ea96b5304a7d0, 0xad0c42d6fc585992, 0x187306c89bc215a9, 0xd4a60abcf3792b95,
    0xf935451de4f21df2, 0xa9538f0419755787, 0xdb9acddff56ca510, 0xd06c98cd5c0975eb,
    0xe612a3cb9ecba951, 0xc766e62cfcadaf96, 0xee64435a9752fe72, 0xa192d576b245165a,
    0x0a8787bf8ecb74b2, 0x81b3e73d20b49b6f, 0x7fa8220ba3b2ecea, 0x245731c13ca42499,
    0xb78dbfaf3a8d83bd, 0xea1ad565322a1a0b, 0x60e61c23a3795013, 0x6606d7e446282b93,
    0x6ca4ecb15c5f91e1, 0x9f626da15c9625f3, 0xe51b38608ef25f57, 0x958a324ceb064572,
};
constexpr uint32_t kHsiphash13Vectors[64] = {
    0x050fc4dc, 0x7d57ca93, 0x4dc7d44d, 0xe7ddf7fb, 0x88d38328, 0x49533b67, 0xc59f22a7, 0x9bb11140,
    0x8d299a8e, 0x6c063de4, 0x92ff097f, 0xf94dc352, 0x57b4d9a2, 0x1229ffa7, 0xc0f95d34, 0x2a519956,
    0x7d908b66, 0x63dbd80c, 0xb473e63e, 0x8d297d1c, 0xa6cce040, 0x2b45f844, 0xa320872e, 0xdae6c123,
    0x67349c8c, 0x705b0979, 0xca9913a5, 0x4ade3b35, 0xef6cd00d, 0x4ab1e1f4, 0x43c5e663, 0x8c21d1bc,
    0x16a7b60d, 0x7a8ff9bf, 0x1f2a753e, 0xbf186b91, 0xada26206, 0xa3c33057, 0xae3a36a1, 0x7b108392,
    0x99e41531, 0x3f1ad944, 0xc8138825, 0xc28949a6, 0xfaf8876b, 0x9f042196, 0x68b1d623, 0x8b5114fd,
    0xdf074c46, 0x12cc86b3, 0x0a52098f, 0x9d292f9a, 0xa2f41f12, 0x43a71ed0, 0x73f0bce6, 0x70a7e980,
    0x243c6d75, 0xfdb71513, 0xa67d8a08, 0xb7e8f148, 0xf7a644ee, 0x0f1837f2, 0x4b6694e0, 0xb7bbb3a8,
};
constexpr uint32_t kHalfSiphash13Vectors[64] = {
    0x5814c896, 0xe7e864ca, 0xbc4b0e30, 0x01539939, 0x7e059ea6, 0x88e3d89b, 0xa0080b65, 0x9d38d9d6,
    0x577999b1, 0xc839caed, 0xe4fa32cf, 0x959246ee, 0x6b28096c, 0x66dd9cd6, 0x16658a7c, 0xd0257b04,
    0x8b31d501, 0x2b1cd04b, 0x06712339, 0x522aca67, 0x911bb605, 0x90a65f0e, 0xf826ef7b, 0x62512deb,
    0x57150ad7, 0x5d473507, 0x1ec47442, 0xab64afd3, 0x0a4100d0, 0x6d2ce652, 0x2331b6a3, 0x08d8791a,
    0xbc6dda8d, 0xe0f6c934, 0xb0652033, 0x9b9851cc, 0x7c46fb7f, 0x732ba8cb, 0xf142997a, 0xfcc9aa1b,
    0x05327eb2, 0xe110131c, 0xf9e5e7c0, 0xa7d708a6, 0x11795ab1, 0x65671619, 0x9f5fff91, 0xd89c5267,
    0x007783eb, 0x95766243, 0xab639262, 0x9c7e1390, 0xc368dda6, 0x38ddc455, 0xfa13d379, 0x979ea4e8,
    0x53ecd77e, 0x2ee80657, 0x33dbb66a, 0xae3f0577, 0x88b4c4cc, 0x3e7f480b, 0x74c1ebf8, 0x87178304,
};

SiphashKey Key00to0f() {
  uint8_t bytes[16];
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<uint8_t>(i);
  return SiphashKeyFromBytes(bytes);
}

std::vector<uint8_t> Message(size_t n) {
  std::vector<uint8_t> m(n);
  for (size_t i = 0; i < n; ++i) m[i] = static_cast<uint8_t>(i);
  return m;
}

TEST(Siphash, KeyBytesAreLittleEndianWords) {
  const SiphashKey key = Key00to0f();
  EXPECT_EQ(key.k[0], 0x0706050403020100ull);
  EXPECT_EQ(key.k[1], 0x0f0e0d0c0b0a0908ull);
}

TEST(Siphash, AllSixtyFourSiphash24Vectors) {
  const SiphashKey key = Key00to0f();
  for (size_t i = 0; i < 64; ++i) {
    const auto m = Message(i);
    EXPECT_EQ(Siphash(m.data(), m.size(), key), kSiphash24Vectors[i]) << "vector " << i;
  }
}

TEST(Siphash, ByteFormOfFirstVectors) {
  const SiphashKey key = Key00to0f();
  uint8_t out[8];
  const uint64_t v0 = Siphash(nullptr, 0, key);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v0 >> (8 * i));
  EXPECT_EQ(ToHex(out, 8), "310e0edd47db6f72");
  const auto m15 = Message(15);
  const uint64_t v15 = Siphash(m15.data(), 15, key);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v15 >> (8 * i));
  EXPECT_EQ(ToHex(out, 8), "e545be4961ca29a1");
}

TEST(Siphash, KernelFixedWidthCrossChecks) {
  const SiphashKey key = Key00to0f();
  const uint64_t a = 0x0706050403020100ull, b = 0x0f0e0d0c0b0a0908ull;
  const uint64_t c = 0x1716151413121110ull, d = 0x1f1e1d1c1b1a1918ull;
  EXPECT_EQ(Siphash1u64(a, key), kSiphash24Vectors[8]);
  EXPECT_EQ(Siphash2u64(a, b, key), kSiphash24Vectors[16]);
  EXPECT_EQ(Siphash3u64(a, b, c, key), kSiphash24Vectors[24]);
  EXPECT_EQ(Siphash4u64(a, b, c, d, key), kSiphash24Vectors[32]);
  EXPECT_EQ(Siphash1u32(0x03020100, key), kSiphash24Vectors[4]);
  EXPECT_EQ(Siphash2u32(0x03020100, 0x07060504, key), kSiphash24Vectors[8]);
  EXPECT_EQ(Siphash3u32(0x03020100, 0x07060504, 0x0b0a0908, key), kSiphash24Vectors[12]);
  EXPECT_EQ(Siphash4u32(0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c, key),
            kSiphash24Vectors[16]);
}

TEST(Siphash, AllSixtyFourHsiphashSiphash13Vectors) {
  const SiphashKey key = Key00to0f();
  for (size_t i = 0; i < 64; ++i) {
    const auto m = Message(i);
    EXPECT_EQ(Hsiphash(m.data(), m.size(), key), kHsiphash13Vectors[i]) << "vector " << i;
  }
  EXPECT_EQ(Hsiphash1u32(0x03020100, key), kHsiphash13Vectors[4]);
  EXPECT_EQ(Hsiphash2u32(0x03020100, 0x07060504, key), kHsiphash13Vectors[8]);
  EXPECT_EQ(Hsiphash3u32(0x03020100, 0x07060504, 0x0b0a0908, key), kHsiphash13Vectors[12]);
  EXPECT_EQ(Hsiphash4u32(0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c, key),
            kHsiphash13Vectors[16]);
}

TEST(Siphash, AllSixtyFourHalfSiphash13Vectors) {
  uint8_t key_bytes[8];
  for (int i = 0; i < 8; ++i) key_bytes[i] = static_cast<uint8_t>(i);
  const HalfSiphashKey key = HalfSiphashKeyFromBytes(key_bytes);
  EXPECT_EQ(key.k[0], 0x03020100u);
  EXPECT_EQ(key.k[1], 0x07060504u);
  for (size_t i = 0; i < 64; ++i) {
    const auto m = Message(i);
    EXPECT_EQ(HalfSiphash(m.data(), m.size(), key), kHalfSiphash13Vectors[i]) << "vector " << i;
  }
}

TEST(Siphash, MatchesLibsodiumSiphash24OnRandomKeysAndLengths) {
  ASSERT_GE(sodium_init(), 0);
  std::mt19937_64 gen(4242);
  for (int trial = 0; trial < 2000; ++trial) {
    uint8_t key_bytes[crypto_shorthash_siphash24_KEYBYTES];
    for (auto& b : key_bytes) b = static_cast<uint8_t>(gen());
    const size_t len = gen() % 101;  // 0..100
    std::vector<uint8_t> m(len);
    for (auto& b : m) b = static_cast<uint8_t>(gen());
    uint8_t theirs[crypto_shorthash_siphash24_BYTES];
    ASSERT_EQ(crypto_shorthash_siphash24(theirs, m.data(), m.size(), key_bytes), 0);
    const uint64_t ours = Siphash(m.data(), m.size(), SiphashKeyFromBytes(key_bytes));
    uint8_t ours_bytes[8];
    for (int i = 0; i < 8; ++i) ours_bytes[i] = static_cast<uint8_t>(ours >> (8 * i));
    ASSERT_EQ(ToHex(ours_bytes, 8), ToHex(theirs, 8)) << "trial " << trial << " len " << len;
  }
}

TEST(Siphash, OneU64MatchesLibsodiumOnRandomInputs) {
  ASSERT_GE(sodium_init(), 0);
  std::mt19937_64 gen(77);
  for (int trial = 0; trial < 1000; ++trial) {
    uint8_t key_bytes[16];
    for (auto& b : key_bytes) b = static_cast<uint8_t>(gen());
    const uint64_t x = gen();
    uint8_t m[8];
    for (int i = 0; i < 8; ++i) m[i] = static_cast<uint8_t>(x >> (8 * i));
    uint8_t theirs[8];
    ASSERT_EQ(crypto_shorthash_siphash24(theirs, m, 8, key_bytes), 0);
    uint64_t expect = 0;
    for (int i = 0; i < 8; ++i) expect |= uint64_t{theirs[i]} << (8 * i);
    ASSERT_EQ(Siphash1u64(x, SiphashKeyFromBytes(key_bytes)), expect);
  }
}

// A second SipHash-c-d, written from the SipHash paper (Aumasson & Bernstein, 2012) in the
// reference code's shape rather than lib/siphash.c's: the message as little-endian words, the
// length byte at the top of the last one, c rounds per word, d finalisation rounds. Validated
// at 2-4 against libsodium below; at 1-3 it is the independent check of Hsiphash(), which
// libsodium does not implement.
uint64_t ReferenceSiphash(int c, int d, const uint8_t* m, size_t len, const uint8_t k[16]) {
  auto le = [](const uint8_t* p, size_t n) {
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) x |= uint64_t{p[i]} << (8 * i);
    return x;
  };
  const uint64_t k0 = le(k, 8), k1 = le(k + 8, 8);
  uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                   k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
  auto round = [&v] {
    v[0] += v[1];
    v[1] = std::rotl(v[1], 13);
    v[1] ^= v[0];
    v[0] = std::rotl(v[0], 32);
    v[2] += v[3];
    v[3] = std::rotl(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = std::rotl(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = std::rotl(v[1], 17);
    v[1] ^= v[2];
    v[2] = std::rotl(v[2], 32);
  };
  auto absorb = [&](uint64_t w) {
    v[3] ^= w;
    for (int i = 0; i < c; ++i) round();
    v[0] ^= w;
  };
  size_t i = 0;
  for (; i + 8 <= len; i += 8) absorb(le(m + i, 8));
  absorb(le(m + i, len - i) | uint64_t{len & 0xff} << 56);
  v[2] ^= 0xff;
  for (int r = 0; r < d; ++r) round();
  return v[0] ^ v[1] ^ v[2] ^ v[3];
}

// HalfSipHash-c-d with a 32-bit result, the same way (the paper's 32-bit variant).
uint32_t ReferenceHalfSiphash(int c, int d, const uint8_t* m, size_t len, const uint8_t k[8]) {
  auto le = [](const uint8_t* p, size_t n) {
    uint32_t x = 0;
    for (size_t i = 0; i < n; ++i) x |= uint32_t{p[i]} << (8 * i);
    return x;
  };
  const uint32_t k0 = le(k, 4), k1 = le(k + 4, 4);
  uint32_t v[4] = {k0, k1, k0 ^ 0x6c796765u, k1 ^ 0x74656462u};
  auto round = [&v] {
    v[0] += v[1];
    v[1] = std::rotl(v[1], 5);
    v[1] ^= v[0];
    v[0] = std::rotl(v[0], 16);
    v[2] += v[3];
    v[3] = std::rotl(v[3], 8);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = std::rotl(v[3], 7);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = std::rotl(v[1], 13);
    v[1] ^= v[2];
    v[2] = std::rotl(v[2], 16);
  };
  auto absorb = [&](uint32_t w) {
    v[3] ^= w;
    for (int i = 0; i < c; ++i) round();
    v[0] ^= w;
  };
  size_t i = 0;
  for (; i + 4 <= len; i += 4) absorb(le(m + i, 4));
  absorb(le(m + i, len - i) | uint32_t{static_cast<uint8_t>(len)} << 24);
  v[2] ^= 0xff;
  for (int r = 0; r < d; ++r) round();
  return v[1] ^ v[3];
}

TEST(Siphash, ReferenceImplementationAgreesWithLibsodiumAt24) {
  ASSERT_GE(sodium_init(), 0);
  std::mt19937_64 gen(99);
  for (int trial = 0; trial < 500; ++trial) {
    uint8_t k[16];
    for (auto& b : k) b = static_cast<uint8_t>(gen());
    std::vector<uint8_t> m(gen() % 70);
    for (auto& b : m) b = static_cast<uint8_t>(gen());
    uint8_t theirs[8];
    ASSERT_EQ(crypto_shorthash_siphash24(theirs, m.data(), m.size(), k), 0);
    uint64_t expect = 0;
    for (int i = 0; i < 8; ++i) expect |= uint64_t{theirs[i]} << (8 * i);
    ASSERT_EQ(ReferenceSiphash(2, 4, m.data(), m.size(), k), expect) << "trial " << trial;
  }
}

// hsiphash on 64-bit (SipHash-1-3, low 32 bits) and on 32-bit (HalfSipHash-1-3) against the
// reference forms: random keys and every length 0..69, plus the kernel tables' first entries.
TEST(Siphash, HsiphashAndHalfSiphashMatchTheReferenceAt13) {
  std::mt19937_64 gen(1313);
  for (int trial = 0; trial < 700; ++trial) {
    uint8_t k[16];
    for (auto& b : k) b = static_cast<uint8_t>(gen());
    std::vector<uint8_t> m(static_cast<size_t>(trial % 70));
    for (auto& b : m) b = static_cast<uint8_t>(gen());
    ASSERT_EQ(Hsiphash(m.data(), m.size(), SiphashKeyFromBytes(k)),
              static_cast<uint32_t>(ReferenceSiphash(1, 3, m.data(), m.size(), k)))
        << "trial " << trial;
    ASSERT_EQ(HalfSiphash(m.data(), m.size(), HalfSiphashKeyFromBytes(k)),
              ReferenceHalfSiphash(1, 3, m.data(), m.size(), k))
        << "trial " << trial;
  }
  uint8_t k[16];
  for (int i = 0; i < 16; ++i) k[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < 64; ++i) {
    const auto m = Message(i);
    EXPECT_EQ(static_cast<uint32_t>(ReferenceSiphash(1, 3, m.data(), m.size(), k)),
              kHsiphash13Vectors[i]);
    EXPECT_EQ(ReferenceHalfSiphash(1, 3, m.data(), m.size(), k), kHalfSiphash13Vectors[i]);
  }
}

// ---------------------------------------------------------------------------------------------
// Counter

TEST(Counter, QuantiseIsExactFloorOfScaledTicks) {
  std::mt19937_64 gen(9);
  const uint64_t kFreqs[][2] = {{2445000000ull, 24000000ull}, {2445000000ull, 125000000ull},
                                {1000000000ull, 24000000ull}, {3000000007ull, 999999937ull},
                                {2445000000ull, 1ull},        {7ull, 3ull}};
  for (const auto& f : kFreqs) {
    CounterSource src(f[0], f[1]);
    for (int i = 0; i < 20000; ++i) {
      uint64_t ticks = gen();
      if (i % 3 == 0) ticks >>= (gen() % 64);
      if (i < 64) ticks = ~uint64_t{0} - static_cast<uint64_t>(i);  // top of the range
      const Uint128 exact = Uint128{ticks} * f[1] / f[0];
      ASSERT_EQ(src.Quantise(ticks), static_cast<uint64_t>(exact))
          << "ticks " << ticks << " counter " << f[0] << " res " << f[1];
    }
  }
}

TEST(Counter, HandComputedQuantisation) {
  CounterSource src(2400000000ull, 24000000ull);  // 100 ticks per slow tick
  EXPECT_EQ(src.Quantise(0), 0u);
  EXPECT_EQ(src.Quantise(99), 0u);
  EXPECT_EQ(src.Quantise(100), 1u);
  EXPECT_EQ(src.Quantise(12345), 123u);
}

TEST(Counter, NoQuantisationIsIdentity) {
  CounterSource raw(2445000000ull);
  CounterSource same(2445000000ull, 2445000000ull);
  for (uint64_t t : {uint64_t{0}, uint64_t{1}, uint64_t{123456789}, ~uint64_t{0}}) {
    EXPECT_EQ(raw.Quantise(t), t);
    EXPECT_EQ(same.Quantise(t), t);
  }
}

TEST(Counter, ReadsAreMonotonic) {
  CounterSource src(1000000000ull, 24000000ull);
  uint64_t prev = timing::ReadCounter();
  uint64_t prev_q = src.Read();
  for (int i = 0; i < 1000; ++i) {
    const uint64_t now = timing::ReadCounter();
    const uint64_t q = src.Read();
    EXPECT_GE(now, prev);
    EXPECT_GE(q, prev_q);
    prev = now;
    prev_q = q;
  }
}

}  // namespace
}  // namespace kstacklab::rng

namespace kstacklab::rng {
namespace {

TEST(Getrandom, FillsLongBuffersAndSecureZeroWipes) {
  // 1 MiB: more than getrandom(2) guarantees to return at once (256 bytes), so
  // short reads are retried; all-zero output would mean nothing was written.
  std::vector<uint8_t> buf(size_t{1} << 20, 0);
  ASSERT_TRUE(FillFromGetrandom(buf.data(), buf.size()).ok());
  EXPECT_NE(std::count(buf.begin(), buf.end(), uint8_t{0}), static_cast<long>(buf.size()));
  SecureZero(buf.data(), buf.size());
  EXPECT_EQ(std::count(buf.begin(), buf.end(), uint8_t{0}), static_cast<long>(buf.size()));
}

}  // namespace
}  // namespace kstacklab::rng
