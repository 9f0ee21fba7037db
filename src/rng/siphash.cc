#include "kstacklab/rng/siphash.h"

#include "kstacklab/rng/chacha20.h"

namespace kstacklab::rng {

namespace {

using siphash_internal::State;

uint64_t LoadLe64(const uint8_t* p) {
  return uint64_t{LoadLe32(p)} | uint64_t{LoadLe32(p + 4)} << 32;
}

// Generic SipHash-c-d over bytes; returns v0^v1^v2^v3 (caller truncates for hsiphash).
template <int kC, int kD>
uint64_t SiphashBytes(const void* data, size_t len, const SiphashKey& key) {
  const auto* p = static_cast<const uint8_t*>(data);
  State s = siphash_internal::Init(key);
  const size_t full = len & ~size_t{7};
  for (size_t i = 0; i < full; i += 8) siphash_internal::Absorb<kC>(s, LoadLe64(p + i));
  uint64_t b = static_cast<uint64_t>(len & 0xff) << 56;
  for (size_t i = 0; i < (len & 7); ++i) b |= uint64_t{p[full + i]} << (8 * i);
  siphash_internal::Absorb<kC>(s, b);
  return siphash_internal::Finish<kD>(s);
}

// Little-endian packing of fixed-width arguments, as the kernel's Nu32/Nu64 helpers hash them.
template <size_t kN>
struct Packed {
  uint8_t bytes[kN];
  size_t n = 0;
  void Add32(uint32_t v) {
    StoreLe32(bytes + n, v);
    n += 4;
  }
  void Add64(uint64_t v) {
    Add32(static_cast<uint32_t>(v));
    Add32(static_cast<uint32_t>(v >> 32));
  }
};

constexpr uint32_t Rotl32h(uint32_t v, int n) { return (v << n) | (v >> (32 - n)); }

struct HalfState {
  uint32_t v0, v1, v2, v3;
};

inline void HalfRound(HalfState& s) {
  s.v0 += s.v1;
  s.v1 = Rotl32h(s.v1, 5);
  s.v1 ^= s.v0;
  s.v0 = Rotl32h(s.v0, 16);
  s.v2 += s.v3;
  s.v3 = Rotl32h(s.v3, 8);
  s.v3 ^= s.v2;
  s.v0 += s.v3;
  s.v3 = Rotl32h(s.v3, 7);
  s.v3 ^= s.v0;
  s.v2 += s.v1;
  s.v1 = Rotl32h(s.v1, 13);
  s.v1 ^= s.v2;
  s.v2 = Rotl32h(s.v2, 16);
}

}  // namespace

SiphashKey SiphashKeyFromBytes(const uint8_t bytes[16]) {
  return SiphashKey{{LoadLe64(bytes), LoadLe64(bytes + 8)}};
}

HalfSiphashKey HalfSiphashKeyFromBytes(const uint8_t bytes[8]) {
  return HalfSiphashKey{{LoadLe32(bytes), LoadLe32(bytes + 4)}};
}

uint64_t Siphash(const void* data, size_t len, const SiphashKey& key) {
  return SiphashBytes<2, 4>(data, len, key);
}

uint64_t Siphash3u64(uint64_t a, uint64_t b, uint64_t c, const SiphashKey& key) {
  Packed<24> p;
  p.Add64(a);
  p.Add64(b);
  p.Add64(c);
  return Siphash(p.bytes, p.n, key);
}

uint64_t Siphash4u64(uint64_t a, uint64_t b, uint64_t c, uint64_t d, const SiphashKey& key) {
  Packed<32> p;
  p.Add64(a);
  p.Add64(b);
  p.Add64(c);
  p.Add64(d);
  return Siphash(p.bytes, p.n, key);
}

uint64_t Siphash1u32(uint32_t a, const SiphashKey& key) {
  Packed<4> p;
  p.Add32(a);
  return Siphash(p.bytes, p.n, key);
}

uint64_t Siphash2u32(uint32_t a, uint32_t b, const SiphashKey& key) {
  Packed<8> p;
  p.Add32(a);
  p.Add32(b);
  return Siphash(p.bytes, p.n, key);
}

uint64_t Siphash3u32(uint32_t a, uint32_t b, uint32_t c, const SiphashKey& key) {
  Packed<12> p;
  p.Add32(a);
  p.Add32(b);
  p.Add32(c);
  return Siphash(p.bytes, p.n, key);
}

uint64_t Siphash4u32(uint32_t a, uint32_t b, uint32_t c, uint32_t d, const SiphashKey& key) {
  Packed<16> p;
  p.Add32(a);
  p.Add32(b);
  p.Add32(c);
  p.Add32(d);
  return Siphash(p.bytes, p.n, key);
}

uint32_t Hsiphash(const void* data, size_t len, const SiphashKey& key) {
  return static_cast<uint32_t>(SiphashBytes<1, 3>(data, len, key));
}

uint32_t Hsiphash1u32(uint32_t a, const SiphashKey& key) {
  Packed<4> p;
  p.Add32(a);
  return Hsiphash(p.bytes, p.n, key);
}

uint32_t Hsiphash2u32(uint32_t a, uint32_t b, const SiphashKey& key) {
  Packed<8> p;
  p.Add32(a);
  p.Add32(b);
  return Hsiphash(p.bytes, p.n, key);
}

uint32_t Hsiphash3u32(uint32_t a, uint32_t b, uint32_t c, const SiphashKey& key) {
  Packed<12> p;
  p.Add32(a);
  p.Add32(b);
  p.Add32(c);
  return Hsiphash(p.bytes, p.n, key);
}

uint32_t Hsiphash4u32(uint32_t a, uint32_t b, uint32_t c, uint32_t d, const SiphashKey& key) {
  Packed<16> p;
  p.Add32(a);
  p.Add32(b);
  p.Add32(c);
  p.Add32(d);
  return Hsiphash(p.bytes, p.n, key);
}

uint32_t HalfSiphash(const void* data, size_t len, const HalfSiphashKey& key) {
  const auto* p = static_cast<const uint8_t*>(data);
  HalfState s{0u ^ key.k[0], 0u ^ key.k[1], 0x6c796765u ^ key.k[0], 0x74656462u ^ key.k[1]};
  auto absorb = [&s](uint32_t m) {
    s.v3 ^= m;
    HalfRound(s);  // c = 1
    s.v0 ^= m;
  };
  const size_t full = len & ~size_t{3};
  for (size_t i = 0; i < full; i += 4) absorb(LoadLe32(p + i));
  uint32_t b = static_cast<uint32_t>(len) << 24;
  for (size_t i = 0; i < (len & 3); ++i) b |= uint32_t{p[full + i]} << (8 * i);
  absorb(b);
  s.v2 ^= 0xff;
  for (int i = 0; i < 3; ++i) HalfRound(s);  // d = 3
  return s.v1 ^ s.v3;
}

}  // namespace kstacklab::rng
