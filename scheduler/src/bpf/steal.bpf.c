/* SPDX-License-Identifier: GPL-2.0 */
/*
 * steal.bpf.c - stealing across LLCs and NUMA nodes (seed 000's "future
 * work"), behind the overload gate (gate.bpf.c).
 *
 * WHAT
 * A CPU that found nothing in its own queues nor in the other shards of its
 * LLC takes a task from the busiest shard of another LLC of its NUMA node;
 * failing that, of the other nodes.
 *
 * HOW
 * A scan reads the lengths of STEAL_PROBES shards of other LLCs without
 * locks - spread evenly over them from a random start, so all of them on a
 * machine with that few, a sample on a big one: the work per scan does not
 * grow with the machine - and keeps the busiest shard of the node and the
 * busiest beyond it; only the chosen shard is locked, by the move itself,
 * which skips tasks not allowed on this CPU. At most one task moves per scan.
 * A waiter the sample missed is not lost: the periodic scan (gate.bpf.c)
 * finds the idle CPU it may run on, leaves it its shard as a hint, and kicks
 * it. Skipped entirely while the overload flag is clear. Which task of the
 * chosen shard to take is the group balancer's call when it runs
 * (group_steal_from(), group.bpf.c).
 *
 * WHY
 * Shared runqueues stop at the LLC to keep caches warm, which leaves a whole
 * LLC idle while another is overloaded. Stealing restores work conservation;
 * nearest first (same node before remote) keeps the stolen task's memory
 * close, and the gate keeps the scan off the path when nothing waits.
 */

/*
 * Of the shards outside LLC @own, the @i-th of the STEAL_PROBES read by a
 * scan starting at @start and going @step shards at a time (@others: how many
 * there are). The LLC's own shards are contiguous, so they are skipped over.
 */
static __always_inline u32 probe_shard(u32 own, u32 others, u32 start, u32 step,
				       u32 i)
{
	u32 idx = (start + i * step) % others;
	u32 first = llc_first_shard[own & (MAX_LLCS - 1)];

	return idx < first ? idx : idx + llc_nr_shards[own & (MAX_LLCS - 1)];
}

/*
 * Take a task from a busy shard of another LLC: the shard the periodic scan
 * saw a task for @cpu on, if any; else the busiest of STEAL_PROBES shards
 * read without locks, spread evenly over the other LLCs from a random start
 * (all of them on machines with that few), of @cpu's node if any waits
 * there, else of another node.
 */
static __always_inline bool steal_from_llcs(s32 cpu)
{
	u32 own = llc_of(cpu), node = llc_node[own], s, llc, i;
	u32 others = nr_shards - llc_nr_shards[own & (MAX_LLCS - 1)];
	u32 *hint = &steal_hint[cpu & (MAX_CPUS - 1)];
	u32 near = 0, far = 0, reads, step, start;
	u64 near_q = 0, far_q = 0, q;

	if (*hint) {
		s = *hint - 1;
		*hint = 0;
		llc = shard_llc[s & (MAX_SHARDS - 1)] & (MAX_LLCS - 1);
		if (llc != own &&
		    group_steal_from(cpu, shard_dsq_id(s),
				     llc_node[llc] == node
					     ? STAT_STEAL_PULLS_NODE
					     : STAT_STEAL_PULLS_REMOTE))
			return true;
	}
	if (!others || others > MAX_SHARDS)
		return false;
	reads = others < STEAL_PROBES ? others : STEAL_PROBES;
	step = others / reads;
	start = reads < others ? bpf_get_prandom_u32() % others : 0;
	bpf_for (i, 0, STEAL_PROBES) {
		if (i >= reads)
			break;
		s = probe_shard(own, others, start, step, i);
		llc = shard_llc[s & (MAX_SHARDS - 1)] & (MAX_LLCS - 1);
		q = scx_bpf_dsq_nr_queued(shard_dsq_id(s));
		if (llc_node[llc] == node) {
			if (q > near_q) {
				near_q = q;
				near = s;
			}
		} else if (q > far_q) {
			far_q = q;
			far = s;
		}
	}
	if (near_q &&
	    group_steal_from(cpu, shard_dsq_id(near), STAT_STEAL_PULLS_NODE))
		return true;
	return far_q && group_steal_from(cpu, shard_dsq_id(far),
					 STAT_STEAL_PULLS_REMOTE);
}

/*
 * Balancing busy LLCs (--no-llc-balance turns it off).
 *
 * WHAT
 * Stealing moves work only to a CPU that would idle. When every CPU is busy,
 * a task stays in the LLC where it was forked or woke, however crowded that
 * LLC is: a cgroup whose tasks a shell forked on one LLC of a 2-LLC machine,
 * next to an equal one spread over both, got half its share for as long as
 * the load lasted (simulator, hogs workload). So the LLC with the most tasks
 * waiting per CPU gives one to the LLC with the fewest, whenever the gap is
 * wide enough that the move narrows it, as the kernel's periodic load balance
 * does between busy scheduling domains.
 *
 * HOW
 * The periodic scan (gate.bpf.c) counts the tasks waiting on each LLC's
 * shards (lock-free length reads, O(#shards), not per event). If the busiest
 * LLC, per CPU, leads the least busy by at least 1/n_busiest + 1/n_least
 * tasks per CPU in two scans in a row, and the least busy got no hint for
 * LLC_BALANCE_SLICES slices, the scan leaves it a hint: the LLC to take from.
 * The next CPU of the hinted LLC to dispatch - at a slice end, before prev
 * may keep its CPU - swaps the hint out (one CPU wins it) and takes the head
 * of the busiest shard of that LLC, one task; its own prev queues again.
 * A dispatch without a hint pays one read of its LLC's hint word. Pinned
 * tasks (per-CPU queues) are not counted nor moved. Off under the group
 * balancer, which places cgroups' tasks on partitions itself, and under
 * --no-shared-runq (seed 000's baseline).
 *
 * WHY
 * Fair shares hold inside an LLC (one vtime order); across LLCs they hold only
 * as far as the tasks are spread by load. The head of a shard is its task
 * that waited longest, the one with the least cache to lose. One task per
 * hint and a few slices between hints keep a bursty queue length (hackbench)
 * from bouncing tasks between LLCs.
 */

/* Tasks waiting on each LLC's shards, as the periodic scan last counted. */
u32 llc_queued[MAX_LLCS];
/* Per LLC, the LLC (+1; 0: none) its next dispatching CPU takes a task from. */
u32 llc_pull_from[MAX_LLCS];
/* Per LLC, when the scan last left it a hint. */
u64 llc_pull_at[MAX_LLCS];
/* The (busiest + 1) << 16 | (least busy + 1) pair the last scan saw. */
u32 llc_balance_pair;

/* Whether LLC balancing runs at all. */
static __always_inline bool llc_balance_on(void)
{
	return !no_llc_balance && !no_shared_runq && !group_balancer &&
	       nr_llcs > 1;
}

/*
 * The periodic scan's half, at @now: count the waiters of every LLC, and hint
 * the least busy LLC to take one from the busiest if the gap held since the
 * last scan (see above).
 */
static void llc_balance_scan(u64 now)
{
	u32 i, l, busy = 0, least = 0, pair, n_busy, n_least;
	u64 q_busy, q_least;

	if (!llc_balance_on())
		return;
	bpf_for (l, 0, nr_llcs) {
		if (l >= MAX_LLCS)
			break;
		llc_queued[l] = 0;
	}
	bpf_for (i, 0, nr_shards) {
		if (i >= MAX_SHARDS)
			break;
		l = shard_llc[i] & (MAX_LLCS - 1);
		llc_queued[l] += scx_bpf_dsq_nr_queued(shard_dsq_id(i));
	}
	/* per CPU: compare a/n_a with b/n_b as a * n_b with b * n_a */
	bpf_for (l, 1, nr_llcs) {
		if (l >= MAX_LLCS)
			break;
		if ((u64)llc_queued[l] * llc_nr_cpus[busy] >
		    (u64)llc_queued[busy] * llc_nr_cpus[l])
			busy = l;
		if ((u64)llc_queued[l] * llc_nr_cpus[least] <
		    (u64)llc_queued[least] * llc_nr_cpus[l])
			least = l;
	}
	busy &= MAX_LLCS - 1;
	least &= MAX_LLCS - 1;
	n_busy = llc_nr_cpus[busy];
	n_least = llc_nr_cpus[least];
	q_busy = llc_queued[busy];
	q_least = llc_queued[least];
	pair = 0;
	if (busy != least &&
	    q_busy * n_least >= q_least * n_busy + n_busy + n_least)
		pair = (busy + 1) << 16 | (least + 1);
	if (!pair || pair != llc_balance_pair) {
		llc_balance_pair = pair;
		return;
	}
	if (llc_pull_from[least] ||
	    (llc_pull_at[least] &&
	     time_before(now,
			 llc_pull_at[least] + LLC_BALANCE_SLICES * slice_ns)))
		return;
	llc_pull_at[least] = now;
	llc_pull_from[least] = busy + 1;
	stat_inc(STAT_LLC_BALANCE_HINTS);
}

/*
 * @cpu dispatches: if the scan left its LLC a hint and @cpu wins it, take the
 * head of the busiest shard of the hinted LLC. True if a task moved.
 */
static __always_inline bool llc_balance_pull(s32 cpu)
{
	u32 llc = llc_of(cpu) & (MAX_LLCS - 1), from, first, n, i, best = 0;
	u64 q, best_q = 0;

	if (!llc_pull_from[llc])
		return false;
	from = __sync_lock_test_and_set(&llc_pull_from[llc], 0);
	if (!from || --from >= MAX_LLCS)
		return false;
	first = llc_first_shard[from];
	n = llc_nr_shards[from];
	bpf_for (i, 0, n) {
		if (i >= MAX_SHARDS_PER_LLC)
			break;
		q = scx_bpf_dsq_nr_queued(shard_dsq_id(first + i));
		if (q > best_q) {
			best_q = q;
			best = first + i;
		}
	}
	return best_q && pull_from(shard_dsq_id(best), STAT_LLC_BALANCE_PULLS);
}

/* The cross-LLC steal scan of a CPU with nothing in its LLC; true on a hit. */
static __always_inline bool steal_scan(s32 cpu)
{
	if (no_shared_runq || nr_llcs <= 1)
		return false;
	if (!overloaded && !no_overload_gate) {
		stat_inc(STAT_STEAL_SCANS_SKIPPED);
		return false;
	}
	stat_inc(STAT_STEAL_SCANS);
	if (steal_from_llcs(cpu)) {
		stat_inc(STAT_STEAL_HITS);
		return true;
	}
	return false;
}
