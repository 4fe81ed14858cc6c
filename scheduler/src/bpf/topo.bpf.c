/* SPDX-License-Identifier: GPL-2.0 */
/*
 * topo.bpf.c - CPU masks of the topology, built once in ops.init from the
 * tables Rust wrote (cpu_llc[]), for the idle-CPU searches.
 */

struct llc_mask {
	struct bpf_cpumask __kptr *cpus;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct llc_mask);
	__uint(max_entries, MAX_LLCS);
} llc_masks SEC(".maps");

/* The CPUs of @llc, or NULL if the masks are not built. */
static __always_inline const struct cpumask *llc_cpus(u32 llc)
{
	struct llc_mask *m = bpf_map_lookup_elem(&llc_masks, &llc);

	if (!m || !m->cpus)
		return NULL;
	return (const struct cpumask *)m->cpus;
}

/* Build one cpumask per LLC. Called from the sleepable ops.init. */
static s32 topo_init(void)
{
	struct bpf_cpumask *mask, *old;
	struct llc_mask *m;
	u32 llc, cpu;

	bpf_for (llc, 0, nr_llcs) {
		m = bpf_map_lookup_elem(&llc_masks, &llc);
		mask = bpf_cpumask_create();
		if (!m || !mask) {
			if (mask)
				bpf_cpumask_release(mask);
			scx_bpf_error("cannot allocate the mask of LLC %u",
				      llc);
			return -ENOMEM;
		}
		old = bpf_kptr_xchg(&m->cpus, mask);
		if (old)
			bpf_cpumask_release(old);
	}

	bpf_rcu_read_lock();
	bpf_for (cpu, 0, nr_cpu_ids) {
		llc = llc_of(cpu);
		m = bpf_map_lookup_elem(&llc_masks, &llc);
		if (m && m->cpus)
			bpf_cpumask_set_cpu(cpu, m->cpus);
	}
	bpf_rcu_read_unlock();
	return 0;
}
