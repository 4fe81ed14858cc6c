/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wakeup.bpf.c - where a waking task goes, and how it gets there
 * (seeds 001 and 002).
 *
 * WHAT
 * One path for symmetric and asymmetric machines. Two tasks that wake each
 * other in turn share a CPU: a sync wakeup within such a pair runs the wakee
 * next on the waker's CPU, as long as each of the two sleeps soon after
 * waking the other (below). Otherwise a waking task keeps its previous CPU if
 * that CPU is idle and the task fits it (seed 002); a sync wakeup (the waker
 * is about to sleep) may take the waker's CPU if prev is busy. Otherwise
 * the nearest idle CPU: an idle whole core, then an idle CPU, in prev's L2
 * group; then the same in prev's LLC; then anywhere. On asymmetric machines
 * each step only accepts CPUs the task fits, and the last one is the
 * best-fitting idle CPU, else the biggest. A task of a cgroup the group
 * balancer settled tries its partition first (group.bpf.c). No idle CPU: the
 * task queues on its LLC's shared runqueue (shard.bpf.c).
 *
 * Getting there (seed 001): the waker inserts the task straight into the
 * target CPU's local DSQ only when both share an L2. A target farther away
 * gets it in ops.enqueue, which the kernel runs after its own wakeup path
 * (for CPUs that share no cache, on the target itself, from its wake list):
 * straight into the claimed target's local DSQ (the insert wakes it) - never
 * through a shard, where another CPU could take it and leave the target idle.
 *
 * HOW
 * Idle CPUs are claimed with the kernel's idle-tracking kfuncs on the L2 and
 * LLC cpumasks of topo.bpf.c; the asymmetric searches scan capacities
 * (capacity.bpf.c). A task handed to a claimed CPU through ops.enqueue
 * carries it in its context (wake_cpu); ops.enqueue calls hand_over_woken(),
 * which re-checks the task's affinity and inserts it with SCX_DSQ_LOCAL_ON
 * (the kernel reschedules the idle CPU; no kick): this file owns the whole
 * wakeup, search to handoff.
 * --no-l2-locality makes the LLC both the first search domain and the
 * direct-insert domain (the kernel's behaviour before seed 001);
 * --no-prev-first sends asymmetric wakeups straight to the capacity scan,
 * starting at the waker's CPU (the kernel's behaviour before seed 002);
 * The pair rule's test of "sleeps soon": each LLC keeps a decayed average
 * of how long a task woken onto an idle CPU of it waited to run
 * (llc_idle_start_ns); each task, the decayed share of its sync wakeups of
 * its pair after which it ran on, to its next ops.stopping, past
 * PAIR_IDLE_STARTS such idle starts (pair_long_share). A waker keeps its
 * wakee while both their shares are at most a half. The run-on is measured
 * at every pair wakeup, kept or not, so a pair whose habits change shares a
 * CPU again.
 * --no-wake-pair turns the pair rule off, so that an A/B of --no-prev-first
 * under it changes what seed 002 changed, the prev check in front of the
 * capacity search (the pair rule, checked first, otherwise decides most
 * pipe wakeups on the "on" side).
 *
 * WHY
 * On a 2-socket EPYC 9654, L3 is only 2.4x faster than RAM: CPUs that share
 * just an LLC should not write each other's runqueues on every wakeup. The
 * seed measured hackbench 49 s -> 34 s and perf messaging 10.9 s -> 7.4 s
 * from scoping the direct path to the L2. Prev first keeps a task's cache
 * and stops the asymmetric scan from migrating on every wakeup.
 * The pair rule trades the wakee's wait behind its waker for the wakeup's
 * interrupt and idle exit: perf pipe's waker sleeps 4-5 us after waking, and
 * sharing a CPU doubles its throughput; redis-server answers its other
 * clients for ~400 us first, and its wakee then waits that long instead of
 * the ~50 us an idle CPU takes to start it (TCG, docs/bench/analysis.md).
 * Spreading costs the wakee one idle start and the machine about as much
 * again (the interrupt, the idle exit), hence twice the idle start as the
 * bound. Both sides, not just the waker: redis-benchmark sleeps at once after
 * its request, so judged alone its wakeups would still take redis-server to
 * the benchmark's CPU, and the benchmark would move away at the answer that
 * redis-server runs on after - a migration each way, every request.
 */

/* Count where the idle CPU @cpu was found for a task that ran on @prev. */
static __always_inline s32 found_near(s32 cpu, s32 prev)
{
	if (cpu < 0)
		return cpu;
	if (cpus_share_l2(cpu, prev))
		stat_inc(STAT_WAKE_L2_IDLE);
	else if (llc_of(cpu) == llc_of(prev))
		stat_inc(STAT_WAKE_LLC_IDLE);
	else
		stat_inc(STAT_WAKE_REMOTE_IDLE);
	return cpu;
}

/* Whether the sync waker's CPU @this suits @p (which last ran on @prev). */
static __always_inline bool sync_target_ok(struct task_struct *p, u32 util,
					   s32 this, s32 prev)
{
	return this != prev && llc_of(this) == llc_of(prev) &&
	       bpf_cpumask_test_cpu(this, p->cpus_ptr) &&
	       task_fits(this, util) && !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL);
}

/* How many idle starts a waker's run-on may last, for its pair to share it. */
#define PAIR_IDLE_STARTS 2
/* A whole share (pair_long_share), in 1/1024ths. */
#define PAIR_SHARE_ONE 1024

/*
 * Per LLC: how long a task woken onto one of its CPUs while idle waited to
 * run, ns, a decayed average (an eighth per wait); 0 before the first. Per
 * LLC, not per CPU: the CPU a pair lives on seldom idles, and a handful of
 * its own samples would make a noisy bound.
 */
u64 llc_idle_start_ns[MAX_LLCS];

/* A task woken onto @cpu while it was idle waited @ns: average it in. */
static __always_inline void idle_start_note(s32 cpu, u64 ns)
{
	u32 llc = llc_of(cpu);
	u64 avg;

	if (!ns)
		return;
	avg = llc_idle_start_ns[llc];
	/* a lost update between CPUs only drops a sample */
	llc_idle_start_ns[llc] = avg ? decay_eighth(avg, ns) : ns;
}

/* The LLC of @cpu's idle start, ns (0: none measured yet). */
static __always_inline u64 llc_idle_start(s32 cpu)
{
	return llc_idle_start_ns[llc_of(cpu)];
}

/*
 * The task of @tctx stops on @cpu at @now: if it sync-woke its pair since it
 * last stopped, count whether it ran on past PAIR_IDLE_STARTS idle starts of
 * its LLC in its decayed share (a sixteenth per wakeup). The run-on, not the
 * whole run: the wakee waits only for what follows the wakeup. A share, not
 * an average: one long run-on (a tick, an interrupt, a vCPU that lost its
 * host CPU) must not split a pair that ping-pongs, each split costing two
 * migrations.
 */
static __always_inline void pair_run_on_note(struct task_ctx *tctx, s32 cpu,
					     u64 now)
{
	u64 at = tctx->pair_woke_at, idle_start;
	u32 share;

	if (!at)
		return;
	tctx->pair_woke_at = 0;
	idle_start = llc_idle_start(cpu);
	share = tctx->pair_long_share;
	share -= share / 16;
	if (idle_start && time_before(at + PAIR_IDLE_STARTS * idle_start, now))
		share += PAIR_SHARE_ONE / 16;
	tctx->pair_long_share = share;
}

/*
 * Whether the task of @ctx sleeps soon enough after waking its pair for the
 * pair to share a CPU: most of the time it stops within PAIR_IDLE_STARTS
 * idle starts of its LLC.
 */
static __always_inline bool sleeps_soon(const struct task_ctx *ctx)
{
	return ctx->pair_long_share <= PAIR_SHARE_ONE / 2;
}

/*
 * Whether @p and the task waking it wake each other in turn - a pipe or a
 * request/response pair: each was the other's last wakee - and each sleeps
 * soon after such wakeups (sleeps_soon()). Records @p as the waker's last
 * wakee and stamps the wakeup for its run-on (writes to the waker's own
 * context, nothing shared).
 */
static __always_inline bool wakes_in_pair(struct task_struct *p,
					  struct task_ctx *tctx)
{
	struct task_struct *waker = (void *)bpf_get_current_task_btf();
	struct task_ctx *wctx = task_ctx_of(waker);
	bool pair;

	if (!wctx)
		return false;
	pair = wctx->last_wakee == p->pid && tctx->last_wakee == waker->pid;
	wctx->last_wakee = p->pid;
	if (!pair)
		return false;
	wctx->pair_woke_at = scx_bpf_now();
	if (!sleeps_soon(wctx) || !sleeps_soon(tctx)) {
		stat_inc(STAT_WAKE_PAIR_DECLINED);
		return false;
	}
	return true;
}

/*
 * A sync wakeup within a pair: the waker is about to sleep until @p answers,
 * so @p runs next on the waker's CPU @this, even if its own CPU is idle - the
 * pair then shares one CPU and each wakeup costs no interrupt (perf pipe ran
 * about twice as fast pinned to one CPU as on two, EEVDF and Mosaic alike,
 * TCG). Only if @p fits @this and no task waits for @this (its local DSQ,
 * own queue, shard): a pair handing @this back and forth through its local
 * DSQ never lets it dispatch, so a queued task would wait behind it forever.
 */
static __always_inline bool pair_stays_on_waker(struct task_struct *p,
						struct task_ctx *tctx,
						u64 wake_flags, s32 this)
{
	return !no_wake_pair && (wake_flags & SCX_WAKE_SYNC) &&
	       wakes_in_pair(p, tctx) &&
	       bpf_cpumask_test_cpu(this, p->cpus_ptr) &&
	       task_fits(this, tctx->util) &&
	       !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL) && !cpu_has_waiters(this);
}

/*
 * One read of the idle mask for @p waking on @prev: whether @prev is idle
 * (@prev_idle), and whether any CPU @p may use is (returned). Under load the
 * answer is no, and every search after the prev check would read the mask
 * again to find nothing.
 */
static __always_inline bool idle_at_wakeup(struct task_struct *p, s32 prev,
					   bool *prev_idle)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool any;

	*prev_idle = bpf_cpumask_test_cpu(prev, idle);
	any = *prev_idle || bpf_cpumask_intersects(idle, p->cpus_ptr);
	scx_bpf_put_idle_cpumask(idle);
	return any;
}

/*
 * The CPU for @p waking on @prev, claimed if idle (or the sync waker's own
 * CPU); -1 if no CPU is idle.
 */
static s32 pick_wake_cpu(struct task_struct *p, struct task_ctx *tctx, s32 prev,
			 u64 wake_flags)
{
	bool whole = p->nr_cpus_allowed == nr_cpu_ids;
	s32 this = bpf_get_smp_processor_id(), cpu;
	u32 util = tctx->util;
	bool any_idle, prev_idle;

	if (asym_capacity && no_prev_first) {
		cpu = pick_idle_by_capacity(p, util, this, NULL, CAP_FIRST_FIT);
		if (cpu >= 0)
			stat_inc(STAT_WAKE_CAPACITY);
		return cpu;
	}

	cpu = pick_in_group_part(p, tctx, prev);
	if (cpu >= 0)
		return cpu;

	if (pair_stays_on_waker(p, tctx, wake_flags, this)) {
		stat_inc(STAT_WAKE_SYNC);
		return this;
	}

	any_idle = idle_at_wakeup(p, prev, &prev_idle);
	if (prev_idle && bpf_cpumask_test_cpu(prev, p->cpus_ptr)) {
		if (!task_fits(prev, util)) {
			stat_inc(STAT_PREV_REJECTED_CAPACITY);
		} else if (scx_bpf_test_and_clear_cpu_idle(prev)) {
			stat_inc(STAT_PREV_KEPT);
			return prev;
		}
	}

	if ((wake_flags & SCX_WAKE_SYNC) &&
	    sync_target_ok(p, util, this, prev)) {
		stat_inc(STAT_WAKE_SYNC);
		return this;
	}
	/* nothing @p may use was idle a moment ago: no search would find one */
	if (!any_idle)
		return -1;

	if (whole) {
		/* an L2 of prev alone: the prev check above was its search */
		if (!no_l2_locality && nr_l2s < nr_cpu_ids) {
			cpu = found_near(pick_idle_in(p, util,
						      l2_cpus(l2_of(prev)),
						      prev),
					 prev);
			if (cpu >= 0)
				return cpu;
		}
		cpu = found_near(
			pick_idle_in(p, util, llc_cpus(llc_of(prev)), prev),
			prev);
		if (cpu >= 0)
			return cpu;
	}

	if (asym_capacity) {
		cpu = pick_idle_by_capacity(p, util, prev, NULL, CAP_BEST_FIT);
		if (cpu >= 0)
			stat_inc(STAT_WAKE_CAPACITY);
		return cpu;
	}
	/* one LLC: the LLC search above covered every CPU @p may use */
	if (whole && nr_llcs == 1)
		return -1;
	return found_near(scx_bpf_pick_idle_cpu(p->cpus_ptr, 0), prev);
}

/*
 * Send @p to the CPU @cpu chosen at wakeup: straight into its local DSQ if
 * the waker's CPU shares an L2 with it (the LLC with --no-l2-locality) or it
 * is exiting, else through ops.enqueue, which inserts it into @cpu's local
 * DSQ there.
 */
static __always_inline void place_woken(struct task_struct *p,
					struct task_ctx *tctx, s32 cpu)
{
	s32 this = bpf_get_smp_processor_id();

	tctx->woke_on_idle = cpu != this; /* its wait times an idle start */
	if (cpu == this || cpus_share_l2(this, cpu)) {
		stat_inc(STAT_INSERT_DIRECT_L2);
	} else if (no_l2_locality && llc_of(this) == llc_of(cpu)) {
		stat_inc(STAT_INSERT_DIRECT_WIDE);
	} else if (task_exiting(p)) {
		/* the kernel does not pass exiting tasks to ops.enqueue */
		stat_inc(STAT_INSERT_DIRECT_EXITING);
	} else {
		tctx->wake_cpu = cpu; /* ops.enqueue hands it over */
		return;
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
	stat_inc(STAT_DIRECT_DISPATCHES);
}

/*
 * ops.enqueue of a task place_woken() left to the enqueue path: hand it to
 * the idle CPU claimed for it (wake_cpu): its local DSQ. False if
 * there was none, or its affinity changed meanwhile (the CPU is released):
 * then it is enqueued as any other.
 */
static __always_inline bool
hand_over_woken(struct task_struct *p, struct task_ctx *tctx, u64 enq_flags)
{
	s32 target = tctx->wake_cpu;

	if (target < 0)
		return false;
	tctx->wake_cpu = -1;
	return send_to_idle(p, target, enq_flags, STAT_INSERT_QUEUED);
}
