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
 * soft bind, never a cpuset.
 *
 * HOW
 * Every slice a task runs is added to its partition's total (part_runtime)
 * and, for registered cgroups, to that cgroup's runtime per partition
 * (group_runtime, per-CPU so that no line bounces); userspace reads both to
 * compute loads and exclusivity. A task's cgroup id (its cgroup v2 membership,
 * whatever controllers are enabled) is noted in its context when it starts
 * running.
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

/* Runtime of a cgroup in each partition, ns. */
struct group_runtime {
	u64 ns[MAX_PARTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__type(key, u64);
	__type(value, struct group_runtime);
	__uint(max_entries, MAX_GROUPS);
} group_runtime SEC(".maps");

/* Runtime of all tasks in each partition, ns. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, MAX_PARTS);
} part_runtime SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct dom_mask);
	__uint(max_entries, MAX_PARTS);
} part_masks SEC(".maps");

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

/* The task of @tctx, @p, starts running: note its cgroup (it may move). */
static __always_inline void group_running(struct task_struct *p,
					  struct task_ctx *tctx)
{
	if (group_accounting)
		tctx->cgid = task_cgroup_id(p);
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

/* Account @ns the task of @tctx ran on @cpu, to its partition and group. */
static __always_inline void group_account(struct task_ctx *tctx, s32 cpu,
					  u64 ns)
{
	struct group_runtime *rt, zero = {};
	s32 part = part_of(cpu);
	u32 idx = (u32)part;
	u64 *total;

	if (!group_accounting || part < 0 || !ns)
		return;
	total = bpf_map_lookup_elem(&part_runtime, &idx);
	if (total)
		*total += ns;
	if (!tctx->cgid)
		return;
	rt = bpf_map_lookup_elem(&group_runtime, &tctx->cgid);
	if (!rt) {
		/* only cgroups userspace registered are accounted */
		if (!bpf_map_lookup_elem(&group_prefs, &tctx->cgid))
			return;
		bpf_map_update_elem(&group_runtime, &tctx->cgid, &zero,
				    BPF_NOEXIST);
		rt = bpf_map_lookup_elem(&group_runtime, &tctx->cgid);
		if (!rt)
			return;
	}
	rt->ns[idx & (MAX_PARTS - 1)] += ns;
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
	    scx_bpf_test_and_clear_cpu_idle(prev)) {
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

/* @p's slice ended on @cpu, outside its group's partition: an idle CPU in. */
static __always_inline s32 group_target(struct task_struct *p,
					struct task_ctx *tctx, s32 cpu)
{
	s32 part = group_part(tctx);

	if (part < 0 || part_of(cpu) == part ||
	    p->nr_cpus_allowed != nr_cpu_ids)
		return -1;
	return pick_idle_in(p, tctx->util, part_cpus(part), cpu);
}

/*
 * The CPU on whose shard @p, on @cpu, should queue: @cpu, or for a task of a
 * settled group outside its partition, a CPU of the partition (so that the
 * partition's CPUs pull it, and foreign tasks drift out as theirs drift in).
 */
static __always_inline s32 group_queue_cpu(struct task_struct *p,
					   struct task_ctx *tctx, s32 cpu)
{
	const struct cpumask *mask;
	s32 part = group_part(tctx), target;

	if (part < 0 || part_of(cpu) == part ||
	    p->nr_cpus_allowed != nr_cpu_ids || task_is_pinned(p))
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

/* Build the partition masks. Called from the sleepable ops.init. */
static s32 group_init(void)
{
	s32 ret, part;
	u32 cpu;

	if (!nr_parts)
		return 0;
	ret = alloc_masks(&part_masks, nr_parts);
	if (ret)
		return ret;
	bpf_rcu_read_lock();
	bpf_for (cpu, 0, nr_cpu_ids) {
		part = part_of(cpu);
		if (part >= 0)
			mask_set(&part_masks, (u32)part, cpu);
	}
	bpf_rcu_read_unlock();
	return 0;
}
