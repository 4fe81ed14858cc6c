/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mosaic.bpf.h - state shared by every mechanism file: the tunables Rust
 * writes before load, the topology tables, the counters, and small helpers.
 *
 * The scheduler is one translation unit (main.bpf.c includes each mechanism
 * file), so helpers are static and the verifier sees them inlined; the
 * simulator compiles the same unit natively.
 */
#ifndef __MOSAIC_BPF_H
#define __MOSAIC_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"

/*
 * Tunables: set from Rust before load (tunables.rs, every one of them),
 * read-only afterwards. An initialiser is the value Rust writes with the
 * default options on a one-CPU machine; tunables.rs's tests check that.
 */
const volatile u32 nr_cpu_ids = 1;	/* CPUs with ids below this exist */
const volatile u32 nr_llcs = 1;		/* LLCs, numbered 0..nr_llcs-1 */
const volatile u32 nr_shards = 1;	/* shards over all LLCs */
const volatile u64 slice_ns = 20000000; /* time slice given to each task */
/* seed 000's NO_SHARED_RUNQ baseline, per-CPU queues (--shared-runq auto's
 * design on machines of up to 72 CPUs) */
const volatile bool no_shared_runq = true;
/* seed 000 as the seed built it: tasks wait on their CPU's own queue, the
 * shards only index which CPUs have waiters (shard.bpf.c) */
const volatile bool seed_runq;
const volatile bool smt_enabled;      /* some core has several threads */
const volatile bool asym_capacity;    /* CPUs differ in capacity */
const volatile bool no_l2_locality;   /* seed 001 off: LLC is the near domain */
const volatile bool same_rq_pull;     /* own shard: a task on this rq first */
const volatile bool no_prev_first;    /* seed 002 off: asym skips prev check */
const volatile bool no_wake_pair;     /* a sync pair no longer shares a CPU */
const volatile bool no_wake_preempt;  /* woken tasks never preempt */
const volatile bool no_overload_gate; /* seed 003 off: always steal-scan */
const volatile bool no_llc_balance;   /* busy LLCs do not even out */
const volatile bool group_accounting; /* --gb-parent given: account cgroups */
const volatile bool group_balancer;   /* ... and bind them to partitions */
const volatile u32 nr_parts;	      /* CPU partitions of the group balancer */
const volatile bool cgroup_weights = true; /* honour cgroup cpu.weight */
/* period of the overload gate's scan */
const volatile u64 overload_scan_ns = 10000000;
/* longest wait the vtime lead bound aims at (vtime.bpf.c) */
const volatile u64 wait_target_ns = 500000000;
/* shortest slice while tasks pile up on a CPU's own queue (shard.bpf.c) */
const volatile u64 min_slice_ns = 1250000;
/* longest wait of a cpu.idle cgroup's task on a busy LLC (weight.bpf.c) */
const volatile u64 idle_wait_ns = 7500000000;
/* test switch: lose every task with this command name */
const volatile char debug_drop_comm[MAX_COMM];

/* Topology tables, filled by Rust (topology.rs) */
const volatile u32 nr_l2s = 1;		   /* L2 groups, numbered 0..nr_l2s-1 */
const volatile u32 cpu_llc[MAX_CPUS];	   /* LLC index of each CPU */
const volatile u32 cpu_l2[MAX_CPUS];	   /* L2 group index of each CPU */
const volatile s32 cpu_part[MAX_CPUS];	   /* partition of each CPU, -1 none */
const volatile u32 cpu_capacity[MAX_CPUS]; /* capacity, 1024 = biggest */
const volatile u32 llc_node[MAX_LLCS];	   /* NUMA node of each LLC */
const volatile u32 cpu_shard[MAX_CPUS];	   /* global shard index of each CPU */
const volatile u32 shard_llc[MAX_SHARDS];  /* LLC of each shard */
const volatile u32 llc_first_shard[MAX_LLCS]; /* first global shard of an LLC */
const volatile u32 llc_nr_shards[MAX_LLCS];   /* shards in an LLC */
const volatile u32 llc_nr_cpus[MAX_LLCS];     /* CPUs in an LLC */

UEI_DEFINE(uei);

/* Per-CPU counters indexed by enum mosaic_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, NR_MOSAIC_STATS);
} stats SEC(".maps");

/* Per-CPU count of enqueues per shard: shows how load spreads over shards. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u64));
	__uint(max_entries, MAX_SHARDS);
} shard_enqueues SEC(".maps");

/* Per-task scheduling state, created in ops.init_task. */
struct task_ctx {
	u64 started_at;	   /* when the task last started running */
	u64 util_at;	   /* when util was last brought up to date */
	u32 util;	   /* decayed average of running time, capacity units */
	s32 last_cpu;	   /* CPU it last ran on, -1 before its first run */
	s32 wake_cpu;	   /* idle CPU claimed for it at wakeup, -1 if none */
	s32 last_wakee;	   /* pid of the task it last woke, 0: none yet */
	u64 cgid;	   /* id of its cgroup (group balancer) */
	u64 wcg;	   /* id of its cpu-controller cgroup, 0: root */
	u64 wcg_queued;	   /* ... that counts it as runnable now, 0: none */
	u32 queued_weight; /* the weight it counts with there */
	u64 share;	   /* its share of the machine, Q16, as of share_at;
			    * 0: to be computed (weight.bpf.c) */
	u64 share_at;
	u64 runnable_at;      /* when it last became runnable, 0: running */
	u64 runnable_frac_at; /* when runnable_frac was last brought up to
			       * date: it last woke or stopped to sleep */
	u32 runnable_frac;    /* how much of the recent past it was runnable,
			       * 1/1024ths (steal.bpf.c: the balance's load) */
	u64 group_checked_at; /* last tick that checked its partition */
	u64 last_charge;      /* vtime its current or last run cost it */
	u64 pair_woke_at;     /* when it last sync-woke the task it pairs
			       * with, 0: it has stopped since */
	u32 pair_long_share;  /* of its pair wakeups, the share after which
			       * it ran on past PAIR_IDLE_STARTS idle
			       * starts, 1/1024ths, decayed */
	u32 vtime_clock;      /* clock its vtime is relative to (clock_id()) */
	bool vtime_queued;    /* it waits in a vtime-ordered queue */
	bool woke_busy;	      /* its select_cpu found no idle CPU: enqueue
			       * does not search again */
	bool woke_on_idle;    /* its select_cpu claimed an idle CPU for it: its
			       * wait times how fast an idle CPU starts */
	bool in_idle_cgroup;  /* one of its cgroups has cpu.idle (as of its
			       * last charge) */
	u32 bw_parked;	      /* on a cpu.max park queue; cleared by one
			       * atomic swap, whose winner counts the leave */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

/* @p's context, or NULL if it has none. */
static __always_inline struct task_ctx *task_ctx_of(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* Add one to counter @idx of @map on this CPU. */
static __always_inline void count(void *map, u32 idx)
{
	u64 *cnt = bpf_map_lookup_elem(map, &idx);

	if (cnt)
		(*cnt)++;
}

/* Add one to the mosaic_stat counter @idx. */
static __always_inline void stat_inc(enum mosaic_stat idx)
{
	count(&stats, idx);
}

/* Add @n to the mosaic_stat counter @idx. */
static __always_inline void stat_add(enum mosaic_stat idx, u64 n)
{
	u32 key = idx;
	u64 *cnt = bpf_map_lookup_elem(&stats, &key);

	if (cnt)
		*cnt += n;
}

/*
 * Raise the mosaic_stat maximum @idx (a *_MAX_* counter) to @v if larger;
 * whether it did.
 */
static __always_inline bool stat_max(enum mosaic_stat idx, u64 v)
{
	u32 key = idx;
	u64 *max = bpf_map_lookup_elem(&stats, &key);

	if (!max || v <= *max)
		return false;
	*max = v;
	return true;
}

/* Whether @cpu is idle (without claiming it). */
static __always_inline bool cpu_is_idle(s32 cpu)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool ret = bpf_cpumask_test_cpu(cpu, idle);

	scx_bpf_put_idle_cpumask(idle);
	return ret;
}

/*
 * Claim @cpu if it is idle: read the idle mask first and clear its bit (a
 * locked test-and-clear on a line all CPUs share) only if set, so that asking
 * about a busy CPU - the common case under load - writes nothing shared.
 */
static __always_inline bool claim_if_idle(s32 cpu)
{
	return cpu_is_idle(cpu) && scx_bpf_test_and_clear_cpu_idle(cpu);
}

/* Whether @p may only ever run on one CPU. */
static __always_inline bool task_is_pinned(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1;
}

/*
 * Whether every task waits on its CPU's own queue, as on the kernel's
 * runqueues: under --no-shared-runq, and with the seed's own design of the
 * shared runqueue (--shared-runq seed), whose shards only index them.
 */
static __always_inline bool cpu_queues_only(void)
{
	return no_shared_runq || seed_runq;
}

/* Whether @p waits on its CPU's own queue: pinned, or any with per-CPU
 * queues only. */
static __always_inline bool task_queues_on_cpu(const struct task_struct *p)
{
	return cpu_queues_only() || task_is_pinned(p);
}

/*
 * Whether @p waits among a pinned crowd: on its CPU's own queue, whose clock
 * (vtime.bpf.c) and short turns (shard.bpf.c) it is subject to. Not with
 * per-CPU queues only, which model the kernel's runqueues.
 */
static __always_inline bool task_in_pinned_crowd(const struct task_struct *p)
{
	return !cpu_queues_only() && task_is_pinned(p);
}

/*
 * Whether @p is exiting. Such a task is never held back nor made to yield
 * (cpu.max, cpu.idle): the kernel puts it back on its CPU without ops.enqueue
 * and with a fresh slice, so ending its slice only sends it round the
 * scheduler at every preemption point of its exit (seen: 486,000 times; the
 * CPU's pinned kworker starved 6 s, an RCU stall ejected the scheduler).
 */
static __always_inline bool task_exiting(const struct task_struct *p)
{
	return p->flags & PF_EXITING;
}

/*
 * Whether @p was stopped inside a kernel section that others wait on: an RCU
 * read-side section (a preemptible-RCU kernel) or migration disabled (a BPF
 * program runs so, as ops.init_task does in a fork). Every RCU grace period of
 * the machine waits for such a task: holding it back (a cpu.max park, up to
 * idle_wait_ns) stalls them all, and the kernel ejects the scheduler after
 * 21 s of a stall. The kernel's own cpu.max throttles a task only on its way
 * back to user space, for the same reason. When @p is the task this program
 * runs in (its slice ended: ops.enqueue and ops.tick run in its context), the
 * program's own entry holds one RCU read lock and one migration disable of
 * its counts, which are not @p's (a kernel without preemptible RCU may not
 * disable migration there; its readers cannot be preempted, so parking them
 * stalls nothing).
 */
static __always_inline bool task_in_kernel_section(const struct task_struct *p)
{
	int own = p == (void *)bpf_get_current_task_btf();

	if (p->migration_disabled > own)
		return true;
	return bpf_core_field_exists(p->rcu_read_lock_nesting) &&
	       BPF_CORE_READ(p, rcu_read_lock_nesting) > own;
}

#ifndef SIGKILL
#define SIGKILL 9 /* a uapi macro, not in vmlinux.h */
#endif

/* Whether @p has SIGKILL pending: it dies as soon as it runs again. */
static __always_inline bool task_killed(const struct task_struct *p)
{
	return p->pending.signal.sig[0] & (1UL << (SIGKILL - 1));
}

/*
 * Whether @p must not be held back by a cgroup's limit or idleness: it is
 * killed or exiting, or inside a section others wait on
 * (task_in_kernel_section()).
 */
static __always_inline bool task_exempt_from_limits(const struct task_struct *p)
{
	return task_killed(p) || task_exiting(p) || task_in_kernel_section(p);
}

/* @cpu as an index into the per-CPU tables, masked for the verifier. */
static __always_inline u32 cpu_idx(s32 cpu)
{
	return (u32)cpu & (MAX_CPUS - 1);
}

/* LLC index of @cpu, bounded for the verifier. */
static __always_inline u32 llc_of(s32 cpu)
{
	return cpu_llc[cpu_idx(cpu)] & (MAX_LLCS - 1);
}

/* L2 group index of @cpu, bounded for the verifier. */
static __always_inline u32 l2_of(s32 cpu)
{
	return cpu_l2[cpu_idx(cpu)] & (MAX_L2S - 1);
}

/* @avg with sample @x folded in at an eighth: the kernel's avg_idle decay. */
static __always_inline u64 decay_eighth(u64 avg, u64 x)
{
	return avg - avg / 8 + x / 8;
}

/* DSQ id of global shard @shard (see intf.h). */
static __always_inline u64 shard_dsq_id(u32 shard)
{
	return SHARD_DSQ_BASE + shard;
}

/* DSQ id of @cpu's own queue. */
static __always_inline u64 cpu_dsq_id(s32 cpu)
{
	return (u64)cpu;
}

/* Create DSQs @base .. @base + @nr - 1 (ops.init); @what names them in the
 * error. */
static __always_inline s32 create_dsqs(u64 base, u32 nr, const char *what)
{
	s32 ret;
	u32 i;

	bpf_for (i, 0, nr) {
		ret = scx_bpf_create_dsq(base + i, -1);
		if (ret) {
			scx_bpf_error("cannot create %s %u: %d", what, i, ret);
			return ret;
		}
	}
	return 0;
}

/* Kick @cpu, idle and claimed (idle bit cleared) for work, to dispatch. */
static __always_inline void kick_claimed(s32 cpu)
{
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(STAT_KICKS);
}

/*
 * Insert @p into the local DSQ of @target, an idle CPU claimed for it (if
 * @p's affinity changed since the search, release the CPU instead: kick it
 * so that it goes idle again). No kick after the insert: the kernel
 * reschedules an idle CPU whose local DSQ receives a task, and a kick would
 * add an IPI (or a self-interrupt, when ops.enqueue runs on @target from its
 * wake list) to every handoff - perf pipe ran 0.7x as fast with it.
 */
static __always_inline bool send_to_idle(struct task_struct *p, s32 target,
					 u64 enq_flags, enum mosaic_stat stat)
{
	if (target < 0)
		return false;
	if (!bpf_cpumask_test_cpu(target, p->cpus_ptr)) {
		kick_claimed(target);
		return false;
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | target, slice_ns, enq_flags);
	stat_inc(stat);
	return true;
}

/* Capacity of @cpu (1024 = the biggest CPU). */
static __always_inline u32 capacity_of(s32 cpu)
{
	return cpu_capacity[cpu_idx(cpu)];
}

/*
 * What each mechanism file offers the others, grouped by the file that
 * defines it: functions, and the types, maps and globals another file reads.
 * main.bpf.c includes the files in dependency order, but every use across
 * files goes through one of these declarations, so a file's interface is
 * read here, not found by include order: scripts/bpf-interface-check (make
 * lint) compiles each file alone against this header and fails on anything
 * used across files and not declared here. (What a file only uses itself is
 * not listed.)
 */
struct cpumask;

/*
 * The prototype of the ops callback BPF_STRUCT_OPS(@name, @args...) defines,
 * for an ops table in another file than the callback (the simulator, whose
 * BPF_STRUCT_OPS defines name(args), defines this to match).
 */
#ifndef BPF_STRUCT_OPS_DECL
#define BPF_STRUCT_OPS_DECL(name, args...) name(unsigned long long *ctx)
#endif

/*
 * A function the verifier checks once, on its own, as a global function (its
 * arguments any value of their types), instead of once for each path it
 * follows into each call: for work inlined into a loop whose states the
 * verifier of older kernels does not merge (inlined into cpu.max's unpark
 * loop, task_queue_vtime()'s bound took most of the 6.19 verifier's budget
 * for mosaic_dispatch; docs/design.md).
 */
#define __verified_once __noinline

/* topo.bpf.c: the L2 / LLC cpumasks */
static s32 topo_init(void); /* build the masks (ops.init) */
static __always_inline const struct cpumask *dom_cpus(void *masks, u32 idx);
static __always_inline const struct cpumask *llc_cpus(u32 llc);
static __always_inline const struct cpumask *l2_cpus(u32 l2);
static __always_inline bool cpus_share_l2(s32 a, s32 b);
static __always_inline s32 alloc_masks(void *masks, u32 nr); /* masks' init */
static __always_inline void mask_set(void *masks, u32 idx, u32 cpu);

/* weight.bpf.c: cgroup cpu.weight */
/* shares and weights are Q16 (WEIGHT_SHIFT fraction bits) */
#define WEIGHT_SHIFT 16
/* A cgroup with the cpu controller, keyed by cgroup id (bandwidth.bpf.c
 * keeps its cpu.max slot here too). */
struct cg_node {
	u64 parent;	/* parent's cgroup id; 0 for the root */
	u32 weight;	/* its weight among its siblings, load units */
	u32 level;	/* depth: 0 is the root cgroup */
	s64 load;	/* weight of its runnable tasks and active children */
	s64 nr_active;	/* how many runnable tasks and active children */
	u32 cpu_weight; /* its cpu.weight, 1..10000 (100: default) */
	bool idle;	/* cpu.idle set: weighs IDLE_LOAD, yields at ticks */
	bool has_park;	/* its cpu.max park queue exists (bandwidth.bpf.c) */
	bool bw_missed; /* its cpu.max found no slot: not enforced yet */
	u32 bw_slot;	/* its cpu.max slot + 1 (bandwidth.bpf.c), 0: none */
};

/* allocated as cgroups appear: MAX_CGROUPS costs nothing until used */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, u64);
	__type(value, struct cg_node);
	__uint(max_entries, MAX_CGROUPS);
} cg_nodes SEC(".maps");

/* the cgroup id of @cgrp */
static __always_inline u64 cgroup_id_of(struct cgroup *cgrp);
/* @cgrp's node, added now if it did not fit before */
static __always_inline struct cg_node *cg_node_get(struct cgroup *cgrp);
/* fold this CPU's pending cgroup load changes (each tick, going idle) */
static __always_inline void weight_flush(void);
/* the cgroup ops of the ops table (main.bpf.c) */
s32 BPF_STRUCT_OPS_DECL(mosaic_cgroup_init, struct cgroup *cgrp,
			struct scx_cgroup_init_args *args);
void BPF_STRUCT_OPS_DECL(mosaic_cgroup_exit, struct cgroup *cgrp);
void BPF_STRUCT_OPS_DECL(mosaic_cgroup_move, struct task_struct *p,
			 struct cgroup *from, struct cgroup *to);
void BPF_STRUCT_OPS_DECL(mosaic_cgroup_set_weight, struct cgroup *cgrp,
			 u32 weight);
void BPF_STRUCT_OPS_DECL(mosaic_cgroup_set_idle, struct cgroup *cgrp,
			 bool idle);
static __always_inline void weight_set_cgroup(struct task_ctx *tctx,
					      struct cgroup *cgrp);
static __always_inline void weight_runnable(struct task_struct *p,
					    struct task_ctx *tctx);
static __always_inline void weight_quiescent(struct task_ctx *tctx);
static s32 idle_queues_init(void);
/* queue a task of a cpu.idle cgroup on its LLC's idle queue */
static __always_inline bool idle_cgroup_queue(struct task_struct *p,
					      struct task_ctx *tctx, s32 cpu,
					      u64 enq_flags);
/* take from the LLC's idle queue: if overdue, or nothing else waits */
static __always_inline bool pull_idle_cgroup(s32 cpu, bool overdue);
/* take from another LLC's idle queue (a CPU about to idle) */
static __always_inline bool pull_idle_cgroup_remote(s32 cpu);
/* a task of an idle cgroup yields to waiters at a tick (cpu.idle) */
static __always_inline void idle_cgroup_tick(struct task_struct *p,
					     struct task_ctx *tctx, s32 cpu);
/* @prev is a runnable task of a cpu.idle cgroup */
static __always_inline bool prev_in_idle_cgroup(struct task_struct *prev);
/* a task's share of the machine, Q16 (nice 0 in the root cgroup: 100) */
static __always_inline u64 task_share(struct task_struct *p,
				      struct task_ctx *tctx, u64 now);
/* ... as last computed, no refresh */
static __always_inline u64 task_share_cached(struct task_struct *p,
					     struct task_ctx *tctx);

/* vtime.bpf.c: per-LLC virtual time, the wait bound */
static void vtime_init(void);
static __always_inline void vtime_enable(struct task_struct *p,
					 struct task_ctx *tctx);
/* the vtime @p queues with on @dsq (0: not ordered by the clock), a queue of
 * @cpu's LLC */
static __always_inline u64 task_queue_vtime(struct task_struct *p, s32 cpu,
					    u64 enq_flags, u64 dsq);
static __always_inline void
vtime_running(struct task_struct *p, struct task_ctx *tctx, s32 cpu, u64 now);
/* how long the task ran, stopping at @now */
static __always_inline u64 task_ran(struct task_ctx *tctx, u64 now);
static __always_inline void
vtime_charge(struct task_struct *p, struct task_ctx *tctx, u64 ran, u64 now);
static __always_inline void vtime_yield(struct task_struct *p);
/* the running task's vtime, for wakeup preemption: at each start and tick */
static __always_inline void vtime_note_running(struct task_struct *p,
					       struct task_ctx *tctx, s32 cpu,
					       u64 now);
static __always_inline void vtime_note_stopped(s32 cpu);
/* run woken @p on @cpu at once if its task ran far past @p's vtime */
static __always_inline bool vtime_wake_preempt(struct task_struct *p,
					       struct task_ctx *tctx, s32 cpu,
					       u64 enq_flags);
/* the periodic scan's weighing of clock @id (an LLC, or with per-CPU queues a
 * CPU, or a CPU's pinned crowd) sets how fast it should move */
static __always_inline void vtime_note_load(u32 id, u64 load, u32 nr_cpus);
/* the clock of the tasks pinned to @cpu, in the shard design */
static __always_inline u32 pinned_clock_id(s32 cpu);
/* @vtime of @p on @cpu as the LLC's clock orders it (a pinned crowd's own) */
static __always_inline u64 llc_frame_vtime(const struct task_struct *p, s32 cpu,
					   u64 vtime);

/* capacity.bpf.c: utilisation and capacity (seed 002) */
/* How pick_idle_by_capacity() chooses. */
enum cap_pick {
	CAP_BEST_FIT = 0,  /* the smallest CPU that fits, else the biggest */
	CAP_FIT_ONLY = 1,  /* only a CPU that fits */
	CAP_FIRST_FIT = 2, /* the first CPU that fits (before seed 002) */
};

static __always_inline void util_init(struct task_ctx *tctx, u64 now);
static __always_inline void util_running(struct task_ctx *tctx, u64 now);
static __always_inline void util_stopping(struct task_ctx *tctx, s32 cpu,
					  u64 now);
static __always_inline bool task_fits(s32 cpu, u32 util);
static __always_inline bool cpu_fits_task(s32 cpu, u32 util);
/* an idle CPU of @dom for a task of @util, by capacity (@how: CAP_*) */
static s32 pick_idle_by_capacity(struct task_struct *p, u32 util, s32 start,
				 const struct cpumask *dom, u32 how);
static __always_inline s32 pick_idle_in(struct task_struct *p, u32 util,
					const struct cpumask *dom, s32 prev);
/* an idle CPU a too-big task should move to, or -1 */
static __always_inline s32 misfit_target(struct task_struct *p,
					 struct task_ctx *tctx, s32 cpu);

/* gate.bpf.c: the overload flag and its periodic scan (seed 003) */
static s32 gate_init(void);
static __always_inline void overload_set(void);
/* a task waits that only a CPU of another LLC can take (the flag is up) */
static __always_inline bool overload_up(void);
/* a newidle balance saw no CPU queue with a waiter: lower the flag */
static __always_inline void overload_newidle_clear(u64 now);
/* the flag itself (overload_up() reads it) */
extern u32 overloaded;
/* per CPU, the shard (+1; 0: none) the scan kicked it for (steal.bpf.c) */
extern u32 steal_hint[MAX_CPUS];

/* shard.bpf.c: the sharded shared runqueue (seed 000) and its baseline */
static s32 shard_init(void);
/*
 * Per CPU, the state of its own queue (the tasks pinned to it), written only
 * by the CPU itself: the slice of the tasks the CPU starts (0: slice_ns), and
 * how far the LLC's clock was past the queue's pinned clock when that last
 * moved (vtime.bpf.c: pinned_clock_id(), llc_frame_vtime()).
 */
struct cpu_queue {
	u64 slice;
	u64 frame_shift;
} __attribute__((aligned(64)));
/* the own-queue state of @cpu */
static __always_inline struct cpu_queue *cpu_queue_of(s32 cpu);
/* its dispatch saw @n tasks on @cpu's own queue: set the slice */
static __always_inline void cpu_queue_note(s32 cpu, u32 n);
/* @p starts on @cpu: cut its slice to the CPU's, if its queue is crowded */
static __always_inline void cpu_queue_slice_apply(struct task_struct *p,
						  s32 cpu);
/* queue @p, on @cpu, on its shard (or its CPU's own queue) */
static __always_inline void queue_task(struct task_struct *p, s32 cpu,
				       u64 enq_flags);
/* wake a CPU to run @p, just queued on @cpu's queues */
static __always_inline void kick_for(struct task_struct *p, s32 cpu);
static __always_inline void overload_for(struct task_struct *p);
/* move @dsq's first task this CPU may run to its local DSQ, count @stat */
static __always_inline bool pull_from(u64 dsq, enum mosaic_stat stat);
/*
 * What one dispatch reads of its CPU's queues and its LLC's shards, each
 * head peeked once, without a lock (llc_scan()); the pulls below act on it.
 */
struct llc_scan {
	struct task_struct *cpu_head; /* head of the CPU's own queue */
	struct task_struct *own_head; /* head of the CPU's own shard */
	u64 older_dsq;	  /* the shard of the oldest sibling head the CPU may
			   * take, if more than a slice older than own_head
			   * (0: none) */
	u64 sibling_mask; /* bit i: the i-th sibling in walk order has a head */
	u32 older_sibling; /* walk index of that oldest sibling head, if more
			    * than a slice older than the first one in walk
			    * order (0: none) */
	u32 cpu_queued;	   /* tasks on the CPU's own queue (counted only if
			    * it has a head) */
	bool queued;	   /* some queue read has a task */
	bool due;	   /* a head is due before the runnable prev */
};
static __always_inline void llc_scan(s32 cpu, struct task_struct *prev,
				     struct llc_scan *scan);
static __always_inline bool pull_own_queues(s32 cpu,
					    const struct llc_scan *scan);
static __always_inline bool pull_older_sibling(s32 cpu,
					       const struct llc_scan *scan);
static __always_inline bool pull_sibling_shards(s32 cpu,
						const struct llc_scan *scan);
static __always_inline bool pull_busiest_cpu_queue(s32 cpu, bool idle_work);
static __always_inline void newidle_note_idle(s32 cpu, u64 now);
/* seed design: take a waiter of a busy CPU of the LLC via the shards' index */
static __always_inline bool shard_index_pull(s32 cpu);
/* seed design: number the CPUs of each shard for its index (ops.init) */
static __always_inline void shard_index_init(void);
/* seed design: a task was queued on @cpu's own queue */
static __always_inline void shard_index_note(s32 cpu);
/* seed design: bring @cpu's bit in its shard's index up to date */
static __always_inline void shard_index_sync(s32 cpu);
/* per-CPU queues: the busiest CPU queue of @cpu's LLC or beyond it */
static __always_inline s32 busiest_cpu_queue(s32 cpu, bool in_llc,
					     const struct cpumask *idle,
					     u32 *busiest_n, bool *any);
/* per-CPU queues: whether a task waits on any CPU's own queue */
static __always_inline bool cpu_queue_waiting(void);
static __always_inline bool cpu_has_waiters(s32 cpu);
/* a task queued for the CPU has been runnable since before @since */
static __always_inline bool cpu_has_older_waiter(s32 cpu, u64 since);
/* the queue @p, on @cpu, waits on */
static __always_inline u64 queue_dsq_of(struct task_struct *p, s32 cpu);
/* count a task moved onto @dsq as queued there */
static __always_inline void count_moved_in(u64 dsq);

/* bandwidth.bpf.c: cgroup cpu.max */
static s32 bw_init(void);
/* ops.cgroup_set_bandwidth of the ops table (main.bpf.c) */
void BPF_STRUCT_OPS_DECL(mosaic_cgroup_set_bandwidth, struct cgroup *cgrp,
			 u64 period_us, u64 quota_us, u64 burst_us);
/* cpu.max of cgroup @id set (cgroup_init, cgroup_set_bandwidth) or lifted */
static __always_inline void bw_set(u64 id, u64 period_us, u64 quota_us,
				   u64 burst_us);
static __always_inline void bw_release(u64 id);
/* ops.cgroup_init (may sleep): make cgroup @id's park queue; false if not */
static bool bw_cgroup_init(u64 id);
/* ops.cgroup_exit: lift cgroup @id's limit and drop its park queue */
static void bw_cgroup_exit(u64 id, bool has_park);
/* the park slot of a throttled cgroup of the task, or -1 */
static __always_inline s32 bw_throttled_slot(struct task_struct *p,
					     struct task_ctx *tctx);
/* charge runtime (bound the run if @running); true: a cgroup ran dry, end
 * the slice */
static __always_inline bool
bw_charge(struct task_struct *p, struct task_ctx *tctx, u64 ran, bool running);
static __always_inline bool bw_park(struct task_struct *p,
				    struct task_ctx *tctx, u64 enq_flags);
static __always_inline void bw_unpark(void);
/* a parked task that runs left its park queue by a kernel dequeue */
static __always_inline void bw_running(struct task_ctx *tctx);

/* group.bpf.c: the group balancer's BPF half (seed 004) */
static s32 group_init(void);
static __always_inline s32 part_of(s32 cpu);
static __always_inline s32 group_part(struct task_ctx *tctx);
static __always_inline void group_running(struct task_struct *p,
					  struct task_ctx *tctx, s32 cpu);
static __always_inline void group_account(struct task_struct *p,
					  struct task_ctx *tctx, s32 cpu,
					  u64 ran, u64 waited);
/* wakeup: an idle CPU in the partition of @p's group, or -1 */
static __always_inline s32 pick_in_group_part(struct task_struct *p,
					      struct task_ctx *tctx, s32 prev);
/* the partition @p, on @cpu, should leave for, or -1 */
static __always_inline s32 group_away_part(struct task_struct *p,
					   struct task_ctx *tctx, s32 cpu);
static __always_inline s32 group_target(struct task_struct *p,
					struct task_ctx *tctx, s32 part,
					s32 cpu);
static __always_inline bool group_swap(struct task_struct *p, s32 part, s32 cpu,
				       u64 enq_flags);
static __always_inline void group_tick(struct task_struct *p,
				       struct task_ctx *tctx, s32 cpu, u64 now);
/* the CPU whose shard @p should queue on */
static __always_inline s32 group_queue_cpu(struct task_struct *p, s32 part,
					   s32 cpu);
/* steal from @dsq, another LLC's shard, honouring groups' partitions */
static __always_inline bool group_steal_from(s32 cpu, u64 dsq,
					     enum mosaic_stat stat);

/* steal.bpf.c: stealing across LLCs (seed 003), balancing busy LLCs */
/* per CPU, the shares of its running and waiting tasks averaged over the
 * periodic scans */
extern u64 cpu_share_avg[MAX_CPUS];
static __always_inline bool steal_scan(s32 cpu);
/* the periodic scan weighs each LLC and leaves the lightest a hint */
static void llc_balance_scan(u64 now);
/* a CPU's slot: the share and load of the task it runs (running, tick;
 * stopping) */
static __always_inline void llc_balance_note_share(struct task_struct *p,
						   struct task_ctx *tctx,
						   s32 cpu, u64 now);
/* a task's runnable fraction: it starts (enable), wakes, stops to sleep */
static __always_inline void balance_load_init(struct task_ctx *tctx, u64 now);
static __always_inline void balance_runnable(struct task_ctx *tctx, u64 now,
					     bool woke);
static __always_inline void balance_sleeping(struct task_ctx *tctx, u64 now);
static __always_inline void llc_balance_stopping(s32 cpu);
/* take a task from the LLC the scan hinted, if any */
static __always_inline bool llc_balance_pull(s32 cpu);
/* per-CPU queues: the periodic balance's tick half, and its pull */
static __always_inline void periodic_balance_tick(s32 cpu, u64 now);
static __always_inline bool periodic_balance_pull(s32 cpu);
/* per-CPU queues: a busy CPU's tick kicks an idle one to balance */
static __always_inline void idle_balance_tick(s32 cpu, u64 now);
static __always_inline bool idle_balance_take(s32 cpu);

/* wakeup.bpf.c: wakeup placement (seeds 001, 002) */
static s32 pick_wake_cpu(struct task_struct *p, struct task_ctx *tctx, s32 prev,
			 u64 wake_flags);
static __always_inline void place_woken(struct task_struct *p,
					struct task_ctx *tctx, s32 cpu);
/* ops.enqueue: hand a woken task to the CPU claimed for it, if any */
static __always_inline bool
hand_over_woken(struct task_struct *p, struct task_ctx *tctx, u64 enq_flags);
/* ops.running: a task woken onto @cpu while idle waited @ns to start */
static __always_inline void idle_start_note(s32 cpu, u64 ns);
/* ops.stopping: the pair rule's run-on of a waker, from its last pair wakeup */
static __always_inline void pair_run_on_note(struct task_ctx *tctx, s32 cpu,
					     u64 now);

/* wait.bpf.c: runnable waits */
static __always_inline void wait_begin(struct task_ctx *tctx, u64 now);
static __always_inline u64 wait_end(struct task_struct *p,
				    struct task_ctx *tctx, u64 now);
/* a parked task goes back to a queue: its park ends, its wait starts */
static __always_inline void wait_after_park(struct task_ctx *tctx, u64 now);

#endif /* __MOSAIC_BPF_H */
