/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gate.bpf.c - the overload gate (seed 003).
 *
 * WHAT
 * One flag, `overloaded`, says whether any task waits on a shard that no CPU
 * of its own LLC is free to take: only a steal from another LLC could help
 * it. While the flag is clear, a CPU going idle skips the cross-LLC steal
 * scan (steal.bpf.c): there is nothing to find.
 *
 * HOW
 * Aggressive to turn on, opportunistic to turn off. ops.enqueue sets the
 * flag the moment it queues a task on a shard and finds no idle CPU in the
 * LLC to kick. A periodic scan (a BPF timer, every overload_scan_ns) reads
 * every shard's length without locks and clears the flag if all are empty;
 * with the flag up and an idle CPU around it kicks that CPU to steal (a
 * safety net for kicks lost to races). With per-CPU queues a newidle balance
 * that found every CPU queue empty clears it too (overload_newidle_clear()).
 * A task that merely waits for a CPU
 * already kicked for it does not raise the flag, as a CPU with one task does
 * not count as overloaded in the seed. Both sides write only when the value
 * changes, so a busy machine does not bounce the line. A set that races with
 * a clear can be lost; the task then waits for a CPU of its own LLC (at most
 * a slice) or for the next task queued anywhere to raise the flag again.
 * --no-overload-gate scans every time.
 *
 * The same scan checks the invariant of Lozi et al. ("The Linux Scheduler: a
 * Decade of Wasted Cores"): no CPU idles while a task that may run on it
 * waits in a queue. It counts the scans that see such a pair and the longest
 * stretch of consecutive scans that did (idle_waiting_*), so that tests can
 * bound it, and kicks the idle CPU when the flag is up.
 *
 * WHY
 * On a partially loaded machine (at most one task per CPU) an idle CPU's
 * balancing pass finds nothing and can cost more than the work itself: the
 * seed saw 0.13 ms of load balancing per 0.1 ms request on a 4-socket
 * machine, and the flag removed 75 % of the balance attempts.
 */

#ifndef CLOCK_MONOTONIC
#define CLOCK_MONOTONIC 1
#endif

/* Whether a task waits on a shard with no idle CPU of its LLC to take it. */
u32 overloaded;
/* When the flag was last set, for the time it spends set. */
u64 overloaded_since;
/* Up to when overload_ns holds the current spell (the periodic scan's
 * checkpoint), so that a reader of the counters between two scans misses at
 * most one scan period of a spell still open. */
u64 overload_counted_to;

struct gate_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct gate_timer);
} gate_timers SEC(".maps");

/* Raise the overload flag: a task waits that only another LLC can take. */
static __always_inline void overload_set(void)
{
	if (overloaded)
		return;
	overloaded = 1;
	overloaded_since = scx_bpf_now();
	stat_inc(STAT_OVERLOAD_SETS);
}

/*
 * Whether the flag is up: a task waits that only another LLC's CPU can take;
 * with per-CPU queues, a task waits behind a running one (the kernel's root
 * domain overload flag, which gates newidle balance).
 */
static __always_inline bool overload_up(void)
{
	return overloaded;
}

/*
 * Add the flag's time up to @now to overload_ns: from the later of the spell's
 * start and the last checkpoint. The periodic scan calls it, and whoever
 * lowers the flag (overload_clear()); a start read while a racing
 * overload_set() has raised the flag but not yet stamped it, or a checkpoint
 * a clear and the scan both read, adds at most one scan period.
 */
static __always_inline void overload_account(u64 now)
{
	u64 from = overloaded_since;
	u32 idx = STAT_OVERLOAD_NS;
	u64 *ns;

	if (time_before(from, overload_counted_to))
		from = overload_counted_to;
	overload_counted_to = now;
	ns = bpf_map_lookup_elem(&stats, &idx);
	if (ns && time_before(from, now))
		*ns += now - from;
}

/*
 * Lower the overload flag, accounting the time it was set. The periodic scan
 * and newidle balances (overload_newidle_clear()) both lower it: one atomic
 * swap picks the one that accounts the spell.
 */
static __always_inline bool overload_clear(u64 now)
{
	if (!overloaded || !__sync_lock_test_and_set(&overloaded, 0))
		return false;
	overload_account(now);
	return true;
}

/*
 * With per-CPU queues: a newidle balance read every CPU queue and found all
 * empty. Lower the flag, as the kernel's balance at the root domain stores
 * what it saw in rd->overload (update_sd_lb_stats()); else, under partial
 * load, the flag that one queued wakeup raised stayed up until the next
 * periodic scan and every CPU about to idle scanned every queue in vain
 * (schbench on 4llc: 4 us of BPF time in each of 13,000 empty dispatches a
 * run, TCG). A raise racing with the clear can be lost, as with the scan's;
 * the scan then still wakes a CPU left idle beside its own queue's task
 * (gate_scan()).
 */
static __always_inline void overload_newidle_clear(u64 now)
{
	if (overload_clear(now))
		stat_inc(STAT_OVERLOAD_NEWIDLE_CLEARS);
}

/* Whether any shard (or with per-CPU queues, any CPU queue) holds a
 * waiting task. */
static __always_inline bool anyone_waiting(void)
{
	u32 i;

	if (cpu_queues_only())
		return cpu_queue_waiting();
	bpf_for (i, 0, nr_shards) {
		if (scx_bpf_dsq_nr_queued(shard_dsq_id(i)))
			return true;
	}
	return false;
}

/* Since when consecutive scans saw a CPU idle next to a waiter (0: not). */
u64 idle_waiting_since;

/*
 * An idle CPU that one of the first tasks waiting on shard @shard may run on,
 * or -1. A global function: the verifier checks it once, not per caller loop.
 */
__noinline s32 idle_cpu_for_shard(u32 shard)
{
	const struct cpumask *idle;
	struct task_struct *p;
	s32 found = -1, cpu;
	u32 seen = 0;

	if (shard >= MAX_SHARDS || !scx_bpf_dsq_nr_queued(shard_dsq_id(shard)))
		return -1;
	idle = scx_bpf_get_idle_cpumask();
	/* the DSQ iterator needs RCU: 6.19 checks this timer callback as
	 * sleepable, like the ops.init that starts the timer */
	bpf_rcu_read_lock();
	bpf_for_each (scx_dsq, p, shard_dsq_id(shard), 0) {
		if (++seen > STEAL_LOOK_AHEAD)
			break;
		cpu = bpf_cpumask_any_and_distribute(p->cpus_ptr, idle);
		if (cpu < nr_cpu_ids) {
			found = cpu;
			break;
		}
	}
	bpf_rcu_read_unlock();
	scx_bpf_put_idle_cpumask(idle);
	return found;
}

/* An idle CPU whose own queue holds a task, or -1. */
static __always_inline s32 idle_cpu_with_own_waiter(void)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	s32 found = -1;
	u32 i;

	bpf_for (i, 0, nr_cpu_ids) {
		if (bpf_cpumask_test_cpu(i, idle) &&
		    scx_bpf_dsq_nr_queued(cpu_dsq_id(i))) {
			found = i;
			break;
		}
	}
	scx_bpf_put_idle_cpumask(idle);
	return found;
}

/*
 * Per CPU, the shard (+1; 0: none) where the periodic scan last saw a task
 * that CPU may run, when it kicked the idle CPU for it: the kicked CPU's
 * steal looks there first (steal.bpf.c), whatever its sampling would read.
 */
u32 steal_hint[MAX_CPUS];

/*
 * An idle CPU that a queued task may run on, or -1 if there is none; if the
 * task waits on a shard, that shard goes to *@shard (else it is left alone).
 */
static __always_inline s32 idle_cpu_for_waiter(u32 *shard)
{
	s32 cpu = idle_cpu_with_own_waiter();
	u32 i;

	bpf_for (i, 0, nr_shards) {
		if (cpu >= 0)
			break;
		cpu = idle_cpu_for_shard(i);
		if (cpu >= 0)
			*shard = i + 1;
	}
	return cpu;
}

/* Record one scan's wasted-core verdict: whether a CPU idled by a waiter. */
static __always_inline void note_idle_waiting(bool seen)
{
	u64 now = scx_bpf_now(), since = idle_waiting_since, us;

	if (!seen) {
		idle_waiting_since = 0;
		return;
	}
	stat_inc(STAT_IDLE_WAITING_SCANS);
	if (!since) {
		idle_waiting_since = now;
		return;
	}
	us = time_before(since, now) ? (now - since) / 1000 : 0;
	stat_max(STAT_IDLE_WAITING_MAX_US, us);
}

/* Whether the scans have seen a CPU idle beside a waiter for over one scan. */
static __always_inline bool idle_waiting_outlived_scan(u64 now)
{
	u64 since = idle_waiting_since;

	return since && time_before(since + overload_scan_ns / 2, now);
}

/*
 * The periodic scan: clear the flag if nobody waits. If someone waits while
 * a CPU it may run on idles and the flag is up (a kick lost to a race), wake
 * that CPU to steal. With the flag down it wakes only a CPU that idles beside
 * a task of its own queue for a second scan in a row (a raise lost to a race
 * with a clear: the wait stays bounded). (Waking CPUs for shard waiters with
 * the flag down cut the group balancer's exclusivity in tests/test_group.py
 * below its bound.) The scan never raises the flag itself: under
 * partial load most waiters it sees are about to run, and raising the flag
 * for them would defeat the gate (ops.enqueue raises it for a task no CPU of
 * its LLC can take).
 */
static int gate_scan(void *map, int *key, struct bpf_timer *timer)
{
	u64 now = scx_bpf_now();
	u32 shard = 0;
	s32 idle;

	if (!anyone_waiting())
		overload_clear(now);
	else if (overloaded)
		overload_account(now);
	llc_balance_scan(now);
	idle = idle_cpu_for_waiter(&shard);
	note_idle_waiting(idle >= 0);
	if (idle >= 0 &&
	    (overloaded || (!shard && idle_waiting_outlived_scan(now)))) {
		steal_hint[idle & (MAX_CPUS - 1)] = shard;
		kick_claimed(idle);
	}
	bpf_timer_start(timer, overload_scan_ns, 0);
	return 0;
}

/* Start the periodic scan. Called from ops.init. */
static s32 gate_init(void)
{
	struct gate_timer *t;
	u32 key = 0;
	s32 ret;

	t = bpf_map_lookup_elem(&gate_timers, &key);
	if (!t) {
		scx_bpf_error("no overload gate timer");
		return -ENOENT;
	}
	bpf_timer_init(&t->timer, &gate_timers, CLOCK_MONOTONIC);
	bpf_timer_set_callback(&t->timer, gate_scan);
	ret = bpf_timer_start(&t->timer, overload_scan_ns, 0);
	if (ret)
		scx_bpf_error("cannot start the overload gate timer: %d", ret);
	return ret;
}
