/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vtime.bpf.c - weighted virtual time: the order inside every queue.
 *
 * WHAT
 * Every DSQ Mosaic owns (shards and per-CPU queues) is ordered by virtual
 * time. A task's vtime advances by its runtime scaled by 100 / weight, so a
 * nice -5 task (weight ~335) ages three times slower than a nice 0 one and
 * gets about three times the CPU when both wait in the same queue; for a task
 * of a cgroup the weight is its share of the cgroup's (weight.bpf.c).
 *
 * HOW
 * Each LLC keeps a clock: the largest vtime of a task that started running
 * there. A waking task is queued at max(its vtime, clock - slice): a sleeper
 * keeps at most one slice of credit, so it cannot monopolise the LLC on
 * wakeup. A task queued again after its slice keeps up to REQUEUE_LAG_SLICES
 * of lag: a heavy-weight task legitimately trails the clock, which the
 * lightest task that started last set (clamping it to one slice would hand
 * its share to the light ones), while a task carried from another LLC, whose
 * clock may be far behind, gains a bounded head start.
 * Runtime is measured from ops.running to ops.stopping.
 *
 * WHY
 * One clock per LLC, not one global: the clock is written whenever a task
 * starts, and a single global line would bounce between every CPU of the
 * machine. Tasks compared against each other (in one shard, or across the
 * shards of one LLC) share one clock.
 */

/* Per-LLC virtual clock, one cache line each. */
struct llc_clock {
	u64 vtime;
} __attribute__((aligned(64)));

struct llc_clock llc_clocks[MAX_LLCS];

/* The virtual clock of @llc. */
static __always_inline u64 *llc_vtime(u32 llc)
{
	return &llc_clocks[llc & (MAX_LLCS - 1)].vtime;
}

/*
 * Vtime at which @p is queued in @llc: its own, at most one slice behind the
 * clock if it wakes up, at most REQUEUE_LAG_SLICES behind if it was runnable
 * all along (it earned that lag by running less than its share).
 */
static __always_inline u64 task_queue_vtime(struct task_struct *p, u32 llc,
					    u64 enq_flags)
{
	u64 lag = enq_flags & SCX_ENQ_WAKEUP ? slice_ns
					     : REQUEUE_LAG_SLICES * slice_ns;
	u64 floor = *llc_vtime(llc) - lag;

	if (time_before(p->scx.dsq_vtime, floor))
		p->scx.dsq_vtime = floor;
	return p->scx.dsq_vtime;
}

/* @p starts running on @cpu at @now: move the LLC's clock forward. */
static __always_inline void
vtime_running(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 now)
{
	u64 *clock = llc_vtime(llc_of(cpu));

	if (time_before(*clock, p->scx.dsq_vtime))
		*clock = p->scx.dsq_vtime;
	tctx->started_at = now;
}

/* How long the task of @tctx ran, stopping at @now; 0 if unknown. */
static __always_inline u64 task_ran(struct task_ctx *tctx, u64 now)
{
	u64 start = tctx->started_at;

	tctx->started_at = 0;
	return start && time_before(start, now) ? now - start : 0;
}

/* @p ran for @ran ns: charge it, scaled by its share (weight.bpf.c). */
static __always_inline void vtime_charge(struct task_struct *p,
					 struct task_ctx *tctx, u64 ran)
{
	p->scx.dsq_vtime += weighted_runtime(p, tctx, ran);
}

/* A task joins: start it at its LLC's present. */
static __always_inline void vtime_enable(struct task_struct *p)
{
	p->scx.dsq_vtime = *llc_vtime(llc_of(scx_bpf_task_cpu(p)));
}
