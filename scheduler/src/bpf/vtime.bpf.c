/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vtime.bpf.c - weighted virtual time: the order inside every queue.
 *
 * WHAT
 * Every DSQ Mosaic owns (shards and per-CPU queues) is ordered by virtual
 * time. A task's vtime advances by its runtime scaled by 100 / weight, so a
 * nice -5 task (weight ~335) ages three times slower than a nice 0 one and
 * gets about three times the CPU when both wait in the same queue.
 *
 * HOW
 * Each LLC keeps a clock: the largest vtime of a task that started running
 * there. A task is queued at max(its vtime, clock - slice): a sleeper keeps
 * at most one slice of credit, so it cannot monopolise the LLC on wakeup.
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

/* Vtime at which @p is queued in @llc: its own, at most one slice behind. */
static __always_inline u64 task_queue_vtime(struct task_struct *p, u32 llc)
{
	u64 floor = *llc_vtime(llc) - slice_ns;

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

/* @p stopped running after @ran ns: charge it, scaled by its weight. */
static __always_inline void vtime_charge(struct task_struct *p, u64 ran)
{
	u64 weight = p->scx.weight ?: 100;

	p->scx.dsq_vtime += ran * 100 / weight;
}

/* A task joins: start it at its LLC's present. */
static __always_inline void vtime_enable(struct task_struct *p)
{
	p->scx.dsq_vtime = *llc_vtime(llc_of(scx_bpf_task_cpu(p)));
}
