// SPDX-License-Identifier: GPL-2.0
// kstacklab live probe (BPF side). It runs on the syscall's own task stack, below the alloca of
// add_random_kstack_offset(), so the address of a local of this program moves exactly with that
// syscall's stack offset: one record per syscall of the target process. Where it attaches is
// per architecture (the object is built per target, -D__TARGET_ARCH_x86 or _arm64):
//
// - x86-64: the raw tracepoint sys_exit, which do_syscall_64 (arch/x86/entry/syscall_64.c)
//   reaches inside its own frame, below the alloca (v7.1+: the alloca after
//   syscall_enter_from_user_mode(); v7.3+: in enter_from_user_mode_randomize_stack(), both
//   still inside do_syscall_64's frame). Any syscall; the number is pt_regs.orig_ax.
// - arm64: sys_enter and sys_exit fire in el0_svc_common() (arch/arm64/kernel/syscall.c), before
//   and after invoke_syscall(), whose frame holds the alloca (6.1 and v7.1+ alike): neither sees
//   the offset. The syscall's handler does: a kprobe on __arm64_sys_NAME (probe.cc attaches it
//   to the one syscall collected), called from invoke_syscall() below the alloca. The kprobe's
//   BRK exception is taken on the same task stack at a fixed depth, so the local still moves
//   with the offset alone. The number is the collected syscall's (target_nr).
//
// Built by CMake with `clang -target bpf -O2 -g`; `bpftool gen skeleton` embeds the object into
// a header (src/live/probe.cc). No vmlinux.h: the kernel fields read are declared below with
// preserve_access_index, so libbpf relocates them against the running kernel's BTF
// (/sys/kernel/btf/vmlinux) at load time (CO-RE).
//
// Two programs, one loaded (probe.cc chooses before load with bpf_program__set_autoload):
// kstacklab_record reads no per-CPU variable and loads on every kernel;
// kstacklab_record_prng also reads this CPU's kstack_rnd_state (v7.1+, commit a96ef5848cb0).
// A typed ksym of a per-CPU variable needs the symbol in kallsyms (the verifier resolves its
// address there: CONFIG_KALLSYMS_ALL=y), which BTF alone does not promise, so the loader falls
// back to the first program when the second is refused.
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";  // bpf_probe_read_kernel is GPL-only

struct task_struct {
  void *stack;
  __u32 kstack_offset;  // only on kernels that keep the offset state per task (optional)
} __attribute__((preserve_access_index));

// lib/random32.c: the LFSR113 state, words in kernel order.
struct rnd_state {
  __u32 s1, s2, s3, s4;
} __attribute__((preserve_access_index));

// DEFINE_PER_CPU(struct rnd_state, kstack_rnd_state) in init/main.c since v7.1. Weak: on a kernel
// without it libbpf 1.1 resolves the address to 0 and the guarded read below is dead code the
// verifier never visits.
extern const struct rnd_state kstack_rnd_state __ksym __weak;

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
  unsigned long orig_ax;
} __attribute__((preserve_access_index));
#elif !defined(__TARGET_ARCH_arm64)
#error "build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

// Keep in sync with LiveRecord in include/kstacklab/live/records.h (static_assert there on the size).
struct live_record {
  __u64 local_addr;  // address of a local of this program (on the task stack)
  __u64 stack_base;  // task_struct.stack: lowest address of the task stack
  __u64 ktime_ns;    // bpf_ktime_get_ns()
  __u32 cpu;         // bpf_get_smp_processor_id()
  __u32 tid;         // thread id (pid in kernel terms)
  __s32 nr;          // syscall number (pt_regs.orig_ax)
  __u32 task_state;  // task_struct.kstack_offset when the kernel has that field, else 0
  __u32 flags;       // LIVE_HAS_TASK_STATE | LIVE_HAS_PRNG_STATE
  __u32 pad;
  __u32 prng[4];     // this CPU's kstack_rnd_state s1..s4 at the hook, else 0
};

#define LIVE_HAS_TASK_STATE 1u
#define LIVE_HAS_PRNG_STATE 2u

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 24);  // 16 MiB = 233016 records of 64 + 8 (header) bytes
} records SEC(".maps");

// Records the ring buffer had no room for (index 0).
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} dropped SEC(".maps");

// Set by the loader before load (read-only afterwards).
const volatile __u32 target_tgid = 0;
const volatile __s32 target_nr = -1;  // -1: every syscall

// One record of the current syscall `nr`; with_prng: also this CPU's kstack_rnd_state (a
// constant in each caller, so the plain program holds no reference to the per-CPU symbol).
static __always_inline int Record(const __s32 nr, const int with_prng) {
  const __u64 id = bpf_get_current_pid_tgid();
  if ((__u32)(id >> 32) != target_tgid) return 0;
  if (target_nr >= 0 && nr != target_nr) return 0;
  volatile __u64 marker = 0;  // the local whose address is recorded
  struct live_record *r = bpf_ringbuf_reserve(&records, sizeof(*r), 0);
  if (!r) {
    __u32 key = 0;
    __u64 *count = bpf_map_lookup_elem(&dropped, &key);
    if (count) __sync_fetch_and_add(count, 1);
    return 0;
  }
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  r->local_addr = (__u64)&marker;
  r->stack_base = (__u64)BPF_CORE_READ(task, stack);
  r->ktime_ns = bpf_ktime_get_ns();
  r->cpu = bpf_get_smp_processor_id();
  r->tid = (__u32)id;
  r->nr = nr;
  r->task_state = 0;
  r->flags = 0;
  if (bpf_core_field_exists(task->kstack_offset)) {
    r->task_state = BPF_CORE_READ(task, kstack_offset);
    r->flags = LIVE_HAS_TASK_STATE;
  }
  r->prng[0] = r->prng[1] = r->prng[2] = r->prng[3] = 0;
  // The state after this syscall's draw, unless another syscall drew on this CPU since (the task
  // was preempted) or the task migrated after its draw: the user-space check counts both.
  if (with_prng && &kstack_rnd_state) {
    const struct rnd_state *s = bpf_this_cpu_ptr(&kstack_rnd_state);
    r->prng[0] = BPF_CORE_READ(s, s1);
    r->prng[1] = BPF_CORE_READ(s, s2);
    r->prng[2] = BPF_CORE_READ(s, s3);
    r->prng[3] = BPF_CORE_READ(s, s4);
    r->flags |= LIVE_HAS_PRNG_STATE;
  }
  r->pad = (__u32)marker;
  bpf_ringbuf_submit(r, 0);
  return 0;
}

#if defined(__TARGET_ARCH_x86)
static __always_inline __s32 SyscallNr(const struct bpf_raw_tracepoint_args *ctx) {
  const struct pt_regs *regs = (const struct pt_regs *)ctx->args[0];
  return (__s32)BPF_CORE_READ(regs, orig_ax);
}

SEC("raw_tp/sys_exit")
int kstacklab_record(struct bpf_raw_tracepoint_args *ctx) { return Record(SyscallNr(ctx), 0); }

SEC("raw_tp/sys_exit")
int kstacklab_record_prng(struct bpf_raw_tracepoint_args *ctx) {
  return Record(SyscallNr(ctx), 1);
}
#else
// Attached by probe.cc to __arm64_sys_NAME of the collected syscall (no target in the section).
SEC("kprobe")
int kstacklab_record(void *ctx) { return Record(target_nr, 0); }

SEC("kprobe")
int kstacklab_record_prng(void *ctx) { return Record(target_nr, 1); }
#endif
