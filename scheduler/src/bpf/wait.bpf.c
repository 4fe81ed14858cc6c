/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wait.bpf.c - how long runnable tasks wait for a CPU: a bound users see.
 *
 * WHAT
 * Every wait of a runnable task - from the moment it became runnable (woken,
 * or put back after its slice or a preemption) to the moment it runs again -
 * lands in a per-CPU log2 histogram of microseconds (`wait_hist`) and in the
 * per-CPU maximum STAT_WAIT_MAX_US, whose task (pid, comm) is kept beside it
 * (`longest_waits`). Userspace sums the histograms into
 * p50/p99/p99.9, per stats interval and for the whole run. A task parked by
 * its cgroup's cpu.max (bandwidth.bpf.c) waits from when it goes back to a
 * queue; the time parked is the limit's and has its own maximum,
 * STAT_BW_PARKED_MAX_US (the kernel's watchdog counts both).
 *
 * HOW
 * ops.runnable and ops.stopping (task still runnable) stamp the task;
 * ops.running measures and clears the stamp, on the CPU that runs it. A task
 * that keeps its CPU at its slice end (prev_refilled) never stopped and did
 * not wait. Constant work per event: log2_u64() (scx's common.bpf.h, a
 * fixed shift cascade) for the bucket, two per-CPU slots; a third, the
 * waiter's pid and comm, only when the CPU's maximum rises.
 *
 * WHY
 * The kernel ejects a scheduler whose task waits past its watchdog timeout
 * (30 s by default, SCX_TIMEOUT_MS); this shows how close a run came long
 * before it does, and lets tests bound the wait instead of "no ejection".
 */

/* Per-CPU count of runnable waits, by log2 of the wait in microseconds. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, NR_WAIT_BUCKETS);
} wait_hist SEC(".maps");

/* Per CPU, who waited longest there: the wait STAT_WAIT_MAX_US holds. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(struct longest_wait));
	__uint(max_entries, 1);
} longest_waits SEC(".maps");

/* @p waited @us, the longest wait on this CPU yet: keep who it was. */
static __always_inline void longest_wait_note(struct task_struct *p, u64 us)
{
	u32 key = 0;
	struct longest_wait *w = bpf_map_lookup_elem(&longest_waits, &key);
	int i;

	if (!w)
		return;
	w->us = us;
	w->pid = p->pid;
	/* unrolled: task_struct only takes constant offsets */
#pragma unroll
	for (i = 0; i < MAX_COMM; i++)
		w->comm[i] = p->comm[i];
}

/* The task of @tctx became runnable at @now. */
static __always_inline void wait_begin(struct task_ctx *tctx, u64 now)
{
	tctx->runnable_at = now;
}

/*
 * @p, of @tctx, starts running at @now: record how long it waited, and
 * return that, ns (0 if unknown).
 */
static __always_inline u64 wait_end(struct task_struct *p,
				    struct task_ctx *tctx, u64 now)
{
	u64 since = tctx->runnable_at, ns, us, *slot;
	u32 bucket;

	if (!since)
		return 0;
	tctx->runnable_at = 0;
	ns = time_before(since, now) ? now - since : 0;
	us = ns / 1000;
	/* log2_u64() counts bits: 1 for 1, 2 for 2-3, ... */
	bucket = us > 1 ? log2_u64(us) - 1 : 0;
	if (bucket >= NR_WAIT_BUCKETS)
		bucket = NR_WAIT_BUCKETS - 1;
	slot = bpf_map_lookup_elem(&wait_hist, &bucket);
	if (slot)
		(*slot)++;
	if (stat_max(STAT_WAIT_MAX_US, us))
		longest_wait_note(p, us);
	return ns;
}

/*
 * The task of @tctx, parked by its cgroup's cpu.max since it became
 * runnable, goes back to a queue at @now: the time parked is the limit's,
 * kept apart as the longest park (STAT_BW_PARKED_MAX_US), and its wait for
 * a CPU starts now.
 */
static __always_inline void wait_after_park(struct task_ctx *tctx, u64 now)
{
	u64 since = tctx->runnable_at;

	if (!since)
		return;
	tctx->runnable_at = now;
	stat_max(STAT_BW_PARKED_MAX_US,
		 time_before(since, now) ? (now - since) / 1000 : 0);
}
