/* SPDX-License-Identifier: GPL-2.0 */
/*
 * steal.bpf.c - stealing across LLCs and NUMA nodes (seed 000's "future
 * work"), behind the overload gate (gate.bpf.c).
 *
 * WHAT
 * A CPU that found nothing in its own queues nor in the other shards of its
 * LLC takes a task from the busiest shard of another LLC of its NUMA node;
 * failing that, of the other nodes.
 *
 * HOW
 * A scan reads the lengths of STEAL_PROBES shards of other LLCs without
 * locks - spread evenly over them from a random start, so all of them on a
 * machine with that few, a sample on a big one: the work per scan does not
 * grow with the machine - and keeps the busiest shard of the node and the
 * busiest beyond it; only the chosen shard is locked, by the move itself,
 * which skips tasks not allowed on this CPU. At most one task moves per scan.
 * A waiter the sample missed is not lost: the periodic scan (gate.bpf.c)
 * finds the idle CPU it may run on, leaves it its shard as a hint, and kicks
 * it. Skipped entirely while the overload flag is clear. Which task of the
 * chosen shard to take is the group balancer's call when it runs
 * (group_steal_from(), group.bpf.c).
 *
 * WHY
 * Shared runqueues stop at the LLC to keep caches warm, which leaves a whole
 * LLC idle while another is overloaded. Stealing restores work conservation;
 * nearest first (same node before remote) keeps the stolen task's memory
 * close, and the gate keeps the scan off the path when nothing waits.
 */

/*
 * Of the shards outside LLC @own, the @i-th of the STEAL_PROBES read by a
 * scan starting at @start and going @step shards at a time (@others: how many
 * there are). The LLC's own shards are contiguous, so they are skipped over.
 */
static __always_inline u32 probe_shard(u32 own, u32 others, u32 start, u32 step,
				       u32 i)
{
	u32 idx = (start + i * step) % others;
	u32 first = llc_first_shard[own & (MAX_LLCS - 1)];

	return idx < first ? idx : idx + llc_nr_shards[own & (MAX_LLCS - 1)];
}

/*
 * Take a task from a busy shard of another LLC: the shard the periodic scan
 * saw a task for @cpu on, if any; else the busiest of STEAL_PROBES shards
 * read without locks, spread evenly over the other LLCs from a random start
 * (all of them on machines with that few), of @cpu's node if any waits
 * there, else of another node.
 */
static __always_inline bool steal_from_llcs(s32 cpu)
{
	u32 own = llc_of(cpu), node = llc_node[own], s, llc, i;
	u32 others = nr_shards - llc_nr_shards[own & (MAX_LLCS - 1)];
	u32 *hint = &steal_hint[cpu & (MAX_CPUS - 1)];
	u32 near = 0, far = 0, reads, step, start;
	u64 near_q = 0, far_q = 0, q;

	if (*hint) {
		s = *hint - 1;
		*hint = 0;
		llc = shard_llc[s & (MAX_SHARDS - 1)] & (MAX_LLCS - 1);
		if (llc != own &&
		    group_steal_from(cpu, shard_dsq_id(s),
				     llc_node[llc] == node
					     ? STAT_STEAL_PULLS_NODE
					     : STAT_STEAL_PULLS_REMOTE))
			return true;
	}
	if (!others || others > MAX_SHARDS)
		return false;
	reads = others < STEAL_PROBES ? others : STEAL_PROBES;
	step = others / reads;
	start = reads < others ? bpf_get_prandom_u32() % others : 0;
	bpf_for (i, 0, STEAL_PROBES) {
		if (i >= reads)
			break;
		s = probe_shard(own, others, start, step, i);
		llc = shard_llc[s & (MAX_SHARDS - 1)] & (MAX_LLCS - 1);
		q = scx_bpf_dsq_nr_queued(shard_dsq_id(s));
		if (llc_node[llc] == node) {
			if (q > near_q) {
				near_q = q;
				near = s;
			}
		} else if (q > far_q) {
			far_q = q;
			far = s;
		}
	}
	if (near_q &&
	    group_steal_from(cpu, shard_dsq_id(near), STAT_STEAL_PULLS_NODE))
		return true;
	return far_q && group_steal_from(cpu, shard_dsq_id(far),
					 STAT_STEAL_PULLS_REMOTE);
}

/*
 * Balancing busy LLCs (--no-llc-balance turns it off).
 *
 * WHAT
 * Stealing moves work only to a CPU that would idle. When every CPU is busy,
 * a task stays in the LLC where it was forked or woke, however crowded that
 * LLC is: a cgroup whose tasks a shell forked on one LLC of a 2-LLC machine,
 * next to an equal one spread over both, got half its share for as long as
 * the load lasted (simulator and VM, tests/test_llc_balance.py). So the LLC
 * that carries the most weight per CPU gives a task to the one that carries
 * the least, whenever the gap is wide enough that a move narrows it, as the
 * kernel's periodic load balance does between busy scheduling domains.
 *
 * HOW
 * A task's load is its share of the machine (weight.bpf.c: nice weight times
 * its cgroups' shares, the unit its vtime is charged in) times how much of
 * the recent past it was runnable (runnable_frac_now(), below), as the
 * kernel's PELT weighs a task by its weight times its runnable average. Each
 * CPU notes the share and load of the task it runs in its own slot
 * (ops.running, and ops.tick after the charge refreshed it; cleared at
 * ops.stopping). The periodic scan (gate.bpf.c) weighs each LLC: in the
 * shard design, its CPUs' slots and the loads of the tasks waiting on its
 * shards (the first LLC_BALANCE_LOOK of each, scaled to the queue's length),
 * as they are now; with per-CPU queues, its CPUs' load averages
 * (cpu_load_avg[], below), as the kernel weighs busy groups by decayed load.
 * Moving load x from the heaviest LLC per CPU to the lightest evens them when x
 * = (load_h n_l - load_l n_h) / (n_h + n_l). If the same two stand out in two
 * scans in a row (with per-CPU queues, the heaviest above the lightest by
 * IMBALANCE_PCT), one of the heaviest's waiters has a load of at most x, and
 * the lightest got no hint for LLC_BALANCE_SLICES slices, the scan leaves it a
 * hint: x, and the queue to take from: the shard where it saw the heaviest
 * LLC's lightest waiter, or the heaviest CPU of that LLC whose queue holds a
 * waiter of at most x (find_busiest_queue() and detach_tasks() in the kernel).
 * After LLC_BALANCE_WIDEN_FAILS scans in a row found the pair but no waiter
 * that light, the limit is 2x - 1 instead (a wide hint), as the kernel's
 * failed balances (nr_balance_failed) let heavier tasks go. The next CPU of
 * the hinted LLC to dispatch - at a slice end too, before prev may keep its CPU
 * - swaps the hint out (one CPU wins it) and takes from that queue its oldest
 * task with a load within the limit (no move back: see WHY), one task; its
 * prev queues again; with per-CPU queues the task's load moves between the two
 * CPUs' averages at once. A dispatch without a hint pays one read of its LLC's
 * hint word; the scan's work is O(#CPUs + #queues x LLC_BALANCE_LOOK) per
 * period; per event, a wakeup and a sleep bring the task's runnable fraction
 * up to date and a start or tick weighs it, a few arithmetic operations each.
 * Tasks pinned to a CPU are not moved (the shard design keeps them on CPU
 * queues, which it does not weigh). Off under the group balancer, which places
 * cgroups' tasks on partitions itself. With per-CPU queues it is the kernel's
 * periodic balance of the domains above the LLC. The same weighing caps the
 * lead bound of vtime.bpf.c (vtime_note_load()), on machines of one LLC too.
 *
 * WHY
 * Fair shares hold inside an LLC (one vtime order); across LLCs only as far
 * as weight is spread evenly. The head of a shard is its task that waited
 * longest, the one with the least cache to lose. One task per hint and a few
 * slices between hints keep a bursty queue (hackbench) from bouncing tasks
 * between LLCs. A shard is one vtime order, so a needless move costs its task
 * a cache refill only; a per-CPU queue's order decides its tasks' shares, so
 * there a move that noise caused (a root task waking for a moment, weighed
 * by an instant sample) costs the split. Hence decayed load averages, and a
 * source queue chosen for a waiter light enough to move: the busiest queue
 * by count often held none. Hence too a task's runnable fraction in its
 * load: weighed by share alone, a root-cgroup task that runs for a moment
 * (share 100, against 12.5 for a loop of a crowded cgroup) made the CPU the
 * scan caught it on look heavy for several scans, and busy loops moved back
 * and forth for as long as they ran (cpu.weight 300:100 on 16 loops, 2
 * LLCs: about 20 moves a second, 2.3-2.6:1; mosaic-sim's hogs with root
 * probes show the same). Moves of at most x alone can stop short: with
 * cpu.weight 300:100, 8 loops each on 2 LLCs of 4 CPUs, one LLC can hold 6
 * heavy loops (load 6 x 37.5 per 400) and the other 2 heavy and 8 light ones
 * (175): x is 25, every waiter of the heavy LLC weighs 37.5, and the split
 * stayed near 2.3:1 for the whole run (VM, one run in four; mosaic-sim's hogs
 * with the light cgroup held to one LLC by cpus=). A move of load y < 2x from
 * the heaviest to the lightest still lowers the sum of their squared loads
 * per CPU, so such moves end; and the task cannot come back, as the gap it
 * leaves is under y.
 */

/* The share and load of the task each CPU runs (0: none), a line each. */
struct cpu_share {
	u64 share;
	u64 load;
} __attribute__((aligned(64)));

struct cpu_share cpu_running_share[MAX_CPUS];
/* Per LLC, the summed load of its running and waiting tasks, and of the
 * waiting ones alone, and how many wait, as the periodic scan last saw; and
 * (shard design) the summed share of its running and waiting tasks. */
u64 llc_load[MAX_LLCS];
u64 llc_queued_load[MAX_LLCS];
u32 llc_queued[MAX_LLCS];
u64 llc_shares[MAX_LLCS];
/* Per LLC, the smallest load among the waiters the scan looked at, and the
 * shard it waits on (shard design). */
u64 llc_min_load[MAX_LLCS];
u64 llc_min_dsq[MAX_LLCS];
/* Per CPU (per-CPU queues), the smallest load among its queue's waiters the
 * scan looked at (0: none). */
u64 cpu_min_waiter[MAX_CPUS];
/* Per LLC, the largest load of a task its hinted CPU may take (the load
 * that evens the two LLCs out), with llc_pull_from. */
u64 llc_pull_limit[MAX_LLCS];
/* Per LLC, the LLC (+1; 0: none) its next dispatching CPU takes a task from. */
u32 llc_pull_from[MAX_LLCS];
/* Per LLC, the queue its hinted CPU takes from, and that queue's CPU with
 * per-CPU queues (-1: a shard). */
u64 llc_pull_dsq[MAX_LLCS];
s32 llc_pull_cpu[MAX_LLCS];
/* Per LLC, when the scan last left it a hint. */
u64 llc_pull_at[MAX_LLCS];
/* The (heaviest + 1) << 16 | (lightest + 1) pair the last scan saw. */
u32 llc_balance_pair;
/* Scans in a row that saw that pair with no waiter light enough to move. */
u32 llc_balance_failed;
/*
 * After this many, a waiter of less than twice the even-out load may move: it
 * overshoots, but less than the gap, so the gap narrows, and the task cannot
 * come back (the kernel's nr_balance_failed lets heavier tasks go likewise).
 */
#define LLC_BALANCE_WIDEN_FAILS 2

/* Whether LLC balancing runs at all. */
static __always_inline bool llc_balance_on(void)
{
	return !no_llc_balance && !group_balancer && nr_llcs > 1;
}

/*
 * A task's runnable fraction follows what it did over the last
 * 2^RUNNABLE_FRAC_SHIFT ns (67 ms): a stretch runnable or asleep moves it
 * toward all or nothing in proportion to the stretch's length, all the way
 * from that length on. A straight-line stand-in for PELT's geometric decay
 * (half-life 32 ms), which it meets at 32 ms; shifts, no division. A new
 * task starts runnable throughout, as the kernel's new tasks start at full
 * load (init_entity_runnable_average()).
 */
#define RUNNABLE_FRAC_SHIFT 26
#define RUNNABLE_FRAC_ONE 1024

/* @tctx's runnable fraction at @now, had it been runnable (@runnable) or
 * asleep since it last changed. */
static __always_inline u32 runnable_frac_now(struct task_ctx *tctx,
					     bool runnable, u64 now)
{
	u64 dt = now - tctx->runnable_frac_at;
	u32 frac = tctx->runnable_frac;

	if (time_before(now, tctx->runnable_frac_at))
		return frac;
	if (dt >> RUNNABLE_FRAC_SHIFT)
		return runnable ? RUNNABLE_FRAC_ONE : 0;
	if (runnable)
		return frac + (((u64)(RUNNABLE_FRAC_ONE - frac) * dt) >>
			       RUNNABLE_FRAC_SHIFT);
	return frac - (((u64)frac * dt) >> RUNNABLE_FRAC_SHIFT);
}

/* A task enters the scheduler at @now: runnable throughout so far. */
static __always_inline void balance_load_init(struct task_ctx *tctx, u64 now)
{
	tctx->runnable_frac = RUNNABLE_FRAC_ONE;
	tctx->runnable_frac_at = now;
}

/* A task becomes runnable at @now: it slept since it last changed if it
 * @woke (SCX_ENQ_WAKEUP); else it was runnable throughout (a fork, or a
 * dequeue that only changed its properties). */
static __always_inline void balance_runnable(struct task_ctx *tctx, u64 now,
					     bool woke)
{
	tctx->runnable_frac = runnable_frac_now(tctx, !woke, now);
	tctx->runnable_frac_at = now;
}

/* A task stops at @now to sleep (ops.stopping, not runnable: the time its
 * stopping already read): it was runnable since it last changed. */
static __always_inline void balance_sleeping(struct task_ctx *tctx, u64 now)
{
	tctx->runnable_frac = runnable_frac_now(tctx, true, now);
	tctx->runnable_frac_at = now;
}

/* The load of @p, runnable now, of share @share (at least 1: 0 is "none"). */
static __always_inline u64 task_balance_load(struct task_ctx *tctx, u64 share,
					     u64 now)
{
	if (!tctx)
		return share ?: 1;
	return ((share * runnable_frac_now(tctx, true, now)) >> 10) ?: 1;
}

/* @p runs on @cpu at @now (it starts, or a tick charged it): its share and
 * load in the slot. */
static __always_inline void llc_balance_note_share(struct task_struct *p,
						   struct task_ctx *tctx,
						   s32 cpu, u64 now)
{
	struct cpu_share *slot = &cpu_running_share[cpu_idx(cpu)];

	slot->share = task_share_cached(p, tctx);
	slot->load = task_balance_load(tctx, slot->share, now);
}

/* The task on @cpu stops: its slot is empty until the next one runs. */
static __always_inline void llc_balance_stopping(s32 cpu)
{
	cpu_running_share[cpu_idx(cpu)].share = 0;
	cpu_running_share[cpu_idx(cpu)].load = 0;
}

/*
 * The summed load at @now of the tasks waiting on DSQ @dsq (a shard, or a
 * CPU's own queue with per-CPU queues): of its first LLC_BALANCE_LOOK, scaled
 * to its length; their summed share, scaled alike, is added to *@shares; the
 * smallest of those loads lowers *@min (0: none yet). A global function: the
 * verifier checks it once, not per caller loop.
 */
__noinline u64 dsq_queued_load(u64 dsq, u64 now, u64 *shares, u64 *min)
{
	u64 sum = 0, share_sum = 0, q, share, load;
	struct task_struct *p;
	struct task_ctx *tctx;
	u32 seen = 0;

	if (!shares || !min)
		return 0;
	q = scx_bpf_dsq_nr_queued(dsq);
	if (!q)
		return 0;
	bpf_rcu_read_lock();
	bpf_for_each (scx_dsq, p, dsq, 0) {
		if (seen >= LLC_BALANCE_LOOK)
			break;
		seen++;
		tctx = task_ctx_of(p);
		share = task_share_cached(p, tctx);
		load = task_balance_load(tctx, share, now);
		share_sum += share;
		sum += load;
		if (!*min || load < *min)
			*min = load;
	}
	bpf_rcu_read_unlock();
	if (!seen)
		return 0;
	*shares += share_sum * q / seen;
	return sum * q / seen;
}

/*
 * Per CPU, its load (the load of the task it runs and of the waiters on its
 * own queue: all of them with per-CPU queues, its pinned crowd in the shard
 * design) averaged over the periodic scans, each weighing 1/8 (half-life
 * about 5 scans, 50 ms at the default 10 ms): the periodic balance compares
 * these, as the kernel compares decayed load averages (PELT), so that a task
 * waking for a moment does not move a busy loop. Written by the scan, and by
 * a balance's move at once (as the kernel moves a task's load average with
 * it). cpu_share_avg[] averages their shares alike: the rate its clock moves
 * at if shares hold (vtime_note_load()) and the turns on its queue
 * (head_due_before()) count every runnable task by its share.
 */
u64 cpu_load_avg[MAX_CPUS];
u64 cpu_share_avg[MAX_CPUS];

/* The scan weighed CPU @cpu at @load and @shares: fold them into its
 * averages. */
static __always_inline void cpu_load_note(u32 cpu, u64 load, u64 shares)
{
	u32 i = cpu & (MAX_CPUS - 1);

	cpu_load_avg[i] = decay_eighth(cpu_load_avg[i], load);
	cpu_share_avg[i] = decay_eighth(cpu_share_avg[i], shares);
}

/* @x less @y, or 0 if @y is more. */
static __always_inline u64 sub_floor(u64 x, u64 y)
{
	return y < x ? x - y : 0;
}

/* A balance moved a task of load @load and share @share (0: none) from
 * @from to @to: they go with it, in both CPUs' averages at once. */
static __always_inline void cpu_load_move(s32 from, s32 to, u64 load, u64 share)
{
	u32 f = cpu_idx(from), t = cpu_idx(to);

	cpu_load_avg[f] = sub_floor(cpu_load_avg[f], load);
	cpu_load_avg[t] += load;
	cpu_share_avg[f] = sub_floor(cpu_share_avg[f], share);
	cpu_share_avg[t] += share;
}

/*
 * In the shard design, weigh each CPU's pinned crowd, its running task and
 * the tasks waiting on its own queue, for that crowd's clock and turns
 * (pinned_clock_id(), head_due_before()). O(#CPUs) once per periodic scan,
 * as the per-CPU designs' own weighing; a CPU with no pinned waiter costs a
 * queue-length read and two writes to lines of its own.
 */
static __always_inline void pinned_load_sample(u64 now)
{
	u64 min, shares, load;
	u32 i;

	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		min = 0;
		shares = cpu_running_share[i].share;
		load = dsq_queued_load(cpu_dsq_id(i), now, &shares, &min);
		cpu_load_note(i, cpu_running_share[i].load + load, shares);
		vtime_note_load(pinned_clock_id(i), cpu_share_avg[i], 1);
	}
}

/* Add up each LLC's load at @now: its CPUs' slots and its queues' waiters. */
static __always_inline void llc_balance_sample(u64 now)
{
	u64 q, dsq, min, load, shares;
	u32 i, l;

	bpf_for (l, 0, nr_llcs) {
		if (l >= MAX_LLCS)
			break;
		llc_load[l] = 0;
		llc_queued_load[l] = 0;
		llc_queued[l] = 0;
		llc_shares[l] = 0;
		llc_min_load[l] = 0;
	}
	/* the shard design weighs its LLCs as they are now; per-CPU queues
	 * by their CPUs' load averages (below) */
	bpf_for (i, 0, cpu_queues_only() ? 0 : nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		l = cpu_llc[i] & (MAX_LLCS - 1);
		llc_load[l] += cpu_running_share[i].load;
		llc_shares[l] += cpu_running_share[i].share;
	}
	/* the waiters: on the shards, or on the CPU queues */
	bpf_for (i, 0, cpu_queues_only() ? nr_cpu_ids : nr_shards) {
		if (cpu_queues_only()) {
			if (i >= MAX_CPUS)
				break;
			dsq = cpu_dsq_id(i);
			l = cpu_llc[i] & (MAX_LLCS - 1);
		} else {
			if (i >= MAX_SHARDS)
				break;
			dsq = shard_dsq_id(i);
			l = shard_llc[i] & (MAX_LLCS - 1);
		}
		q = scx_bpf_dsq_nr_queued(dsq);
		load = 0;
		min = 0;
		shares = 0;
		if (q) {
			load = dsq_queued_load(dsq, now, &shares, &min);
			if (!llc_min_load[l] || min < llc_min_load[l]) {
				llc_min_load[l] = min;
				llc_min_dsq[l] = dsq;
			}
			llc_queued[l] += q;
			llc_queued_load[l] += load;
			llc_shares[l] += shares;
		}
		if (cpu_queues_only()) {
			cpu_min_waiter[i] = min;
			cpu_load_note(i, cpu_running_share[i].load + load,
				      cpu_running_share[i].share + shares);
			vtime_note_load(i, cpu_share_avg[i], 1);
			llc_load[l] += cpu_load_avg[i];
		}
	}
	bpf_for (l, 0, nr_llcs) {
		if (l >= MAX_LLCS)
			break;
		if (cpu_queues_only())
			continue;
		llc_load[l] += llc_queued_load[l];
		vtime_note_load(l, llc_shares[l], llc_nr_cpus[l]);
	}
	if (!cpu_queues_only())
		pinned_load_sample(now);
}

/*
 * The heaviest LLC per CPU and the lightest, as llc_balance_pair holds them,
 * if they differ and a task waits in the heaviest, with the load that, moved,
 * evens the two out (*@limit: a move of at most that never overshoots, so the
 * next scan does not move it back); 0 if not.
 */
static __always_inline u32 llc_balance_pick(u64 *limit)
{
	u32 l, heavy = 0, light = 0;
	u64 n_heavy, n_light, a, b;

	/* per CPU: compare a/n_a with b/n_b as a * n_b with b * n_a */
	bpf_for (l, 1, nr_llcs) {
		if (l >= MAX_LLCS)
			break;
		if (llc_load[l] * llc_nr_cpus[heavy] >
		    llc_load[heavy] * llc_nr_cpus[l])
			heavy = l;
		if (llc_load[l] * llc_nr_cpus[light] <
		    llc_load[light] * llc_nr_cpus[l])
			light = l;
	}
	heavy &= MAX_LLCS - 1;
	light &= MAX_LLCS - 1;
	if (heavy == light || !llc_queued[heavy])
		return 0;
	n_heavy = llc_nr_cpus[heavy];
	n_light = llc_nr_cpus[light];
	a = llc_load[heavy] * n_light;
	b = llc_load[light] * n_heavy;
	/* per-CPU queues: balanced unless the heaviest is above the lightest
	 * by the domain's imbalance_pct, as find_busiest_group() has it */
	if (cpu_queues_only() && a * 100 <= b * IMBALANCE_PCT)
		return 0;
	/* x with (load_h - x) / n_h = (load_l + x) / n_l */
	*limit = a > b ? (a - b) / (n_heavy + n_light) : 0;
	if (!*limit || !llc_min_load[heavy])
		return 0;
	return (heavy + 1) << 16 | (light + 1);
}

/*
 * With per-CPU queues, the CPU of LLC @llc to take from: the heaviest (by its
 * load average) whose queue holds a waiter of a load of at most @limit, as
 * the kernel's find_busiest_queue() picks the busiest runqueue by weighted
 * load and detach_tasks() skips a task heavier than the imbalance; -1 if
 * none. A global function: the verifier checks its loop once.
 */
__noinline s32 heaviest_cpu_within(u32 llc, u64 limit)
{
	u64 best = 0, min;
	s32 src = -1;
	u32 i;

	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		min = cpu_min_waiter[i];
		if (cpu_llc[i] != llc || !min || min > limit ||
		    cpu_load_avg[i] < best)
			continue;
		best = cpu_load_avg[i];
		src = i;
	}
	return src;
}

/*
 * The periodic scan's half, at @now: weigh the LLCs, and hint the lightest
 * to take a task from the heaviest if the same pair stood out in the last
 * scan too (see above).
 */
static void llc_balance_scan(u64 now)
{
	u32 pair, from, to;
	u64 limit = 0, dsq;
	s32 src;

	llc_balance_sample(now);
	if (!llc_balance_on())
		return;
	pair = llc_balance_pick(&limit);
	if (!pair || pair != llc_balance_pair) {
		llc_balance_pair = pair;
		llc_balance_failed = 0;
		return;
	}
	from = ((pair >> 16) - 1) & (MAX_LLCS - 1);
	to = ((pair & 0xffff) - 1) & (MAX_LLCS - 1);
	if (llc_pull_from[to] ||
	    (llc_pull_at[to] &&
	     time_before(now, llc_pull_at[to] + LLC_BALANCE_SLICES * slice_ns)))
		return;
	if (llc_min_load[from] > limit) {
		if (llc_balance_failed < LLC_BALANCE_WIDEN_FAILS) {
			llc_balance_failed++;
			return;
		}
		limit = 2 * limit - 1;
		if (llc_min_load[from] > limit)
			return;
		stat_inc(STAT_LLC_BALANCE_WIDE_HINTS);
	}
	llc_balance_failed = 0;
	src = -1;
	dsq = llc_min_dsq[from];
	if (cpu_queues_only()) {
		src = heaviest_cpu_within(from, limit);
		if (src < 0)
			return;
		dsq = cpu_dsq_id(src);
	}
	llc_pull_at[to] = now;
	llc_pull_limit[to] = limit;
	llc_pull_dsq[to] = dsq;
	llc_pull_cpu[to] = src;
	llc_pull_from[to] = from + 1;
	stat_inc(STAT_LLC_BALANCE_HINTS);
}

/*
 * Move to @cpu's local DSQ the first of the first LLC_BALANCE_LOOK tasks of
 * @dsq that may run on @cpu and whose load is at most @limit, counting it in
 * @stat. Returns the moved task's load, 0 if none moved, and its share in
 * *@share.
 */
static __always_inline u64 pull_within_load(s32 cpu, u64 dsq, u64 limit,
					    enum mosaic_stat stat, u64 *share)
{
	u64 now = scx_bpf_now(), load;
	struct task_struct *p;
	struct task_ctx *tctx;
	u32 seen = 0;

	bpf_for_each (scx_dsq, p, dsq, 0) {
		if (++seen > LLC_BALANCE_LOOK)
			break;
		tctx = task_ctx_of(p);
		*share = task_share_cached(p, tctx);
		load = task_balance_load(tctx, *share, now);
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr) || load > limit)
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			stat_inc(stat);
			return load;
		}
	}
	*share = 0;
	return 0;
}

/*
 * @cpu dispatches: if the scan left its LLC a hint and @cpu wins it, take from
 * the queue that held the hinted LLC's lightest waiter its oldest task light
 * enough not to overshoot (llc_balance_pick()); with per-CPU queues the task's
 * load moves between the two CPUs' averages. True if a task moved.
 */
static __always_inline bool llc_balance_pull(s32 cpu)
{
	u32 llc = llc_of(cpu) & (MAX_LLCS - 1), from;
	u64 moved, share;
	s32 from_cpu;

	if (!llc_pull_from[llc])
		return false;
	from = __sync_lock_test_and_set(&llc_pull_from[llc], 0);
	if (!from || --from >= MAX_LLCS)
		return false;
	from_cpu = llc_pull_cpu[llc];
	moved = pull_within_load(cpu, llc_pull_dsq[llc], llc_pull_limit[llc],
				 STAT_LLC_BALANCE_PULLS, &share);
	if (from_cpu >= 0) {
		shard_index_sync(from_cpu);
		cpu_load_move(from_cpu, cpu, moved, share);
	}
	return moved;
}

/* The cross-LLC steal scan of a CPU with nothing in its LLC; true on a hit. */
static __always_inline bool steal_scan(s32 cpu)
{
	if (cpu_queues_only() || nr_llcs <= 1)
		return false;
	if (!overloaded && !no_overload_gate) {
		stat_inc(STAT_STEAL_SCANS_SKIPPED);
		return false;
	}
	stat_inc(STAT_STEAL_SCANS);
	if (steal_from_llcs(cpu)) {
		stat_inc(STAT_STEAL_HITS);
		return true;
	}
	return false;
}

/*
 * Periodic balance with per-CPU queues (--no-shared-runq, and the seed's
 * design): the kernel's rebalance_domains() (kernel/sched/fair.c), run from the
 * scheduler tick, balances each domain of a CPU once per its balance interval -
 * sd->balance_interval, which starts at the domain's CPU count in ms, times
 * sd->busy_factor (16) while the CPU is busy (get_sd_balance_interval()) - and
 * load_balance() moves load from the busiest runqueue (find_busiest_queue()) to
 * this CPU; when every CPU of the domain is busy (group_overloaded) that is
 * weighted load, decayed over time (PELT): calculate_imbalance() aims at half
 * the difference, and detach_tasks() skips a task heavier than that until
 * failed balances (nr_balance_failed) let heavier ones go. Here the LLC is the
 * domain and a CPU's load is its average over the periodic scans
 * (cpu_load_avg[]): ops.tick, on a busy CPU whose interval has passed, reads
 * those of its LLC (O(#CPUs), once per interval); if this CPU is below the
 * LLC's average and the heaviest CPU with waiters above it by imbalance_pct
 * (117 %), the imbalance is the smaller of their distances to the average, and
 * a waiter of the heaviest of at most the imbalance - doubled for each balance
 * in a row that found none, as the kernel's nr_balance_failed lets heavier
 * tasks go - is noted; a DSQ move cannot run in ops.tick, so the CPU's next
 * dispatch (its slice end, at most a slice later: the kernel's pulled task also
 * waits behind the running one) takes the first such task it may run, and moves
 * its load between the two averages. A move of load x < H - L from load H to
 * load L lowers the sum of the squared loads by 2x(H - L - x), so such moves
 * end. After PERIODIC_SWAP_FAILS failed balances in a row, one more move, which
 * the kernel's escalation also makes: a swap (x >= H - L), onto a CPU with
 * waiters of its own. Loads can even out while weights do not: a CPU running
 * two busy loops of a heavy cgroup weighs as much as one running six of a light
 * cgroup, no move of x < H - L exists between them, and the heavy cgroup's two
 * loops would share one CPU for seconds. After the swap
 * the light tasks wait on the heavier CPU, and the next balances spread them. A
 * CPU with no waiter takes no swap, so three equal busy loops on two CPUs do
 * not bounce between them. With equal shares this is a move when the queues
 * differ by two tasks or more; with cgroup weights it moves a light cgroup's
 * task off a CPU that runs only those, which counting tasks never does. Without
 * averaging, kernel threads and root-cgroup tasks waking for a moment, each
 * with more share than a crowded cgroup's task, moved busy loops back and forth
 * (593 balances in 30 s of 12 hogs, 1llc, TCG). Domains above the LLC are the
 * LLC balance's (above), whose weighing of the LLCs reads the CPU queues.
 */
#define PERIODIC_BUSY_FACTOR 16
/* failed balances in a row before a swap may move; the doubling's cap */
#define PERIODIC_SWAP_FAILS 2
#define PERIODIC_MAX_FAILS 8

struct periodic_state {
	u64 next_at;   /* when the CPU's next periodic balance is due */
	u64 limit;     /* the largest load its pull may take */
	u32 pull_from; /* heaviest CPU (+1; 0: none) its dispatch pulls from */
	u32 failed;    /* balances in a row that found no task light enough */
	u64 avg;       /* periodic_weigh_llc()'s results: the LLC's average */
	u64 heaviest;  /* ... and its heaviest CPU's load */
} __attribute__((aligned(64)));

struct periodic_state periodic_states[MAX_CPUS];

/*
 * Weigh the LLC of @cpu: the average of its CPUs' loads to st->avg, and the
 * heaviest other CPU with waiters (returned, -1 if none) and its load to
 * st->heaviest. A global function: the verifier checks its loop once.
 */
__noinline s32 periodic_weigh_llc(s32 cpu)
{
	struct periodic_state *st;
	u64 load, heaviest = 0, total = 0;
	s32 from = -1;
	u32 llc, i;

	if (cpu < 0 || cpu >= MAX_CPUS)
		return -1;
	st = &periodic_states[cpu];
	llc = cpu_llc[cpu];
	bpf_for (i, 0, nr_cpu_ids) {
		if (i >= MAX_CPUS)
			break;
		if (cpu_llc[i] != llc)
			continue;
		load = cpu_load_avg[i];
		total += load;
		if ((s32)i != cpu && load > heaviest &&
		    scx_bpf_dsq_nr_queued(cpu_dsq_id(i))) {
			heaviest = load;
			from = i;
		}
	}
	st->avg = total / (llc_nr_cpus[llc & (MAX_LLCS - 1)] ?: 1);
	st->heaviest = heaviest;
	return from;
}

/* The busy CPU @cpu's tick at @now: balance its LLC if its interval passed. */
static __always_inline void periodic_balance_tick(s32 cpu, u64 now)
{
	struct periodic_state *st = &periodic_states[cpu_idx(cpu)];
	u64 interval, own, heaviest, lightest = 0, avg, imbalance, gap, limit;
	u64 shares = 0;
	u32 llc = llc_of(cpu);
	s32 from;

	if (!cpu_queues_only() || time_before(now, st->next_at))
		return;
	interval = (u64)llc_nr_cpus[llc] * PERIODIC_BUSY_FACTOR * 1000000ULL;
	/* the kernel caps it at max_load_balance_interval, 0.1 s per CPU */
	if (interval > (u64)nr_cpu_ids * 100000000ULL)
		interval = (u64)nr_cpu_ids * 100000000ULL;
	st->next_at = now + interval;
	own = cpu_load_avg[cpu_idx(cpu)];
	from = periodic_weigh_llc(cpu);
	avg = st->avg;
	heaviest = st->heaviest;
	/* calculate_imbalance(): this CPU below the average, the busiest
	 * above it by imbalance_pct (117 % at the LLC's level) */
	if (from < 0 || own >= avg || heaviest * 100 <= own * IMBALANCE_PCT)
		goto balanced;
	imbalance = heaviest - avg < avg - own ? heaviest - avg : avg - own;
	dsq_queued_load(cpu_dsq_id(from), now, &shares, &lightest);
	if (!lightest)
		goto balanced;
	/* detach_tasks(): a task of at most the imbalance, doubled for each
	 * balance in a row that found none (shr_bound()) */
	gap = heaviest - own;
	limit = imbalance << (st->failed < PERIODIC_MAX_FAILS
				      ? st->failed
				      : PERIODIC_MAX_FAILS);
	/* lighter than the gap, which it narrows; a swap only as said above */
	if (limit >= gap && (st->failed < PERIODIC_SWAP_FAILS ||
			     !scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu))))
		limit = gap - 1;
	if (lightest > limit) {
		st->failed += st->failed < PERIODIC_MAX_FAILS;
		return;
	}
	st->failed = 0;
	st->limit = limit;
	st->pull_from = from + 1;
	stat_inc(STAT_PERIODIC_BALANCES);
	return;
balanced:
	st->failed = 0;
}

/* @cpu dispatches: act on its periodic balance's note. True if one moved. */
static __always_inline bool periodic_balance_pull(s32 cpu)
{
	struct periodic_state *st = &periodic_states[cpu_idx(cpu)];
	u64 moved, share;
	s32 from;

	if (!cpu_queues_only() || !st->pull_from)
		return false;
	from = (s32)st->pull_from - 1;
	st->pull_from = 0;
	moved = pull_within_load(cpu, cpu_dsq_id(from), st->limit,
				 STAT_PERIODIC_PULLS, &share);
	shard_index_sync(from);
	cpu_load_move(from, cpu, moved, share);
	return moved;
}

/*
 * Idle balance (per-CPU queues).
 * WHAT: a CPU whose newidle balance was skipped (its gates, shard.bpf.c) or
 * found nothing idles; a task queued later behind a busy CPU's running one
 * would wait there while it idles. The kernel balances idle CPUs from a busy
 * one's tick (nohz_balancer_kick(): a CPU with two runnable tasks or more kicks
 * an idle one, which runs rebalance_domains() as CPU_IDLE, without the newidle
 * balance's average-idle and cost gates).
 * HOW: ops.tick on a CPU whose own queue holds a waiter, at most once per
 * interval per LLC (its CPU count in ms, as sd->balance_interval starts at
 * the domain's weight), claims an idle CPU of its LLC, else of the machine,
 * marks it due and kicks it; its dispatch then runs the newidle balance's
 * pull past every gate (the overload flag's too: its tick saw the waiter).
 * WHY: under single-threaded TCG a newidle balance that spans a vCPU's time
 * off the host thread costs milliseconds on the guest's clock, and the cost
 * gate then skips that CPU's balances for seconds: the simulator's model of
 * the VM left CPUs idle for 20-51 ms while tasks waited in their LLC.
 */
u64 idle_balance_next_at[MAX_LLCS];
u8 idle_balance_due[MAX_CPUS];

/* The busy CPU @cpu's tick at @now: kick an idle CPU to balance, if due. */
static __always_inline void idle_balance_tick(s32 cpu, u64 now)
{
	u32 llc = llc_of(cpu) & (MAX_LLCS - 1);
	const struct cpumask *online, *own;
	s32 idle = -1;

	if (!cpu_queues_only() || time_before(now, idle_balance_next_at[llc]) ||
	    !scx_bpf_dsq_nr_queued(cpu_dsq_id(cpu)))
		return;
	idle_balance_next_at[llc] = now + (u64)llc_nr_cpus[llc] * 1000000ULL;
	own = llc_cpus(llc);
	if (own)
		idle = scx_bpf_pick_idle_cpu(own, 0);
	if (idle < 0 && nr_llcs > 1) {
		online = scx_bpf_get_online_cpumask();
		idle = scx_bpf_pick_idle_cpu(online, 0);
		scx_bpf_put_cpumask(online);
	}
	if (idle < 0)
		return;
	idle_balance_due[idle & (MAX_CPUS - 1)] = 1;
	stat_inc(STAT_IDLE_BALANCE_KICKS);
	kick_claimed(idle);
}

/* Whether @cpu was kicked for an idle balance (clears the mark). */
static __always_inline bool idle_balance_take(s32 cpu)
{
	u8 *due = &idle_balance_due[cpu & (MAX_CPUS - 1)];

	if (!*due)
		return false;
	*due = 0;
	return true;
}
