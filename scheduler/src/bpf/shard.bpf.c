/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shard.bpf.c - the sharded per-LLC shared runqueue (seed 000, SHARED_RUNQ).
 *
 * WHAT
 * Three ways to queue a task that finds no idle CPU (--shared-runq): shard
 * (the default, here), seed and off (below). No design was faster on every
 * machine and workload; shard is the one whose work per event stays flat on
 * 192 CPUs and that holds cpu.weight best (the per-CPU designs balance
 * weighted load too, but lose part of a split in the VM; docs/design.md).
 * With shard, each LLC has one shared runqueue,
 * split into shards of --shard-size CPUs; each shard is a vtime-ordered DSQ. A
 * task that wakes and finds no idle CPU is queued on the shard of the CPU it
 * last ran on. A CPU about to go idle (ops.dispatch) pulls from its own shard
 * first, then from the other shards of its LLC, so work stays inside the LLC
 * but no CPU of the LLC idles while a task of the LLC waits. Tasks pinned to
 * one CPU never enter a shard: they wait on their CPU's own queue, which the
 * CPU weighs against its shard by vtime.
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
 * --shared-runq off every task waits on its CPU's own queue and a CPU about to
 * idle pulls from the busiest CPU queue of its LLC, else of the machine: the
 * seed's NO_SHARED_RUNQ baseline, the kernel's newidle balance (a scan of
 * the CPUs' queue lengths, O(#CPUs), as newidle balance walks its domains),
 * under the kernel's gates (overload flag, average idle time, per-domain
 * cost), with a periodic balance from the tick (steal.bpf.c). With
 * --shared-runq seed, the seed's own design: tasks wait on their
 * CPU's own queue too, the shards only index which CPUs have waiters, and a
 * CPU about to idle pulls through that index before newidle balance (see
 * "Seed 000 as the seed built it" below).
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

	if (seed_runq)
		shard_index_init();
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
	shard_index_note(cpu);
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
 * CPU_QUEUE_FULL_SLICES slices, not n. The largest @n is STAT_CPU_QUEUE_MAX.
 * Off with --no-shared-runq, whose per-CPU queues model the kernel's runqueues
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

	if (cpu_queues_only())
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
	       (!cpu_queues_only() &&
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
	       (!cpu_queues_only() &&
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
		shard_index_note((s32)dsq);
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
	if (task_queues_on_cpu(p)) {
		/* per-CPU queues: it waits behind a running task, a runqueue
		 * with two, which raises the kernel's overload flag */
		if (cpu_queues_only())
			overload_set();
		return;
	}
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
	if (!task_queues_on_cpu(p) || cpu_queues_only())
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
 * Whether @head, a queued task, should run before the runnable @prev on @cpu:
 * its vtime is more than a slice before @prev's (as the LLC's clock orders
 * them, llc_frame_vtime()), or it has waited its turn already (real time; a
 * heavy-weight prev, whose vtime crawls, cannot hold the CPU for long): a
 * slice; for a head on a CPU's own queue (per-CPU queues, a pinned crowd),
 * when @prev or the CPU's whole load (cpu_share_avg[], running and waiting)
 * is heavier than @head, a slice for each time the heavier of the two is,
 * but never more than half the wait target. There a CPU's queue is all its
 * tasks have: with a turn of
 * one slice, one heavy task and two light ones ran in turn (cpu.weight
 * 100:300 on 12 hogs, each CPU one task of 300 and two of 100: 1:1,
 * mosaic-sim 1llc; 1:3 with prev's share). A light task waits for every
 * other task's turns, not only prev's: with prev's share alone it was due
 * before its vtime turn whenever the other light task's slice or a moment of
 * noise came first, started ahead of the heavy task, and the CPU's clock
 * moved past the heavy one, whose lag the lag bound then cut (hogs pinned,
 * two light and one heavy per CPU: 1:2.1-2.2, 1llc, TCG). On a shard, the
 * heavy task the head displaced is the next task any of the shard's CPUs
 * takes.
 */
static __always_inline bool head_due_before(struct task_struct *head,
					    struct task_struct *prev, s32 cpu,
					    u64 now)
{
	u64 turn = slice_ns, head_share, heavier;
	struct task_ctx *tctx;

	if (time_before(llc_frame_vtime(head, cpu, head->scx.dsq_vtime),
			llc_frame_vtime(prev, cpu, prev->scx.dsq_vtime) -
				slice_ns))
		return true;
	tctx = task_ctx_of(head);
	if (!tctx || !tctx->runnable_at ||
	    !time_before(tctx->runnable_at + slice_ns, now))
		return false;
	if (!task_queues_on_cpu(head))
		return true;
	head_share = task_share_cached(head, tctx);
	heavier = task_share_cached(prev, task_ctx_of(prev));
	if (heavier < cpu_share_avg[cpu_idx(cpu)])
		heavier = cpu_share_avg[cpu_idx(cpu)];
	if (heavier > head_share) {
		turn = slice_ns * heavier / head_share;
		if (turn > wait_target_ns / 2)
			turn = wait_target_ns / 2;
	}
	return time_before(tctx->runnable_at + turn, now);
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
		if (!cpu_queues_only())
			scan->cpu_queued =
				scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu));
		scan->queued = true;
		scan->due = prev && head_due_before(head, prev, cpu, now);
	}
	if (cpu_queues_only())
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
			scan->due = head_due_before(head, prev, cpu, now);
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
 * older (smaller vtime, llc_frame_vtime()) head by @scan, falling back to the
 * other. True if a task was moved to @cpu's local DSQ. The own queue is
 * usually empty (it holds only pinned tasks).
 */
static __always_inline bool pull_own_queues(s32 cpu,
					    const struct llc_scan *scan)
{
	u64 own = cpu_dsq_id(cpu), shard = shard_dsq_id(shard_of(cpu));
	struct task_struct *head = scan->own_head;
	bool pulled;

	if (cpu_queues_only()) {
		pulled = scan->cpu_head && pull_from(own, STAT_CPU_PULLS);
		shard_index_sync(cpu);
		return pulled;
	}
	if (!scan->cpu_head)
		return head && pull_own_shard(cpu, shard, head);
	if (!head ||
	    !time_before(head->scx.dsq_vtime,
			 llc_frame_vtime(scan->cpu_head, cpu,
					 scan->cpu_head->scx.dsq_vtime)))
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

	if (cpu_queues_only() || n <= 1)
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
 * Seed 000 as the seed built it (--shared-runq seed).
 *
 * In the seed a waking task is queued on its CPU's CFS runqueue and also
 * linked in its LLC's shard; its own CPU runs it as usual (and unlinks it),
 * and a CPU about to idle, before its newidle balance, pops the shard's
 * first task and moves it over if it is still queued and not running
 * (shared_runq_pick_next_task()). A task sits on one DSQ at a time in
 * sched_ext, so here the tasks stay on their CPU's own queue and each shard
 * keeps an index of them: one bit per CPU of the shard, up while the CPU's
 * queue has a waiter. A CPU about to idle reads the index words of its LLC
 * (its own shard first), peeks the head of each CPU named there and takes
 * the one that has waited longest (the seed's shard is FIFO), moving it out
 * of that CPU's queue under the queue's lock (scx_bpf_dsq_move_to_local()):
 * O(#shards + shard size) reads, one lock. Moves are atomic per task, so a
 * CPU never takes the task its own CPU is already taking; and a CPU that is
 * idle (kicked, about to dispatch its own queue) is passed over unless two
 * wait there: its head runs next where it is, as a kernel runqueue with a
 * single task is not pulled from (it has nothing waiting). The bit goes up
 * when a task is queued on a CPU's own queue and is brought up to date by
 * the CPU's own dispatch and by a CPU that pulls from it, each clearing it
 * first and reading the queue length after, so a waiter queued meanwhile
 * sets it again; a bit seen stale is cleared (counted). Beyond the LLC the
 * seed leaves the kernel's newidle balance in place, starting at the domain
 * above the LLC: here pull_busiest_cpu_queue() with its LLC pass skipped.
 */

/* A shard's index: bit i is up while CPU shard_slot_cpu[s][i] has a waiter. */
struct shard_index {
	u64 waiters;
} __attribute__((aligned(64)));

struct shard_index shard_indexes[MAX_SHARDS];
/* Per CPU, its bit in its shard's index (SHARD_INDEX_BITS: none). */
u8 cpu_shard_slot[MAX_CPUS];
/* Per shard, the CPU of each bit of its index. */
u16 shard_slot_cpu[MAX_SHARDS][SHARD_INDEX_BITS];
/* Per shard, how many bits of its index are in use. */
u32 shard_nr_slots[MAX_SHARDS];

/*
 * Number each online CPU within its shard for the index (ops.init). A CPU
 * beyond SHARD_INDEX_BITS of its shard is not indexed: Rust refuses such
 * shards with the seed's design.
 */
static __always_inline void shard_index_init(void)
{
	u32 i, s, slot;

	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		cpu_shard_slot[i] = SHARD_INDEX_BITS;
		if (!cpu_capacity[i])
			continue;
		s = cpu_shard[i] & (MAX_SHARDS - 1);
		slot = shard_nr_slots[s];
		if (slot >= SHARD_INDEX_BITS)
			continue;
		cpu_shard_slot[i] = slot;
		shard_slot_cpu[s][slot] = i;
		shard_nr_slots[s] = slot + 1;
	}
}

/* The index word of @cpu's shard, and @cpu's bit in it (0: not indexed). */
static __always_inline u64 *shard_index_of(s32 cpu, u64 *bit)
{
	u32 slot = cpu_shard_slot[cpu_idx(cpu)];

	*bit = slot < SHARD_INDEX_BITS ? 1ULL << slot : 0;
	return &shard_indexes[shard_of(cpu) & (MAX_SHARDS - 1)].waiters;
}

/* A task was queued on @cpu's own queue: raise its bit if it is down. */
static __always_inline void shard_index_note(s32 cpu)
{
	u64 bit, *word;

	if (!seed_runq)
		return;
	word = shard_index_of(cpu, &bit);
	if (!bit || (*word & bit))
		return;
	__sync_fetch_and_or(word, bit);
	stat_inc(STAT_SEED_INDEX_SETS);
}

/*
 * Bring @cpu's bit up to date with its queue: down if empty (then read the
 * length again: a task queued meanwhile raises it again), up if not.
 */
static __always_inline void shard_index_sync(s32 cpu)
{
	u64 bit, *word;

	if (!seed_runq)
		return;
	word = shard_index_of(cpu, &bit);
	if (!bit)
		return;
	if (scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu))) {
		if (!(*word & bit))
			__sync_fetch_and_or(word, bit);
		return;
	}
	if (!(*word & bit))
		return;
	__sync_fetch_and_and(word, ~bit);
	if (scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu)))
		__sync_fetch_and_or(word, bit);
}

/*
 * Of the CPUs shard @s's index names, other than @cpu, the one whose head
 * has waited longest and that may give it (busy, or idle with two waiting,
 * see above), or -1. Stale bits are cleared. A global function: the
 * verifier checks it once, not per shard (and takes no cpumask argument
 * from its caller, hence its own read of the idle mask).
 */
__noinline s32 shard_index_pick(s32 cpu, u32 s)
{
	const struct cpumask *idle;
	u64 word, oldest = 0;
	struct task_struct *head;
	struct task_ctx *tctx;
	s32 best = -1, v;
	u32 i, n;

	if (s >= MAX_SHARDS || !(word = shard_indexes[s].waiters))
		return -1;
	idle = scx_bpf_get_idle_cpumask();
	bpf_for (i, 0, SHARD_INDEX_BITS) {
		if (!(word >> i))
			break;
		if (!(word & (1ULL << i)))
			continue;
		v = shard_slot_cpu[s][i];
		if (v == cpu)
			continue;
		n = scx_bpf_dsq_nr_queued(cpu_dsq_id(v));
		if (!n) {
			__sync_fetch_and_and(&shard_indexes[s].waiters,
					     ~(1ULL << i));
			stat_inc(STAT_SEED_INDEX_STALE);
			continue;
		}
		if (n < 2 && bpf_cpumask_test_cpu(v, idle)) {
			stat_inc(STAT_SEED_SKIPS_IDLE);
			continue;
		}
		head = __COMPAT_scx_bpf_dsq_peek(cpu_dsq_id(v));
		if (!head || !bpf_cpumask_test_cpu(cpu, head->cpus_ptr))
			continue;
		tctx = task_ctx_of(head);
		if (best >= 0 && tctx &&
		    !time_before(tctx->runnable_at, oldest))
			continue;
		best = v;
		oldest = tctx ? tctx->runnable_at : 0;
	}
	scx_bpf_put_idle_cpumask(idle);
	return best;
}

/*
 * The seed's pull: @cpu, about to idle, takes the longest-waiting waiter its
 * LLC's index names, its own shard first, then the others in walk order.
 * True if a task moved to @cpu's local DSQ.
 */
static __always_inline bool shard_index_pull(s32 cpu)
{
	u32 llc = llc_of(cpu), first = llc_first_shard[llc];
	u32 n = llc_nr_shards[llc], own = shard_of(cpu) - first, i, s;
	s32 v = -1;

	if (!seed_runq)
		return false;
	bpf_for (i, 0, n) {
		if (i >= MAX_SHARDS_PER_LLC)
			break;
		s = first + (own + i) % n;
		v = shard_index_pick(cpu, s);
		if (v >= 0)
			break;
	}
	if (v < 0) {
		stat_inc(STAT_SEED_PULL_MISSES);
		return false;
	}
	if (!pull_from(cpu_dsq_id(v),
		       i ? STAT_SEED_PULLS_SIBLING : STAT_SEED_PULLS_OWN)) {
		shard_index_sync(v);
		stat_inc(STAT_SEED_PULL_MISSES);
		return false;
	}
	shard_index_sync(v);
	return true;
}

/* Per-CPU queues: whether a task waits on any CPU's own queue. */
static __always_inline bool cpu_queue_waiting(void)
{
	u32 i;

	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		if (scx_bpf_dsq_nr_queued(cpu_dsq_id(i)))
			return true;
	}
	return false;
}

/*
 * Newidle balance with per-CPU queues: --no-shared-runq (seed 000's
 * NO_SHARED_RUNQ baseline), and above the LLC with the seed's design. It
 * follows the rules of the kernel's sched_balance_newidle() (newidle_balance()
 * before 6.10, kernel/sched/fair.c), each in its own words here:
 * - Nothing to find while no runqueue has a second task: the kernel checks
 *   the root domain's overload flag first (seed 003); here the overload flag
 *   of gate.bpf.c, which a task queued behind a running one raises and the
 *   periodic scan clears when no queue holds a waiter (--no-overload-gate
 *   ignores it). A balance that read every CPU queue and found them all
 *   empty clears it too, as the kernel's balance at the root domain stores
 *   what it saw in rd->overload (update_sd_lb_stats()).
 * - A CPU whose idle spells are short has no time to spend on balancing:
 *   its average idle time (rq->avg_idle: each spell weighs 1/8, as
 *   update_avg(); capped at twice the largest of the migration cost and its
 *   domains' balance costs, as ttwu_do_activate() caps it at twice
 *   max_idle_balance_cost) must reach the migration cost
 *   (sysctl_sched_migration_cost, 0.5 ms).
 * - Domains are tried from the smallest up - here the LLC, then the machine
 *   - and the walk stops before a domain whose most expensive balance so far
 *   (sd->max_newidle_lb_cost), added to what this attempt already spent,
 *   exceeds the average idle time: balancing must not cost more than the
 *   idle time it fills.
 * - Each domain's attempt is timed and its cost kept as in
 *   update_newidle_cost(): a larger cost is taken at once, and the kept one
 *   decays by 1/64 (253/256 in the kernel is close to 1/64) at most once a
 *   second.
 * - In a domain the pull is from the busiest queue, as load_balance()'s
 *   find_busiest_queue() picks the runqueue with the most runnable tasks:
 *   here the CPU queue with the most waiters, counting the task a busy CPU
 *   runs, and only one with two or more (a lone task is running, or about
 *   to). The first domain that pulls ends the walk.
 * - A CPU that runs only a cpu.idle cgroup's task is idle to the kernel
 *   (sched_idle_cpu()), which balances it as an idle CPU at the tick, whatever
 *   its idle spells: it passes the average-idle and cost gates (@idle_work).
 *   Gated like a CPU going idle, it ran idle-cgroup work for seconds while
 *   busy tasks waited on another CPU's queue.
 * The seed's design skips the LLC pass: its shards' index (above) covers
 * the LLC, as the seed starts newidle balance at the LLC's parent domain.
 */
#define NEWIDLE_MIGRATION_COST_NS 500000ULL
#define NEWIDLE_COST_DECAY_NS 1000000000ULL
enum newidle_domain {
	NEWIDLE_DOM_LLC,
	NEWIDLE_DOM_MACHINE,
	NR_NEWIDLE_DOMS,
};

/* Per CPU, its newidle state, one cache line each (written by the CPU). */
struct newidle_state {
	u64 idle_at;		       /* when it last went idle (0: busy) */
	u64 avg_idle;		       /* average idle spell (0: not yet) */
	u64 max_cost[NR_NEWIDLE_DOMS]; /* costliest balance per domain */
	u64 decay_at;		       /* when max_cost last decayed */
} __attribute__((aligned(64)));

struct newidle_state newidle_states[MAX_CPUS];

/* Per-CPU queues: @cpu found nothing to run at @now and goes idle. */
static __always_inline void newidle_note_idle(s32 cpu, u64 now)
{
	newidle_states[cpu_idx(cpu)].idle_at = now;
}

/*
 * @cpu dispatches at @now: close its idle spell, if any, into its average
 * (capped as above) and return the average.
 */
static __always_inline u64 newidle_avg_idle(struct newidle_state *st, u64 now)
{
	u64 avg = st->avg_idle, cap = NEWIDLE_MIGRATION_COST_NS, spell;

	if (st->max_cost[NEWIDLE_DOM_LLC] > cap)
		cap = st->max_cost[NEWIDLE_DOM_LLC];
	if (st->max_cost[NEWIDLE_DOM_MACHINE] > cap)
		cap = st->max_cost[NEWIDLE_DOM_MACHINE];
	if (!avg)
		avg = 2 * NEWIDLE_MIGRATION_COST_NS;
	if (st->idle_at && time_before(st->idle_at, now)) {
		spell = now - st->idle_at;
		avg = decay_eighth(avg, spell);
		if (avg > 2 * cap)
			avg = 2 * cap;
		st->idle_at = 0;
	}
	st->avg_idle = avg;
	return avg;
}

/* Keep @cost as domain @d's balance cost if larger; decay it once a second. */
static __always_inline void newidle_cost_update(struct newidle_state *st, u32 d,
						u64 cost, u64 now)
{
	u64 *max = &st->max_cost[d & (NR_NEWIDLE_DOMS - 1)];

	if (cost > *max) {
		*max = cost;
	} else if (time_before(st->decay_at + NEWIDLE_COST_DECAY_NS, now)) {
		*max -= *max / 64;
		st->decay_at = now;
	}
}

/*
 * The CPU queue with the most waiters of @cpu's LLC (@in_llc) or outside it,
 * counting a busy CPU's running task, if it has two or more (see above); -1
 * if none. @idle is the idle mask; the count goes to *@busiest_n, and whether
 * any of the queues read holds a task to *@any.
 */
static __always_inline s32 busiest_cpu_queue(s32 cpu, bool in_llc,
					     const struct cpumask *idle,
					     u32 *busiest_n, bool *any)
{
	u32 llc = llc_of(cpu), i, n, best_n = 1;
	s32 best = -1;

	*any = false;
	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		if ((s32)i == cpu || (cpu_llc[i] == llc) != in_llc)
			continue;
		n = scx_bpf_dsq_nr_queued(cpu_dsq_id(i));
		if (!n)
			continue;
		*any = true;
		if (!bpf_cpumask_test_cpu(i, idle))
			n++;
		if (n > best_n) {
			best_n = n;
			best = i;
		}
	}
	*busiest_n = best_n;
	return best;
}

/*
 * One domain's pass of the newidle balance: pull from its busiest queue.
 * *@any: whether any queue it read held a task.
 */
static __always_inline bool newidle_domain_pull(s32 cpu, u32 d, bool *any)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	u32 n;
	s32 busiest =
		busiest_cpu_queue(cpu, d == NEWIDLE_DOM_LLC, idle, &n, any);
	bool pulled;

	scx_bpf_put_idle_cpumask(idle);
	if (busiest < 0)
		return false;
	pulled = pull_from(cpu_dsq_id(busiest),
			   d == NEWIDLE_DOM_LLC ? STAT_NEWIDLE_PULLS
						: STAT_NEWIDLE_PULLS_REMOTE);
	shard_index_sync(busiest);
	return pulled;
}

/*
 * Newidle balance (the rules above): @cpu, about to idle or running a cpu.idle
 * cgroup's task (@idle_work), pulls one task from the busiest CPU queue of its
 * LLC, else of the machine. True if one moved. A pass of every domain that
 * found every CPU queue empty lowers the overload flag
 * (overload_newidle_clear()): as the periodic scan, it keeps the flag up
 * while any task waits, even one that only waits for its idle CPU to start.
 */
static __always_inline bool pull_busiest_cpu_queue(s32 cpu, bool idle_work)
{
	struct newidle_state *st = &newidle_states[cpu_idx(cpu)];
	u64 now = scx_bpf_now(), avg = newidle_avg_idle(st, now);
	u64 spent = 0, t0, t1;
	bool pulled = false, any, seen = false;
	u32 d, read = 0;

	/* the seed's design covers the LLC with its index: nothing above */
	if (seed_runq && nr_llcs <= 1)
		return false;
	/* an idle balance (idle_balance_tick()) passes every gate */
	if (idle_balance_take(cpu))
		idle_work = true;
	else if (!overload_up() && !no_overload_gate) {
		stat_inc(STAT_NEWIDLE_SKIPS_OVERLOAD);
		return false;
	}
	if (avg < NEWIDLE_MIGRATION_COST_NS && !idle_work) {
		stat_inc(STAT_NEWIDLE_SKIPS_AVG_IDLE);
		return false;
	}
	t0 = bpf_ktime_get_ns();
	bpf_for (d, 0, NR_NEWIDLE_DOMS) {
		if (d == NEWIDLE_DOM_LLC && seed_runq)
			continue;
		if (d == NEWIDLE_DOM_MACHINE && nr_llcs <= 1)
			break;
		if (avg < spent + st->max_cost[d & (NR_NEWIDLE_DOMS - 1)] &&
		    !idle_work) {
			stat_inc(STAT_NEWIDLE_SKIPS_COST);
			break;
		}
		pulled = newidle_domain_pull(cpu, d, &any);
		t1 = bpf_ktime_get_ns();
		newidle_cost_update(st, d, t1 - t0, now);
		spent += t1 - t0;
		t0 = t1;
		read |= 1 << d;
		seen |= any;
		if (pulled)
			break;
	}
	/* every other CPU queue read (the LLC's pass, and the machine's if
	 * there are other LLCs) and empty, and this CPU's own */
	if (!seen && (read & 1 << NEWIDLE_DOM_LLC) &&
	    (nr_llcs <= 1 || (read & 1 << NEWIDLE_DOM_MACHINE)) &&
	    !scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu)))
		overload_newidle_clear(now);
	return pulled;
}
