/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_mosaic - a sched_ext scheduler built from five kernel proposals.
 *
 * The policy, in one paragraph: a waking task goes straight to an idle CPU
 * near the one it last ran on (wakeup.bpf.c). When no CPU is idle it waits on
 * a shard of its LLC's shared runqueue (shard.bpf.c), where queues are ordered
 * by weighted virtual time (vtime.bpf.c). A CPU that runs out of work pulls
 * from its own shard, then from the other shards of its LLC. Tasks pinned to
 * one CPU wait on that CPU's own queue. Every decision a user might question
 * has a counter (intf.h).
 *
 * This file is only the ops table; each mechanism lives in its own file,
 * included below so that the whole scheduler is one translation unit.
 */
#include "mosaic.bpf.h"

char _license[] SEC("license") = "GPL";

#include "topo.bpf.c"
#include "vtime.bpf.c"
#include "shard.bpf.c"
#include "wakeup.bpf.c"

/* Test switch: whether @p is a task --debug-drop-comm asks us to lose. */
static __always_inline bool debug_should_drop(const struct task_struct *p)
{
	int i;

	if (!debug_drop_comm[0])
		return false;
	/* unrolled: task_struct only takes constant offsets */
#pragma unroll
	for (i = 0; i < MAX_COMM; i++) {
		if (p->comm[i] != debug_drop_comm[i])
			return false;
		if (!p->comm[i])
			break;
	}
	return true;
}

s32 BPF_STRUCT_OPS(mosaic_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	s32 cpu = pick_idle_cpu(p, prev_cpu);

	if (cpu < 0) {
		stat_inc(STAT_WAKE_BUSY);
		return prev_cpu;
	}
	scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
	stat_inc(STAT_DIRECT_DISPATCHES);
	return cpu;
}

void BPF_STRUCT_OPS(mosaic_enqueue, struct task_struct *p, u64 enq_flags)
{
	if (debug_should_drop(p)) {
		stat_inc(STAT_DEBUG_DROPS);
		return;
	}
	if (no_shared_runq || task_is_pinned(p))
		queue_on_cpu(p, enq_flags);
	else
		queue_on_shard(p, enq_flags);
}

void BPF_STRUCT_OPS(mosaic_dispatch, s32 cpu, struct task_struct *prev)
{
	if (pull_own_queues(cpu) || pull_sibling_shards(cpu))
		return;
	stat_inc(STAT_DISPATCH_EMPTY);
}

void BPF_STRUCT_OPS(mosaic_running, struct task_struct *p)
{
	vtime_running(p);
}

void BPF_STRUCT_OPS(mosaic_stopping, struct task_struct *p, bool runnable)
{
	vtime_charge(p);
}

void BPF_STRUCT_OPS(mosaic_enable, struct task_struct *p)
{
	vtime_enable(p);
}

s32 BPF_STRUCT_OPS(mosaic_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	if (!bpf_task_storage_get(&task_ctxs, p, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE))
		return -ENOMEM;
	return 0;
}

s32 BPF_STRUCT_OPS_SLEEPABLE(mosaic_init)
{
	s32 ret = topo_init();

	if (ret)
		return ret;
	return shard_init();
}

void BPF_STRUCT_OPS(mosaic_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

/* clang-format off */
SCX_OPS_DEFINE(mosaic_ops,
	       .select_cpu	= (void *)mosaic_select_cpu,
	       .enqueue		= (void *)mosaic_enqueue,
	       .dispatch	= (void *)mosaic_dispatch,
	       .running		= (void *)mosaic_running,
	       .stopping	= (void *)mosaic_stopping,
	       .enable		= (void *)mosaic_enable,
	       .init_task	= (void *)mosaic_init_task,
	       .init		= (void *)mosaic_init,
	       .exit		= (void *)mosaic_exit,
	       .name		= "mosaic");
/* clang-format on */
