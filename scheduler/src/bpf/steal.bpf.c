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
