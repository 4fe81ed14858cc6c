/* SPDX-License-Identifier: GPL-2.0 */
/*
 * weight.bpf.c - cgroup cpu.weight and cpu.idle, honoured through the
 * hierarchy.
 *
 * WHAT
 * A task's virtual time is charged by the share of the machine cgroup v2
 * gives it: a cgroup's cpu.weight splits its parent's share among the
 * parent's active (runnable) children, and the tasks of a cgroup split its
 * share by nice weight. Two busy cgroups of cpu.weight 100 and 300 get CPU
 * time 1:3 however many tasks each runs; tasks of the root cgroup compete
 * with top-level cgroups as a nice 0 task with a cgroup of weight 100.
 * A cgroup with cpu.idle set weighs what the kernel gives SCHED_IDLE (3
 * against a nice 0 task's 1024) among its siblings, whatever its cpu.weight,
 * and its tasks run only on CPUs that others leave idle: they wait on their
 * LLC's idle queue, in turn (first in, first out), which a CPU takes from only
 * when its LLC has nothing else queued - or when the head has waited
 * idle_wait_ns (a quarter of the watchdog timeout) and no other task queued
 * for the CPU waited longer, so that no task waits unboundedly - and they
 * give up their CPU at the next tick when a task waits on the CPU's own queue
 * or shard, or on another LLC's with no CPU
 * there to take it (the overload flag, gate.bpf.c): the CPU steals it before
 * an idle cgroup's task runs on.
 *
 * HOW
 * The kernel reports every cgroup with the cpu controller (ops.cgroup_init,
 * cgroup_set_weight, cgroup_exit) and every move of a task (cgroup_move).
 * Each cgroup keeps `load`, the summed weight of its runnable tasks and
 * active child cgroups, and `nr_active`, how many of them there are. A task
 * adds its weight when it becomes runnable (ops.runnable) and takes it back
 * when it stops being so (ops.quiescent) - first in a few per-CPU slots, which
 * the CPU folds into the shared counters at its next tick or when it goes
 * idle (weight_flush()); a cgroup whose count leaves or reaches zero adds or
 * takes back its cpu.weight one level up, so the walk up the tree happens on
 * those transitions only. Charging walks up from the task's cgroup:
 * effective weight = task weight x its cgroup's weight / its cgroup's load x
 * ... up to the top-level cgroup (Q16 fixed point); vtime advances by
 * runtime x 100 / effective weight. A weight changed while the
 * cgroup is active can leave its parent's load off by the difference until
 * the cgroup idles; loads are clamped, never trusted below the charge's own
 * share. Loads count in LOAD_SCALE units of cpu.weight (nice 0: 3200), fine
 * enough for the idle weight. Cost: per wakeup and per sleep of a task
 * outside the root cgroup, a scan of the CPU's CG_PENDING_SLOTS slots (no
 * shared write); per tick, two atomic adds per cgroup that changed on the CPU
 * (a line shared by the cgroup's CPUs); per charge, a walk of at most
 * MAX_CGROUP_DEPTH lookups - at most once per SHARE_REFRESH_NS per task
 * (task_share() caches the result). Loads lag by at most a tick.
 *
 * WHY
 * Users set cpu.weight and expect it to hold; scheduling by nice weight
 * alone hands a cgroup CPU time in proportion to how many tasks it runs.
 * Inside an LLC every queue is ordered by this vtime; across LLCs, the
 * periodic scan spreads the same shares evenly (steal.bpf.c).
 */

/* loads and cgroup weights: cpu.weight x LOAD_SCALE (nice 0: 3200) */
#define LOAD_SCALE 32
/* cpu.idle: the kernel's SCHED_IDLE weight, 3 against nice 0's 1024 */
#define IDLE_LOAD (3 * 100 * LOAD_SCALE / 1024)
/* a task's cached share of the machine is recomputed at most this often:
 * once per tick at HZ=1000 (task_share()) */
#define SHARE_REFRESH_NS 1000000ULL

/* some cgroup has had cpu.idle set: until then the idle queues are off (never
 * cleared, so that no task is ever left on an idle queue nobody reads) */
bool idle_cgroups_seen;

/* The cgroup id of @cgrp. */
static __always_inline u64 cgroup_id_of(struct cgroup *cgrp)
{
	return cgrp->kn->id;
}

/*
 * Add @weight (signed) to the load of cgroup @id and @step to its count of
 * active members; if that made it active (count above zero) or idle, do the
 * same with its cpu.weight (and a step of one) one level up, and so on.
 * Counts may dip below zero for a while: the CPUs fold their changes
 * (weight_flush()) in any order.
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
		if (weight)
			__sync_fetch_and_add(&cg->load, weight);
		if (!step)
			return;
		before = __sync_fetch_and_add(&cg->nr_active, step);
		if (!cg->level || (before > 0) == (before + step > 0))
			return;
		step = before > 0 ? -1 : 1;
		weight = step * (s64)cg->weight;
		id = cg->parent;
	}
}

/*
 * A CPU's load changes not yet folded into the shared cg_nodes: per cgroup
 * (CG_PENDING_SLOTS of them), the weight and the count of its tasks that
 * became runnable or quiescent on this CPU since its last weight_flush().
 */
struct cg_pending {
	u64 id[CG_PENDING_SLOTS];
	s64 load[CG_PENDING_SLOTS];
	s64 nr[CG_PENDING_SLOTS];
	u32 used;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, u32);
	__type(value, struct cg_pending);
	__uint(max_entries, 1);
} cg_pendings SEC(".maps");

/* This CPU's pending cgroup load changes. */
static __always_inline struct cg_pending *cg_pending_here(void)
{
	u32 key = 0;

	return bpf_map_lookup_elem(&cg_pendings, &key);
}

/* Fold @pd's pending changes into the cgroups' shared counters; empty it. */
static __always_inline void cg_pending_fold(struct cg_pending *pd)
{
	u32 i, n = pd->used;

	bpf_for (i, 0, CG_PENDING_SLOTS) {
		if (i >= n)
			break;
		if (!pd->load[i] && !pd->nr[i])
			continue;
		cg_update(pd->id[i], pd->load[i], pd->nr[i]);
		stat_inc(STAT_CGROUP_LOAD_FOLDS);
	}
	pd->used = 0;
}

/*
 * Note on this CPU that cgroup @id gained @weight (signed) and @step members:
 * added to its pending slot, so that a task that wakes and sleeps between two
 * folds leaves the shared counters untouched. All slots taken: fold first.
 */
static __always_inline void cg_note(u64 id, s64 weight, s64 step)
{
	struct cg_pending *pd = cg_pending_here();
	u32 i, n;

	stat_inc(STAT_CGROUP_LOAD_NOTES);
	if (!pd) {
		cg_update(id, weight, step);
		return;
	}
	n = pd->used;
	bpf_for (i, 0, CG_PENDING_SLOTS) {
		if (i >= n)
			break;
		if (pd->id[i] == id) {
			pd->load[i] += weight;
			pd->nr[i] += step;
			return;
		}
	}
	if (n >= CG_PENDING_SLOTS) {
		cg_pending_fold(pd);
		n = 0;
	}
	pd->id[n] = id;
	pd->load[n] = weight;
	pd->nr[n] = step;
	pd->used = n + 1;
}

/*
 * Fold this CPU's pending cgroup load changes: at every tick of the CPU and
 * when it goes idle, so that loads lag by at most a tick - the age that
 * task_share() lets a share reach anyway.
 */
static __always_inline void weight_flush(void)
{
	struct cg_pending *pd;

	if (!cgroup_weights || !(pd = cg_pending_here()) || !pd->used)
		return;
	cg_pending_fold(pd);
}

/* The weight @cg counts with in its parent's load (load units). */
static __always_inline u32 cg_weight(const struct cg_node *cg)
{
	return cg->idle ? IDLE_LOAD : cg->cpu_weight * LOAD_SCALE;
}

/* The weight of a task of nice weight @w (cpu.weight units), load units. */
static __always_inline u32 task_load(u32 w)
{
	return (w ?: 100) * LOAD_SCALE;
}

/* Note that @p belongs to @cgrp (of the cpu controller); 0 for the root. */
static __always_inline void weight_set_cgroup(struct task_ctx *tctx,
					      struct cgroup *cgrp)
{
	tctx->wcg = cgrp && cgrp->level ? cgroup_id_of(cgrp) : 0;
	tctx->share = 0;
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
	tctx->queued_weight = task_load(p->scx.weight);
	cg_note(tctx->wcg_queued, tctx->queued_weight, 1);
}

/* @p stops being runnable: take its weight back. */
static __always_inline void weight_quiescent(struct task_ctx *tctx)
{
	if (!tctx->wcg_queued)
		return;
	cg_note(tctx->wcg_queued, -(s64)tctx->queued_weight, -1);
	tctx->wcg_queued = 0;
}

/*
 * The weight of @p's share of the machine in Q16, relative to a nice 0 task
 * of the root cgroup (100 << WEIGHT_SHIFT). Notes on the way whether one of
 * its cgroups is idle (tctx->in_idle_cgroup).
 */
static __always_inline u64 task_share_weight(struct task_struct *p,
					     struct task_ctx *tctx)
{
	u64 w = p->scx.weight ?: 100, id = tctx->wcg_queued, eff, part;
	bool idle = false;
	struct cg_node *cg;
	s64 load;
	u32 i;

	eff = w << WEIGHT_SHIFT;
	part = tctx->queued_weight;
	bpf_for (i, 0, MAX_CGROUP_DEPTH) {
		cg = id ? bpf_map_lookup_elem(&cg_nodes, &id) : NULL;
		if (!cg || !cg->level)
			break;
		idle |= cg->idle;
		load = cg->load;
		if (load < (s64)part || load <= 0)
			load = part ?: 1;
		eff = eff * cg->weight / (u64)load;
		part = cg->weight;
		id = cg->parent;
	}
	tctx->in_idle_cgroup = idle;
	return eff ?: 1;
}

/* @p's share of the machine as last computed (Q16), without a refresh. */
static __always_inline u64 task_share_cached(struct task_struct *p,
					     struct task_ctx *tctx)
{
	if (tctx && tctx->wcg_queued && tctx->share)
		return tctx->share;
	return (u64)(p->scx.weight ?: 100) << WEIGHT_SHIFT;
}

/*
 * @p's share of the machine at @now in Q16 (a nice 0 task of the root
 * cgroup: 100 << WEIGHT_SHIFT): its nice weight, times its cgroups' shares if
 * any. The latter is the walk of task_share_weight(), cached in the task and
 * redone at most every SHARE_REFRESH_NS (and after it moved to another
 * cgroup): loads change at every wakeup and sleep, but a share a millisecond
 * old charges a run as well as a fresh one, and a task that wakes and stops
 * many times a millisecond walks the tree once.
 */
static __always_inline u64 task_share(struct task_struct *p,
				      struct task_ctx *tctx, u64 now)
{
	if (!tctx || !tctx->wcg_queued) {
		if (tctx)
			tctx->in_idle_cgroup = false;
		return (u64)(p->scx.weight ?: 100) << WEIGHT_SHIFT;
	}
	if (!tctx->share ||
	    !time_before(now, tctx->share_at + SHARE_REFRESH_NS)) {
		tctx->share = task_share_weight(p, tctx);
		tctx->share_at = now;
	}
	return tctx->share;
}

/*
 * Track @cgrp with cpu.weight @cpu_weight and cpu.idle @idle; NULL if it does
 * not fit (counted: its tasks are charged like the root's until a later
 * cgroup op finds room, cg_node_get()).
 */
static __always_inline struct cg_node *cg_node_add(struct cgroup *cgrp,
						   u32 cpu_weight, bool idle)
{
	struct cg_node node = {
		.cpu_weight = cpu_weight, .idle = idle, .level = cgrp->level};
	struct cgroup *parent;
	struct cg_node *cg;
	u64 id = cgroup_id_of(cgrp);

	node.weight = cg_weight(&node);
	if (cgrp->level > 0) {
		parent = bpf_cgroup_ancestor(cgrp, cgrp->level - 1);
		if (parent) {
			node.parent = cgroup_id_of(parent);
			bpf_cgroup_release(parent);
		}
	}
	/* a node added meanwhile by another op stays as it is */
	bpf_map_update_elem(&cg_nodes, &id, &node, BPF_NOEXIST);
	cg = bpf_map_lookup_elem(&cg_nodes, &id);
	if (!cg) {
		stat_inc(STAT_CGROUPS_UNTRACKED);
		return NULL;
	}
	if (cg->idle)
		idle_cgroups_seen = true;
	return cg;
}

/* @cgrp's node; one that did not fit at ops.cgroup_init is tried again. */
static __always_inline struct cg_node *cg_node_get(struct cgroup *cgrp)
{
	u64 id = cgroup_id_of(cgrp);
	struct cg_node *cg = bpf_map_lookup_elem(&cg_nodes, &id);

	return cg ?: cg_node_add(cgrp, 100, false);
}

/* May sleep: it makes the cgroup's cpu.max park queue (bandwidth.bpf.c). */
s32 BPF_STRUCT_OPS_SLEEPABLE(mosaic_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	bool idle = false;
	struct cg_node *cg;
	u64 id = cgroup_id_of(cgrp);

	if (bpf_core_field_exists(args->sched_idle))
		idle = args->sched_idle;
	cg = cg_node_add(cgrp, args->weight, idle);
	if (!cg || !cgrp->level)
		return 0;
	if (bw_cgroup_init(id))
		cg->has_park = true;
	if (bpf_core_field_exists(args->bw_quota_us))
		bw_set(id, args->bw_period_us, args->bw_quota_us,
		       args->bw_burst_us);
	return 0;
}

void BPF_STRUCT_OPS(mosaic_cgroup_exit, struct cgroup *cgrp)
{
	u64 id = cgroup_id_of(cgrp);
	struct cg_node *cg = bpf_map_lookup_elem(&cg_nodes, &id);

	bw_cgroup_exit(id, cg && cg->has_park);
	bpf_map_delete_elem(&cg_nodes, &id);
}

/*
 * Cgroup @id's weight among its siblings changed (cpu.weight or cpu.idle):
 * set it, and if the cgroup is active, move its parent's load by the change.
 */
static __always_inline void cg_reweight(u64 id, u32 cpu_weight, bool idle)
{
	struct cg_node *cg = bpf_map_lookup_elem(&cg_nodes, &id), *parent;
	s64 delta;

	if (!cg)
		return;
	if (idle)
		idle_cgroups_seen = true;
	cg->cpu_weight = cpu_weight;
	cg->idle = idle;
	delta = (s64)cg_weight(cg) - (s64)cg->weight;
	cg->weight = cg_weight(cg);
	if (cg->nr_active <= 0 || !cg->level)
		return;
	id = cg->parent;
	parent = bpf_map_lookup_elem(&cg_nodes, &id);
	if (parent)
		__sync_fetch_and_add(&parent->load, delta);
}

void BPF_STRUCT_OPS(mosaic_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	struct cg_node *cg = cg_node_get(cgrp);

	if (cg)
		cg_reweight(cgroup_id_of(cgrp), weight, cg->idle);
}

/* cpu.idle written (kernels from 6.19 on; older ones never call this). */
void BPF_STRUCT_OPS(mosaic_cgroup_set_idle, struct cgroup *cgrp, bool idle)
{
	struct cg_node *cg = cg_node_get(cgrp);

	if (cg)
		cg_reweight(cgroup_id_of(cgrp), cg->cpu_weight, idle);
}

/* DSQ id of LLC @llc's idle-cgroup queue (see intf.h). */
static __always_inline u64 idle_dsq_id(u32 llc)
{
	return IDLE_DSQ_BASE + llc;
}

/* Create every LLC's idle-cgroup queue. Called from ops.init. */
static s32 idle_queues_init(void)
{
	return create_dsqs(idle_dsq_id(0), nr_llcs, "idle queue");
}

/*
 * ops.enqueue: queue @p, on @cpu, at the tail of its LLC's idle-cgroup queue
 * if one of its cgroups has cpu.idle (pinned tasks stay on their CPU's queue,
 * exempt ones, task_exempt_from_limits(), on their shard). True if queued
 * there. First in, first out: the head is the task that has waited longest,
 * the one pull_idle_cgroup() bounds. (Ordered by vtime, a task requeued after
 * its turn could land ahead of waiting ones - an idle weight's charge hits
 * the lead bound whatever it ran - and hide them from the overdue check.)
 * The task's vtime is left as it is: the queue orders nothing a clock tracks.
 */
static __always_inline bool idle_cgroup_queue(struct task_struct *p,
					      struct task_ctx *tctx, s32 cpu,
					      u64 enq_flags)
{
	u32 llc = llc_of(cpu);

	if (!tctx->in_idle_cgroup || task_is_pinned(p) ||
	    task_exempt_from_limits(p))
		return false;
	scx_bpf_dsq_insert(p, idle_dsq_id(llc), slice_ns, enq_flags);
	stat_inc(STAT_IDLE_CGROUP_QUEUED);
	return true;
}

/*
 * ops.dispatch on @cpu: take the head of the LLC's idle-cgroup queue if it
 * waited idle_wait_ns (@overdue: the bound on its wait) and no task queued for
 * @cpu waited longer (oldest first), else only if nothing else of the LLC is
 * queued (the caller asks after the shards).
 */
static __always_inline bool pull_idle_cgroup(s32 cpu, bool overdue)
{
	u64 dsq = idle_dsq_id(llc_of(cpu));
	struct task_struct *head;
	struct task_ctx *tctx;

	if (!idle_cgroups_seen || !scx_bpf_dsq_nr_queued(dsq))
		return false;
	if (overdue) {
		head = scx_bpf_dsq_peek(dsq);
		tctx = head ? task_ctx_of(head) : NULL;
		/* not yet overdue, or a task queued for @cpu waited longer */
		if (!tctx || !tctx->runnable_at ||
		    time_before(scx_bpf_now(),
				tctx->runnable_at + idle_wait_ns) ||
		    cpu_has_older_waiter(cpu, tctx->runnable_at))
			return false;
	}
	if (!pull_from(dsq, STAT_IDLE_CGROUP_PULLS))
		return false;
	if (overdue)
		stat_inc(STAT_IDLE_CGROUP_OVERDUE);
	return true;
}

/*
 * ops.dispatch on @cpu, about to idle with its own LLC's idle queue empty:
 * take from another LLC's idle queue, so that idle cgroups use every idle CPU
 * of the machine. Reads one length per LLC, only while idle cgroups exist.
 */
static __always_inline bool pull_idle_cgroup_remote(s32 cpu)
{
	u32 i, own = llc_of(cpu);

	if (!idle_cgroups_seen)
		return false;
	bpf_for (i, 0, nr_llcs) {
		if (i != own && scx_bpf_dsq_nr_queued(idle_dsq_id(i)) &&
		    pull_from(idle_dsq_id(i), STAT_IDLE_CGROUP_PULLS))
			return true;
	}
	return false;
}

/*
 * Whether @prev, at ops.dispatch, is a still runnable task of an idle cgroup:
 * it then comes after other LLCs' work, and takes turns with its peers on the
 * LLC's idle queue. No task context read until some cgroup has had cpu.idle.
 */
static __always_inline bool prev_in_idle_cgroup(struct task_struct *prev)
{
	struct task_ctx *tctx;

	if (!idle_cgroups_seen || !prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return false;
	tctx = task_ctx_of(prev);
	return tctx && tctx->in_idle_cgroup;
}

/*
 * At a tick: @p, of an idle cgroup, gives up its CPU if a task waits on the
 * CPU's shard, or one waits that only another LLC can take (the overload
 * flag: dispatch then steals it; SCHED_IDLE: others first), unless it is
 * exempt (task_exempt_from_limits()). Known from its last charge.
 */
static __always_inline void idle_cgroup_tick(struct task_struct *p,
					     struct task_ctx *tctx, s32 cpu)
{
	if (!tctx->in_idle_cgroup || task_exempt_from_limits(p) ||
	    !(cpu_has_waiters(cpu) || overload_up()))
		return;
	p->scx.slice = 0;
	stat_inc(STAT_IDLE_CGROUP_YIELDS);
}

void BPF_STRUCT_OPS(mosaic_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = task_ctx_of(p);

	if (tctx)
		weight_set_cgroup(tctx, to);
}
