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
	/* CPUs of one shard its waiter index covers (--shared-runq
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
	/* per-CPU queues balance a CPU (or an LLC) against a lighter one only
	 * when its load (per CPU) is above the lighter's by this percentage:
	 * the kernel's sd->imbalance_pct (sd_init()) */
	IMBALANCE_PCT = 117,
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
 * They are grouped by the file that counts them; the same build step gives
 * stats::Metrics a field per counter, with this description.
 */
enum mosaic_stat {
	/* wakeup.bpf.c: wakeup placement (seeds 001, 002): where an idle CPU
	 * was found, and how the woken task reached it */
	STAT_PREV_KEPT, /* wakeup kept the previous CPU: idle, and the task fits
			   it */
	STAT_PREV_REJECTED_CAPACITY, /* previous CPU was idle but too small for
					the task */
	STAT_WAKE_SYNC, /* sync wakeup placed on the waker's CPU (prev busy, or
			   the two wake in turn) */
	STAT_WAKE_PAIR_DECLINED, /* sync wakeup within a pair not kept on the
				    waker's CPU: the waker or the wakee runs
				    on after waking the other longer than an
				    idle CPU's start costs */
	STAT_WAKE_L2_IDLE,  /* wakeup found an idle CPU in the previous CPU's L2
			       group */
	STAT_WAKE_LLC_IDLE, /* wakeup found an idle CPU in the previous CPU's
			       LLC */
	STAT_WAKE_REMOTE_IDLE, /* wakeup found an idle CPU beyond the previous
				  CPU's LLC */
	STAT_WAKE_CAPACITY, /* wakeup found an idle CPU by the capacity search
			     */
	STAT_WAKE_BUSY,	    /* wakeup found no idle CPU: the task queues */
	STAT_DIRECT_DISPATCHES, /* woken task inserted straight into a CPU's
				   local queue */
	STAT_INSERT_DIRECT_L2, /* direct insertion: the waker's CPU shares an L2
				  with the target */
	STAT_INSERT_DIRECT_WIDE, /* direct insertion beyond the L2
				    (--no-l2-locality) */
	STAT_INSERT_QUEUED, /* woken task beyond the L2 handed to its claimed
			       CPU in enqueue, CPU kicked */
	STAT_INSERT_DIRECT_EXITING, /* direct insertion beyond the L2 of an
				       exiting task (never passed to enqueue) */
	/* shard.bpf.c: the shared runqueue (seed 000), its --no-shared-runq
	 * baseline, and tasks pinned to one CPU */
	STAT_SHARD_ENQUEUES,	  /* task queued on a shard of its LLC */
	STAT_SHARD_PULLS_LOCAL,	  /* CPU took a task from its own shard */
	STAT_SHARD_PULLS_SIBLING, /* CPU took a task from a sibling shard of its
				     LLC */
	STAT_SHARD_PULLS_OLDER,	  /* CPU took a sibling shard's head, a slice
				     older than its own shard's */
	STAT_SHARD_PULLS_SAME_RQ, /* own-shard pull took, ahead of the head, a
				     task already on the CPU's runqueue */
	STAT_SHARD_PULLS_REMOTE_RQ, /* own-shard pull (--same-rq-pull) took the
				       head off another CPU's runqueue: none of
				       its own in reach */
	STAT_SIBLING_SCANS,	    /* dispatch looked at the sibling shards */
	STAT_CPU_ENQUEUES,	    /* task queued on a per-CPU queue */
	STAT_CPU_PULLS,		    /* CPU took a task from its own queue */
	STAT_KICKS,		    /* idle CPU woken to run a queued task */
	STAT_SEED_INDEX_SETS,	    /* --shared-runq seed: a CPU's own queue
				       gained a waiter, its bit went up in its shard's
				       index */
	STAT_SEED_PULLS_OWN,	    /* --shared-runq seed: a CPU about to idle
				       took the waiter of a busy CPU of its own shard
				     */
	STAT_SEED_PULLS_SIBLING,    /* --shared-runq seed: a CPU about to
				       idle took the waiter of a busy CPU of a
				       sibling shard of its LLC */
	STAT_SEED_SKIPS_IDLE,	    /* --shared-runq seed: the index named a
				       CPU    that is idle (it runs its own waiter
				       next):    passed over */
	STAT_SEED_INDEX_STALE,	    /* --shared-runq seed: the index named a
				       CPU with no waiter to give, its bit was
				       cleared */
	STAT_SEED_PULL_MISSES,	    /* --shared-runq seed: a CPU about to idle
				       found no waiter to take in its LLC's index */
	STAT_NEWIDLE_PULLS, /* --no-shared-runq: a CPU about to idle took from
			       its LLC's busiest CPU queue */
	STAT_NEWIDLE_PULLS_REMOTE, /* --no-shared-runq: a CPU about to idle took
				      from another LLC's busiest CPU queue (none
				      in its own) */
	STAT_NEWIDLE_SKIPS_AVG_IDLE, /* --no-shared-runq: newidle balance
					skipped, the CPU's average idle time is
					below the migration cost */
	STAT_NEWIDLE_SKIPS_OVERLOAD, /* --no-shared-runq: newidle balance
					skipped, the overload flag was clear
					(seed 003) */
	STAT_NEWIDLE_SKIPS_COST, /* --no-shared-runq: a newidle balance skipped
				    a domain, its last balance cost more than
				    the idle time expected */
	STAT_PERIODIC_BALANCES,	 /* --no-shared-runq: a busy CPU's periodic
				    balance found a CPU of its LLC heavier by
				    more than a waiter's share */
	STAT_PERIODIC_PULLS, /* --no-shared-runq: after a periodic balance, the
				next dispatch took a task from the heaviest
				CPU */
	STAT_IDLE_BALANCE_KICKS, /* --no-shared-runq: a busy CPU with a waiter
				    kicked an idle CPU to balance without the
				    newidle gates (steal.bpf.c) */
	STAT_SHORT_SLICES, /* pinned tasks: a task started with a shorter slice,
			      more than CPU_QUEUE_FULL_SLICES (intf.h) waiting
			      on its CPU's own queue */
	STAT_CPU_QUEUE_MAX, /* pinned tasks: most tasks a dispatch saw waiting
			       on one CPU's own queue (a maximum) */
	/* gate.bpf.c: the overload flag and the periodic scan (seed 003) */
	STAT_OVERLOAD_SETS, /* times the overload flag went up */
	STAT_OVERLOAD_NS, /* time the overload flag spent up, ns (an open spell
			     up to the last periodic scan) */
	STAT_OVERLOAD_NEWIDLE_CLEARS, /* per-CPU queues: a newidle balance read
					 every CPU queue, found all empty and
					 lowered the flag */
	STAT_IDLE_WAITING_SCANS,  /* periodic scans that saw a CPU idle while a
				     task allowed on it waited */
	STAT_IDLE_WAITING_MAX_US, /* longest stretch of a CPU idle while a task
				     allowed on it waited, us (a maximum) */
	/* steal.bpf.c: stealing across LLCs (seed 003), balancing busy LLCs */
	STAT_STEAL_SCANS,	  /* cross-LLC steal scans done */
	STAT_STEAL_SCANS_SKIPPED, /* cross-LLC steal scans skipped: the overload
				     flag was clear */
	STAT_STEAL_HITS,	  /* cross-LLC steal scans that moved a task */
	STAT_STEAL_PULLS_NODE, /* tasks stolen from an LLC of the same NUMA node
				*/
	STAT_STEAL_PULLS_REMOTE, /* tasks stolen from another NUMA node */
	STAT_LLC_BALANCE_HINTS,	 /* busy LLCs: the periodic scan told an LLC to
				    take a task from one with more weight per CPU
				  */
	STAT_LLC_BALANCE_PULLS,	 /* busy LLCs: a CPU took a task from the busier
				    LLC it was told of */
	STAT_LLC_BALANCE_WIDE_HINTS, /* busy LLCs: a hint that, after scans
					found no waiter light enough, lets one
					of up to twice the even-out load go */
	/* capacity.bpf.c: capacity (seed 002) */
	STAT_MISFIT_MOVES, /* task too big for its CPU moved to an idle one */
	/* group.bpf.c: the group balancer (seed 004) */
	STAT_WAKE_GROUP_PART, /* wakeup found an idle CPU in the group's
				 partition */
	STAT_GROUP_FALLBACK,  /* the group's partition had no idle CPU: searched
				 wider */
	STAT_GROUP_MOVES,     /* task moved into its group's partition */
	STAT_GROUP_QUEUED, /* task moved into its group's partition by queueing
			      on a shard there */
	STAT_GROUP_SWAPS, /* task outside its partition took the CPU of one that
			     belongs where it was */
	STAT_GROUP_TICK_MOVES, /* a tick ended the slice of a task outside its
				  partition that could move */
	/* main.bpf.c: dispatch, slice ends, migrations */
	STAT_DISPATCH_EMPTY, /* dispatch found nothing to run */
	STAT_PREV_REFILLED,  /* dispatch found nothing queued: the runnable prev
				kept its CPU, slice refilled */
	STAT_PREV_KEPT_AHEAD, /* slice end: the runnable prev kept its CPU
				 though tasks were queued (none due) */
	STAT_LAST_KEPT,	 /* a lone task due to move (misfit, partition) found no
			    idle CPU: stayed */
	STAT_MIGRATIONS, /* task started on a CPU other than its last */
	STAT_DEBUG_DROPS, /* tasks lost on purpose by --debug-drop-comm */
	/* weight.bpf.c: cgroup cpu.weight and cpu.idle */
	STAT_CGROUPS_UNTRACKED,	 /* cgroups beyond the cgroup table: tasks
				    charged by nice weight only */
	STAT_CGROUP_LOAD_NOTES,	 /* cpu.weight: a cgroup's task became runnable
				    or quiescent (noted per CPU) */
	STAT_CGROUP_LOAD_FOLDS,	 /* cpu.weight: a CPU's net change to a cgroup's
				    load folded into shared counters */
	STAT_IDLE_CGROUP_YIELDS, /* cpu.idle: a task of an idle cgroup gave up
				    its CPU at a tick to a waiter */
	STAT_IDLE_CGROUP_QUEUED, /* cpu.idle: a task of an idle cgroup queued on
				    its LLC's idle queue */
	STAT_IDLE_CGROUP_PULLS,	 /* cpu.idle: a CPU took a task from its LLC's
				    idle queue */
	STAT_IDLE_CGROUP_OVERDUE, /* cpu.idle: of idle_cgroup_pulls, a task that
				     waited a quarter of the watchdog timeout
				     took a busy CPU */
	/* bandwidth.bpf.c: cgroup cpu.max */
	STAT_BW_THROTTLES,    /* cpu.max: a limited cgroup's pool ran dry
				 (throttled) */
	STAT_BW_THROTTLED_NS, /* cpu.max: time limited cgroups spent throttled,
				 ns, summed over cgroups */
	STAT_BW_REFILLS, /* cpu.max: period refills of limited cgroups' pools */
	STAT_BW_PARKED,	 /* cpu.max: task of a throttled cgroup parked off the
			    shards */
	STAT_BW_UNPARKED,  /* cpu.max: parked task moved back to a queue after a
			      refill */
	STAT_BW_PARK_LEFT, /* cpu.max: parked task left its park queue another
			      way (cgroup move, affinity) */
	STAT_BW_UNTRACKED, /* cpu.max limits that found no slot or park queue:
			      not enforced until retried */
	STAT_BW_BUDGET_RETURNS, /* a CPU's cpu.max budget handed back to its
				   pool for another cgroup's */
	STAT_BW_PARK_EXEMPT,   /* cpu.max: a throttled cgroup's task not parked:
				  exiting, or inside an RCU read-side section or
				  with migration disabled */
	STAT_BW_PARK_RELEASES, /* cpu.max: a cgroup in debt let its parked
				  tasks run a moment, none parked past
				  idle_wait_ns (the watchdog) */
	STAT_BW_PARK_KILLED,   /* cpu.max: parked task moved back before the
				  refill because it was killed */
	STAT_BW_OVERDRAFT_MAX_US, /* cpu.max: the most a CPU's run went past
				     its cgroup's budget (paid back as debt),
				     microseconds */
	STAT_BW_PARKED_MAX_US, /* cpu.max: longest a task stayed parked by its
				  cgroup's limit (not in wait_max_us),
				  microseconds */
	/* vtime.bpf.c: the LLC's clock */
	STAT_CLOCK_DUE_MOVES, /* an LLC's clock moved up to the vtime a task
				 was queued at an epoch (wait_target_ns) ago,
				 not reached meanwhile */
	STAT_LAG_CUTS,	      /* a task queued again without sleeping was
				 further behind its clock than its lag bound,
				 and kept only the bound */
	STAT_LAG_CUT_NS,      /* vtime those tasks lost, ns (a sum) */
	STAT_LEAD_CUTS,	      /* a task queued further ahead of its clock than
				 its lead bound, and queued at the bound */
	STAT_LEAD_CUT_NS,     /* vtime those tasks were let off, ns (a sum) */
	/* vtime.bpf.c: wakeup preemption */
	STAT_WAKE_PREEMPTS, /* woken task with no idle CPU preempted the task
			       running on its CPU, more than min_slice_ns of
			       vtime past it */
	STAT_WAKE_PREEMPT_NO_TASK, /* no preemption: nothing ran on the CPU */
	STAT_WAKE_PREEMPT_HEAVIER, /* no preemption: the running task has at
				      least half the woken task's share */
	STAT_WAKE_PREEMPT_QUEUED,  /* no preemption: a task already waits on
				      the CPU's local queue */
	STAT_WAKE_PREEMPT_AHEAD,   /* no preemption: the running task is not
				      min_slice_ns of vtime past the woken one */
	/* wait.bpf.c: runnable waits */
	STAT_WAIT_MAX_US, /* longest runnable wait (woken or requeued until
			     running; a cpu.max park apart), microseconds */
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
