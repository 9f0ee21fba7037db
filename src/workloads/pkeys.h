// The pkeys suite's protected region, exposed for tests (workloads/pkeys.cc).
//
// One page mapped read-write and tagged with a protection key (pkey_alloc + pkey_mprotect). The
// key's PKRU bits are "write-disabled" outside a write window: a store to the page faults
// (SIGSEGV, si_code SEGV_PKUERR) unless the window is open. x86-64 PKU only; arm64 POE is not
// implemented (see docs/micromm.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kstacklab/common/error.h"

namespace kstacklab::workloads {

// "" when x86-64 PKU is usable here (CPUID OSPKE set and pkey_alloc works), else the reason.
// Leaves PKRU as it found it.
std::string PkeysUnavailableReason();

class PkeyRegion {
 public:
  // Allocates the key, maps and tags the page, closes the window. No PKU -> RuntimeError.
  static Expected<std::unique_ptr<PkeyRegion>> Create();
  PkeyRegion(const PkeyRegion&) = delete;
  PkeyRegion& operator=(const PkeyRegion&) = delete;
  // Puts the key's PKRU bits back as they were before Create (other keys' bits are left as
  // they are), frees the key, unmaps the page.
  ~PkeyRegion();

  void OpenWindow() const;   // one WRPKRU: the key writable
  void CloseWindow() const;  // one WRPKRU: the key write-disabled
  uint32_t ReadPkru() const;
  volatile uint64_t* slots() const { return slots_; }  // 512 uint64_t on the tagged page
  int key() const { return key_; }
  uint32_t open_pkru() const { return open_; }
  uint32_t closed_pkru() const { return closed_; }

 private:
  PkeyRegion() = default;
  int key_ = -1;
  volatile uint64_t* slots_ = nullptr;
  uint32_t saved_ = 0;  // PKRU before pkey_alloc
  uint32_t open_ = 0, closed_ = 0;
};

}  // namespace kstacklab::workloads
