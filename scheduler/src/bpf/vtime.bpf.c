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
 * Each LLC keeps a clock (with per-CPU queues, each CPU: clock_id()): the
 * largest vtime of a task that started running there from one of its queues (a
 * task put straight on an idle CPU was ordered against nothing and leaves the
 * clock alone), moved with one compare-and-swap. A queued task's vtime is kept
 * in a window around it:
 * - not behind it at all if the task wakes up: a sleeper keeps no credit, so
 *   it cannot monopolise the LLC, and the brief runs of woken tasks move the
 *   clock (with credit they would enter behind it and leave it where it was,
 *   and a task queued just ahead would wait behind an endless stream of them);
 *   at most REQUEUE_LAG_SLICES of real time behind (in vtime at the rate
 *   the LLC's load gives its clock if shares hold, at least 1 ns per ns:
 *   see vtime_note_load()), or for a task heavier than nice 0 as many
 *   slices of its own runs (it climbs back at its own pace), if it was
 *   runnable all along (a heavy-weight task legitimately trails the clock,
 *   which the lightest task set), or if it is a kernel thread, woken or
 *   not (its work - workqueues, RCU, the watchdog's check-in - is
 *   everyone's; it still pays for what it runs, so only a thread that ran
 *   less than its share is ahead);
 * - ahead of it by at most a slice plus what its last run cost it (a task
 *   that ran more than its share on idle CPUs waits about one turn, not
 *   until everyone made up its whole lead), and at most what the clock
 *   covers in wait_target_ns of real time. Each LLC measures how fast its
 *   clock moves, once per CLOCK_RATE_WINDOW_SLICES slices, by whichever CPU
 *   starts a queued task first after the window ends, and counts at most the
 *   rate its load explains (see the lag above); a task of tiny share
 *   (nice 19, SCHED_IDLE, a crowded or low cpu.weight cgroup), whose one run
 *   costs seconds of vtime, is queued at that bound. The clock keeps
 *   that bound's promise when it slows after a task was queued: once per
 *   epoch (wait_target_ns) it moves up to the furthest vtime a task was
 *   queued at by the epoch before (clock_epoch_update()), so a task queued
 *   ahead waits about two epochs at most.
 * Tasks pinned to one CPU wait on its own queue and take turns only with
 * each other there, so that queue keeps a clock of its own (pinned_clock_id()),
 * whose rate is its CPU's: their vtimes climb at their share of one CPU, while
 * the LLC's clock moves with the whole LLC, and held within the lag of the
 * LLC's clock a pinned crowd lost its weights (below). Where a pinned head
 * meets the LLC's tasks (the CPU's dispatch, a wakeup's preemption), its vtime
 * counts from where the LLC's clock stood when the CPU's own clock last moved
 * (llc_frame_vtime()): a pinned head that waits ages against the LLC.
 * A task that crosses LLCs (stolen, or woken elsewhere) keeps its distance
 * to its old LLC's clock. sched_yield() charges the yielder a slice, so the
 * tasks within a slice of it run first. Runtime is measured from
 * ops.running to ops.stopping, and at every tick for a task keeping its CPU.
 *
 * WHY
 * The kernel ejects a scheduler whose task waits past the watchdog timeout
 * (SCX_TIMEOUT_MS), whatever its weight, and weights as far apart as
 * SCHED_IDLE and nice -20 (1 : 8668) make fair waits of many seconds. The
 * lead bound turns a small share into "runs less often" only while the wait
 * stays under wait_target_ns (an eighth of the watchdog timeout, at most
 * 500 ms); every task that waits less keeps its exact share (the gauntlet
 * and make watchdog hold it to that: docs/reliability.md).
 * One clock per LLC, not one global: it is written whenever a queued task
 * starts, and a single global line would bounce between every CPU of the
 * machine. Tasks compared against each other (in one shard, or across the
 * shards of one LLC) share one clock.
 */

/*
 * A virtual clock and how fast it moves, one cache line each: one per LLC
 * (shared by its shards), or with per-CPU queues one per CPU (clock_id()),
 * and one per CPU for the tasks pinned there (pinned_clock_id()).
 */
struct vclock {
	u64 vtime;	  /* the clock */
	u64 rate;	  /* clock ns per real ns, Q16, averaged over windows */
	u64 window_at;	  /* real time the current rate window started */
	u64 window_vtime; /* the clock then */
	u64 fair_rate;	  /* how fast it moves if shares hold, Q16, from the
			   * periodic scan's weighing (vtime_note_load()) */
	u64 granted;	  /* the furthest vtime a task was queued at */
	u64 due;	  /* granted as of the last epoch's end: the clock
			   * reaches it by the end of this epoch */
	u64 epoch_at;	  /* real time the current epoch started */
} __attribute__((aligned(64)));

/* ids below MAX_CPUS: clock_id(); from PINNED_CLOCK_BASE: pinned_clock_id() */
#define PINNED_CLOCK_BASE MAX_CPUS
struct vclock vclocks[2 * MAX_CPUS];

/*
 * Per CPU, its running task's vtime (llc_frame_vtime()) when its current
 * stretch began, when that was, and the share that charges it (0: none
 * running); written by the CPU itself at each start and tick, read by wakeups
 * that find no idle CPU (vtime_wake_preempt()).
 */
struct cpu_running {
	u64 vtime;
	u64 since;
	u64 share;
} __attribute__((aligned(64)));

struct cpu_running cpu_runnings[MAX_CPUS];

/*
 * The clock that orders the queues @cpu takes from: its LLC's, or with
 * per-CPU queues its own. Per CPU as the kernel keeps a vruntime base per
 * runqueue: one LLC-wide clock is the furthest of its queues, and a queue
 * its noise slows (a CPU that runs more root-cgroup tasks, kworkers) falls
 * behind it for good; its tasks were then held at the clock's lag bound at
 * every requeue, in one order whatever their shares (cpu.weight 100:300 on
 * 8:4 hogs pinned one of 300 and two of 100 per CPU: 1:2.15-2.20, lag_cuts
 * taking 16-21 s of vtime in 11 s; with this and head_due_before()'s turn by
 * the CPU's load 1:2.85-2.86, 0.5 s; 1llc, TCG). A task that moves between
 * clocks keeps its distance to them (vtime_rebase()).
 */
static __always_inline u32 clock_id(s32 cpu)
{
	return cpu_queues_only() ? (u32)cpu_idx(cpu) : llc_of(cpu);
}

/*
 * The clock of the tasks pinned to @cpu in the shard design, for the same
 * reason: against the LLC's clock, the same 8:4 hogs pinned under the
 * default design split 1:1.14-1.18, lag_cuts taking 60-64 s of vtime in 14 s
 * (1llc, TCG); mosaic-sim 1:1.0 (0.33 of the weights, 766 cuts).
 */
static __always_inline u32 pinned_clock_id(s32 cpu)
{
	return PINNED_CLOCK_BASE + (u32)cpu_idx(cpu);
}

/* The clock @p, queued or running on @cpu, is ordered against. */
static __always_inline u32 task_clock_id(const struct task_struct *p, s32 cpu)
{
	return task_in_pinned_crowd(p) ? pinned_clock_id(cpu) : clock_id(cpu);
}

/* The clock @id (clock_id(), pinned_clock_id()). */
static __always_inline struct vclock *clock_of(u32 id)
{
	return &vclocks[id & (2 * MAX_CPUS - 1)];
}

/*
 * @vtime of @p, on @cpu, as its LLC's clock orders it: a pinned crowd's
 * counts from where the LLC's clock stood when the CPU's pinned clock last
 * moved (the shift kept then), so that a pinned head that waits grows older
 * against the LLC's tasks, and one queued a slice past its clock is a slice
 * past the LLC's present of then.
 */
static __always_inline u64 llc_frame_vtime(const struct task_struct *p, s32 cpu,
					   u64 vtime)
{
	if (!task_in_pinned_crowd(p))
		return vtime;
	return vtime + cpu_queue_of(cpu)->frame_shift;
}

/* The virtual time of clock @id. */
static __always_inline u64 *clock_vtime(u32 id)
{
	return &clock_of(id)->vtime;
}

/* Every clock starts moving at one ns per ns. Called from ops.init. */
static void vtime_init(void)
{
	u32 i;

	bpf_for (i, 0, 2 * MAX_CPUS)
		vclocks[i].rate = 1 << RATE_SHIFT;
}

/*
 * How fast @id's clock moves if shares hold (vtime_note_load()), Q16,
 * but at least @floor; one ns per ns before the periodic scan first weighed
 * the LLC.
 */
static __always_inline u64 clock_fair_rate(u32 id, u64 floor)
{
	u64 fair = clock_of(id)->fair_rate;

	if (!fair)
		return 1 << RATE_SHIFT;
	return fair > floor ? fair : floor;
}

/*
 * How far ahead of @id's clock a task may be queued: what the clock covers
 * in wait_target_ns at its measured rate (at least MIN_CLOCK_RATE, see
 * clock_rate_update()). Not "at least a slice": when many tasks run in brief
 * bursts and switching costs more than they run (hackbench under TCG on a
 * busy host), the clock crawls (about 1/1000 ns per ns) and a slice of lead
 * became a 2.5 s wait, and the kernel ejected the scheduler. The rate counts
 * at most the rate fair shares give the LLC's load (clock_fair_rate()):
 * bursts (yield loops, tiny shares starting, a light task's own start at the
 * bound) move the clock faster than the queues' order moves, and would
 * overstate it. Without the load's cap, 16 busy loops of two cgroups under one
 * parent (300:100) split 1.7:1, not 3:1 (2llc-smt, TCG): each share was
 * under 1/25 of a nice-0 task, each slice cost more vtime than the lead. The
 * cap once stopped at one ns per ns. With more than a nice-0 task's share per
 * CPU (nice -20 hogs) the clock moves slower than that: under the gauntlet's
 * nice churn the longest waits were 1.5-2.2 s (1llc, 4llc; bounds 1.3-1.7 s),
 * and 0.5-1.3 s with the load's own rate as the cap (TCG).
 * A one-CPU clock (a CPU's own with per-CPU queues, a pinned crowd's) takes
 * the fair rate alone: measured over the few starts of two or three
 * waiters, and quick to follow a slowdown, its rate read low, and the bound
 * cut a light task's charge at about every periodic pull (cpu.weight 100:300
 * on 8:4 hogs, per-CPU queues: 36-106 cuts in 11 s taking 3-10 s of vtime,
 * 1:2.63-2.96, median 1:2.82 in 14 runs; with the fair rate 0-15 cuts,
 * 1:2.87-3.01, median 1:2.95 in 14; the same hogs pinned under the shard
 * design 1:2.81-2.90 and 1:2.89-2.99, 2 runs each; 1llc, TCG). The fair
 * rate comes from the CPU's own load average; where the clock crawls below
 * it, the epoch's move (clock_epoch_update()) still bounds the wait
 * (hackbench under a 2 s watchdog: longest waits 0.59-0.74 s, as before).
 */
static __always_inline u64 clock_max_lead(u32 id)
{
	u64 rate = clock_of(id)->rate,
	    cap = clock_fair_rate(id, MIN_CLOCK_RATE);

	if (rate > cap || cpu_queues_only() || id >= PINNED_CLOCK_BASE)
		rate = cap;
	return (rate * wait_target_ns) >> RATE_SHIFT;
}

/*
 * The periodic scan weighed @id: @load, the summed share of its running and
 * waiting tasks, over its @nr_cpus. Were shares to hold, its clock would move
 * nr_cpus x a nice-0 share / load ns per ns: more than one when the LLC runs
 * less weight than a nice-0 task per CPU (many tasks of one cgroup, whose
 * shares split its weight). Kept as the cap of clock_max_lead()'s rate: the
 * rate a fair order explains, where bursts cannot push it.
 */
static __always_inline void vtime_note_load(u32 id, u64 load, u32 nr_cpus)
{
	clock_of(id)->fair_rate =
		load ? ((u64)nr_cpus * (100ULL << WEIGHT_SHIFT) << RATE_SHIFT) /
				load
		     : 0;
}

/*
 * @p's vtime moved to clock @id: the same distance to it as to the clock
 * it was earned against (tctx->vtime_clock).
 */
static __always_inline void vtime_rebase(struct task_struct *p,
					 struct task_ctx *tctx, u32 id)
{
	if (!tctx || tctx->vtime_clock == id)
		return;
	p->scx.dsq_vtime += *clock_vtime(id) - *clock_vtime(tctx->vtime_clock);
	tctx->vtime_clock = id;
}

/*
 * Whether @p may be queued behind its LLC's clock (by REQUEUE_LAG_SLICES at
 * most): if it was runnable all along, or if it is a kernel thread; not a
 * woken task.
 * Kernel threads keep their credit across sleeps: the work they do on behalf
 * of everyone (workqueues, RCU, the sched_ext watchdog's own check-in) must
 * not queue behind a crowd of user wakers - each still pays for its runtime,
 * so a busy one has no credit left to use.
 */
static __always_inline bool queue_keeps_lag(struct task_struct *p,
					    u64 enq_flags)
{
	return !(enq_flags & SCX_ENQ_WAKEUP) || (p->flags & PF_KTHREAD);
}

/*
 * The most vtime a task may keep behind @id's clock when queued again:
 * REQUEUE_LAG_SLICES of real time, in vtime at the rate the LLC's load gives
 * its clock (at least 1 ns per ns).
 */
static __always_inline u64 clock_requeue_lag(u32 id)
{
	return (REQUEUE_LAG_SLICES * slice_ns *
		clock_fair_rate(id, 1 << RATE_SHIFT)) >>
	       RATE_SHIFT;
}

/*
 * The lag @p keeps of @clock_lag (clock_requeue_lag()): all of it, or for a
 * task heavier than nice 0 (nice -20: 87 times) as many slices of its own runs,
 * as it climbs back up only at its own pace. With the LLC's lag, nice -20
 * hogs of the gauntlet's nice churn trailed the clock by more than they ran
 * off in a second, and a light task the clock had passed waited behind them
 * (2node, five runs alternated in one boot: longest waits 1.0-2.25 s; with
 * this 0.71-1.12 s; TCG). @share is the task's last one
 * (task_share_cached()); no division for the rest.
 */
static __always_inline u64 task_requeue_lag(u64 share, u64 clock_lag)
{
	if (share <= 100ULL << WEIGHT_SHIFT)
		return clock_lag;
	return REQUEUE_LAG_SLICES * slice_ns * (100ULL << WEIGHT_SHIFT) / share;
}

/*
 * The floor of a woken task queued on @dsq (0: none) at @clock: the clock,
 * or, if the clock was forced past that queue's head (clock_rate_update()),
 * the head's vtime plus @charge, what the task's last run cost it. Behind the
 * clock, it queues after the head, but not after every task the forced clock
 * passed: those are late, and a task of large share (a root-cgroup task beside
 * hundreds of busy cgroups) waited for all of them, 0.6 s a wakeup at 200
 * cgroups. Each queued task still becomes the head and then goes before
 * every later waker, and a waker's own vtime still grows by what it runs.
 */
static __always_inline u64 woken_floor(u64 dsq, u64 clock, u64 charge)
{
	struct task_struct *head;
	u64 at;

	if (!dsq || !(head = __COMPAT_scx_bpf_dsq_peek(dsq)))
		return clock;
	at = head->scx.dsq_vtime + charge;
	return time_before(at, clock) ? at : clock;
}

/*
 * A task was queued in @c's LLC at @vtime: keep the furthest such vtime
 * (clock_epoch_update()). Read first, written only when further: most
 * tasks queue at or behind the furthest. Two CPUs racing may keep the
 * nearer of two grants made at the same moment.
 */
static __always_inline void clock_note_grant(struct vclock *c, u64 vtime)
{
	if (time_before(c->granted, vtime))
		c->granted = vtime;
}

/*
 * What task_queue_vtime() bounds of a task it queues: scalars only, so that
 * queue_vtime_bound() is a function the verifier checks once.
 */
struct queue_vtime_in {
	u64 vtime; /* the task's own, rebased to clock @id */
	u64 dsq;   /* the queue it joins (0: none the clock orders) */
	u64 enq_flags;
	u64 share;	/* its last share (task_share_cached()) */
	u64 charge;	/* what its last run cost it (slice_ns if unknown) */
	u64 max_lead;	/* the most it may be queued ahead of the clock */
	u32 id;		/* its clock */
	bool keeps_lag; /* queue_keeps_lag() */
};

/*
 * The vtime a task is queued with (@in): its own, not behind the clock if it
 * wakes up (woken_floor()), at most REQUEUE_LAG_SLICES behind if it was
 * runnable all along (it earned that lag by running less than its share);
 * ahead of it by at most @in->max_lead and clock_max_lead(). The clock is the
 * LLC's, or a pinned crowd's own (task_clock_id()). A task queued on one of
 * the clock's queues is a grant the epoch keeps (clock_note_grant()).
 */
__verified_once u64 queue_vtime_bound(struct queue_vtime_in *in)
{
	u64 clock, floor, lead, vtime, max_lag;

	if (!in)
		return 0;
	max_lag = clock_requeue_lag(in->id);
	clock = *clock_vtime(in->id);
	floor = in->keeps_lag ? clock - task_requeue_lag(in->share, max_lag)
			      : woken_floor(in->dsq, clock, in->charge);
	lead = clock_max_lead(in->id);
	if (in->max_lead < lead)
		lead = in->max_lead;
	vtime = in->vtime;
	if (time_before(vtime, floor)) {
		/* a woken kthread's cut is its sleep, not a lost share */
		if (!(in->enq_flags & SCX_ENQ_WAKEUP)) {
			stat_inc(STAT_LAG_CUTS);
			stat_add(STAT_LAG_CUT_NS, floor - vtime);
		}
		vtime = floor;
	} else if (time_before(clock + lead, vtime)) {
		stat_inc(STAT_LEAD_CUTS);
		stat_add(STAT_LEAD_CUT_NS, vtime - clock - lead);
		vtime = clock + lead;
	}
	if (in->dsq)
		clock_note_grant(clock_of(in->id), vtime);
	return vtime;
}

/*
 * Vtime at which @p is queued on @dsq (0: not a queue the LLC's clock
 * orders) in the LLC of @cpu (on @cpu's own queue against its pinned clock
 * if it is in a pinned crowd): its own, rebased to that clock
 * (task_clock_id()), within the bounds of queue_vtime_bound(); the lead it may
 * take is a slice plus what its last run cost it.
 */
static __always_inline u64 task_queue_vtime(struct task_struct *p, s32 cpu,
					    u64 enq_flags, u64 dsq)
{
	struct task_ctx *tctx = task_ctx_of(p);
	struct queue_vtime_in in;

	/* all of it written: the verifier reads it whole, padding included */
	__builtin_memset(&in, 0, sizeof(in));
	in.dsq = dsq;
	in.enq_flags = enq_flags;
	in.share = task_share_cached(p, tctx);
	in.charge = tctx ? tctx->last_charge : slice_ns;
	in.max_lead = tctx ? tctx->last_charge + slice_ns : ~0ULL;
	in.id = task_clock_id(p, cpu);
	in.keeps_lag = queue_keeps_lag(p, enq_flags);
	vtime_rebase(p, tctx, in.id);
	if (tctx)
		tctx->vtime_queued = true;
	in.vtime = p->scx.dsq_vtime;
	p->scx.dsq_vtime = queue_vtime_bound(&in);
	return p->scx.dsq_vtime;
}

/*
 * At the end of a rate window at @now, the clock at @vtime: once the epoch
 * (wait_target_ns at least) is over, move the clock up to what was granted
 * by the last epoch's end - every task queued then has waited an epoch -
 * and note what is granted now for the next one. Returns the clock.
 * The lead bound promises a wait of wait_target_ns at the rate measured
 * when the task was queued; the clock may then slow down, to MIN_CLOCK_RATE
 * when the tasks that start are all at or behind it (woken ones, cpu.max's
 * unparked ones). A task queued one lead ahead then waited up to 64 times
 * the target: 9-10 s runnable for hogs beside 200 limited cgroups (1llc,
 * TCG), against 6 s allowed. With this, a queued task waits at most about
 * two epochs for the clock to reach it. Not counted as clock movement by
 * the rate (the window starts after it): the move keeps a promise, it
 * says nothing of how fast the queues' order moves.
 */
static __always_inline u64 clock_epoch_update(struct vclock *c, u64 now,
					      u64 vtime)
{
	u64 due = c->due;

	if (time_before(now, c->epoch_at + wait_target_ns))
		return vtime;
	c->epoch_at = now;
	c->due = c->granted;
	if (!due || !time_before(vtime, due))
		return vtime;
	if (__sync_val_compare_and_swap(&c->vtime, vtime, due) != vtime)
		return c->vtime;
	stat_inc(STAT_CLOCK_DUE_MOVES);
	return due;
}

/*
 * At @now, if @c's rate window is over and no other CPU took it first: move
 * the clock up to MIN_CLOCK_RATE times the window's length past where it
 * started, fold how far it moved into the rate, start the next. The forced
 * move is what bounds a wait when the clock crawls (brief bursts, switching
 * costs more than the runs): a task queued ahead of the clock becomes, within
 * wait_target_ns, older than every task that arrives after it - a deadline,
 * where fair shares would make it wait for seconds; with fewer than about 64
 * runnable tasks per CPU the clock moves faster by itself and shares are exact.
 * The rate follows a slowdown at once and a speedup by 1/8 per window: it may
 * err low (shares give way to the wait bound a little early), rarely high.
 * The clock moves in jumps (a task that ran a slice starts again a whole
 * charge ahead), so a window must hold many task starts, or the jumps read
 * as slowdowns: with windows of 4 slices (80 ms at the default slice) the rate
 * read a fifth of the clock's pace (one vCPU per shard, 1llc, TCG), the lead
 * bound cut the charges of the small shares, and a 3:1 cpu.weight split ran
 * 2.2:1; with 16 slices 2.97:1.
 */
static __always_inline void clock_rate_update(struct vclock *c, u64 now)
{
	u64 at = c->window_at, vtime = c->vtime, floor, rate;

	if (at && time_before(now, at + CLOCK_RATE_WINDOW_SLICES * slice_ns))
		return;
	if (__sync_val_compare_and_swap(&c->window_at, at, now) != at)
		return;
	if (at && time_before(at, now) &&
	    !time_before(vtime, c->window_vtime)) {
		/* never slower than MIN_CLOCK_RATE: waiters age */
		floor = c->window_vtime +
			(((now - at) * MIN_CLOCK_RATE) >> RATE_SHIFT);
		if (time_before(vtime, floor) &&
		    __sync_val_compare_and_swap(&c->vtime, vtime, floor) ==
			    vtime)
			vtime = floor;
		rate = ((vtime - c->window_vtime) << RATE_SHIFT) / (now - at);
		c->rate = rate < c->rate ? rate : (7 * c->rate + rate) / 8;
	}
	c->window_vtime = clock_epoch_update(c, now, vtime);
}

/*
 * @p starts running on @cpu at @now: rebase its vtime to its clock there
 * (task_clock_id()); if it comes from one of the queues that clock orders
 * (so its vtime is within the bounds of task_queue_vtime()), move the clock
 * up to it (one compare-and-swap; if another CPU moved the clock meanwhile,
 * its move stands), and for a pinned crowd's clock note the LLC's clock
 * against it (llc_frame_vtime()). A task put straight on an idle CPU's local
 * queue was ordered against nothing, and leaves the clocks alone.
 */
static __always_inline void
vtime_running(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 now)
{
	u32 id = task_clock_id(p, cpu);
	struct vclock *c = clock_of(id);
	u64 old = c->vtime, vtime;

	vtime_rebase(p, tctx, id);
	tctx->started_at = now;
	tctx->last_charge = 0;
	if (!tctx->vtime_queued)
		return;
	tctx->vtime_queued = false;
	vtime = p->scx.dsq_vtime;
	if (time_before(old, vtime))
		__sync_val_compare_and_swap(&c->vtime, old, vtime);
	clock_rate_update(c, now);
	/* only @cpu starts the tasks pinned to it: a plain write */
	if (id >= PINNED_CLOCK_BASE)
		cpu_queue_of(cpu)->frame_shift =
			*clock_vtime(clock_id(cpu)) - c->vtime;
}

/* How long the task of @tctx ran, stopping at @now; 0 if unknown. */
static __always_inline u64 task_ran(struct task_ctx *tctx, u64 now)
{
	u64 start = tctx->started_at;

	tctx->started_at = 0;
	return start && time_before(start, now) ? now - start : 0;
}

/*
 * @p ran for @ran ns until @now: charge it, scaled by its share
 * (weight.bpf.c), and add that to what its current (or last) run cost it.
 */
static __always_inline void
vtime_charge(struct task_struct *p, struct task_ctx *tctx, u64 ran, u64 now)
{
	u64 charge = (ran * 100 << WEIGHT_SHIFT) / task_share(p, tctx, now);

	p->scx.dsq_vtime += charge;
	tctx->last_charge += charge;
}

/* @p runs on @cpu from @now on, its vtime charged up to then. */
static __always_inline void vtime_note_running(struct task_struct *p,
					       struct task_ctx *tctx, s32 cpu,
					       u64 now)
{
	struct cpu_running *r = &cpu_runnings[cpu_idx(cpu)];

	r->vtime = llc_frame_vtime(p, cpu, p->scx.dsq_vtime);
	r->since = now;
	r->share = task_share_cached(p, tctx);
}

/* @cpu's task stopped running. */
static __always_inline void vtime_note_stopped(s32 cpu)
{
	cpu_runnings[cpu_idx(cpu)].share = 0;
}

/*
 * Whether woken @p may preempt the task running on @cpu, by the checks that
 * need no vtime: 0 if so (no such counter is 0), else the counter of the
 * reason it may not.
 */
static __always_inline enum mosaic_stat
preempt_blocker(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	u64 share = cpu_runnings[cpu_idx(cpu)].share;

	if (!share)
		return STAT_WAKE_PREEMPT_NO_TASK;
	if (share * 2 > task_share_cached(p, tctx))
		return STAT_WAKE_PREEMPT_HEAVIER;
	/* a preempting task goes to the head of the local queue: never ahead
	 * of a task already waiting there (a task that must run on @cpu) */
	if (scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | cpu))
		return STAT_WAKE_PREEMPT_QUEUED;
	return 0;
}

/* Whether the task running on @cpu is by now min_slice_ns of vtime past @vtime.
 */
static __always_inline bool running_past(s32 cpu, u64 vtime)
{
	struct cpu_running *r = &cpu_runnings[cpu_idx(cpu)];
	u64 share = r->share, since = r->since, now = scx_bpf_now(), cur;

	if (!share)
		return false;
	cur = r->vtime;
	if (time_before(since, now))
		cur += (now - since) * (100ULL << WEIGHT_SHIFT) / share;
	return time_before(vtime + min_slice_ns, cur);
}

/*
 * @p woke up for @cpu and found no idle CPU: if the task running on @cpu has
 * less than half @p's share and is by now more than min_slice_ns of vtime
 * past the vtime @p queues with, put @p on @cpu's local queue to run at
 * once, preempting it, as the kernel's fair class preempts at a wakeup; if
 * @cpu's task may not be preempted, try one other CPU of the LLC (taken in
 * turn), as the kernel's wakeup may land on a CPU other than the task's last.
 * True if it did. Without it a woken task waited for a slice to end, and then
 * behind the queue's older tasks: a root-cgroup task beside 200 busy
 * cgroups, whose one millisecond costs 200 of vtime, waited 2.9-3.4 ms a
 * wakeup, 0.75-2.4 ms under the kernel's scheduler (1llc, TCG). With one
 * CPU only, 18 % of its wakeups found that CPU's task not to be preempted
 * (a task of its own share, one waiting on the local queue, none between
 * two): each waited for a tick. Among tasks
 * of like shares (hackbench) it never acts: a task put on one CPU's local
 * queue is out of reach of the shard's other CPUs, and preempting there left
 * CPUs idle beside waiting tasks longer than --no-shared-runq did (mosaic-sim,
 * ryzen-7950x, median of 7: 0.94 ms against 0.88; 0.72 without). Costs a
 * read of one or two CPUs' lines and a division per such wakeup, and the
 * choice of the other CPU a scan of the LLC's mask by words (three at 192
 * CPUs). Off with --no-wake-preempt.
 */
static __always_inline bool vtime_wake_preempt(struct task_struct *p,
					       struct task_ctx *tctx, s32 cpu,
					       u64 enq_flags)
{
	enum mosaic_stat blocker = STAT_WAKE_PREEMPT_NO_TASK;
	const struct cpumask *llc;
	bool have_vtime = false;
	u64 vtime = 0;
	s32 other;

	if (no_wake_preempt)
		return false;
	/* the vtime only once a CPU passed the checks that need none */
	if (bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	    !(blocker = preempt_blocker(p, tctx, cpu))) {
		vtime = llc_frame_vtime(p, cpu,
					task_queue_vtime(p, cpu, enq_flags,
							 queue_dsq_of(p, cpu)));
		have_vtime = true;
		if (!running_past(cpu, vtime))
			blocker = STAT_WAKE_PREEMPT_AHEAD;
	}
	if (blocker && (llc = llc_cpus(llc_of(cpu)))) {
		other = bpf_cpumask_any_and_distribute(llc, p->cpus_ptr);
		if (other != cpu && other < nr_cpu_ids &&
		    !preempt_blocker(p, tctx, other)) {
			if (!have_vtime)
				vtime = llc_frame_vtime(
					p, cpu,
					task_queue_vtime(p, cpu, enq_flags,
							 queue_dsq_of(p, cpu)));
			/* @p's vtime as @other's own clock has it */
			if (cpu_queues_only())
				vtime += *clock_vtime(clock_id(other)) -
					 *clock_vtime(clock_id(cpu));
			if (running_past(other, vtime)) {
				blocker = 0;
				cpu = other;
			}
		}
	}
	if (blocker) {
		stat_inc(blocker);
		return false;
	}
	/* with per-CPU clocks it passes its CPU's queue: its start says
	 * nothing of where that queue's order stands, and leaves the clock
	 * alone (an LLC's clock, which its shards share, counts it as before)
	 */
	if (cpu_queues_only())
		tctx->vtime_queued = false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | cpu, slice_ns,
			   enq_flags | SCX_ENQ_PREEMPT);
	stat_inc(STAT_WAKE_PREEMPTS);
	return true;
}

/* A task joins: start it at its clock's present (task_clock_id()). */
static __always_inline void vtime_enable(struct task_struct *p,
					 struct task_ctx *tctx)
{
	u32 id = task_clock_id(p, scx_bpf_task_cpu(p));

	p->scx.dsq_vtime = *clock_vtime(id);
	if (tctx)
		tctx->vtime_clock = id;
}

/*
 * ops.yield without a target: @p gives up the rest of its slice and a
 * slice of vtime, so that the tasks within a slice of it run first.
 */
static __always_inline void vtime_yield(struct task_struct *p)
{
	p->scx.slice = 0;
	p->scx.dsq_vtime += slice_ns;
}
