// The kstack_erase.c model (include/kstacklab/erase/erase.h).
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "kstacklab/erase/erase.h"

namespace kstacklab::erase {

uintptr_t FindTopOfPoison(uintptr_t low, uintptr_t high) {
  size_t poison_count = 0;
  uintptr_t poison_high = high;
  uintptr_t sp = high;
  while (sp > low && poison_count < kSearchDepthWords) {
    sp -= sizeof(uint64_t);
    if (*AddressToPointer<const uint64_t>(sp) == kPoison) {
      ++poison_count;
    } else {
      poison_count = 0;
      poison_high = sp;
    }
  }
  return poison_high;
}

Expected<std::unique_ptr<TaskStack>> TaskStack::Create(size_t thread_size, size_t pt_regs_size) {
  if (thread_size < 4096 || (thread_size & (thread_size - 1)) != 0) {
    return UsageError(fmt::format("thread size {} is not a power of two >= 4096", thread_size));
  }
  if (pt_regs_size % sizeof(uint64_t) != 0 || pt_regs_size >= thread_size / 2) {
    return UsageError(fmt::format(
        "pt_regs size {} is not a multiple of 8 below half the thread size", pt_regs_size));
  }
  void* memory = std::aligned_alloc(thread_size, thread_size);
  if (memory == nullptr) {
    return RuntimeError(fmt::format("cannot allocate a {}-byte model stack", thread_size));
  }
  // Garbage that is not the poison, as a fresh kernel stack holds.
  std::memset(memory, 0x5A, thread_size);
  std::unique_ptr<TaskStack> stack(
      new TaskStack(reinterpret_cast<uintptr_t>(memory), thread_size, pt_regs_size));
  stack->TaskInit();
  return stack;
}

TaskStack::~TaskStack() { std::free(AddressToPointer<void>(base_)); }

uint64_t TaskStack::word(uintptr_t address) const {
  KSTACKLAB_CHECK(address >= base_ && address + sizeof(uint64_t) <= base_ + thread_size_ &&
                  address % sizeof(uint64_t) == 0);
  return *AddressToPointer<const uint64_t>(address);
}

void TaskStack::set_word(uintptr_t address, uint64_t value) {
  KSTACKLAB_CHECK(address >= base_ && address + sizeof(uint64_t) <= base_ + thread_size_ &&
                  address % sizeof(uint64_t) == 0);
  *AddressToPointer<uint64_t>(address) = value;
}

void TaskStack::TaskInit() {
  set_word(base_, kStackEndMagic);
  lowest_stack_ = low_bound();
}

void TaskStack::TrackStack(uintptr_t sp) {
  sp = (sp + sizeof(uint64_t) - 1) & ~uintptr_t{sizeof(uint64_t) - 1};  // ALIGN(sp, 8)
  if (sp < lowest_stack_ && sp >= low_bound()) lowest_stack_ = sp;
}

EraseRange TaskStack::Erase(bool on_task_stack, uintptr_t current_sp, PoisonFn fill) {
  EraseRange r;
  r.low = FindTopOfPoison(low_bound(), lowest_stack_);
  r.high = on_task_stack ? current_sp : high_bound();
  // The kernel's loop `while (erase_low < erase_high)` writes nothing for an empty or inverted
  // range; a strategy's contract requires low <= high, so the model clamps the same way.
  if (r.high < r.low) r.high = r.low;
  fill(r.low, r.high, kPoison);
  lowest_stack_ = high_bound();
  return r;
}

EraseRange TaskStack::Syscall(size_t depth, PoisonFn fill) {
  KSTACKLAB_CHECK(depth <= high_bound() - low_bound());
  const uintptr_t sp = high_bound() - depth;
  std::memset(AddressToPointer<void>(sp), 0x5A, depth);
  asm volatile("" : : "r"(sp) : "memory");  // the handler's writes happen
  TrackStack(sp);
  return Erase(false, 0, fill);
}

}  // namespace kstacklab::erase
