/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_mosaic - a sched_ext scheduler built from five kernel proposals.
 *
 * The policy, in one paragraph: a waking task keeps its previous CPU if that
 * CPU is idle and big enough for it, else takes the nearest idle CPU - same
 * L2, same LLC, anywhere - or on big.LITTLE machines the best-fitting one
 * (wakeup.bpf.c, capacity.bpf.c). The waker inserts it straight into that
 * CPU's local queue only if the two share an L2; farther away, ops.enqueue
 * (run where the kernel's wakeup puts it) does, which wakes the target. With
 * no idle CPU the task waits on a shard of its LLC's shared runqueue
 * (shard.bpf.c), where queues are ordered by weighted virtual time
 * (vtime.bpf.c). At a slice end the running task keeps its CPU unless a task
 * queued in the LLC is due first. A CPU that runs out of work pulls from its
 * own shard, then from the other shards of its LLC, then - if the overload
 * flag says someone waits (gate.bpf.c) - steals from the busiest of a few
 * shards of other LLCs, same NUMA node first (steal.bpf.c). With every CPU
 * busy, the periodic scan weighs the LLCs: a CPU of the lightest per CPU
 * takes a task from the heaviest (steal.bpf.c).
 * Tasks pinned to one CPU wait on that CPU's own queue, and take shorter
 * turns when many crowd it (shard.bpf.c). Every decision a
 * user might question has a counter (intf.h).
 *
 * This file holds the task ops and the ops table; each mechanism lives in its
 * own file, included below so that the whole scheduler is one translation
 * unit. weight.bpf.c defines the cgroup ops and bandwidth.bpf.c
 * ops.cgroup_set_bandwidth (docs/design.md).
 */
#include "mosaic.bpf.h"

char _license[] SEC("license") = "GPL";

#include "topo.bpf.c"
#include "weight.bpf.c"
#include "vtime.bpf.c"
#include "capacity.bpf.c"
#include "gate.bpf.c"
#include "shard.bpf.c"
#include "group.bpf.c"
#include "steal.bpf.c"
#include "bandwidth.bpf.c"
#include "wakeup.bpf.c"
#include "wait.bpf.c"

/* Test switch: whether @p is a task --debug-drop-comm asks us to lose. */
static __always_inline bool debug_should_drop(const struct task_struct *p)
{
	int i;

	if (!debug_drop_comm[0])
		return false;
	/* unrolled: task_struct only takes constant offsets */
#pragma unroll
	for (i = 0; i < MAX_COMM; i++) {
		if (p->comm[i] != debug_drop_comm[i])
			return false;
		if (!p->comm[i])
			break;
	}
	return true;
}

s32 BPF_STRUCT_OPS(mosaic_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	struct task_ctx *tctx = task_ctx_of(p);
	s32 cpu;

	if (!tctx)
		return prev_cpu;
	/* throttled (cpu.max): claim nothing, ops.enqueue parks it */
	if (bw_throttled_slot(p, tctx) >= 0)
		return prev_cpu;
	cpu = pick_wake_cpu(p, tctx, prev_cpu, wake_flags);
	if (cpu < 0) {
		stat_inc(STAT_WAKE_BUSY);
		tctx->woke_busy = true;
		return prev_cpu;
	}
	place_woken(p, tctx, cpu);
	return cpu;
}

/*
 * @p, on @cpu, was put back at its slice end (or preempted): move it if it is
 * too big for @cpu or outside its group's partition @away (group_away_part(),
 * -1: inside or none) - to an idle CPU where it belongs, or by swapping with a
 * task that belongs here. True if it went.
 */
static __always_inline bool move_requeued(struct task_struct *p,
					  struct task_ctx *tctx, s32 cpu,
					  s32 away, u64 enq_flags)
{
	return send_to_idle(p, misfit_target(p, tctx, cpu), enq_flags,
			    STAT_MISFIT_MOVES) ||
	       (away >= 0 && (send_to_idle(p, group_target(p, tctx, away, cpu),
					   enq_flags, STAT_GROUP_MOVES) ||
			      group_swap(p, away, cpu, enq_flags)));
}

/*
 * A lone task at its slice end (SCX_ENQ_LAST: dispatch declined to keep it,
 * see prev_should_move()): move it where it belongs, or - nowhere to go now -
 * keep it here. The kernel leaves the follow-up to us: kick this CPU so that
 * it runs the task from its local queue instead of idling. A task whose
 * affinity no longer includes this CPU (changed while it ran) is queued as
 * any other: the kernel refuses it this CPU's local queue.
 */
static __always_inline void enqueue_last(struct task_struct *p,
					 struct task_ctx *tctx, s32 cpu,
					 u64 enq_flags)
{
	if (tctx && move_requeued(p, tctx, cpu, group_away_part(p, tctx, cpu),
				  enq_flags))
		return;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
		queue_task(p, cpu, enq_flags);
		kick_for(p, cpu);
		return;
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(STAT_LAST_KEPT);
}

void BPF_STRUCT_OPS(mosaic_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx_of(p);
	s32 cpu = scx_bpf_task_cpu(p), away;
	bool woke_busy;

	if (debug_should_drop(p)) {
		stat_inc(STAT_DEBUG_DROPS);
		return;
	}
	if (tctx && bw_park(p, tctx, enq_flags))
		return;
	if (enq_flags & SCX_ENQ_LAST) {
		enqueue_last(p, tctx, cpu, enq_flags);
		return;
	}
	if (!tctx) {
		queue_task(p, cpu, enq_flags);
		kick_for(p, cpu);
		return;
	}

	/* its select_cpu just searched for an idle CPU and found none */
	woke_busy = tctx->woke_busy && (enq_flags & SCX_ENQ_WAKEUP);
	tctx->woke_busy = false;

	/* woken for an idle CPU beyond the waker's L2: that CPU gets it */
	if (hand_over_woken(p, tctx, enq_flags))
		return;

	/* slice over on a CPU too small for it, or outside its partition */
	away = group_away_part(p, tctx, cpu);
	if (!(enq_flags & SCX_ENQ_WAKEUP) &&
	    move_requeued(p, tctx, cpu, away, enq_flags))
		return;

	cpu = group_queue_cpu(p, away, cpu);
	if (idle_cgroup_queue(p, tctx, cpu, enq_flags)) {
		kick_for(p, cpu);
		return;
	}
	if (woke_busy && vtime_wake_preempt(p, tctx, cpu, enq_flags))
		return;
	queue_task(p, cpu, enq_flags);
	if (woke_busy)
		overload_for(p);
	else
		kick_for(p, cpu);
}

/*
 * Whether @prev, runnable on @cpu with nothing of its LLC queued to replace
 * it, should leave: too big for this CPU, outside its group's partition, or
 * throttled (cpu.max: it parks).
 */
static __always_inline bool prev_should_move(struct task_struct *prev, s32 cpu)
{
	struct task_ctx *tctx = task_ctx_of(prev);

	/* its affinity changed while it ran: let the kernel move it */
	if (!bpf_cpumask_test_cpu(cpu, prev->cpus_ptr))
		return true;
	if (bw_throttled_slot(prev, tctx) >= 0)
		return true;
	if (!tctx || task_is_pinned(prev))
		return false;
	if (asym_capacity && !cpu_fits_task(cpu, tctx->util))
		return true;
	return group_away_part(prev, tctx, cpu) >= 0;
}

/*
 * At its slice end, whether runnable @prev keeps @cpu for another slice: it
 * need not move (prev_should_move()), is of no cpu.idle cgroup, and no task
 * queued in the LLC is due before it (@scan, llc_scan()). If it keeps it,
 * count whether others were queued (prev_kept_ahead) or not.
 */
static __always_inline bool prev_keeps_cpu(struct task_struct *prev, s32 cpu,
					   const struct llc_scan *scan)
{
	struct task_ctx *tctx;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED) ||
	    !(tctx = task_ctx_of(prev)) || tctx->in_idle_cgroup ||
	    prev_should_move(prev, cpu) || scan->due)
		return false;
	stat_inc(scan->queued ? STAT_PREV_KEPT_AHEAD : STAT_PREV_REFILLED);
	return true;
}

/*
 * @cpu, about to idle (or to leave a cpu.idle cgroup's task running:
 * @idle_prev), takes work from outside its shared runqueue: a steal from
 * another LLC; with per-CPU queues, the kernel's newidle balance
 * (pull_busiest_cpu_queue()), after, with the seed's design, the waiters its
 * LLC's shards index.
 */
static __always_inline bool pull_other_llcs(s32 cpu, bool idle_prev)
{
	if (!cpu_queues_only())
		return steal_scan(cpu);
	return shard_index_pull(cpu) || pull_busiest_cpu_queue(cpu, idle_prev);
}

/*
 * @cpu's task stopped or its slice ended. A runnable @prev keeps the CPU with
 * a new slice unless a task queued in the LLC is due before it
 * (prev_keeps_cpu()); else the CPU takes the oldest work of the LLC. With
 * none it may take, a runnable @prev still keeps the CPU - unless it should
 * move; then the kernel, told by SCX_OPS_ENQ_LAST not to keep it on its own,
 * hands it to enqueue_last(). Only a CPU that would otherwise idle steals
 * from another LLC - or run a cpu.idle cgroup's task, which comes after every
 * other task - or one whose LLC the periodic scan found much less busy than
 * another (llc_balance_pull(), first: before prev may keep the CPU).
 */
void BPF_STRUCT_OPS(mosaic_dispatch, s32 cpu, struct task_struct *prev)
{
	struct llc_scan scan;
	bool idle_prev;

	bw_unpark();
	if (pull_idle_cgroup(cpu, true))
		return;
	if (llc_balance_pull(cpu) || periodic_balance_pull(cpu))
		return;
	llc_scan(cpu, prev && (prev->scx.flags & SCX_TASK_QUEUED) ? prev : NULL,
		 &scan);
	cpu_queue_note(cpu, scan.cpu_queued);
	if (prev_keeps_cpu(prev, cpu, &scan)) {
		prev->scx.slice = slice_ns;
		return;
	}
	if (pull_older_sibling(cpu, &scan) || pull_own_queues(cpu, &scan) ||
	    pull_sibling_shards(cpu, &scan))
		return;
	/* a runnable task of an idle cgroup yields to other LLCs' work first,
	 * then takes turns with its peers */
	idle_prev = prev_in_idle_cgroup(prev);
	if (idle_prev &&
	    (pull_other_llcs(cpu, true) || pull_idle_cgroup(cpu, false)))
		return;
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED) &&
	    !prev_should_move(prev, cpu)) {
		prev->scx.slice = slice_ns;
		stat_inc(STAT_PREV_REFILLED);
		return;
	}
	if (!idle_prev && pull_other_llcs(cpu, false))
		return;
	/* idle cgroups last: after work stolen from other LLCs */
	if (pull_idle_cgroup(cpu, false) || pull_idle_cgroup_remote(cpu))
		return;
	if (cpu_queues_only())
		newidle_note_idle(cpu, scx_bpf_now());
	weight_flush();
	stat_inc(STAT_DISPATCH_EMPTY);
}

void BPF_STRUCT_OPS(mosaic_running, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx_of(p);
	s32 cpu = scx_bpf_task_cpu(p);
	u64 now = scx_bpf_now(), waited;

	if (!tctx)
		return;
	waited = wait_end(p, tctx, now);
	if (tctx->woke_on_idle) {
		tctx->woke_on_idle = false;
		idle_start_note(cpu, waited);
	}
	if (tctx->last_cpu >= 0 && tctx->last_cpu != cpu)
		stat_inc(STAT_MIGRATIONS);
	tctx->last_cpu = cpu;
	util_running(tctx, now);
	vtime_running(p, tctx, cpu, now);
	vtime_note_running(p, tctx, cpu, now);
	llc_balance_note_share(p, tctx, cpu, now);
	group_running(p, tctx, cpu);
	group_account(p, tctx, cpu, 0, waited);
	cpu_queue_slice_apply(p, cpu);
	bw_running(tctx);
	/* cpu.max: a slice no longer than the budget; none if throttled */
	if (bw_charge(p, tctx, 0, true)) {
		p->scx.slice = 0;
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
}

void BPF_STRUCT_OPS(mosaic_stopping, struct task_struct *p, bool runnable)
{
	struct task_ctx *tctx = task_ctx_of(p);
	u64 now = scx_bpf_now();
	s32 cpu = scx_bpf_task_cpu(p);
	u64 ran;

	if (!tctx)
		return;
	ran = task_ran(tctx, now);
	if (!runnable)
		balance_sleeping(tctx, now);
	pair_run_on_note(tctx, cpu, now);
	llc_balance_stopping(cpu);
	util_stopping(tctx, cpu, now);
	vtime_charge(p, tctx, ran, now);
	vtime_note_stopped(cpu);
	bw_charge(p, tctx, ran, false);
	group_account(p, tctx, cpu, ran, 0);
	if (runnable)
		wait_begin(tctx, now);
}

/*
 * A task that keeps its CPU (nothing else to run) is not stopped and started
 * again: account its running time at every tick too. A task outside its
 * group's partition that could go there leaves at the tick (group_tick()).
 */
void BPF_STRUCT_OPS(mosaic_tick, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx_of(p);
	u64 now = scx_bpf_now(), ran;
	s32 cpu = scx_bpf_task_cpu(p);

	weight_flush();
	periodic_balance_tick(cpu, now);
	idle_balance_tick(cpu, now);
	if (!tctx)
		return;
	ran = task_ran(tctx, now);
	tctx->started_at = now;
	util_stopping(tctx, cpu, now);
	vtime_charge(p, tctx, ran, now);
	vtime_note_running(p, tctx, cpu, now);
	llc_balance_note_share(p, tctx, cpu, now);
	if (bw_charge(p, tctx, ran, true))
		p->scx.slice = 0;
	idle_cgroup_tick(p, tctx, cpu);
	group_account(p, tctx, cpu, ran, 0);
	group_tick(p, tctx, cpu, now);
}

void BPF_STRUCT_OPS(mosaic_runnable, struct task_struct *p, u64 enq_flags)
{
	struct task_ctx *tctx = task_ctx_of(p);
	u64 now;

	if (!tctx)
		return;
	now = scx_bpf_now();
	wait_begin(tctx, now);
	balance_runnable(tctx, now, enq_flags & SCX_ENQ_WAKEUP);
	weight_runnable(p, tctx);
}

void BPF_STRUCT_OPS(mosaic_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct task_ctx *tctx = task_ctx_of(p);

	if (tctx)
		weight_quiescent(tctx);
}

/* sched_yield(): see vtime_yield(); yielding to a given task is not done. */
bool BPF_STRUCT_OPS(mosaic_yield, struct task_struct *from,
		    struct task_struct *to)
{
	if (!to)
		vtime_yield(from);
	return false;
}

void BPF_STRUCT_OPS(mosaic_enable, struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx_of(p);
	u64 now = scx_bpf_now();

	vtime_enable(p, tctx);
	if (!tctx)
		return;
	util_init(tctx, now);
	balance_load_init(tctx, now);
}

s32 BPF_STRUCT_OPS(mosaic_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	tctx->last_cpu = -1;
	tctx->wake_cpu = -1;
	weight_set_cgroup(tctx, args->cgroup);
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(mosaic_init)
{
	s32 ret = topo_init();

	if (!ret)
		vtime_init();
	if (!ret)
		ret = shard_init();
	if (!ret)
		ret = gate_init();
	if (!ret)
		ret = group_init();
	if (!ret)
		ret = idle_queues_init();
	if (!ret)
		ret = bw_init();
	return ret;
}

void BPF_STRUCT_OPS(mosaic_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

/* clang-format off */
SCX_OPS_DEFINE(mosaic_ops,
	       .select_cpu	= (void *)mosaic_select_cpu,
	       .enqueue		= (void *)mosaic_enqueue,
	       .dispatch	= (void *)mosaic_dispatch,
	       .running		= (void *)mosaic_running,
	       .stopping	= (void *)mosaic_stopping,
	       .runnable	= (void *)mosaic_runnable,
	       .quiescent	= (void *)mosaic_quiescent,
	       .tick		= (void *)mosaic_tick,
	       .yield		= (void *)mosaic_yield,
	       .enable		= (void *)mosaic_enable,
	       .init_task	= (void *)mosaic_init_task,
	       .cgroup_init	= (void *)mosaic_cgroup_init,
	       .cgroup_exit	= (void *)mosaic_cgroup_exit,
	       .cgroup_move	= (void *)mosaic_cgroup_move,
	       .cgroup_set_weight = (void *)mosaic_cgroup_set_weight,
	       .cgroup_set_bandwidth = (void *)mosaic_cgroup_set_bandwidth,
	       .cgroup_set_idle	= (void *)mosaic_cgroup_set_idle,
	       .init		= (void *)mosaic_init,
	       .exit		= (void *)mosaic_exit,
	       .flags		= SCX_OPS_ENQ_LAST,
	       .name		= "mosaic");
/* clang-format on */
