/* SPDX-License-Identifier: GPL-2.0 */
/*
 * group.bpf.c - the BPF half of the group balancer (seed 004): per-cgroup
 * accounting, and the soft binding of a cgroup's tasks to the CPU partition
 * userspace settled the cgroup into (the policy is in group.rs).
 *
 * WHAT
 * CPUs are split into partitions (per LLC by default). Userspace settles each
 * cgroup under --gb-parent into one partition and writes cgroup id ->
 * partition into group_prefs. A task of a settled cgroup prefers idle CPUs of
 * its partition at wakeup, and when its slice ends outside the partition it
 * moves to an idle CPU inside, or else waits on a shard of the partition;
 * when the partition has no idle CPU and another does, it runs elsewhere - a
 * soft bind, never a cpuset. As in the seed's task_tick_gb(), a task found
 * running outside its partition at a tick leaves at once when it has
 * somewhere to go: an idle CPU of its partition, or one running a task that
 * belongs where this one is - then the two swap (the seed's migrate_swap()).
 *
 * HOW
 * Every slice a task runs is added to its partition's total (part_runtime)
 * and, for registered cgroups, to that cgroup's runtime per partition
 * (group_runtime, per-CPU so that no line bounces); so is its runnable
 * demand, as the seed's load is: the time it ran or waited to run there,
 * scaled by its weight (part_demand, group_runtime's demand_ns). Userspace
 * computes loads from the demand and exclusivity from the runtime. A task's
 * cgroup id (its cgroup v2 membership, whatever controllers are enabled) is
 * noted in its context when it starts running, and the partition it prefers in
 * running_pref[] of its CPU, which the swap reads: a few probes of the
 * partition's CPU list (part_cpu_list), never a walk of the machine.
 *
 * WHY
 * Groups of tasks that share data and compete with other groups run better
 * "demi-exclusive": the seed measured sysbench memory +25 % and redis up to
 * +10 % on a 128-CPU ARM64 server with 8 partitions. Its reviewers asked for
 * the policy in userspace on BPF data: that is this split.
 */

/* Preferred partition of a cgroup (-1: registered, not settled yet). */
struct group_pref {
	s32 part;
	u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);
	__type(value, struct group_pref);
	__uint(max_entries, MAX_GROUPS);
} group_prefs SEC(".maps");

/* Runtime and runnable demand of a cgroup in each partition, ns. */
struct group_runtime {
	u64 ns[MAX_PARTS];	  /* time its tasks ran there */
	u64 demand_ns[MAX_PARTS]; /* ... ran or waited to run, x weight/100 */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, u64);
	__type(value, struct group_runtime);
	__uint(max_entries, MAX_GROUPS);
} group_runtime SEC(".maps");

/*
 * Runtime of cgroups userspace did not register, ns, for the ones that ran
 * lately (LRU): with more cgroups under --gb-parent than group_prefs holds,
 * userspace tracks the busiest, and learns here which of the others run.
 * Tasks outside --gb-parent are noted too (they share the LRU).
 */
#define GROUP_UNREGISTERED_MAX 1024

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, u64);
	__type(value, u64);
	__uint(max_entries, GROUP_UNREGISTERED_MAX);
} group_unregistered SEC(".maps");

/* Runtime of all tasks in each partition, ns. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, MAX_PARTS);
} part_runtime SEC(".maps");

/* A new group's first entry (too large for the BPF stack); never written. */
struct group_runtime group_runtime_zero;

/* Runnable demand of all tasks in each partition, ns x weight/100. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, MAX_PARTS);
} part_demand SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct dom_mask);
	__uint(max_entries, MAX_PARTS);
} part_masks SEC(".maps");

/*
 * Partition preferred by the task running on each CPU (-1: none), written
 * when a task starts running; stale only while the CPU idles.
 */
s32 running_pref[MAX_CPUS];

/* The CPUs of each partition, partition after partition (group_init()). */
u32 part_cpu_list[MAX_CPUS];
u32 part_first_cpu[MAX_PARTS]; /* index of a partition's first in the list */
u32 part_nr_cpus[MAX_PARTS];   /* its number of CPUs */

/* Partition of @cpu, -1 if none. */
static __always_inline s32 part_of(s32 cpu)
{
	return nr_parts ? cpu_part[cpu_idx(cpu)] : -1;
}

/* The CPUs of partition @part. */
static __always_inline const struct cpumask *part_cpus(s32 part)
{
	return dom_cpus(&part_masks, (u32)part);
}

/* Id of @p's cgroup in the cgroup v2 hierarchy (0 if unknown). */
static __always_inline u64 task_cgroup_id(struct task_struct *p)
{
	struct css_set *cset = BPF_CORE_READ(p, cgroups);
	struct cgroup *cgrp;
	struct kernfs_node *kn;

	if (!cset)
		return 0;
	cgrp = BPF_CORE_READ(cset, dfl_cgrp);
	if (!cgrp)
		return 0;
	kn = BPF_CORE_READ(cgrp, kn);
	return kn ? BPF_CORE_READ(kn, id) : 0;
}

/* Preferred partition of the cgroup of the task of @tctx, -1 if none. */
static __always_inline s32 group_part(struct task_ctx *tctx)
{
	struct group_pref *pref;

	if (!group_balancer || !tctx->cgid)
		return -1;
	pref = bpf_map_lookup_elem(&group_prefs, &tctx->cgid);
	return pref ? pref->part : -1;
}

/*
 * @p (context @tctx) starts running on @cpu: note its cgroup (it may move)
 * and, for the swap, the partition it prefers (the slot is written only when
 * it changes, so that CPUs running their own group do not bounce the line).
 */
static __always_inline void group_running(struct task_struct *p,
					  struct task_ctx *tctx, s32 cpu)
{
	s32 *slot, part;

	if (!group_accounting)
		return;
	tctx->cgid = task_cgroup_id(p);
	if (!group_balancer)
		return;
	part = group_part(tctx);
	slot = &running_pref[cpu_idx(cpu)];
	if (*slot != part)
		*slot = part;
}

/* Note that unregistered cgroup @cgid ran @ran ns (group_unregistered). */
static __always_inline void group_note_unregistered(u64 cgid, u64 ran)
{
	u64 zero = 0, *ns;

	if (!ran)
		return;
	ns = bpf_map_lookup_elem(&group_unregistered, &cgid);
	if (!ns) {
		bpf_map_update_elem(&group_unregistered, &cgid, &zero,
				    BPF_NOEXIST);
		ns = bpf_map_lookup_elem(&group_unregistered, &cgid);
		if (!ns)
			return;
	}
	__sync_fetch_and_add(ns, ran);
}

/*
 * Account to @cpu's partition and to the group of @p (context @tctx) that it
 * ran @ran ns there and, before that, waited @waited ns to run there; the
 * demand (both, scaled by its weight) is what userspace balances.
 */
static __always_inline void group_account(struct task_struct *p,
					  struct task_ctx *tctx, s32 cpu,
					  u64 ran, u64 waited)
{
	struct group_runtime *rt;
	s32 part = part_of(cpu);
	u32 idx = (u32)part;
	u64 *total, demand;

	if (!group_accounting || part < 0 || !(ran + waited))
		return;
	demand = (ran + waited) * (p->scx.weight ?: 100) / 100;
	total = bpf_map_lookup_elem(&part_runtime, &idx);
	if (total)
		*total += ran;
	total = bpf_map_lookup_elem(&part_demand, &idx);
	if (total)
		*total += demand;
	if (!tctx->cgid)
		return;
	rt = bpf_map_lookup_elem(&group_runtime, &tctx->cgid);
	if (!rt) {
		/* only cgroups userspace registered are accounted in full */
		if (!bpf_map_lookup_elem(&group_prefs, &tctx->cgid)) {
			group_note_unregistered(tctx->cgid, ran);
			return;
		}
		bpf_map_update_elem(&group_runtime, &tctx->cgid,
				    &group_runtime_zero, BPF_NOEXIST);
		rt = bpf_map_lookup_elem(&group_runtime, &tctx->cgid);
		if (!rt)
			return;
	}
	rt->ns[idx & (MAX_PARTS - 1)] += ran;
	rt->demand_ns[idx & (MAX_PARTS - 1)] += demand;
}

/*
 * An idle CPU in the partition of @p's group for a wakeup on @prev: prev if
 * it is there and idle, else the nearest idle CPU there; -1 to fall back to
 * the normal search (no partition, or none of its CPUs idle).
 */
static __always_inline s32 pick_in_group_part(struct task_struct *p,
					      struct task_ctx *tctx, s32 prev)
{
	s32 part = group_part(tctx), cpu;

	if (part < 0 || p->nr_cpus_allowed != nr_cpu_ids)
		return -1;
	if (part_of(prev) == part && task_fits(prev, tctx->util) &&
	    claim_if_idle(prev)) {
		stat_inc(STAT_PREV_KEPT);
		return prev;
	}
	cpu = pick_idle_in(p, tctx->util, part_cpus(part), prev);
	if (cpu >= 0) {
		stat_inc(STAT_WAKE_GROUP_PART);
		return cpu;
	}
	stat_inc(STAT_GROUP_FALLBACK);
	return -1;
}

/*
 * The partition @p (context @tctx) should leave @cpu for: its group's, if it
 * is settled elsewhere and @p may run anywhere; -1 if it is where it belongs.
 */
static __always_inline s32 group_away_part(struct task_struct *p,
					   struct task_ctx *tctx, s32 cpu)
{
	s32 part = group_part(tctx);

	if (part < 0 || part_of(cpu) == part ||
	    p->nr_cpus_allowed != nr_cpu_ids)
		return -1;
	return part;
}

/* @p's slice ended on @cpu, outside its group's partition @part: an idle CPU
 * there, -1 if none. */
static __always_inline s32 group_target(struct task_struct *p,
					struct task_ctx *tctx, s32 part,
					s32 cpu)
{
	if (part < 0)
		return -1;
	return pick_idle_in(p, tctx->util, part_cpus(part), cpu);
}

/*
 * A CPU of @p's partition @part running a task that prefers @cpu's
 * partition, for the two to swap; -1 if GROUP_SWAP_PROBES CPUs of the
 * partition, from a random one on, show none. Constant work per call.
 */
static __always_inline s32 group_swap_cpu(struct task_struct *p, s32 part,
					  s32 cpu)
{
	s32 here = part_of(cpu), other;
	u32 first, n, start, i;

	if (here < 0 || part < 0 || part >= MAX_PARTS)
		return -1;
	first = part_first_cpu[part];
	n = part_nr_cpus[part];
	if (!n)
		return -1;
	start = bpf_get_prandom_u32() % n;
	bpf_for (i, 0, GROUP_SWAP_PROBES) {
		if (i >= n)
			break;
		other = part_cpu_list[(first + (start + i) % n) &
				      (MAX_CPUS - 1)];
		if (running_pref[cpu_idx(other)] == here &&
		    bpf_cpumask_test_cpu(other, p->cpus_ptr))
			return other;
	}
	return -1;
}

/*
 * @p's slice ended on @cpu, outside its group's partition @part, and no CPU
 * there idles: take the CPU of a task that belongs here, preempting it; its
 * own requeue (enqueue, not a wakeup) then brings it here. True if @p went.
 */
static __always_inline bool group_swap(struct task_struct *p, s32 part, s32 cpu,
				       u64 enq_flags)
{
	s32 other = group_swap_cpu(p, part, cpu);

	if (other < 0)
		return false;
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | other, slice_ns,
			   enq_flags | SCX_ENQ_PREEMPT);
	stat_inc(STAT_GROUP_SWAPS);
	return true;
}

/*
 * ops.tick of @p (context @tctx) on @cpu, at most once per slice of its
 * running time (as the seed checks once per gb_period): refresh the partition
 * its CPU's running_pref says it prefers (its group may have settled since it
 * started running: a task that keeps its CPU from slice to slice never passes
 * group_running() again, and the swap would never find it), and if it runs
 * outside that partition and can go (a CPU there idles, or runs a task that
 * belongs here), end its slice now so that its requeue moves it.
 */
static __always_inline void group_tick(struct task_struct *p,
				       struct task_ctx *tctx, s32 cpu, u64 now)
{
	const struct cpumask *idle, *mask;
	s32 part, *slot;
	bool go;

	if (!group_balancer ||
	    time_before(now, tctx->group_checked_at + slice_ns))
		return;
	tctx->group_checked_at = now;
	part = group_part(tctx);
	slot = &running_pref[cpu_idx(cpu)];
	if (*slot != part)
		*slot = part;
	if (part < 0 || part_of(cpu) == part ||
	    p->nr_cpus_allowed != nr_cpu_ids)
		return;
	mask = part_cpus(part);
	if (!mask)
		return;
	idle = scx_bpf_get_idle_cpumask();
	go = bpf_cpumask_intersects(idle, mask);
	scx_bpf_put_idle_cpumask(idle);
	if (!go && group_swap_cpu(p, part, cpu) < 0)
		return;
	p->scx.slice = 0;
	stat_inc(STAT_GROUP_TICK_MOVES);
}

/*
 * The CPU on whose shard @p, on @cpu, should queue: @cpu, or for a task of a
 * settled group outside its partition @part (group_away_part()), a CPU of the
 * partition (so that the partition's CPUs pull it, and foreign tasks drift
 * out as theirs drift in).
 */
static __always_inline s32 group_queue_cpu(struct task_struct *p, s32 part,
					   s32 cpu)
{
	const struct cpumask *mask;
	s32 target;

	if (part < 0 || task_is_pinned(p))
		return cpu;
	mask = part_cpus(part);
	if (!mask)
		return cpu;
	target = scx_bpf_pick_any_cpu(mask, 0);
	if (target < 0)
		return cpu;
	/* pick_any claims the CPU if it found it idle: kick it (no-op if busy)
	 */
	kick_claimed(target);
	stat_inc(STAT_GROUP_QUEUED);
	return target;
}

/* Per-CPU state of the steals from other LLCs (group_steal_from()). */
struct steal_ctx {
	u64 foreign_since; /* since when its scans left only other groups'
			    * tasks; 0: the last one found a task of its own */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct steal_ctx);
	__uint(max_entries, 1);
} steal_ctxs SEC(".maps");

/*
 * Take a task from @dsq, another LLC's shard (steal.bpf.c). With the group
 * balancer on, prefer tasks of groups settled on @cpu's partition or of no
 * group; another
 * group's task is taken only after the CPU's scans found nothing else for a
 * whole slice (as the kernel migrates a cache-hot task only after repeated
 * balance failures), so at most one per slice: its group is bound softly,
 * not exclusively.
 */
static __always_inline bool group_steal_from(s32 cpu, u64 dsq,
					     enum mosaic_stat stat)
{
	struct task_struct *p;
	struct task_ctx *tctx;
	struct steal_ctx *sctx;
	s32 mine = part_of(cpu), part;
	u32 key = 0, seen = 0;
	bool foreign_ok;
	u64 now;

	if (!group_balancer)
		return pull_from(dsq, stat);
	sctx = bpf_map_lookup_elem(&steal_ctxs, &key);
	if (!sctx)
		return false;
	now = scx_bpf_now();
	foreign_ok = sctx->foreign_since &&
		     !time_before(now, sctx->foreign_since + slice_ns);
	bpf_for_each (scx_dsq, p, dsq, 0) {
		if (++seen > STEAL_LOOK_AHEAD)
			break;
		/* the kernel ejects a scheduler that moves a task where it
		 * may not run (move_to_local skips such tasks by itself) */
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
			continue;
		tctx = task_ctx_of(p);
		part = tctx ? group_part(tctx) : -1;
		if (part >= 0 && part != mine && !foreign_ok)
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			sctx->foreign_since = 0;
			stat_inc(stat);
			return true;
		}
	}
	if (!sctx->foreign_since)
		sctx->foreign_since = now;
	return false;
}

/* Build the partition masks. Called from the sleepable ops.init. */
static s32 group_init(void)
{
	s32 ret, part;
	u32 cpu, n;

	if (!nr_parts)
		return 0;
	ret = alloc_masks(&part_masks, nr_parts);
	if (ret)
		return ret;
	bpf_rcu_read_lock();
	bpf_for (cpu, 0, nr_cpu_ids) {
		running_pref[cpu_idx(cpu)] = -1;
		part = part_of(cpu);
		if (part >= 0 && part < MAX_PARTS) {
			mask_set(&part_masks, (u32)part, cpu);
			part_nr_cpus[part]++;
		}
	}
	bpf_rcu_read_unlock();
	/* list the CPUs partition by partition, counting them again */
	bpf_for (part, 1, nr_parts) {
		if (part >= MAX_PARTS)
			break;
		part_first_cpu[part] =
			part_first_cpu[part - 1] + part_nr_cpus[part - 1];
		part_nr_cpus[part - 1] = 0;
	}
	if (nr_parts <= MAX_PARTS)
		part_nr_cpus[(nr_parts - 1) & (MAX_PARTS - 1)] = 0;
	bpf_for (cpu, 0, nr_cpu_ids) {
		part = part_of(cpu);
		if (part < 0 || part >= MAX_PARTS)
			continue;
		n = part_first_cpu[part] + part_nr_cpus[part]++;
		part_cpu_list[n & (MAX_CPUS - 1)] = cpu;
	}
	return 0;
}
