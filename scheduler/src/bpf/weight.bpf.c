/* SPDX-License-Identifier: GPL-2.0 */
/*
 * weight.bpf.c - cgroup cpu.weight, honoured through the hierarchy.
 *
 * WHAT
 * A task's virtual time is charged by the share of the machine cgroup v2
 * gives it: a cgroup's cpu.weight splits its parent's share among the
 * parent's active (runnable) children, and the tasks of a cgroup split its
 * share by nice weight. Two busy cgroups of cpu.weight 100 and 300 get CPU
 * time 1:3 however many tasks each runs; tasks of the root cgroup compete
 * with top-level cgroups as a nice 0 task with a cgroup of weight 100.
 *
 * HOW
 * The kernel reports every cgroup with the cpu controller (ops.cgroup_init,
 * cgroup_set_weight, cgroup_exit) and every move of a task (cgroup_move).
 * Each cgroup keeps `load`, the summed weight of its runnable tasks and
 * active child cgroups, and `nr_active`, how many of them there are. A task
 * adds its weight when it becomes runnable (ops.runnable) and takes it back
 * when it stops being so (ops.quiescent); a cgroup whose count leaves or
 * reaches zero adds or takes back its cpu.weight one level up, so the walk
 * up the tree happens on those transitions only. Charging walks up from the
 * task's cgroup: effective weight = task weight x its cgroup's weight / its
 * cgroup's load x ... up to the top-level cgroup (Q16 fixed point); vtime
 * advances by runtime x 100 / effective weight. A weight changed while the
 * cgroup is active can leave its parent's load off by the difference until
 * the cgroup idles; loads are clamped, never trusted below the charge's own
 * share. Cost: two atomic adds on the cgroup's counters per wakeup and per
 * sleep of a task outside the root cgroup (a line shared by the cgroup's
 * CPUs), and a walk of at most MAX_CGROUP_DEPTH lookups per charge.
 *
 * WHY
 * Users set cpu.weight and expect it to hold; scheduling by nice weight
 * alone hands a cgroup CPU time in proportion to how many tasks it runs.
 * Cross-LLC fairness is left to placement and stealing (tasks spread by
 * count, not weight); inside an LLC every queue is ordered by this vtime.
 */

#define WEIGHT_SHIFT 16

/* A cgroup with the cpu controller, keyed by cgroup id. */
struct cg_node {
	u64 parent;    /* parent's cgroup id; 0 for the root */
	u32 weight;    /* its cpu.weight, 1..10000 (100: default) */
	u32 level;     /* depth: 0 is the root cgroup */
	s64 load;      /* weight of its runnable tasks and active children */
	s64 nr_active; /* how many runnable tasks and active children */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u64);
	__type(value, struct cg_node);
	__uint(max_entries, MAX_WEIGHT_CGROUPS);
} cg_nodes SEC(".maps");

/* The cgroup id of @cgrp. */
static __always_inline u64 cgroup_id_of(struct cgroup *cgrp)
{
	return cgrp->kn->id;
}

/*
 * Add @weight (signed) to the load of cgroup @id and @step (+1/-1) to its
 * count of active members; if that made it active or idle, do the same with
 * its cpu.weight one level up, and so on.
 */
static __always_inline void cg_update(u64 id, s64 weight, s64 step)
{
	struct cg_node *cg;
	s64 before;
	u32 i;

	bpf_for (i, 0, MAX_CGROUP_DEPTH) {
		cg = bpf_map_lookup_elem(&cg_nodes, &id);
		if (!cg)
			return;
		__sync_fetch_and_add(&cg->load, weight);
		before = __sync_fetch_and_add(&cg->nr_active, step);
		if (!cg->level || before != (step > 0 ? 0 : 1))
			return;
		weight = step * (s64)cg->weight;
		id = cg->parent;
	}
}

/* Note that @p belongs to @cgrp (of the cpu controller); 0 for the root. */
static __always_inline void weight_set_cgroup(struct task_ctx *tctx,
					      struct cgroup *cgrp)
{
	tctx->wcg = cgrp && cgrp->level ? cgroup_id_of(cgrp) : 0;
}

/*
 * @p becomes runnable: it counts in its cgroup's load until quiescent. Tasks
 * of the root cgroup are charged by their own weight and count nowhere.
 */
static __always_inline void weight_runnable(struct task_struct *p,
					    struct task_ctx *tctx)
{
	if (!cgroup_weights || tctx->wcg_queued || !tctx->wcg)
		return;
	tctx->wcg_queued = tctx->wcg;
	tctx->queued_weight = p->scx.weight ?: 100;
	cg_update(tctx->wcg_queued, tctx->queued_weight, 1);
}

/* @p stops being runnable: take its weight back. */
static __always_inline void weight_quiescent(struct task_ctx *tctx)
{
	if (!tctx->wcg_queued)
		return;
	cg_update(tctx->wcg_queued, -(s64)tctx->queued_weight, -1);
	tctx->wcg_queued = 0;
}

/*
 * The weight of @p's share of the machine in Q16, relative to a nice 0 task
 * of the root cgroup (100 << WEIGHT_SHIFT).
 */
static __always_inline u64 task_share_weight(struct task_struct *p,
					     struct task_ctx *tctx)
{
	u64 w = p->scx.weight ?: 100, id = tctx->wcg_queued, eff, part;
	struct cg_node *cg;
	s64 load;
	u32 i;

	eff = w << WEIGHT_SHIFT;
	part = tctx->queued_weight;
	bpf_for (i, 0, MAX_CGROUP_DEPTH) {
		cg = id ? bpf_map_lookup_elem(&cg_nodes, &id) : NULL;
		if (!cg || !cg->level)
			break;
		load = cg->load;
		if (load < (s64)part || load <= 0)
			load = part ?: 1;
		eff = eff * cg->weight / (u64)load;
		part = cg->weight;
		id = cg->parent;
	}
	return eff ?: 1;
}

/*
 * @p's share of the machine in Q16 (a nice 0 task of the root cgroup:
 * 100 << WEIGHT_SHIFT): its nice weight, times its cgroups' shares if any.
 */
static __always_inline u64 task_share(struct task_struct *p,
				      struct task_ctx *tctx)
{
	if (!tctx || !tctx->wcg_queued)
		return (u64)(p->scx.weight ?: 100) << WEIGHT_SHIFT;
	return task_share_weight(p, tctx);
}

s32 BPF_STRUCT_OPS(mosaic_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	struct cg_node node = {.weight = args->weight, .level = cgrp->level};
	struct cgroup *parent;
	u64 id = cgroup_id_of(cgrp);

	if (cgrp->level > 0) {
		parent = bpf_cgroup_ancestor(cgrp, cgrp->level - 1);
		if (parent) {
			node.parent = cgroup_id_of(parent);
			bpf_cgroup_release(parent);
		}
	}
	/* a cgroup that does not fit is charged like the root's tasks */
	if (bpf_map_update_elem(&cg_nodes, &id, &node, BPF_ANY))
		stat_inc(STAT_CGROUPS_UNTRACKED);
	return 0;
}

void BPF_STRUCT_OPS(mosaic_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgroup_id_of(cgrp);

	bpf_map_delete_elem(&cg_nodes, &id);
}

void BPF_STRUCT_OPS(mosaic_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	u64 id = cgroup_id_of(cgrp);
	struct cg_node *cg = bpf_map_lookup_elem(&cg_nodes, &id), *parent;
	s64 delta;

	if (!cg)
		return;
	delta = (s64)weight - (s64)cg->weight;
	cg->weight = weight;
	if (cg->nr_active <= 0 || !cg->level)
		return;
	id = cg->parent;
	parent = bpf_map_lookup_elem(&cg_nodes, &id);
	if (parent)
		__sync_fetch_and_add(&parent->load, delta);
}

void BPF_STRUCT_OPS(mosaic_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = task_ctx_of(p);

	if (tctx)
		weight_set_cgroup(tctx, to);
}
