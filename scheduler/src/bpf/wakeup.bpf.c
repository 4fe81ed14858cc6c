/* SPDX-License-Identifier: GPL-2.0 */
/*
 * wakeup.bpf.c - where a waking task goes.
 *
 * WHAT
 * A waking task goes straight to an idle CPU when there is one, nearest to
 * the CPU it last ran on; otherwise it stays on that CPU's LLC and is queued
 * (shard.bpf.c).
 *
 * HOW
 * Search order: prev's whole core if idle (SMT), an idle whole core in prev's
 * LLC, prev itself, any idle CPU in prev's LLC, any idle CPU allowed. A task
 * restricted to some CPUs searches its allowed set directly. The CPU found
 * has its idle bit cleared (claimed), so two wakers cannot both pick it.
 *
 * WHY
 * Direct dispatch to an idle CPU is the cheapest path there is: no shared
 * queue is locked. Staying in prev's LLC keeps the task's cache warm.
 */

/* Whether @prev's SMT core is wholly idle. */
static __always_inline bool core_is_idle(s32 prev)
{
	const struct cpumask *idle_smt = scx_bpf_get_idle_smtmask();
	bool idle = bpf_cpumask_test_cpu(prev, idle_smt);

	scx_bpf_put_idle_cpumask(idle_smt);
	return idle;
}

/* Count where an idle CPU @cpu was found for a task that ran on @prev. */
static __always_inline s32 found_idle(s32 cpu, s32 prev)
{
	if (cpu == prev)
		stat_inc(STAT_WAKE_PREV_IDLE);
	else if (llc_of(cpu) == llc_of(prev))
		stat_inc(STAT_WAKE_LLC_IDLE);
	else
		stat_inc(STAT_WAKE_REMOTE_IDLE);
	return cpu;
}

/* Claim an idle CPU for @p, which last ran on @prev; -1 if none is idle. */
static s32 pick_idle_cpu(struct task_struct *p, s32 prev)
{
	bool whole = p->nr_cpus_allowed == nr_cpu_ids;
	bool prev_ok = bpf_cpumask_test_cpu(prev, p->cpus_ptr);
	const struct cpumask *dom;
	s32 cpu;

	dom = whole ? llc_cpus(llc_of(prev)) : p->cpus_ptr;
	if (!dom)
		return -1;

	if (smt_enabled) {
		if (prev_ok && core_is_idle(prev) &&
		    scx_bpf_test_and_clear_cpu_idle(prev))
			return found_idle(prev, prev);
		cpu = scx_bpf_pick_idle_cpu(dom, SCX_PICK_IDLE_CORE);
		if (cpu >= 0)
			return found_idle(cpu, prev);
	}
	if (prev_ok && scx_bpf_test_and_clear_cpu_idle(prev))
		return found_idle(prev, prev);
	cpu = scx_bpf_pick_idle_cpu(dom, 0);
	if (cpu >= 0)
		return found_idle(cpu, prev);
	if (whole) {
		cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (cpu >= 0)
			return found_idle(cpu, prev);
	}
	return -1;
}
