/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shard.bpf.c - the sharded per-LLC shared runqueue (seed 000, SHARED_RUNQ).
 *
 * WHAT
 * Each LLC has one shared runqueue, split into shards of --shard-size CPUs;
 * each shard is a vtime-ordered DSQ. A task that wakes and finds no idle CPU
 * is queued on the shard of the CPU it last ran on. A CPU about to go idle
 * (ops.dispatch) pulls from its own shard first, then from the other shards
 * of its LLC, so work stays inside the LLC but no CPU of the LLC idles while
 * a task of the LLC waits. Tasks pinned to one CPU never enter a shard: they
 * wait on their CPU's own queue, which the CPU weighs against its shard by
 * vtime.
 *
 * HOW
 * Shard s is DSQ SHARD_DSQ_BASE + s; CPU c's own queue is DSQ c. Rust numbers
 * the shards (cpu_shard[], llc_first_shard[], llc_nr_shards[]), keeping SMT
 * siblings in one shard. A CPU's dispatch reads its LLC in one pass
 * (llc_scan()): it peeks each shard's head once, without a lock, and locks
 * only a shard it takes from. The pass is O(#shards in the LLC), never
 * O(#CPUs). A CPU with nothing of its own takes from the sibling shards in
 * walk order (after its own, wrapping, so that the CPUs of one shard do not
 * all raid the same neighbour), but first from the one with the oldest head
 * (smallest vtime) if that head is more than a slice older than the first
 * in walk order: with more than two shards in an LLC, walk order alone lets
 * a young head run while an older one waits, and cpu.weight splits drift
 * (test_llc_balance). Queueing a task kicks an idle CPU of the LLC so that
 * it pulls at once. With
 * --no-shared-runq every task waits on its CPU's own queue and a CPU about to
 * idle pulls from the busiest CPU queue of its LLC, else of the machine: the
 * seed's NO_SHARED_RUNQ baseline, the kernel's newidle balance (a scan of
 * the CPUs' queue lengths, O(#CPUs), as newidle balance walks its domains).
 * A CPU whose own shard's head is more than a slice younger than a sibling
 * shard's takes the sibling's instead, so that sharding does not break the
 * vtime order.
 * Tasks pinned to one CPU have no other CPU to go to: when more than
 * CPU_QUEUE_FULL_SLICES of them wait on its own queue, the CPU's dispatch
 * shortens the slices it starts so that they all take a turn within that
 * many slices (down to min_slice_ns each), as the kernel's fair class gives
 * a crowded runqueue shorter turns: with full slices a crowd pinned to one
 * CPU makes each of them wait seconds.
 * In a virtual machine's guest (--same-rq-pull, default auto), a CPU takes
 * from its own shard, among the first SAME_RQ_LOOK_AHEAD tasks within a
 * slice of the head's vtime, one whose runqueue is already its own (a shard
 * holds the tasks of all its CPUs): taking a task off another CPU's runqueue
 * migrates it under both runqueue locks, and a vCPU that the host preempted
 * while holding one stalls the taker (docs/bench/analysis.md measures it
 * under TCG). It passes the head
 * over only if the head is on the runqueue of a CPU of the shard, which will
 * take it. On bare metal the walk's DSQ locking costs more than it saves
 * (simulator, ryzen-7950x).
 *
 * WHY
 * A shared queue per LLC makes a CPU that would go idle find waiting work
 * (the seed: hackbench +10 % on a 2-CCX 7950X) without an O(n) walk of other
 * runqueues. Sharding bounds how many CPUs contend on one DSQ lock: the seed
 * found 16-CPU shards still contended under netperf UDP_RR and schbench, and
 * smaller shards much better. Shards end at the LLC: pulling across LLCs
 * costs the task its cache, and is left to the steal path.
 */

/* Global shard index of @cpu. */
static __always_inline u32 shard_of(s32 cpu)
{
	return cpu_shard[cpu_idx(cpu)];
}

/*
 * The DSQ of the shard @i steps after shard @own in the walk order of an LLC
 * whose @n shards start at global index @first (@i 0: shard @own itself).
 */
static __always_inline u64 walk_shard_dsq(u32 first, u32 n, u32 own, u32 i)
{
	return shard_dsq_id(first + (own + i) % n);
}

/* Create every shard's DSQ and every CPU's own DSQ. Called from ops.init. */
static s32 shard_init(void)
{
	s32 ret = create_dsqs(cpu_dsq_id(0), nr_cpu_ids, "CPU queue");

	return ret ?: create_dsqs(shard_dsq_id(0), nr_shards, "shard");
}

/* Queue @p on its CPU's own queue. */
static __always_inline void queue_on_cpu(struct task_struct *p, s32 cpu,
					 u64 enq_flags)
{
	scx_bpf_dsq_insert_vtime(
		p, cpu_dsq_id(cpu), slice_ns,
		task_queue_vtime(p, cpu, enq_flags, cpu_dsq_id(cpu)),
		enq_flags);
	stat_inc(STAT_CPU_ENQUEUES);
}

/* Queue @p on the shard of @cpu, the CPU it is on. */
static __always_inline void queue_on_shard(struct task_struct *p, s32 cpu,
					   u64 enq_flags)
{
	u32 shard = shard_of(cpu);

	scx_bpf_dsq_insert_vtime(
		p, shard_dsq_id(shard), slice_ns,
		task_queue_vtime(p, cpu, enq_flags, shard_dsq_id(shard)),
		enq_flags);
	stat_inc(STAT_SHARD_ENQUEUES);
	count(&shard_enqueues, shard);
}

/*
 * Queue @p, which is on @cpu, where it waits to run: @cpu's own queue if it
 * is pinned there (or under --no-shared-runq), else @cpu's shard.
 */
static __always_inline void queue_task(struct task_struct *p, s32 cpu,
				       u64 enq_flags)
{
	if (task_queues_on_cpu(p))
		queue_on_cpu(p, cpu, enq_flags);
	else
		queue_on_shard(p, cpu, enq_flags);
}

/* Per CPU, the state of its own queue (struct cpu_queue, mosaic.bpf.h). */
struct cpu_queue cpu_queues[MAX_CPUS];

/* The own-queue state of @cpu. */
static __always_inline struct cpu_queue *cpu_queue_of(s32 cpu)
{
	return &cpu_queues[cpu_idx(cpu)];
}

/*
 * @cpu's dispatch saw @n tasks waiting on its own queue: up to
 * CPU_QUEUE_FULL_SLICES take turns at full slices; more share that many
 * slices a round, at least min_slice_ns each, so that the last waits about
 * CPU_QUEUE_FULL_SLICES slices, not n. With none, the queue's clock
 * (vtime.bpf.c) starts afresh. The largest @n is STAT_CPU_QUEUE_MAX. Off
 * with --no-shared-runq, whose per-CPU queues model the kernel's runqueues
 * (seed 000's baseline). A shard's crowd does not shorten slices: counted per
 * CPU of the LLC, it doubled the scheduling events of hackbench -g 4 and
 * slowed it by 14 % (1llc, TCG), where wakeup preemption
 * (vtime_wake_preempt()) already serves a root task beside hundreds of busy
 * cgroups.
 */
static __always_inline void cpu_queue_note(s32 cpu, u32 n)
{
	struct cpu_queue *q = cpu_queue_of(cpu);
	u64 slice = 0;

	if (no_shared_runq)
		return;
	if (n)
		stat_max(STAT_CPU_QUEUE_MAX, n);
	if (n > CPU_QUEUE_FULL_SLICES) {
		slice = CPU_QUEUE_FULL_SLICES * slice_ns / n;
		if (slice < min_slice_ns)
			slice = min_slice_ns;
	}
	if (q->slice != slice)
		q->slice = slice;
	if (!n && q->clock)
		q->clock = 0;
}

/* @p starts on @cpu: cut its slice to the CPU's, if its queue is crowded. */
static __always_inline void cpu_queue_slice_apply(struct task_struct *p,
						  s32 cpu)
{
	u64 slice = cpu_queue_of(cpu)->slice;

	if (slice && p->scx.slice > slice) {
		p->scx.slice = slice;
		stat_inc(STAT_SHORT_SLICES);
	}
}

/* Whether a task waits on @cpu's own queue or on its shard. */
static __always_inline bool cpu_has_waiters(s32 cpu)
{
	return scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu)) ||
	       (!no_shared_runq &&
		scx_bpf_dsq_nr_queued(shard_dsq_id(shard_of(cpu))));
}

/* Whether the head of @dsq has been runnable since before @since. */
static __always_inline bool head_waits_since(u64 dsq, u64 since)
{
	struct task_struct *p = __COMPAT_scx_bpf_dsq_peek(dsq);
	struct task_ctx *tctx = p ? task_ctx_of(p) : NULL;

	return tctx && tctx->runnable_at &&
	       time_before(tctx->runnable_at, since);
}

/*
 * Whether a task queued for @cpu (the head of its own queue or of its shard)
 * has waited longer than one runnable since @since: one peek per queue.
 */
static __always_inline bool cpu_has_older_waiter(s32 cpu, u64 since)
{
	return head_waits_since(cpu_dsq_id(cpu), since) ||
	       (!no_shared_runq &&
		head_waits_since(shard_dsq_id(shard_of(cpu)), since));
}

/* The queue @p, on @cpu, waits on: @cpu's own if pinned, else its shard. */
static __always_inline u64 queue_dsq_of(struct task_struct *p, s32 cpu)
{
	if (task_queues_on_cpu(p))
		return cpu_dsq_id(cpu);
	return shard_dsq_id(shard_of(cpu));
}

/* Count a task put on @dsq (a CPU's own queue or a shard) by a move. */
static __always_inline void count_moved_in(u64 dsq)
{
	if (dsq < SHARD_DSQ_BASE) {
		stat_inc(STAT_CPU_ENQUEUES);
		return;
	}
	stat_inc(STAT_SHARD_ENQUEUES);
	count(&shard_enqueues, (u32)(dsq - SHARD_DSQ_BASE));
}

/*
 * An idle CPU of @dom (NULL: any) to kick for @p, just queued on @cpu's shard,
 * claimed; -1 if none. On big.LITTLE machines one that @p fits, and one it
 * does not fit only if another task waits on that shard too: a big task
 * waits a moment for a big CPU rather than run a slice on a little one, which
 * the misfit move would undo (seed 002), but idle little CPUs still take load
 * that big ones cannot absorb.
 */
static __always_inline s32 claim_idle_for(struct task_struct *p, s32 cpu,
					  const struct cpumask *dom)
{
	struct task_ctx *tctx;
	s32 idle;

	if (!asym_capacity || !(tctx = task_ctx_of(p)))
		return scx_bpf_pick_idle_cpu(dom ? dom : p->cpus_ptr, 0);
	idle = pick_idle_by_capacity(p, tctx->util, cpu, dom, CAP_FIT_ONLY);
	if (idle >= 0 || scx_bpf_dsq_nr_queued(shard_dsq_id(shard_of(cpu))) < 2)
		return idle;
	return pick_idle_by_capacity(p, tctx->util, cpu, dom, CAP_BEST_FIT);
}

/*
 * @p was just queued on @cpu's queues: wake @cpu if idle, else, for a task on
 * a shard that any CPU of the LLC may run, an idle CPU of the LLC (one @p
 * fits, see claim_idle_for()). With none there, the task waits for a steal
 * from another LLC: raise the overload flag and wake an idle CPU elsewhere to
 * come and steal.
 */
static __always_inline void kick_for(struct task_struct *p, s32 cpu)
{
	const struct cpumask *llc_mask;
	s32 idle;

	if (claim_if_idle(cpu)) {
		kick_claimed(cpu);
		return;
	}
	if (task_queues_on_cpu(p))
		return;
	if (p->nr_cpus_allowed == nr_cpu_ids) {
		llc_mask = llc_cpus(llc_of(cpu));
		idle = llc_mask ? claim_idle_for(p, cpu, llc_mask) : -1;
		if (idle >= 0) {
			kick_claimed(idle);
			return;
		}
	}
	overload_set();
	idle = claim_idle_for(p, cpu, NULL);
	if (idle >= 0)
		kick_claimed(idle);
}

/*
 * @p woke, its select_cpu found no idle CPU, and it was just queued: no second
 * search (a CPU that went idle in between is kicked by the periodic scan,
 * gate.bpf.c, within overload_scan_ns); raise the overload flag if it waits
 * on a shard, as kick_for() does when its searches find nothing.
 */
static __always_inline void overload_for(struct task_struct *p)
{
	if (!task_queues_on_cpu(p))
		overload_set();
}

/*
 * Whether @cpu should take @head, the head of @dsq, a sibling shard: on
 * big.LITTLE machines a head too big for @cpu only if another task waits
 * behind it (a CPU it fits will take that one), as kick_for() wakes no little
 * CPU for a lone big task: it waits at most a slice for a big CPU rather than
 * run a slice on a little one that the misfit move then undoes (seed 002).
 * @head NULL: peek it.
 */
static __always_inline bool head_suits(s32 cpu, u64 dsq,
				       struct task_struct *head)
{
	struct task_ctx *tctx;

	if (!asym_capacity || scx_bpf_dsq_nr_queued(dsq) != 1)
		return true;
	if (!head)
		head = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (!head || !(tctx = task_ctx_of(head)))
		return true;
	return cpu_fits_task(cpu, tctx->util);
}

/*
 * Whether @head, a queued task, should run before the runnable @prev: its
 * vtime is more than a slice before @prev's, or it has waited a slice already
 * (real time: keeping prev adds at most one slice to a wait, and a
 * heavy-weight prev, whose vtime crawls, cannot hold the CPU for long).
 */
static __always_inline bool head_due_before(struct task_struct *head,
					    struct task_struct *prev, u64 now)
{
	struct task_ctx *tctx;

	if (time_before(head->scx.dsq_vtime, prev->scx.dsq_vtime - slice_ns))
		return true;
	tctx = task_ctx_of(head);
	return tctx && tctx->runnable_at &&
	       time_before(tctx->runnable_at + slice_ns, now);
}

/*
 * Fill @scan for @cpu's dispatch in one pass: peek, without a lock, the head
 * of the CPU's own queue and of each shard of its LLC once - its own shard
 * first, then the siblings in walk order (after its own, wrapping), noting
 * the oldest sibling head the CPU may take and whether it is more than a
 * slice older than its own shard's head or the first sibling's, and how
 * many tasks wait on the CPU's own queue if any do. With @prev
 * (its slice over, still runnable), note whether a head is due before it. A
 * head may be taken by another CPU before a pull acts on the scan; the pull
 * then takes the next task or none. O(#shards in the LLC), never O(#CPUs).
 */
static __always_inline void llc_scan(s32 cpu, struct task_struct *prev,
				     struct llc_scan *scan)
{
	u32 llc = llc_of(cpu), first = llc_first_shard[llc];
	u32 n = llc_nr_shards[llc], own = shard_of(cpu) - first, i;
	u64 now = prev ? scx_bpf_now() : 0, oldest = 0, first_vt = 0, dsq;
	u32 oldest_i = 0;
	struct task_struct *head;

	__builtin_memset(scan, 0, sizeof(*scan));
	head = __COMPAT_scx_bpf_dsq_peek(cpu_dsq_id(cpu));
	if (head) {
		scan->cpu_head = head;
		/* the crowd of tasks pinned here (cpu_queue_note()) */
		if (!no_shared_runq)
			scan->cpu_queued =
				scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu));
		scan->queued = true;
		scan->due = prev && head_due_before(head, prev, now);
	}
	if (no_shared_runq)
		return;
	bpf_for (i, 0, n) {
		if (i >= MAX_SHARDS_PER_LLC)
			break;
		dsq = walk_shard_dsq(first, n, own, i);
		head = __COMPAT_scx_bpf_dsq_peek(dsq);
		if (!head)
			continue;
		scan->queued = true;
		if (prev && !scan->due)
			scan->due = head_due_before(head, prev, now);
		if (!i) {
			scan->own_head = head;
			continue;
		}
		scan->sibling_mask |= 1ULL << i;
		if (!head_suits(cpu, dsq, head))
			continue;
		if (!oldest_i) {
			first_vt = head->scx.dsq_vtime;
		} else if (!time_before(head->scx.dsq_vtime, oldest)) {
			continue;
		}
		oldest = head->scx.dsq_vtime;
		oldest_i = i;
	}
	if (!oldest_i)
		return;
	dsq = walk_shard_dsq(first, n, own, oldest_i);
	if (scan->own_head &&
	    time_before(oldest, scan->own_head->scx.dsq_vtime - slice_ns))
		scan->older_dsq = dsq;
	if (time_before(oldest, first_vt - slice_ns))
		scan->older_sibling = oldest_i;
}

/* Move the first task @cpu may run from @dsq to its local DSQ; count it. */
static __always_inline bool pull_from(u64 dsq, enum mosaic_stat stat)
{
	if (!scx_bpf_dsq_move_to_local(dsq, 0))
		return false;
	stat_inc(stat);
	return true;
}

/*
 * Move to @cpu's local DSQ the first task of @shard, among the first
 * SAME_RQ_LOOK_AHEAD within a slice of the head's vtime, that is already on
 * @cpu's runqueue. True if one moved.
 */
static __always_inline bool pull_same_rq(s32 cpu, u64 shard)
{
	struct task_struct *p;
	u64 limit = 0;
	u32 seen = 0;

	bpf_for_each (scx_dsq, p, shard, 0) {
		if (!seen)
			limit = p->scx.dsq_vtime + slice_ns;
		else if (time_before(limit, p->scx.dsq_vtime))
			break;
		if (++seen > SAME_RQ_LOOK_AHEAD)
			break;
		if (scx_bpf_task_cpu(p) != cpu ||
		    !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			stat_inc(STAT_SHARD_PULLS_LOCAL);
			if (seen > 1)
				stat_inc(STAT_SHARD_PULLS_SAME_RQ);
			return true;
		}
	}
	return false;
}

/*
 * Take a task from @cpu's own @shard: with same_rq_pull, one already on
 * @cpu's runqueue (pull_same_rq()), unless the head is. Moving a task that is
 * on another CPU's runqueue migrates it under both runqueue locks; one
 * already here is only relinked. The head is passed over only if it is on
 * the runqueue of a CPU of this shard, which takes it first when it
 * dispatches (and dispatches within a slice of the head's wait, see
 * prev_keeps_cpu()); a head on any other runqueue has no such CPU. A slice
 * of vtime is the disorder pull_older_sibling() allows across shards too.
 * @head is the shard's head as llc_scan() saw it. True if a task moved to
 * @cpu's local DSQ.
 */
static __always_inline bool pull_own_shard(s32 cpu, u64 shard,
					   struct task_struct *head)
{
	s32 head_cpu = scx_bpf_task_cpu(head);

	/* off, or the head is here already: no walk */
	if (!same_rq_pull || head_cpu == cpu)
		return pull_from(shard, STAT_SHARD_PULLS_LOCAL);
	if (shard_of(head_cpu) == shard_of(cpu) && pull_same_rq(cpu, shard))
		return true;
	if (!pull_from(shard, STAT_SHARD_PULLS_LOCAL))
		return false;
	stat_inc(STAT_SHARD_PULLS_REMOTE_RQ);
	return true;
}

/*
 * Take work from @cpu's own queue or its own shard, whichever holds the
 * older (smaller vtime) head by @scan, falling back to the other. True if a
 * task was moved to @cpu's local DSQ. The own queue is usually empty (it
 * holds only pinned tasks).
 */
static __always_inline bool pull_own_queues(s32 cpu,
					    const struct llc_scan *scan)
{
	u64 own = cpu_dsq_id(cpu), shard = shard_dsq_id(shard_of(cpu));
	struct task_struct *head = scan->own_head;

	if (!scan->cpu_head)
		return head && pull_own_shard(cpu, shard, head);
	if (!head ||
	    !time_before(head->scx.dsq_vtime, scan->cpu_head->scx.dsq_vtime))
		return pull_from(own, STAT_CPU_PULLS) ||
		       (head && pull_own_shard(cpu, shard, head));
	return pull_own_shard(cpu, shard, head) ||
	       pull_from(own, STAT_CPU_PULLS);
}

/*
 * Fairness across the shards of an LLC: if another shard's head is more than
 * a slice older (in vtime) than the head of @cpu's own shard, take the
 * oldest such (@scan->older_dsq), so that the LLC orders its tasks as one
 * queue would, give or take a slice, however they spread over shards
 * (weights and cpu.weight hold across shards). A task pinned here, on the
 * CPU's own queue, is served first. True if a task moved.
 */
static __always_inline bool pull_older_sibling(s32 cpu,
					       const struct llc_scan *scan)
{
	return !scan->cpu_head && scan->older_dsq &&
	       pull_from(scan->older_dsq, STAT_SHARD_PULLS_OLDER);
}

/*
 * Take work from the other shards of @cpu's LLC that @scan saw a head in: a
 * head more than a slice older than the first in walk order first, then the
 * others in walk order, up to the last of them. True if a task moved.
 */
static __always_inline bool pull_sibling_shards(s32 cpu,
						const struct llc_scan *scan)
{
	u32 llc = llc_of(cpu), first = llc_first_shard[llc];
	u32 n = llc_nr_shards[llc], own = shard_of(cpu) - first, i;
	u64 dsq;

	if (no_shared_runq || n <= 1)
		return false;

	stat_inc(STAT_SIBLING_SCANS);
	if (!scan->sibling_mask)
		return false;
	/* a head well older than the first in walk order goes first */
	if (scan->older_sibling &&
	    pull_from(walk_shard_dsq(first, n, own, scan->older_sibling),
		      STAT_SHARD_PULLS_SIBLING))
		return true;
	bpf_for (i, 1, n) {
		if (i >= MAX_SHARDS_PER_LLC)
			break;
		if (!(scan->sibling_mask >> i))
			break;
		if (!(scan->sibling_mask & (1ULL << i)) ||
		    i == scan->older_sibling)
			continue;
		dsq = walk_shard_dsq(first, n, own, i);
		if (head_suits(cpu, dsq, NULL) &&
		    pull_from(dsq, STAT_SHARD_PULLS_SIBLING))
			return true;
	}
	return false;
}

/*
 * The kernel's newidle balance runs only on a CPU whose average idle spell is
 * at least the migration cost (sysctl_sched_migration_cost, 0.5 ms): per CPU,
 * when it last went idle and its average idle time (1/8 weight per spell, as
 * update_avg(); starting at twice the cost, as the kernel does).
 */
#define NEWIDLE_MIGRATION_COST_NS 500000ULL
u64 newidle_idle_at[MAX_CPUS];
u64 newidle_avg_idle[MAX_CPUS];

/* --no-shared-runq: @cpu found nothing to run at @now and goes idle. */
static __always_inline void newidle_note_idle(s32 cpu, u64 now)
{
	newidle_idle_at[cpu_idx(cpu)] = now;
}

/*
 * --no-shared-runq: @cpu dispatches at @now: close its idle spell, if any,
 * into its average; true if its average idle time allows a newidle balance.
 */
static __always_inline bool newidle_allowed(s32 cpu, u64 now)
{
	u32 c = cpu_idx(cpu);
	u64 at = newidle_idle_at[c], avg = newidle_avg_idle[c], spell;

	if (!avg)
		avg = 2 * NEWIDLE_MIGRATION_COST_NS;
	if (at && time_before(at, now)) {
		spell = now - at;
		avg = avg - avg / 8 + spell / 8;
		newidle_idle_at[c] = 0;
	}
	newidle_avg_idle[c] = avg;
	return avg >= NEWIDLE_MIGRATION_COST_NS;
}

/*
 * --no-shared-runq, seed 000's baseline: @cpu, about to idle, takes the first
 * task it may run from the CPU queue with the most waiting tasks in its LLC,
 * or, if its LLC has none waiting, in the machine, as the kernel's newidle
 * balance pulls from the busiest runqueue of the nearest domain that has one,
 * and only as often as the kernel does (newidle_allowed()). Lock-free length
 * reads, one lock on the queue it pulls from. True if a task moved.
 */
static __always_inline bool pull_busiest_cpu_queue(s32 cpu)
{
	u32 llc = llc_of(cpu), i, n, near_n = 0, far_n = 0;
	s32 near = -1, far = -1;

	if (!newidle_allowed(cpu, scx_bpf_now()))
		return false;
	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		if ((s32)i == cpu)
			continue;
		n = scx_bpf_dsq_nr_queued(cpu_dsq_id(i));
		if (!n)
			continue;
		if (cpu_llc[i] == llc) {
			if (n > near_n) {
				near_n = n;
				near = i;
			}
		} else if (n > far_n) {
			far_n = n;
			far = i;
		}
	}
	if (near >= 0 && pull_from(cpu_dsq_id(near), STAT_NEWIDLE_PULLS))
		return true;
	return far >= 0 &&
	       pull_from(cpu_dsq_id(far), STAT_NEWIDLE_PULLS_REMOTE);
}
