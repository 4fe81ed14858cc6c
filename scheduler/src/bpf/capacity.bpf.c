/* SPDX-License-Identifier: GPL-2.0 */
/*
 * capacity.bpf.c - task utilisation and CPU capacity (seed 002).
 *
 * WHAT
 * Each task carries a utilisation: a decayed average of how much of a CPU it
 * used, in capacity units (1024 = all of the biggest CPU). A task fits a CPU
 * when util * 1.25 < capacity (the kernel's fits_capacity margin). The wakeup
 * path keeps a task on its idle previous CPU only if it fits there, and on
 * machines whose CPUs differ in capacity it searches the best-fitting idle
 * CPU. A task that has outgrown its CPU is moved to an idle CPU it fits when
 * its slice ends (it never wakes up, so the wakeup path would never see it).
 *
 * HOW
 * Utilisation decays with a 32 ms half-life, like PELT: at ops.running the
 * time the task waited pulls it toward 0, at ops.stopping the time it ran
 * pulls it toward the capacity of the CPU it ran on (so a busy loop on a
 * 446-capacity CPU converges to 446, which does not fit 446). Halvings are
 * shifts; the fraction of a half-life in between is linear. Capacity comes
 * from sysfs cpu_capacity, or --cpu-capacity for machines (and VMs) that
 * report none.
 *
 * WHY
 * Before seed 002, the kernel's asymmetric wakeup path went straight to a
 * capacity scan that started from the waker's CPU and ignored an idle prev:
 * on hikey960 a perf bench sched pipe pair migrated on nearly every wakeup
 * (999,364 migrations), and keeping prev first removed them all (+22 %
 * ops/s). One path for symmetric and asymmetric machines: prev first, then
 * nearest, with the capacity check folded in.
 */

#define UTIL_HALFLIFE_NS (32ULL * 1000 * 1000)

/* @val decayed by 2^(-@dt / half-life). */
static __always_inline u32 util_decay(u32 val, u64 dt)
{
	u64 halves = dt / UTIL_HALFLIFE_NS, rem = dt % UTIL_HALFLIFE_NS;

	if (halves >= 32)
		return 0;
	val >>= halves;
	return val - (u32)((u64)val * rem / (2 * UTIL_HALFLIFE_NS));
}

/* Whether a task of utilisation @util fits @cpu (util * 1.25 < capacity). */
static __always_inline bool cpu_fits_task(s32 cpu, u32 util)
{
	return (u64)util * 1280 < (u64)capacity_of(cpu) * 1024;
}

/* Whether a task of @util suits @cpu: always on symmetric machines. */
static __always_inline bool task_fits(s32 cpu, u32 util)
{
	return !asym_capacity || cpu_fits_task(cpu, util);
}

/* A task starts its life light. */
static __always_inline void util_init(struct task_ctx *tctx, u64 now)
{
	tctx->util = 0;
	tctx->util_at = now;
}

/* The task waited (slept or queued) until @now: decay toward 0. */
static __always_inline void util_running(struct task_ctx *tctx, u64 now)
{
	if (time_before(tctx->util_at, now))
		tctx->util = util_decay(tctx->util, now - tctx->util_at);
	tctx->util_at = now;
}

/* The task ran on @cpu until @now: move toward that CPU's capacity. */
static __always_inline void util_stopping(struct task_ctx *tctx, s32 cpu,
					  u64 now)
{
	u32 cap = capacity_of(cpu);
	u64 dt = time_before(tctx->util_at, now) ? now - tctx->util_at : 0;

	if (tctx->util < cap)
		tctx->util = cap - util_decay(cap - tctx->util, dt);
	else
		tctx->util = cap + util_decay(tctx->util - cap, dt);
	tctx->util_at = now;
}

/*
 * Claim an idle CPU of @dom (NULL: all) that @p may use, by capacity: one
 * that fits @util - the smallest (ties: the first from @start on), or with
 * CAP_FIRST_FIT the first from @start on - else, unless CAP_FIT_ONLY, the
 * biggest idle one. -1 if there is none.
 */
static s32 pick_idle_by_capacity(struct task_struct *p, u32 util, s32 start,
				 const struct cpumask *dom, u32 how)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	u32 fit_cap = 0xffffffff, big_cap = 0, cap, i;
	s32 fit = -1, big = -1, cpu;

	bpf_for (i, 0, nr_cpu_ids) {
		cpu = (start + i) % nr_cpu_ids;
		if (!bpf_cpumask_test_cpu(cpu, idle) ||
		    !bpf_cpumask_test_cpu(cpu, p->cpus_ptr) ||
		    (dom && !bpf_cpumask_test_cpu(cpu, dom)))
			continue;
		cap = capacity_of(cpu);
		if (cpu_fits_task(cpu, util)) {
			if (cap < fit_cap) {
				fit_cap = cap;
				fit = cpu;
			}
			if (how & CAP_FIRST_FIT)
				break;
		} else if (cap > big_cap) {
			big_cap = cap;
			big = cpu;
		}
	}
	scx_bpf_put_idle_cpumask(idle);

	cpu = fit >= 0 ? fit : ((how & CAP_FIT_ONLY) ? -1 : big);
	if (cpu >= 0 && scx_bpf_test_and_clear_cpu_idle(cpu))
		return cpu;
	return -1;
}

/*
 * @p's slice ended on a CPU too small for it: claim an idle CPU it fits, or
 * -1 to leave it where it is.
 */
static __always_inline s32 misfit_target(struct task_struct *p,
					 struct task_ctx *tctx, s32 cpu)
{
	if (!asym_capacity || task_is_pinned(p) ||
	    cpu_fits_task(cpu, tctx->util))
		return -1;
	return pick_idle_by_capacity(p, tctx->util, cpu, NULL, CAP_FIT_ONLY);
}

/* Claim an idle CPU of @dom for a task of @util: whole core first. */
static __always_inline s32 pick_idle_in(struct task_struct *p, u32 util,
					const struct cpumask *dom, s32 prev)
{
	s32 cpu;

	if (!dom)
		return -1;
	if (asym_capacity)
		return pick_idle_by_capacity(p, util, prev, dom, CAP_FIT_ONLY);
	if (smt_enabled) {
		cpu = scx_bpf_pick_idle_cpu(dom, SCX_PICK_IDLE_CORE);
		if (cpu >= 0)
			return cpu;
	}
	return scx_bpf_pick_idle_cpu(dom, 0);
}
