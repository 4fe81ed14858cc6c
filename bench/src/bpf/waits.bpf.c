/* SPDX-License-Identifier: GPL-2.0 */
/*
 * waits.bpf.c - mosaic-bench's runnable-wait tracer: how long tasks wait
 * for a CPU, measured the same way under every scheduler (the kernel's
 * default included), from the scheduler tracepoints alone.
 *
 * A wait starts when a task becomes runnable: woken (sched_wakeup), new
 * (sched_wakeup_new), or switched out while still runnable (sched_switch
 * with the task preempted or its state TASK_RUNNING: a slice end, a
 * preemption, a yield). It ends when the task is switched in. Every wait
 * lands in one per-CPU record: a histogram of microseconds with 8 buckets per
 * power of two (wait_bucket()), the count, and the longest wait with its
 * task's pid and comm. The idle task (pid 0)
 * is left out. Userspace (bench/src/waits.rs) sums the CPUs.
 *
 * The stamp lives in task-local storage. A wakeup keeps an earlier stamp (a
 * task preempted, then woken, has waited since the preemption); a switch
 * out overwrites it when the task stays runnable and clears it when the
 * task blocks, so a wakeup seen while the task still ran leaves nothing
 * behind.
 *
 * Nothing is stamped before userspace sets `armed`, once all three programs
 * are attached: libbpf attaches sched_wakeup first, and a task woken, run and
 * blocked before sched_switch was attached kept that stamp through its sleep
 * - its next wakeup keeps an earlier stamp - and its next run counted the
 * sleep as a wait (per-CPU kthreads, 0.1-3.9 s, under every scheduler).
 */
#include <scx/common.bpf.h>

char _license[] SEC("license") = "GPL";

#define TASK_RUNNING 0
/* 8 buckets per power of two: 1 << WAIT_SUB_BITS */
#define WAIT_SUB_BITS 3
#define NR_WAIT_BUCKETS 240
#define COMM_LEN 16

/*
 * One CPU's waits, by wait_bucket() of microseconds. The layout is read by
 * byte offset in bench/src/waits.rs: keep the two in step.
 */
struct wait_stats {
	u64 hist[NR_WAIT_BUCKETS];
	u64 count;
	u64 max_ns;
	u32 max_pid;
	char max_comm[COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct wait_stats);
} wait_stats SEC(".maps");

/* Set by userspace once every program is attached: stamp only from then. */
bool armed;

/* Per task: when it became runnable, ns (0: not waiting). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, u64);
} runnable_since SEC(".maps");

/*
 * The bucket of a wait of @us microseconds: below 8 us, one per microsecond
 * (bucket @us); from 8 us, each power of two [2^e, 2^(e+1)) is cut into 8
 * equal buckets, so a bucket's upper bound is at most 1/8 above any wait in
 * it; from 15 x 2^28 us (67 minutes) on, record_wait() clamps to the last,
 * open-ended bucket. bench/src/waits.rs's bucket_of() is the same function,
 * clamp included, and its bucket_upper_us() the bound.
 */
static __always_inline u32 wait_bucket(u64 us)
{
	u32 e;

	if (us < (1 << WAIT_SUB_BITS))
		return us;
	/* log2_u64() (scx's common.bpf.h) counts bits: 4 for 8-15 */
	e = log2_u64(us) - 1;
	return ((e - WAIT_SUB_BITS + 1) << WAIT_SUB_BITS) +
	       ((us >> (e - WAIT_SUB_BITS)) & ((1 << WAIT_SUB_BITS) - 1));
}

/* @p waited @ns before running: count it on this CPU. */
static __always_inline void record_wait(struct task_struct *p, u64 ns)
{
	struct wait_stats *s;
	u32 key = 0, b;

	s = bpf_map_lookup_elem(&wait_stats, &key);
	if (!s)
		return;
	b = wait_bucket(ns / 1000);
	/* the last bucket is open-ended; the clamp, kept past the compiler,
	 * bounds the index for the verifier */
	barrier_var(b);
	if (b >= NR_WAIT_BUCKETS)
		b = NR_WAIT_BUCKETS - 1;
	s->hist[b]++;
	s->count++;
	if (ns > s->max_ns) {
		s->max_ns = ns;
		s->max_pid = p->pid;
		bpf_probe_read_kernel_str(s->max_comm, sizeof(s->max_comm),
					  p->comm);
	}
}

/*
 * @p became runnable at @now; @restart: even if it already waits (it was
 * switched out runnable), else only if not (a wakeup).
 */
static __always_inline void wait_start(struct task_struct *p, u64 now,
				       bool restart)
{
	u64 *since;

	if (!p->pid || !armed)
		return;
	since = bpf_task_storage_get(&runnable_since, p, 0,
				     BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (since && (restart || !*since))
		*since = now;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(waits_wakeup, struct task_struct *p)
{
	wait_start(p, bpf_ktime_get_ns(), false);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(waits_wakeup_new, struct task_struct *p)
{
	wait_start(p, bpf_ktime_get_ns(), false);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(waits_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	u64 now = bpf_ktime_get_ns(), *since;

	if (preempt || prev_state == TASK_RUNNING) {
		wait_start(prev, now, true);
	} else if (prev->pid) {
		/* blocked: whatever a wakeup stamped while it ran is void */
		since = bpf_task_storage_get(&runnable_since, prev, 0, 0);
		if (since)
			*since = 0;
	}

	if (!next->pid)
		return 0;
	since = bpf_task_storage_get(&runnable_since, next, 0, 0);
	if (!since || !*since)
		return 0;
	record_wait(next, now > *since ? now - *since : 0);
	*since = 0;
	return 0;
}
