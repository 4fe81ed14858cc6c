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

/* Tunables: set from Rust before load, read-only afterwards. */
const volatile u32 nr_cpu_ids = 1;     /* CPUs with ids below this exist */
const volatile u32 nr_llcs = 1;	       /* LLCs, numbered 0..nr_llcs-1 */
const volatile u32 nr_shards = 1;      /* shards over all LLCs */
const volatile u64 slice_ns = 5000000; /* time slice given to each task */
const volatile bool no_shared_runq;    /* seed 000's NO_SHARED_RUNQ baseline */
const volatile bool smt_enabled;       /* some core has several threads */
const volatile bool asym_capacity;     /* CPUs differ in capacity */
const volatile bool no_l2_locality;   /* seed 001 off: LLC is the near domain */
const volatile bool no_prev_first;    /* seed 002 off: asym skips prev check */
const volatile bool no_overload_gate; /* seed 003 off: always steal-scan */
const volatile bool group_accounting; /* --gb-parent given: account cgroups */
const volatile bool group_balancer;   /* ... and bind them to partitions */
const volatile u32 nr_parts;	      /* CPU partitions of the group balancer */
const volatile bool cgroup_weights = true; /* honour cgroup cpu.weight */
/* period of the overload gate's scan */
const volatile u64 overload_scan_ns = 10000000;
/* longest wait the vtime lead bound aims at (vtime.bpf.c) */
const volatile u64 wait_target_ns = 500000000;
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
	u64 cgid;	   /* id of its cgroup (group balancer) */
	u64 wcg;	   /* id of its cpu-controller cgroup, 0: root */
	u64 wcg_queued;	   /* ... that counts it as runnable now, 0: none */
	u32 queued_weight; /* the weight it counts with there */
	u64 runnable_at;   /* when it last became runnable, 0: running */
	u64 group_checked_at; /* last tick that checked its partition */
	u64 last_charge;      /* vtime its current or last run cost it */
	u32 vtime_llc;	      /* LLC whose clock its vtime is relative to */
	bool vtime_queued;    /* it waits in a vtime-ordered queue */
	bool woke_busy;	      /* its select_cpu found no idle CPU: enqueue
			       * does not search again */
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

/* Whether @p may only ever run on one CPU. */
static __always_inline bool task_is_pinned(const struct task_struct *p)
{
	return p->nr_cpus_allowed == 1;
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

/* Kick @cpu, idle and claimed (idle bit cleared) for work, to dispatch. */
static __always_inline void kick_claimed(s32 cpu)
{
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(STAT_KICKS);
}

/* Capacity of @cpu (1024 = the biggest CPU). */
static __always_inline u32 capacity_of(s32 cpu)
{
	return cpu_capacity[cpu_idx(cpu)];
}

#endif /* __MOSAIC_BPF_H */
