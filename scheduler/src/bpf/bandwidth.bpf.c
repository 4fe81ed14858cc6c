/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bandwidth.bpf.c - cgroup cpu.max: at most quota per period, hierarchically.
 *
 * WHAT
 * A cgroup with cpu.max "quota period" runs at most quota of CPU time per
 * period, all its CPUs and descendants together; a child is also bounded by
 * every limited ancestor, so the tighter limit wins. Unused quota carries
 * over up to cpu.max.burst, so a cgroup that slept can catch up. A cgroup
 * out of quota is throttled: its tasks wait off the shards, on its own park
 * queue, until the next period refills it. "max" lifts the limit at once.
 *
 * HOW
 * A limited cgroup takes one of MAX_BW_CGROUPS slots: period, quota, a pool
 * of runtime for this period, and a park DSQ made at ops.init (cgroups get
 * slots in ops.cgroup_set_bandwidth, which may not sleep). Runtime is charged
 * where vtime is (ops.stopping, ops.tick) against a per-CPU budget of each
 * limited level; a CPU whose budget ran out borrows BW_BORROW_NS from the
 * pool with one atomic - the kernel's cfs_bandwidth design - so the pool's
 * cache line is touched once per borrow, not per event. A budget left when
 * the period ends expires; an overdraft is paid from the next periods, up to
 * one quota's worth. The pool running dry throttles the cgroup: the task
 * running gives up its CPU (slice 0), and any of its tasks that wakes or is
 * put back is inserted on the park DSQ of the highest throttled ancestor -
 * never on a shard, so parked tasks cost dispatch nothing and neither the
 * overload gate nor the wasted-core scan sees them. A task that starts
 * running gets a slice no longer than its budget. One BPF timer refills the
 * pools at each cgroup's period (quota + what is left, at most quota +
 * burst) and flags throttled cgroups with parked tasks; the next ops.dispatch
 * on any CPU moves them back to the shards of their CPUs (vtime-ordered, as
 * any requeued task), and the timer kicks an idle CPU to do it. An exiting
 * task is charged but never held back: it finishes its exit in the kernel.
 * Nothing of this runs while no cgroup has a limit (bw_nr_limited == 0).
 *
 * WHY
 * Container hosts set cpu.max; a scheduler that ignores it silently lifts
 * every limit. Per-CPU budgets keep the cost of a limit off the hot path.
 * Throttled tasks still count for the kernel's runnable-task watchdog (the
 * kernel has no exemption for them), so parks are bounded too: parked tasks
 * re-enter in vtime order each period, and a task never waits behind its own
 * cgroup's tasks for more periods than it has siblings per quota's worth of
 * slices. The time parked is the limit's, not a wait for a CPU: it is
 * measured apart (bw_parked_max_us), and a task's wait (wait_max_us) starts
 * when it goes back to a queue.
 */

/* A borrow from a cgroup's pool: the kernel's sched_cfs_bandwidth_slice. */
#define BW_BORROW_NS (5ULL * 1000 * 1000)
/* ops.cgroup_set_bandwidth's quota for "max" (the kernel's RUNTIME_INF) */
#define BW_QUOTA_MAX ((u64) - 1)
/* the refill timer looks again at least this often while limits exist */
#define BW_TIMER_MAX_NS (100ULL * 1000 * 1000)

/* A cgroup with a cpu.max limit (bw_slots[slot]). */
struct bw_cgroup {
	u64 cgid;	  /* the cgroup; 0: slot free */
	u64 period_ns;	  /* cpu.max period */
	u64 quota_ns;	  /* cpu.max quota; 0: limit lifted (slot draining) */
	u64 max_pool_ns;  /* quota + burst: the most a pool holds */
	s64 pool_ns;	  /* runtime this period not yet borrowed */
	u64 next_refill;  /* when the pool is refilled next */
	u64 gen;	  /* refills so far: older per-CPU budgets expire */
	u64 throttled_at; /* when the pool ran dry; 0: not throttled */
	u64 throttles;	  /* times the pool ran dry (stats, per cgroup) */
	u64 throttled_ns; /* time throttled, ended stretches (stats) */
	u64 burst_ns;	  /* cpu.max.burst (stats) */
	u32 unpark;	  /* parked tasks to move back (ops.dispatch) */
} __attribute__((aligned(64)));

struct bw_cgroup bw_slots[MAX_BW_CGROUPS];
u32 bw_nr_limited;   /* slots in use: 0 turns every hook off */
u32 bw_nr_unparking; /* slots flagged unpark */

/* A CPU's budget from one slot's pool. */
struct bw_budget {
	u64 gen;       /* the pool's refill it was borrowed in */
	s64 budget_ns; /* left to run; below 0: owed to the next period */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct bw_budget);
	__uint(max_entries, MAX_BW_CGROUPS);
} bw_budgets SEC(".maps");

struct bw_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct bw_timer);
	__uint(max_entries, 1);
} bw_timers SEC(".maps");

/* Slot @slot, bounded for the verifier. */
static __always_inline struct bw_cgroup *bw_slot(u32 slot)
{
	return &bw_slots[slot & (MAX_BW_CGROUPS - 1)];
}

/* DSQ id of slot @slot's park queue (see intf.h). */
static __always_inline u64 park_dsq_id(u32 slot)
{
	return PARK_DSQ_BASE + slot;
}

/* Look at the pools within @delay_ns (from a BPF op or the timer itself). */
static __always_inline void bw_timer_in(u64 delay_ns)
{
	struct bw_timer *t;
	u32 key = 0;

	t = bpf_map_lookup_elem(&bw_timers, &key);
	if (t)
		bpf_timer_start(&t->timer, delay_ns, 0);
}

/*
 * Take @ran ns for this CPU from slot @slot, borrowing from its pool when the
 * CPU's budget is spent. False if the pool ran dry: the cgroup is throttled.
 * @left gets what the budget still holds.
 */
static __always_inline bool bw_consume(u32 slot, u64 ran, s64 *left)
{
	struct bw_cgroup *s = bw_slot(slot);
	struct bw_budget *b;
	s64 want, before, got, debt_max;
	u64 gen = s->gen;

	b = bpf_map_lookup_elem(&bw_budgets, &slot);
	if (!b || !s->quota_ns)
		return true;
	if (b->gen != gen) {
		/*
		 * A new period: what was left expired; a debt stays, up to one
		 * quota (at least a borrow). A run is charged in full when it
		 * ends, and under a hypervisor that deschedules the vCPU one
		 * run can cost far more than the quota: an unbounded debt held
		 * the cgroup's tasks for as many periods (seen: tasks that
		 * never got to exit on an 8-vCPU TCG guest at 10 ms / 100 ms);
		 * a cap of one borrow forgave so much that usage ran 7-11 %
		 * over the quota there.
		 */
		b->gen = gen;
		debt_max =
			s->quota_ns > BW_BORROW_NS ? s->quota_ns : BW_BORROW_NS;
		if (b->budget_ns > 0)
			b->budget_ns = 0;
		else if (b->budget_ns < -debt_max)
			b->budget_ns = -debt_max;
	}
	b->budget_ns -= ran;
	if (b->budget_ns <= 0 && !s->throttled_at) {
		want = BW_BORROW_NS - b->budget_ns;
		before = __sync_fetch_and_sub(&s->pool_ns, want);
		got = before >= want ? want : (before > 0 ? before : 0);
		if (got < want)
			__sync_fetch_and_add(&s->pool_ns, want - got);
		b->budget_ns += got;
	}
	*left = b->budget_ns;
	if (b->budget_ns > 0)
		return true;
	if (!s->throttled_at) {
		s->throttled_at = scx_bpf_now() ?: 1;
		s->throttles++;
		stat_inc(STAT_BW_THROTTLES);
	}
	return false;
}

/*
 * Walk up from @tctx's cgroup. Charge @ran to every limited level (if
 * @charge), cap *@slice at the smallest budget left; return the slot of the
 * highest throttled level, or -1 if none is.
 */
static __always_inline s32 bw_walk(struct task_ctx *tctx, u64 ran, bool charge,
				   u64 *slice)
{
	u64 id = tctx->wcg;
	struct cg_node *cg;
	s32 throttled = -1;
	u32 i, slot;
	s64 left;

	bpf_for (i, 0, MAX_CGROUP_DEPTH) {
		cg = id ? bpf_map_lookup_elem(&cg_nodes, &id) : NULL;
		if (!cg || !cg->level)
			break;
		if (cg->bw_slot) {
			slot = (cg->bw_slot - 1) & (MAX_BW_CGROUPS - 1);
			left = 0;
			if (charge ? !bw_consume(slot, ran, &left)
				   : bw_slot(slot)->throttled_at != 0)
				throttled = slot;
			else if (charge && left > 0 && (u64)left < *slice)
				*slice = left;
		}
		id = cg->parent;
	}
	return throttled;
}

/*
 * The park slot @p must wait on (a throttled cgroup of its), or -1; never
 * for an exiting task (task_exiting()), which also frees memory as it goes.
 * The kernel's own throttling lets a task finish in the kernel too.
 */
static __always_inline s32 bw_throttled_slot(struct task_struct *p,
					     struct task_ctx *tctx)
{
	u64 slice = 0;

	if (!bw_nr_limited || !tctx || !tctx->wcg || task_exiting(p))
		return -1;
	return bw_walk(tctx, 0, false, &slice);
}

/*
 * @p ran @ran ns: charge its limited cgroups. True if one ran dry: the
 * caller ends its slice (never an exiting task's). A slice longer than the
 * budget left is cut to it.
 */
static __always_inline bool bw_charge(struct task_struct *p,
				      struct task_ctx *tctx, u64 ran)
{
	u64 slice = p->scx.slice;

	if (!bw_nr_limited || !tctx->wcg)
		return false;
	if (bw_walk(tctx, ran, true, &slice) >= 0)
		return !task_exiting(p);
	if (slice < p->scx.slice)
		p->scx.slice = slice;
	return false;
}

/*
 * Close @tctx's park: true for the one caller that clears its parked flag.
 * A refill (on one CPU) and the task's next run (on another) may race to
 * close the same park; exactly one of them counts it.
 */
static __always_inline bool bw_close_park(struct task_ctx *tctx)
{
	return tctx->bw_parked &&
	       __sync_val_compare_and_swap(&tctx->bw_parked, 1, 0) == 1;
}

/*
 * ops.enqueue: park @p if one of its cgroups is throttled. True if parked.
 * FIFO: the order among them is set again when they leave (bw_unpark()).
 */
static __always_inline bool bw_park(struct task_struct *p,
				    struct task_ctx *tctx, u64 enq_flags)
{
	s32 slot = bw_throttled_slot(p, tctx);

	if (slot < 0)
		return false;
	/* parked before, and the kernel took it off that park queue */
	if (__sync_lock_test_and_set(&tctx->bw_parked, 1))
		stat_inc(STAT_BW_PARK_LEFT);
	scx_bpf_dsq_insert(p, park_dsq_id(slot), slice_ns, enq_flags);
	stat_inc(STAT_BW_PARKED);
	return true;
}

/*
 * ops.running: @tctx's task runs. If it was parked, the kernel took it off
 * its park queue (a cgroup move, an affinity change re-queues a task).
 */
static __always_inline void bw_running(struct task_ctx *tctx)
{
	if (bw_close_park(tctx))
		stat_inc(STAT_BW_PARK_LEFT);
}

/*
 * Move the parked tasks of slot @slot to the queues of their CPUs, at a vtime
 * bounded as any requeue's, and wake those CPUs if idle; return how many
 * parks this closed. The park is closed before the move: once moved, the
 * task may run on another CPU before this one would get to it. A move fails
 * when the kernel took the task off the park queue first: that park is
 * counted as left. A global function: the verifier checks it once, not per
 * slot.
 */
__noinline u32 bw_unpark_slot(u32 slot)
{
	struct task_struct *p;
	struct task_ctx *tctx;
	u64 vtime, dsq, now = scx_bpf_now();
	u32 moved = 0;
	bool closed;
	s32 cpu;

	bpf_for_each (scx_dsq, p, park_dsq_id(slot & (MAX_BW_CGROUPS - 1)), 0) {
		tctx = task_ctx_of(p);
		closed = tctx && bw_close_park(tctx);
		if (closed)
			wait_after_park(tctx, now);
		cpu = scx_bpf_task_cpu(p);
		dsq = queue_dsq_of(p, cpu);
		vtime = task_queue_vtime(p, cpu, 0);
		scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, vtime);
		if (scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, dsq, 0)) {
			count_moved_in(dsq);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			if (closed)
				moved++;
		} else if (closed) {
			stat_inc(STAT_BW_PARK_LEFT);
		}
	}
	return moved;
}

/*
 * ops.dispatch: move the parked tasks of refilled (or no longer limited)
 * cgroups back to the queues. Costs one read while nothing is to move.
 */
static __always_inline void bw_unpark(void)
{
	struct bw_cgroup *s;
	u32 i, moved = 0;

	if (!bw_nr_unparking)
		return;
	bpf_for (i, 0, MAX_BW_CGROUPS) {
		s = bw_slot(i);
		if (!s->unpark ||
		    __sync_val_compare_and_swap(&s->unpark, 1, 0) != 1)
			continue;
		__sync_fetch_and_sub(&bw_nr_unparking, 1);
		moved += bw_unpark_slot(i);
	}
	if (moved)
		stat_add(STAT_BW_UNPARKED, moved);
}

/* Flag slot @s's parked tasks (if any) to go back; wake a CPU to move them. */
static __always_inline void bw_flag_unpark(struct bw_cgroup *s, u32 slot)
{
	const struct cpumask *online;
	s32 cpu;

	if (!scx_bpf_dsq_nr_queued(park_dsq_id(slot)) || s->unpark)
		return;
	s->unpark = 1;
	__sync_fetch_and_add(&bw_nr_unparking, 1);
	online = scx_bpf_get_online_cpumask();
	cpu = scx_bpf_pick_idle_cpu(online, 0);
	scx_bpf_put_cpumask(online);
	if (cpu >= 0)
		kick_claimed(cpu);
}

/* The period of slot @s is over at @now: refill its pool, unthrottle it. */
static __always_inline void bw_refill(struct bw_cgroup *s, u32 slot, u64 now)
{
	s64 pool = s->pool_ns > 0 ? s->pool_ns : 0;

	pool += s->quota_ns;
	if (pool > (s64)s->max_pool_ns)
		pool = s->max_pool_ns;
	s->pool_ns = pool;
	s->gen++;
	s->next_refill += s->period_ns;
	if (time_before(s->next_refill, now))
		s->next_refill = now + s->period_ns;
	stat_inc(STAT_BW_REFILLS);
	if (s->throttled_at) {
		s->throttled_ns += now - s->throttled_at;
		stat_add(STAT_BW_THROTTLED_NS, now - s->throttled_at);
		s->throttled_at = 0;
	}
	bw_flag_unpark(s, slot);
}

/*
 * The timer: refill every pool whose period ended, let a lifted limit's
 * parked tasks go and free its slot once they have; run again at the next
 * refill due.
 */
static int bw_timer_fn(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = scx_bpf_now(), next = now + BW_TIMER_MAX_NS;
	struct bw_cgroup *s;
	u32 i;

	bpf_for (i, 0, MAX_BW_CGROUPS) {
		s = bw_slot(i);
		if (!s->cgid)
			continue;
		if (!s->quota_ns) {
			/* limit lifted or cgroup gone: drain, then free */
			s->throttled_at = 0;
			if (scx_bpf_dsq_nr_queued(park_dsq_id(i)))
				bw_flag_unpark(s, i);
			else if (!s->unpark)
				s->cgid = 0;
			continue;
		}
		if (!time_before(now, s->next_refill))
			bw_refill(s, i, now);
		if (time_before(s->next_refill, next))
			next = s->next_refill;
	}
	if (bw_nr_limited)
		bpf_timer_start(timer, next - now ?: 1, 0);
	return 0;
}

/* Cgroup @id's node, if tracked (weight.bpf.c). */
static __always_inline struct cg_node *bw_node(u64 id)
{
	return bpf_map_lookup_elem(&cg_nodes, &id);
}

/* Lift cgroup @id's limit (cpu.max "max", or the cgroup goes): free its slot
 * once its parked tasks are back. */
static __always_inline void bw_release(u64 id)
{
	struct cg_node *cg = bw_node(id);
	struct bw_cgroup *s;

	if (!cg || !cg->bw_slot)
		return;
	s = bw_slot(cg->bw_slot - 1);
	cg->bw_slot = 0;
	s->quota_ns = 0;
	__sync_fetch_and_sub(&bw_nr_limited, 1);
	bw_timer_in(1);
}

/*
 * cpu.max of cgroup @id is @quota_us per @period_us, with @burst_us (from
 * ops.cgroup_init or ops.cgroup_set_bandwidth): take or update its slot.
 */
static __always_inline void bw_set(u64 id, u64 period_us, u64 quota_us,
				   u64 burst_us)
{
	struct cg_node *cg = bw_node(id);
	struct bw_cgroup *s = NULL;
	u32 i, slot = 0;

	if (!cg || !cg->level)
		return;
	if (quota_us == BW_QUOTA_MAX || !period_us) {
		bw_release(id);
		return;
	}
	if (cg->bw_slot) {
		slot = cg->bw_slot - 1;
		s = bw_slot(slot);
	} else {
		bpf_for (i, 0, MAX_BW_CGROUPS) {
			if (!bw_slot(i)->cgid &&
			    !__sync_val_compare_and_swap(&bw_slot(i)->cgid, 0,
							 id)) {
				slot = i;
				s = bw_slot(i);
				break;
			}
		}
		if (!s) {
			stat_inc(STAT_BW_UNTRACKED);
			return;
		}
		s->throttled_at = 0;
		s->throttles = 0;
		s->throttled_ns = 0;
		cg->bw_slot = slot + 1;
		__sync_fetch_and_add(&bw_nr_limited, 1);
	}
	s->period_ns = period_us * 1000;
	s->max_pool_ns = (quota_us + burst_us) * 1000;
	s->burst_ns = burst_us * 1000;
	s->quota_ns = quota_us * 1000;
	s->pool_ns = s->quota_ns;
	s->gen++;
	s->next_refill = scx_bpf_now() + s->period_ns;
	bw_timer_in(1);
}

void BPF_STRUCT_OPS(mosaic_cgroup_set_bandwidth, struct cgroup *cgrp,
		    u64 period_us, u64 quota_us, u64 burst_us)
{
	bw_set(cgroup_id_of(cgrp), period_us, quota_us, burst_us);
}

/* Make the park queues and the refill timer. Called from ops.init. */
static s32 bw_init(void)
{
	struct bw_timer *t;
	u32 key = 0;
	s32 ret;

	ret = create_dsqs(park_dsq_id(0), MAX_BW_CGROUPS, "park queue");
	if (ret)
		return ret;
	t = bpf_map_lookup_elem(&bw_timers, &key);
	if (!t) {
		scx_bpf_error("no cpu.max timer");
		return -ENOENT;
	}
	bpf_timer_init(&t->timer, &bw_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&t->timer, bw_timer_fn);
	return 0;
}
