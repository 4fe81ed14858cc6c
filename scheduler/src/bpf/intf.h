/* SPDX-License-Identifier: GPL-2.0 */
/*
 * intf.h - the one contract between scx_mosaic's BPF code, its Rust
 * userspace and the simulator: limits, DSQ numbering, and counter ids.
 *
 * Everything here must stay plain C that bindgen understands; the Rust side
 * sees these names as `bpf_intf::<enum>_<NAME>` constants.
 */
#ifndef __MOSAIC_INTF_H
#define __MOSAIC_INTF_H

enum mosaic_limits {
	MAX_CPUS = 512,
	MAX_LLCS = 64,
	MAX_L2S = 256,
	MAX_SHARDS = 256,
	/* an LLC is split into at most this many shards */
	MAX_SHARDS_PER_LLC = 64,
	MAX_COMM = 16,
	/* group balancer: CPU partitions, and cgroups tracked */
	MAX_PARTS = 32,
	MAX_GROUPS = 4096,
	/* a steal looks at this many tasks of a shard for one of its group */
	STEAL_LOOK_AHEAD = 8,
	/* a steal scan reads the lengths of at most this many shards of
	 * other LLCs (all of them on machines with that few) */
	STEAL_PROBES = 8,
	/* a CPU pulling from its own shard looks at this many tasks for one
	 * already on its runqueue (shard.bpf.c): dispatch's measured cost is
	 * lowest here - shorter walks pull more tasks off other runqueues,
	 * longer ones take a DSQ lock per step (docs/bench/analysis.md) */
	SAME_RQ_LOOK_AHEAD = 16,
	/* CPUs of one shard its waiter index covers (--shared-runq-design
	 * seed: one bit each in a u64, shard.bpf.c) */
	SHARD_INDEX_BITS = 64,
	/* CPUs of its partition a task outside it looks at for a swap */
	GROUP_SWAP_PROBES = 8,
	/* cgroups tracked (cpu.weight, cpu.idle, cpu.max: a map allocated as
	 * they appear), and levels of the tree walked */
	MAX_CGROUPS = 262144,
	MAX_CGROUP_DEPTH = 16,
	/* cgroups whose load changes a CPU holds before folding them */
	CG_PENDING_SLOTS = 8,
	/* tasks waiting on a CPU's own queue (pinned there) that take turns at
	 * full slices; more share this many slices a round, down to
	 * min_slice_ns each (shard.bpf.c, cpu_queue_note()) */
	CPU_QUEUE_FULL_SLICES = 4,
	/* vtime lag (in slices) a task keeps when queued again after a slice */
	REQUEUE_LAG_SLICES = 16,
	/* an LLC's clock rate: Q16 fixed point, measured over windows of
	 * this many slices: enough task starts that the clock's jumps average
	 * out (vtime.bpf.c, clock_rate_update()) */
	RATE_SHIFT = 16,
	CLOCK_RATE_WINDOW_SLICES = 16,
	/* an LLC gets a task from a busier LLC at most once per this many
	 * slices (steal.bpf.c) */
	LLC_BALANCE_SLICES = 2,
	/* LLC balancing weighs this many waiters of each shard */
	LLC_BALANCE_LOOK = 32,
	/* an LLC's clock moves at least this fast (Q16: 1/64 ns per ns) */
	MIN_CLOCK_RATE = 1 << (16 - 6),
	/* runnable waits: log2 buckets of microseconds, bucket b holding
	 * [2^b, 2^(b+1)) us (0: under 2 us, the last: 2^23 us = 8.4 s and up)
	 */
	NR_WAIT_BUCKETS = 24,
	/* cpu.max: cgroups with a limit enforced at once (a power of 2) */
	MAX_BW_CGROUPS = 65536,
};

/*
 * DSQ numbering. CPU c owns the FIFO-free, vtime-ordered queue `c` (pinned
 * tasks, and every task under --no-shared-runq); shard s of the shared
 * runqueue is `SHARD_DSQ_BASE + s`; the tasks of a cgroup throttled by
 * cpu.max wait on its park queue `PARK_DSQ_BASE + cgroup id`
 * (bandwidth.bpf.c), those of a cpu.idle cgroup on their LLC's
 * `IDLE_DSQ_BASE + l`.
 */
/* above every other queue id, below the kernel's built-in flag (bit 63) */
#define PARK_DSQ_BASE (1ULL << 48)

enum mosaic_dsq {
	SHARD_DSQ_BASE = 1 << 20,
	/* LLC l's queue of tasks of cpu.idle cgroups (weight.bpf.c) */
	IDLE_DSQ_BASE = 1 << 22,
};

/* What userspace passes to the bw_retry program (bandwidth.bpf.c): a cgroup's
 * cpu.max, as the kernel has it, and what became of it. */
struct bw_retry_args {
	unsigned long long cgid;
	unsigned long long period_us;
	unsigned long long quota_us;
	unsigned long long burst_us;
	int ret; /* enum bw_retry_ret */
};

enum bw_retry_ret {
	BW_RETRY_HELD = 0,  /* the limit is enforced */
	BW_RETRY_NO_CGROUP, /* no such cgroup, or no room to track it */
	BW_RETRY_NO_SLOT,   /* still no slot or park queue */
};

/*
 * Counters, one slot each in the per-CPU `stats` map. This enum is their one
 * definition: scheduler/build/stat_table.rs generates the table that Rust
 * (scx_mosaic and mosaic-sim) reads them with. Their JSON names are the
 * lower-case names without the STAT_ prefix; each one's description is the
 * comment after it, on its line. A counter whose name has _MAX_ in it (or
 * ends in _MAX) is a maximum: Rust takes the largest over CPUs (and
 * restarts) and BPF must only raise it; every other counter is summed.
 * A new counter also needs its field in stats::Metrics (the build checks).
 */
enum mosaic_stat {
	/* seed 000: shared runqueue (shard.bpf.c) */
	STAT_SHARD_ENQUEUES,	  /* task queued on a shard of its LLC */
	STAT_SHARD_PULLS_LOCAL,	  /* CPU took a task from its own shard */
	STAT_SHARD_PULLS_SIBLING, /* CPU took a task from a sibling shard */
	STAT_CPU_ENQUEUES,	  /* task queued on a per-CPU queue */
	STAT_CPU_PULLS,		  /* CPU took a task from its own queue */
	STAT_KICKS,		  /* idle CPU woken to run a queued task */
	STAT_DISPATCH_EMPTY,	  /* dispatch found nothing to run */
	STAT_SIBLING_SCANS,	  /* dispatch looked at the sibling shards */
	/* seed 000 as the seed built it (--shared-runq-design seed) */
	STAT_SEED_INDEX_SETS,	 /* a CPU's own queue gained a waiter: its
				  * bit went up in its shard's index */
	STAT_SEED_PULLS_OWN,	 /* a CPU about to idle took the waiter of a
				  * busy CPU of its own shard */
	STAT_SEED_PULLS_SIBLING, /* ... of a sibling shard of its LLC */
	STAT_SEED_SKIPS_IDLE,	 /* the index named a CPU that is idle (it
				  * runs its own waiter next): passed over */
	STAT_SEED_INDEX_STALE,	 /* the index named a CPU with no waiter to
				  * give: its bit was cleared */
	STAT_SEED_PULL_MISSES,	 /* a CPU about to idle found no waiter to
				  * take in its LLC's index */
	/* seed 003: overload gate and stealing (gate.bpf.c, steal.bpf.c) */
	STAT_STEAL_SCANS,	  /* cross-LLC steal scans done */
	STAT_STEAL_SCANS_SKIPPED, /* ... skipped: the overload flag was clear */
	STAT_STEAL_HITS,	  /* ... that moved a task */
	STAT_STEAL_PULLS_NODE,	 /* tasks stolen from an LLC of the same node */
	STAT_STEAL_PULLS_REMOTE, /* tasks stolen from another node */
	STAT_OVERLOAD_SETS,	 /* times the overload flag went up */
	STAT_OVERLOAD_NS,	 /* time the flag spent up (closed spells) */
	/* the wasted-core check of the periodic scan (gate.bpf.c) */
	STAT_IDLE_WAITING_SCANS,  /* scans that saw a CPU idle while a task
				   * allowed on it waited in a queue */
	STAT_IDLE_WAITING_MAX_US, /* longest such stretch; a maximum, not a
				   * sum: per CPU, the scans that ran there */
	/* wakeup placement (wakeup.bpf.c): where an idle CPU was found */
	STAT_PREV_KEPT,		     /* prev was idle and the task fits it */
	STAT_PREV_REJECTED_CAPACITY, /* prev was idle but too small */
	STAT_WAKE_SYNC,		     /* sync wakeup placed on the waker's CPU
				      * (prev busy, or the two wake in turn) */
	STAT_WAKE_L2_IDLE,	     /* idle CPU found in prev's L2 group */
	STAT_WAKE_LLC_IDLE,	     /* idle CPU found in prev's LLC */
	STAT_WAKE_REMOTE_IDLE,	     /* idle CPU found beyond prev's LLC */
	STAT_WAKE_CAPACITY,	     /* idle CPU found by the capacity search */
	STAT_WAKE_BUSY,		     /* no idle CPU: the task queues */
	STAT_WAKE_GROUP_PART, /* idle CPU found in the group's partition */
	STAT_GROUP_FALLBACK,  /* the partition had none: searched wider */
	/* seed 001: L2-scoped insertion: how the woken task reached its CPU */
	STAT_DIRECT_DISPATCHES,	 /* inserted straight into a local DSQ */
	STAT_INSERT_DIRECT_L2,	 /* ... the waker's CPU shares an L2 with it */
	STAT_INSERT_DIRECT_WIDE, /* ... beyond the L2 (--no-l2-locality) */
	STAT_INSERT_QUEUED, /* ... beyond the L2: handed over in ops.enqueue
			     * (target's local DSQ, which wakes it) */
	STAT_INSERT_DIRECT_EXITING, /* ... beyond the L2, but the task exits */
	/* seed 002: capacity (capacity.bpf.c) */
	STAT_MIGRATIONS,   /* task started on a CPU other than its last */
	STAT_MISFIT_MOVES, /* task too big for its CPU moved to an idle one */
	STAT_GROUP_MOVES,  /* task moved into its group's partition */
	STAT_GROUP_QUEUED, /* ... queued on a shard of the partition */
	STAT_DEBUG_DROPS,  /* tasks lost on purpose by --debug-drop-comm */
	/* cgroup cpu.weight (weight.bpf.c) */
	STAT_CGROUPS_UNTRACKED, /* cgroups beyond MAX_CGROUPS: their
				 * tasks are charged by nice weight only */
	/* seed 000: fairness across the shards of an LLC (shard.bpf.c) */
	STAT_SHARD_PULLS_OLDER, /* CPU took a sibling shard's head, a slice
				 * older than its own shard's */
	/* slice ends (main.bpf.c) */
	STAT_PREV_REFILLED, /* dispatch found nothing queued: the runnable
			     * prev keeps its CPU with a new slice */
	STAT_LAST_KEPT,	    /* a lone task due to move (misfit, partition)
			     * found no idle CPU to go to: it stays */
	STAT_WAIT_MAX_US,   /* longest runnable wait (wait.bpf.c); a maximum,
			     * not a sum */
	/* group balancer moves (group.bpf.c) */
	STAT_GROUP_SWAPS,      /* task outside its partition took the CPU of
				* one that belongs where it was (preempted) */
	STAT_GROUP_TICK_MOVES, /* a tick ended the slice of a task outside its
				* partition that had somewhere to go */
	/* seed 000's baseline, --no-shared-runq (shard.bpf.c) */
	STAT_NEWIDLE_PULLS,	     /* a CPU about to idle took a task from the
				      * busiest CPU queue of its LLC */
	STAT_NEWIDLE_PULLS_REMOTE,   /* ... of another LLC (none in its own) */
	STAT_NEWIDLE_SKIPS_AVG_IDLE, /* newidle balance skipped: the CPU's
				      * average idle time is below the
				      * migration cost */
	STAT_NEWIDLE_SKIPS_OVERLOAD, /* ... skipped: the overload flag was
				      * clear (seed 003) */
	STAT_NEWIDLE_SKIPS_COST,     /* ... a domain skipped: its last balance
				      * cost more than the idle time expected */
	STAT_PERIODIC_BALANCES,	     /* a busy CPU's periodic balance found
				      * its LLC imbalanced by more than one */
	STAT_PERIODIC_PULLS,	     /* ... and its next dispatch took a task
				      * from the busiest queue */
	/* cgroup cpu.max and cpu.idle (bandwidth.bpf.c, weight.bpf.c) */
	STAT_BW_THROTTLES,	 /* a limited cgroup's pool ran dry */
	STAT_BW_THROTTLED_NS,	 /* time limited cgroups spent throttled,
				  * summed over cgroups (ended spells) */
	STAT_BW_REFILLS,	 /* period refills of limited cgroups' pools */
	STAT_BW_PARKED,		 /* task of a throttled cgroup parked */
	STAT_BW_UNPARKED,	 /* parked task moved back to a queue */
	STAT_BW_PARK_LEFT,	 /* parked task left its park queue another
				  * way (moved to another cgroup, affinity
				  * changed) before the refill */
	STAT_BW_UNTRACKED,	 /* cpu.max limits that found no slot or park
				  * queue: not enforced until a retry */
	STAT_BW_BUDGET_RETURNS,	 /* a CPU's cpu.max budget handed back to its
				  * pool to make room for another cgroup's */
	STAT_IDLE_CGROUP_YIELDS, /* task of a cpu.idle cgroup gave up its
				  * CPU at a tick to a waiting task */
	STAT_IDLE_CGROUP_QUEUED, /* ... queued on its LLC's idle queue */
	STAT_IDLE_CGROUP_PULLS,	 /* CPU took a task from the idle queue */
	/* slice ends (main.bpf.c) */
	STAT_PREV_KEPT_AHEAD, /* the runnable prev kept its CPU for another
			       * slice: tasks were queued for the CPU, but
			       * none due before it (vtime a slice older, or
			       * waiting a slice already) */
	/* seed 000: the own-shard pull (shard.bpf.c) */
	STAT_SHARD_PULLS_SAME_RQ,   /* CPU took from its own shard, ahead of the
				     * head, a task already on its runqueue (no
				     * migration), within a slice of vtime */
	STAT_SHARD_PULLS_REMOTE_RQ, /* ... or, none within reach, took the
				     * head off another CPU's runqueue (a
				     * migration under both runqueue locks) */
	/* cgroup cpu.weight: per-CPU load slots (weight.bpf.c) */
	STAT_CGROUP_LOAD_NOTES, /* a task of a cgroup became runnable or
				 * quiescent: noted in the CPU's slots */
	STAT_CGROUP_LOAD_FOLDS, /* a slot with a net change folded into its
				 * cgroup's shared counters */
	/* balancing busy LLCs (steal.bpf.c) */
	STAT_LLC_BALANCE_HINTS, /* the periodic scan told an LLC to take a
				 * task from one with more waiting per CPU */
	STAT_LLC_BALANCE_PULLS, /* ... and a CPU of it took one */
	/* cgroup cpu.idle (weight.bpf.c) */
	STAT_IDLE_CGROUP_OVERDUE, /* idle_cgroup_pulls whose task had waited
				   * idle_wait_ns: its turn against the
				   * watchdog, taken from a busy CPU */
	/* cgroup cpu.max (bandwidth.bpf.c, wait.bpf.c) */
	STAT_BW_PARKED_MAX_US, /* longest a task stayed parked by its cgroup's
				* cpu.max (not in STAT_WAIT_MAX_US); a
				* maximum, not a sum */
	/* tasks pinned to one CPU (shard.bpf.c) */
	STAT_SHORT_SLICES,  /* a task started with a slice shortened: more
			     * than CPU_QUEUE_FULL_SLICES tasks waited on
			     * its CPU's own queue */
	STAT_CPU_QUEUE_MAX, /* most tasks a dispatch saw waiting on one CPU's
			     * own queue; a maximum, not a sum */
	NR_MOSAIC_STATS,
};

/*
 * Who waited longest on a CPU (wait.bpf.c, one per CPU): the task of that
 * CPU's STAT_WAIT_MAX_US, so that a long wait names its task.
 */
struct longest_wait {
	unsigned long long us; /* the wait, microseconds */
	int pid;	       /* the task (thread) id */
	char comm[MAX_COMM];   /* its name then */
};

#endif /* __MOSAIC_INTF_H */
