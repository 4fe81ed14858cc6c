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
	MAX_SHARDS = 256,
	/* an LLC is split into at most this many shards */
	MAX_SHARDS_PER_LLC = 64,
	MAX_COMM = 16,
};

/*
 * DSQ numbering. CPU c owns the FIFO-free, vtime-ordered queue `c` (pinned
 * tasks, and every task under --no-shared-runq); shard s of the shared
 * runqueue is `SHARD_DSQ_BASE + s`.
 */
enum mosaic_dsq {
	SHARD_DSQ_BASE = 1 << 20,
};

/*
 * Counters, one slot each in the per-CPU `stats` map. Rust sums them over
 * CPUs; their JSON names are the lower-case names without the prefix.
 */
enum mosaic_stat {
	STAT_DIRECT_DISPATCHES,	  /* wakeup placed straight on an idle CPU */
	STAT_SHARD_ENQUEUES,	  /* task queued on a shard of its LLC */
	STAT_SHARD_PULLS_LOCAL,	  /* CPU took a task from its own shard */
	STAT_SHARD_PULLS_SIBLING, /* CPU took a task from a sibling shard */
	STAT_CPU_ENQUEUES,	  /* task queued on a per-CPU queue */
	STAT_CPU_PULLS,	       /* CPU took a task from its own per-CPU queue */
	STAT_IDLE_KICKS,       /* idle CPU woken to pull a queued task */
	STAT_DISPATCH_EMPTY,   /* dispatch found nothing to run */
	STAT_SIBLING_SCANS,    /* dispatch looked at the sibling shards */
	STAT_WAKE_PREV_IDLE,   /* wakeup found prev CPU idle */
	STAT_WAKE_LLC_IDLE,    /* wakeup found another idle CPU in prev's LLC */
	STAT_WAKE_REMOTE_IDLE, /* wakeup found an idle CPU outside prev's LLC */
	STAT_WAKE_BUSY,	       /* wakeup found no idle CPU: task will queue */
	STAT_DEBUG_DROPS,      /* tasks lost on purpose by --debug-drop-comm */
	NR_MOSAIC_STATS,
};

#endif /* __MOSAIC_INTF_H */
