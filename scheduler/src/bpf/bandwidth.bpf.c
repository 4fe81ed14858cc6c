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
 * Every cgroup gets its park DSQ when it appears (ops.cgroup_init, which may
 * sleep; ops.cgroup_set_bandwidth may not). A limited cgroup takes a slot of
 * the bw_cgroups table (MAX_BW_CGROUPS, far more than hosts run): period,
 * quota and a pool of runtime for this period. Runtime is charged where
 * vtime is (ops.stopping, ops.tick) against a per-CPU budget of each limited
 * level; a CPU whose budget ran out borrows BW_BORROW_NS from the pool with
 * one atomic - the kernel's cfs_bandwidth design - so the pool's cache line
 * is touched once per borrow, not per event. A CPU keeps budgets for
 * BW_BUDGETS_PER_CPU slots (direct-mapped by slot): a slot that finds its
 * entry taken by another hands the other's budget, or debt, back to its pool
 * first, so any number of limited cgroups share a fixed per-CPU table. A
 * budget left when the period ends expires; an overdraft is paid in full
 * from the next periods, as the kernel does. The pool running dry throttles the
 * cgroup: the task
 * running gives up its CPU (slice 0), and any of its tasks that wakes or is
 * put back is inserted on the park DSQ of the highest throttled ancestor -
 * never on a shard, so parked tasks cost dispatch nothing and neither the
 * overload gate nor the wasted-core scan sees them. A task that starts
 * running gets a slice no longer than its budget. One BPF timer refills the
 * pools at each cgroup's period (quota + what is left, at most quota +
 * burst) and queues throttled cgroups with parked tasks on the unpark ring;
 * the next ops.dispatch on any CPU takes a few of them off the ring and moves
 * their tasks back to the queues of their CPUs (vtime-ordered, as any
 * requeued task), and the timer kicks an idle CPU to do it. Each cgroup's
 * periods run from when its limit was set, as the kernel's do; the timer
 * finds the cgroups due on a wheel of 1 ms buckets (bw_wheel), so a run
 * costs the slots due, not the slots in use, and it runs when the next
 * non-empty bucket ends. A lifted limit (or a cgroup gone) goes on a list
 * the timer drains: its parked tasks go back, then its slot is free. An
 * exiting task is charged but never held back: it finishes its exit in the
 * kernel. A signal that kills a task of a throttled cgroup (tracepoint
 * signal_generate) puts the cgroup on the reap list; the next ops.dispatch
 * moves its killed parked tasks back at once, so they die now, not at the
 * refill.
 * Nothing of this runs while no cgroup has a limit (bw_nr_limited == 0). A
 * limit that finds no slot (or whose cgroup has no park DSQ) is counted
 * (STAT_BW_UNTRACKED); userspace names it and sets it again through the
 * bw_retry program until it holds.
 *
 * WHY
 * Container hosts set cpu.max; a scheduler that ignores it silently lifts
 * every limit. Per-CPU budgets keep the cost of a limit off the hot path.
 * Throttled tasks still count for the kernel's runnable-task watchdog (the
 * kernel has no exemption for them), so parks are bounded too: parked tasks
 * re-enter in vtime order each period, and a cgroup whose debt keeps it
 * throttled lets its parked tasks run a moment (preempted as they start)
 * every idle_wait_ns, so that none stays parked longer, while its whole
 * debt is still paid (a run under TCG is charged tens of ms past a quota of
 * 1 ms; forgiving what passed a bound let a tenth of 1,000 such cgroups run
 * 1.3-1.7 quotas). The time parked is the limit's, not a wait for a CPU: it is
 * measured apart (bw_parked_max_us), and a task's wait (wait_max_us) starts
 * when it goes back to a queue.
 */

/* A borrow from a cgroup's pool: the kernel's sched_cfs_bandwidth_slice. */
#define BW_BORROW_NS (5ULL * 1000 * 1000)
/* ops.cgroup_set_bandwidth's quota for "max" (the kernel's RUNTIME_INF) */
#define BW_QUOTA_MAX ((u64) - 1)
/* refill wheel: buckets of 2^BW_WHEEL_SHIFT ns (1.05 ms, about the kernel's
 * smallest cpu.max period), BW_WHEEL_SIZE of them (1.07 s: past the longest
 * period, 1 s) */
#define BW_WHEEL_SHIFT 20
#define BW_WHEEL_SIZE 1024
/* per-CPU budgets kept at once (a power of 2): more limited cgroups running
 * on one CPU share entries, handing budgets back to their pools */
#define BW_BUDGETS_PER_CPU 256
/* throttled cgroups one ops.dispatch moves back from the unpark ring */
#define BW_UNPARK_BATCH 8

/* A cgroup with a cpu.max limit (a slot of bw_cgroups). */
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
	u64 released_at;  /* when its parked tasks were last moved back */
	u32 unpark;	  /* on the unpark ring: parked tasks to move back */
	u32 in_wheel;	  /* on a refill wheel bucket's list */
	u32 wheel_next;	  /* next slot + 1 on that list; 0: the last */
	u32 in_lifted;	  /* on the list of lifted limits (bw_lifted) */
	u32 lifted_next;  /* next slot + 1 on that list; 0: the last */
	u32 in_reap;	  /* on the list of killed parked tasks (bw_reap) */
	u32 reap_next;	  /* next slot + 1 on that list; 0: the last */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct bw_cgroup);
	__uint(max_entries, MAX_BW_CGROUPS);
} bw_cgroups SEC(".maps");

u32 bw_nr_limited; /* slots in use: 0 turns every hook off */
u32 bw_slots_seen; /* slots below this were ever taken: the timer's walk */
u32 bw_nr_missed;  /* limits set that are not enforced (cg_node.bw_missed) */

/*
 * The refill wheel: bucket b lists (slot + 1, linked through wheel_next) the
 * slots whose next refill falls in it. Any CPU pushes (one atomic), the
 * timer takes a due bucket whole (one swap), so each timer run touches only
 * the slots due, however many limits there are. A slot is on one list at
 * most (in_wheel).
 */
u32 bw_wheel[BW_WHEEL_SIZE];
u64 bw_wheel_done; /* buckets before this one were taken */
/* Slots whose limit was lifted (or whose cgroup went), for the timer to
 * drain and free: a list like a bucket's, through lifted_next. */
u32 bw_lifted;
/* Slots with a killed task parked, for ops.dispatch to move back: a list
 * like a bucket's, through reap_next, pushed by the signal tracepoint. */
u32 bw_reap;

/*
 * Slots whose parked tasks go back to the queues: written by the timer only
 * (one writer), taken by any CPU's dispatch (one atomic each). A slot is on
 * it at most once (its unpark flag), so it never holds more than the table.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, u32);
	__uint(max_entries, MAX_BW_CGROUPS);
} bw_unpark_ring SEC(".maps");

u32 bw_unpark_head; /* next entry the timer writes */
u32 bw_unpark_tail; /* next entry a dispatch takes */

/* A CPU's budget from one slot's pool. */
struct bw_budget {
	u32 slot;      /* the slot + 1 it belongs to; 0: none */
	u64 gen;       /* the pool's refill it was borrowed in */
	s64 budget_ns; /* left to run; below 0: owed to the next period */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct bw_budget);
	__uint(max_entries, BW_BUDGETS_PER_CPU);
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

/*
 * Each CPU's run timer: it ends the run of a limited cgroup's task when the
 * cgroup's last budget does (the kernel's hrtick; a tick may come much later:
 * under TCG the runs of 1,000 cgroups with quotas of 1 ms averaged 12 ms
 * each, the kernel's 1.0 ms).
 */
struct bw_run_timer {
	struct bpf_timer timer;
	s32 pid; /* the task whose run it ends */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct bw_run_timer);
	__uint(max_entries, MAX_CPUS);
} bw_run_timers SEC(".maps");

/* bw_walk()'s *end when no pool is empty */
#define BW_NO_END ((u64) - 1)

/* A run timer expired: preempt CPU *@key's task if it is the one it was set
 * for (it still runs: the timer fires on its CPU). */
static int bw_run_timer_fn(void *map, int *key, struct bw_run_timer *t)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	if (cur && cur->pid == t->pid)
		scx_bpf_kick_cpu(*key, SCX_KICK_PREEMPT);
	return 0;
}

/* End the run of @p, running on this CPU, in @ns. */
static __always_inline void bw_end_run_in(struct task_struct *p, u64 ns)
{
	u32 cpu = bpf_get_smp_processor_id();
	struct bw_run_timer *t = bpf_map_lookup_elem(&bw_run_timers, &cpu);

	if (!t)
		return;
	t->pid = p->pid;
	bpf_timer_start(&t->timer, ns, BPF_F_TIMER_CPU_PIN);
}

/* Slot @slot, or NULL past the table. */
static __always_inline struct bw_cgroup *bw_slot(u32 slot)
{
	return bpf_map_lookup_elem(&bw_cgroups, &slot);
}

/* DSQ id of cgroup @cgid's park queue (see intf.h). */
static __always_inline u64 park_dsq_id(u64 cgid)
{
	return PARK_DSQ_BASE + cgid;
}

/* Tasks parked on cgroup @cgid's park queue (0 if it has none). */
static __always_inline s32 bw_nr_parked(u64 cgid)
{
	s32 n = scx_bpf_dsq_nr_queued(park_dsq_id(cgid));

	return n > 0 ? n : 0;
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
 * Hand budget entry @b back to the pool it was borrowed from: what is left
 * of this period, or a debt. The entry is then free.
 */
static __always_inline void bw_budget_return(struct bw_budget *b)
{
	struct bw_cgroup *s;
	s64 back = b->budget_ns;

	s = b->slot ? bw_slot(b->slot - 1) : NULL;
	b->slot = 0;
	if (!s || !s->quota_ns)
		return;
	if (b->gen != s->gen && back > 0)
		return;
	if (back)
		__sync_fetch_and_add(&s->pool_ns, back);
	stat_inc(STAT_BW_BUDGET_RETURNS);
}

/* This CPU's budget entry that slot @slot maps to (it may hold another's). */
static __always_inline struct bw_budget *bw_budget_entry(u32 slot)
{
	u32 idx = slot & (BW_BUDGETS_PER_CPU - 1);

	return bpf_map_lookup_elem(&bw_budgets, &idx);
}

/* This CPU's budget entry for slot @slot, taken over from another slot's. */
static __always_inline struct bw_budget *bw_budget_of(u32 slot,
						      struct bw_cgroup *s)
{
	struct bw_budget *b = bw_budget_entry(slot);

	if (!b || b->slot == slot + 1)
		return b;
	if (b->slot)
		bw_budget_return(b);
	b->slot = slot + 1;
	b->gen = s->gen;
	b->budget_ns = 0;
	return b;
}

/*
 * Take @ran ns for this CPU from slot @slot, borrowing from its pool when the
 * CPU's budget is spent. False if the pool ran dry: the cgroup is throttled.
 * @left gets what the budget still holds, @last whether the pool is empty
 * (the cgroup is throttled when this budget runs out).
 */
static __always_inline bool bw_consume(u32 slot, u64 ran, s64 *left, bool *last)
{
	struct bw_cgroup *s = bw_slot(slot);
	struct bw_budget *b;
	s64 want, before, got;

	if (!s || !s->quota_ns || !(b = bw_budget_of(slot, s)))
		return true;
	if (b->gen != s->gen) {
		/* a new period: what was left expired; a debt stays */
		b->gen = s->gen;
		if (b->budget_ns > 0)
			b->budget_ns = 0;
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
	*last = s->pool_ns <= 0;
	if (b->budget_ns > 0)
		return true;
	/*
	 * Out of budget: an overdraft (a run is charged when it ends, at a tick
	 * at the earliest) becomes the pool's debt, paid from the next refills
	 * before the cgroup runs again. Kept on this CPU's entry, it was paid
	 * only when the cgroup ran here next: a hog that moved between 4 CPUs
	 * ran a tick each period, and 1 ms quotas per 16.7 ms gave 1.7 quotas.
	 */
	if (b->budget_ns < 0) {
		stat_max(STAT_BW_OVERDRAFT_MAX_US, -b->budget_ns / 1000);
		__sync_fetch_and_add(&s->pool_ns, b->budget_ns);
		b->budget_ns = 0;
	}
	if (!s->throttled_at) {
		s->throttled_at = scx_bpf_now() ?: 1;
		s->throttles++;
		stat_inc(STAT_BW_THROTTLES);
	}
	return false;
}

/*
 * Whether slot @slot's cgroup holds its tasks back on this CPU now: it is
 * throttled and this CPU has none of this period's budget left for it. A
 * budget borrowed before another CPU ran the pool dry is still spent here
 * (as the kernel's cfs_rq spends its runtime), else it would expire unused.
 */
static __always_inline bool bw_is_throttled(u32 slot)
{
	struct bw_cgroup *s = bw_slot(slot);
	struct bw_budget *b;

	if (!s || !s->throttled_at)
		return false;
	b = bw_budget_entry(slot);
	return !b || b->slot != slot + 1 || b->gen != s->gen ||
	       b->budget_ns <= 0;
}

/*
 * Walk up from cgroup @wcg. Charge @ran to every limited level (if @charge),
 * cap *@slice at the smallest budget left and *@end at the smallest last
 * budget of a level (bw_consume()); return the slot of the highest throttled
 * level, or -1 if none is. A global function: the verifier checks it once
 * (inlined into ops.running, the loop's states went past the 1M-instruction
 * limit of kernel 6.19's verifier).
 */
__noinline s32 bw_walk(u64 wcg, u64 ran, bool charge, u64 *slice, u64 *end)
{
	u64 id = wcg;
	struct cg_node *cg;
	s32 throttled = -1;
	bool last;
	u32 i, slot;
	s64 left;

	if (!slice || !end)
		return -1;
	bpf_for (i, 0, MAX_CGROUP_DEPTH) {
		cg = id ? bpf_map_lookup_elem(&cg_nodes, &id) : NULL;
		if (!cg || !cg->level)
			break;
		if (cg->bw_slot) {
			slot = cg->bw_slot - 1;
			left = 0;
			last = false;
			if (charge ? !bw_consume(slot, ran, &left, &last)
				   : bw_is_throttled(slot))
				throttled = slot;
			else if (charge && left > 0 && (u64)left < *slice)
				*slice = left;
			if (last && left > 0 && (u64)left < *end)
				*end = left;
		}
		id = cg->parent;
	}
	return throttled;
}

/*
 * The park slot @p must wait on (a throttled cgroup of its), or -1; never
 * for an exiting task, which also frees memory as it goes, nor for one inside
 * an RCU read-side section or with migration disabled
 * (task_exempt_from_limits()): its cgroup's debt grows instead.
 */
static __always_inline s32 bw_throttled_slot(struct task_struct *p,
					     struct task_ctx *tctx)
{
	u64 slice = 0, end = 0;
	s32 slot;

	if (!bw_nr_limited || !tctx || !tctx->wcg)
		return -1;
	slot = bw_walk(tctx->wcg, 0, false, &slice, &end);
	if (slot >= 0 && task_exempt_from_limits(p)) {
		stat_inc(STAT_BW_PARK_EXEMPT);
		return -1;
	}
	return slot;
}

/*
 * @p ran @ran ns: charge its limited cgroups. True if one ran dry: the
 * caller ends its slice (never an exempt task's, task_exempt_from_limits()).
 * If @p goes on running (@running), a slice longer than the budget left is
 * cut to it, and when a cgroup's pool is empty, its last budget's end also
 * ends the run (bw_end_run_in()).
 */
static __always_inline bool
bw_charge(struct task_struct *p, struct task_ctx *tctx, u64 ran, bool running)
{
	u64 slice = p->scx.slice, end = BW_NO_END;

	if (!bw_nr_limited || !tctx->wcg)
		return false;
	if (bw_walk(tctx->wcg, ran, true, &slice, &end) >= 0)
		return !task_exempt_from_limits(p);
	if (!running)
		return false;
	if (slice < p->scx.slice)
		p->scx.slice = slice;
	if (end != BW_NO_END)
		bw_end_run_in(p, end);
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
	struct bw_cgroup *s;

	if (slot < 0 || !(s = bw_slot(slot)))
		return false;
	/* parked before, and the kernel took it off that park queue */
	if (__sync_lock_test_and_set(&tctx->bw_parked, 1))
		stat_inc(STAT_BW_PARK_LEFT);
	scx_bpf_dsq_insert(p, park_dsq_id(s->cgid), slice_ns, enq_flags);
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
 * Move the parked tasks of cgroup @cgid (only the killed ones if
 * @killed_only, task_killed()) to the queues of their CPUs, at the
 * vtime of a woken task (a park earns no credit: kept as a requeue's lag, 200
 * refilled hogs a period went before every woken task, and a nice -20 shell
 * took 23 s to read their cpu.stat files, 0.5 s under the kernel's
 * scheduler), and wake those CPUs if idle; return how many parks this
 * closed. The park is closed before the move: once moved,
 * the task may run on another CPU before this one would get to it. A move
 * fails when the kernel took the task off the park queue first: that park is
 * counted as left. A global function: the verifier checks it once.
 */
__noinline u32 bw_unpark_cgroup(u64 cgid, bool killed_only)
{
	struct task_struct *p;
	struct task_ctx *tctx;
	u64 vtime, dsq, now = scx_bpf_now();
	u32 moved = 0;
	bool closed;
	s32 cpu;

	bpf_for_each (scx_dsq, p, park_dsq_id(cgid), 0) {
		if (killed_only && !task_killed(p))
			continue;
		tctx = task_ctx_of(p);
		closed = tctx && bw_close_park(tctx);
		if (closed)
			wait_after_park(tctx, now);
		cpu = scx_bpf_task_cpu(p);
		dsq = queue_dsq_of(p, cpu);
		vtime = task_queue_vtime(p, cpu, SCX_ENQ_WAKEUP, dsq);
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
 * Move the parked tasks of up to BW_UNPARK_BATCH refilled (or no longer
 * limited) cgroups back to the queues; what is left is taken by the next
 * dispatch.
 */
static __always_inline void bw_unpark_refilled(void)
{
	u32 i, t, moved = 0, *slot;
	struct bw_cgroup *s;

	bpf_for (i, 0, BW_UNPARK_BATCH) {
		t = bw_unpark_tail;
		if (t == bw_unpark_head)
			break;
		if (__sync_val_compare_and_swap(&bw_unpark_tail, t, t + 1) != t)
			continue;
		t &= MAX_BW_CGROUPS - 1;
		slot = bpf_map_lookup_elem(&bw_unpark_ring, &t);
		s = slot ? bw_slot(*slot) : NULL;
		if (!s)
			continue;
		s->unpark = 0;
		moved += bw_unpark_cgroup(s->cgid, false);
	}
	if (moved)
		stat_add(STAT_BW_UNPARKED, moved);
}

/* Wake an idle CPU, if any, to run ops.dispatch (and so bw_unpark()). */
static __always_inline void bw_kick_idle_cpu(void)
{
	const struct cpumask *online = scx_bpf_get_online_cpumask();
	s32 cpu = scx_bpf_pick_idle_cpu(online, 0);

	scx_bpf_put_cpumask(online);
	if (cpu >= 0)
		kick_claimed(cpu);
}

/* Queue slot @slot's parked tasks (if any) to go back (from the timer only:
 * the ring's one writer); wake a CPU to move them. */
static __always_inline void bw_flag_unpark(struct bw_cgroup *s, u32 slot)
{
	u32 h = bw_unpark_head & (MAX_BW_CGROUPS - 1), *entry;

	if (s->unpark || !bw_nr_parked(s->cgid))
		return;
	entry = bpf_map_lookup_elem(&bw_unpark_ring, &h);
	if (!entry)
		return;
	s->unpark = 1;
	*entry = slot;
	__sync_fetch_and_add(&bw_unpark_head, 1);
	bw_kick_idle_cpu();
}

/* Push slot @slot onto the list at @head (slot + 1 values, linked through
 * the u32 at @next): one compare-and-swap, retried while others push. */
static __always_inline void bw_list_push(u32 *head, u32 *next, u32 slot)
{
	u32 i, old;

	bpf_for (i, 0, MAX_BW_CGROUPS) {
		old = *head;
		*next = old;
		if (__sync_val_compare_and_swap(head, old, slot + 1) == old)
			return;
	}
}

/* Put slot @s on the wheel at its next refill (if it is on none). */
static __always_inline void bw_wheel_push(struct bw_cgroup *s, u32 slot)
{
	u32 b = (s->next_refill >> BW_WHEEL_SHIFT) & (BW_WHEEL_SIZE - 1);

	if (__sync_val_compare_and_swap(&s->in_wheel, 0, 1))
		return;
	bw_list_push(&bw_wheel[b], &s->wheel_next, slot);
}

/* The slot of list entry @next (slot + 1; 0 ends the list) into *@slot, or
 * NULL at the end. */
static __always_inline struct bw_cgroup *bw_list_slot(u32 next, u32 *slot)
{
	if (!next)
		return NULL;
	*slot = next - 1;
	return bw_slot(*slot);
}

/* Put slot @s on the list of lifted limits (if it is not there). */
static __always_inline void bw_lifted_push(struct bw_cgroup *s, u32 slot)
{
	if (__sync_val_compare_and_swap(&s->in_lifted, 0, 1))
		return;
	bw_list_push(&bw_lifted, &s->lifted_next, slot);
}

/*
 * Whether throttled slot @s must let its parked tasks run for a moment at
 * this refill (@now): its debt keeps it throttled, and by the next refill
 * one of them would have been parked idle_wait_ns (a quarter of the
 * watchdog's timeout). Each runs until ops.running finds the cgroup
 * throttled and preempts it, and is parked again: the watchdog sees it run,
 * the debt grows by that moment, and no overdraft is forgiven.
 */
static __always_inline bool bw_release_due(const struct bw_cgroup *s, u64 now)
{
	u64 since = s->throttled_at;

	if (time_before(since, s->released_at))
		since = s->released_at;
	return !time_before(now + s->period_ns, since + idle_wait_ns);
}

/* The period of slot @s is over at @now: refill its pool, unthrottle it. */
static __always_inline void bw_refill(struct bw_cgroup *s, u32 slot, u64 now)
{
	s64 pool = s->pool_ns;

	/* a debt is paid from this period's quota first */
	pool += s->quota_ns;
	if (pool > (s64)s->max_pool_ns)
		pool = s->max_pool_ns;
	s->pool_ns = pool;
	s->gen++;
	s->next_refill += s->period_ns;
	if (time_before(s->next_refill, now))
		s->next_refill = now + s->period_ns;
	stat_inc(STAT_BW_REFILLS);
	if (s->throttled_at && pool > 0) {
		s->throttled_ns += now - s->throttled_at;
		stat_add(STAT_BW_THROTTLED_NS, now - s->throttled_at);
		s->throttled_at = 0;
	}
	if (!s->throttled_at || bw_release_due(s, now)) {
		if (s->throttled_at)
			stat_inc(STAT_BW_PARK_RELEASES);
		s->released_at = now;
		bw_flag_unpark(s, slot);
	}
}

/* Slot @slot came off a wheel bucket at @now: refill it if due, and put it
 * back at its next refill, while it holds a limit. */
static __always_inline void bw_wheel_due(u32 slot, u64 now)
{
	struct bw_cgroup *s = bw_slot(slot);

	if (!s)
		return;
	s->in_wheel = 0;
	if (!s->cgid || !s->quota_ns)
		return;
	if (!time_before(now, s->next_refill))
		bw_refill(s, slot, now);
	bw_wheel_push(s, slot);
}

/* Slot @slot came off the lifted list: its parked tasks go back; once none
 * is left the slot is free. True if it must be looked at again. */
static __always_inline bool bw_lifted_due(u32 slot)
{
	struct bw_cgroup *s = bw_slot(slot);

	if (!s)
		return false;
	s->in_lifted = 0;
	if (!s->cgid || s->quota_ns)
		return false;
	s->throttled_at = 0;
	if (bw_nr_parked(s->cgid)) {
		bw_flag_unpark(s, slot);
		bw_lifted_push(s, slot);
		return true;
	}
	if (s->unpark) {
		bw_lifted_push(s, slot);
		return true;
	}
	s->cgid = 0;
	return false;
}

/*
 * Take the list at @head whole and hand each slot on it to @due (a wheel
 * bucket's or the lifted list). True if a lifted slot must be looked at
 * again.
 */
static __always_inline bool bw_take_list(u32 *head, bool lifted, u64 now)
{
	u32 i, slot, next = __sync_lock_test_and_set(head, 0);
	struct bw_cgroup *s;
	bool again = false;

	bpf_for (i, 0, MAX_BW_CGROUPS) {
		if (!(s = bw_list_slot(next, &slot)))
			break;
		next = lifted ? s->lifted_next : s->wheel_next;
		if (lifted)
			again |= bw_lifted_due(slot);
		else
			bw_wheel_due(slot, now);
	}
	return again;
}

/* Take the reap list whole and move the killed parked tasks of each slot on
 * it back to the queues. */
static __always_inline void bw_unpark_killed(void)
{
	u32 i, slot, moved = 0, next = __sync_lock_test_and_set(&bw_reap, 0);
	struct bw_cgroup *s;

	bpf_for (i, 0, MAX_BW_CGROUPS) {
		if (!(s = bw_list_slot(next, &slot)))
			break;
		next = s->reap_next;
		s->in_reap = 0;
		if (s->cgid)
			moved += bw_unpark_cgroup(s->cgid, true);
	}
	if (moved)
		stat_add(STAT_BW_PARK_KILLED, moved);
}

/*
 * ops.dispatch: move back the parked tasks of refilled (or no longer
 * limited) cgroups, and killed parked tasks. Costs three reads while nothing
 * is to move.
 */
static __always_inline void bw_unpark(void)
{
	if (bw_unpark_tail != bw_unpark_head)
		bw_unpark_refilled();
	if (bw_reap)
		bw_unpark_killed();
}

/*
 * The timer: take every wheel bucket that has ended (refill what is due,
 * queue the parked tasks of what was throttled), drain lifted limits, and
 * run again when the next non-empty bucket ends.
 */
static int bw_timer_fn(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = scx_bpf_now(), k = 0, from = bw_wheel_done, to;
	bool again;
	u32 i = 0;

	/* buckets before the one @now falls in have ended */
	to = now >> BW_WHEEL_SHIFT;
	if (!from || to - from > BW_WHEEL_SIZE)
		from = to - BW_WHEEL_SIZE;
	bpf_for (i, 0, BW_WHEEL_SIZE) {
		k = from + i;
		if (k >= to)
			break;
		bw_take_list(&bw_wheel[k & (BW_WHEEL_SIZE - 1)], false, now);
	}
	bw_wheel_done = to;
	again = bw_take_list(&bw_lifted, true, now);
	if (!bw_nr_limited && !again && !bw_lifted)
		return 0;
	/* the next bucket with slots on it, timed to when it ends */
	k = to + 1;
	if (!again) {
		k += BW_WHEEL_SIZE;
		bpf_for (i, 0, BW_WHEEL_SIZE) {
			if (bw_wheel[(to + i) & (BW_WHEEL_SIZE - 1)]) {
				k = to + i + 1;
				break;
			}
		}
	}
	k <<= BW_WHEEL_SHIFT;
	bpf_timer_start(timer, time_before(now, k) ? k - now : 1, 0);
	return 0;
}

/* Cgroup @id's node, if tracked (weight.bpf.c). */
static __always_inline struct cg_node *bw_node(u64 id)
{
	return bpf_map_lookup_elem(&cg_nodes, &id);
}

/* Mark @cg's limit as missed (not enforced) or not, keeping the count. */
static __always_inline void bw_missed_set(struct cg_node *cg, bool missed)
{
	if (cg->bw_missed == missed)
		return;
	cg->bw_missed = missed;
	if (missed) {
		__sync_fetch_and_add(&bw_nr_missed, 1);
		stat_inc(STAT_BW_UNTRACKED);
	} else {
		__sync_fetch_and_sub(&bw_nr_missed, 1);
	}
}

/* Lift cgroup @id's limit (cpu.max "max", or the cgroup goes): free its slot
 * once its parked tasks are back. */
static __always_inline void bw_release(u64 id)
{
	struct cg_node *cg = bw_node(id);
	struct bw_cgroup *s;
	u32 slot;

	if (!cg)
		return;
	bw_missed_set(cg, false);
	if (!cg->bw_slot)
		return;
	slot = cg->bw_slot - 1;
	s = bw_slot(slot);
	cg->bw_slot = 0;
	if (s) {
		s->quota_ns = 0;
		bw_lifted_push(s, slot);
	}
	__sync_fetch_and_sub(&bw_nr_limited, 1);
	bw_timer_in(1);
}

/* A free slot taken for cgroup @id, or -1 if the table is full. */
static __always_inline s32 bw_take_slot(u64 id)
{
	struct bw_cgroup *s;
	u32 i, seen;

	bpf_for (i, 0, MAX_BW_CGROUPS) {
		s = bw_slot(i);
		if (!s)
			break;
		/* a freed slot still on a wheel bucket is not taken yet */
		if (s->cgid || s->in_wheel || s->in_lifted ||
		    __sync_val_compare_and_swap(&s->cgid, 0, id))
			continue;
		/* the timer walks slots below bw_slots_seen: raise it */
		bpf_for (seen, 0, MAX_BW_CGROUPS) {
			u32 was = bw_slots_seen;

			if (was > i ||
			    __sync_val_compare_and_swap(&bw_slots_seen, was,
							i + 1) == was)
				break;
		}
		return i;
	}
	return -1;
}

/*
 * cpu.max of cgroup @id is @quota_us per @period_us, with @burst_us (from
 * ops.cgroup_init, ops.cgroup_set_bandwidth or userspace's bw_retry): take
 * or update its slot. A limit that finds no slot, or a cgroup without a park
 * queue, is counted and marked missed for userspace to name and retry.
 */
static __always_inline void bw_set(u64 id, u64 period_us, u64 quota_us,
				   u64 burst_us)
{
	struct cg_node *cg = bw_node(id);
	struct bw_cgroup *s = NULL;
	s32 slot;

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
		slot = cg->has_park ? bw_take_slot(id) : -1;
		s = slot >= 0 ? bw_slot(slot) : NULL;
		if (!s) {
			bw_missed_set(cg, true);
			return;
		}
		s->throttled_at = 0;
		s->throttles = 0;
		s->throttled_ns = 0;
		cg->bw_slot = slot + 1;
		bw_missed_set(cg, false);
		__sync_fetch_and_add(&bw_nr_limited, 1);
	}
	if (!s)
		return;
	s->period_ns = period_us * 1000;
	s->max_pool_ns = (quota_us + burst_us) * 1000;
	s->burst_ns = burst_us * 1000;
	s->quota_ns = quota_us * 1000;
	s->pool_ns = s->quota_ns;
	s->gen++;
	s->next_refill = scx_bpf_now() + s->period_ns;
	bw_wheel_push(s, slot);
	bw_timer_in(1);
}

void BPF_STRUCT_OPS(mosaic_cgroup_set_bandwidth, struct cgroup *cgrp,
		    u64 period_us, u64 quota_us, u64 burst_us)
{
	/* a cgroup that did not fit before is tracked now if it can be */
	cg_node_get(cgrp);
	bw_set(cgroup_id_of(cgrp), period_us, quota_us, burst_us);
}

/*
 * Make cgroup @id's park queue (ops.cgroup_init, which may sleep). False if
 * it could not be made: a limit on the cgroup is then not enforced (missed).
 */
static bool bw_cgroup_init(u64 id)
{
	return !scx_bpf_create_dsq(park_dsq_id(id), -1);
}

/* Cgroup @id is gone (ops.cgroup_exit): lift its limit, drop its queue. Its
 * tasks left it first, and with them its park queue. */
static void bw_cgroup_exit(u64 id, bool has_park)
{
	bw_release(id);
	if (has_park)
		scx_bpf_destroy_dsq(park_dsq_id(id));
}

/*
 * Userspace's retry of a limit that is not enforced (a missed slot or park
 * queue, or a cgroup that did not fit the cgroup table), run with
 * BPF_PROG_TEST_RUN. It may sleep, so it can make a missing park queue. A
 * limit already enforced is left as it is.
 */
SEC("syscall")
int bw_retry(struct bw_retry_args *args)
{
	struct cgroup *cgrp = bpf_cgroup_from_id(args->cgid);
	struct cg_node *cg = NULL;
	u64 id = args->cgid;

	if (cgrp) {
		cg = cg_node_get(cgrp);
		bpf_cgroup_release(cgrp);
	}
	if (!cg || !cg->level) {
		args->ret = BW_RETRY_NO_CGROUP;
		return 0;
	}
	if (!cg->bw_slot) {
		if (!cg->has_park && bw_cgroup_init(id))
			cg->has_park = true;
		bw_set(id, args->period_us, args->quota_us, args->burst_us);
	}
	args->ret = cg->bw_slot ? BW_RETRY_HELD : BW_RETRY_NO_SLOT;
	return 0;
}

/*
 * A signal is sent. When it kills @task (SIGKILL, or any signal whose default
 * action is to die: the kernel then marks every thread of the process with
 * SIGKILL before this tracepoint) and @task's cgroup is throttled with parked
 * tasks, the cgroup goes on the reap list, so that its killed tasks leave
 * their park now: the kernel throttles a task only on its way back to user
 * space, which a killed task never takes, and a container's teardown (kill,
 * then rmdir) waits for every task to exit. The other threads of a killed
 * process are parked on the same cgroup's queue unless a threaded cgroup
 * split them; those wait for the refill.
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(bw_signal, int sig, struct kernel_siginfo *info,
	     struct task_struct *task, int group, int result)
{
	struct task_ctx *tctx;
	struct bw_cgroup *s;
	u64 slice = 0, end = 0;
	s32 slot;

	if (!bw_nr_limited || !task || !task_killed(task))
		return 0;
	tctx = task_ctx_of(task);
	if (!tctx || !tctx->wcg)
		return 0;
	slot = bw_walk(tctx->wcg, 0, false, &slice, &end);
	if (slot < 0 || !(s = bw_slot(slot)) || !bw_nr_parked(s->cgid))
		return 0;
	if (!__sync_val_compare_and_swap(&s->in_reap, 0, 1))
		bw_list_push(&bw_reap, &s->reap_next, slot);
	bw_kick_idle_cpu();
	return 0;
}

/* Make the refill timer and the CPUs' run timers. Called from ops.init. */
static s32 bw_init(void)
{
	struct bw_run_timer *rt;
	struct bw_timer *t;
	u32 key = 0, cpu;

	t = bpf_map_lookup_elem(&bw_timers, &key);
	if (!t) {
		scx_bpf_error("no cpu.max timer");
		return -ENOENT;
	}
	bpf_timer_init(&t->timer, &bw_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&t->timer, bw_timer_fn);
	bpf_for (cpu, 0, nr_cpu_ids) {
		rt = bpf_map_lookup_elem(&bw_run_timers, &cpu);
		if (!rt) {
			scx_bpf_error("no cpu.max run timer for CPU %u", cpu);
			return -ENOENT;
		}
		bpf_timer_init(&rt->timer, &bw_run_timers, CLOCK_MONOTONIC);
		bpf_timer_set_callback(&rt->timer, bw_run_timer_fn);
	}
	return 0;
}
