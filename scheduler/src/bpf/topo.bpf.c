/* SPDX-License-Identifier: GPL-2.0 */
/*
 * topo.bpf.c - CPU masks of the topology (per L2 group, per LLC),
 * built once in ops.init from the tables Rust wrote, for the idle searches.
 */

struct dom_mask {
	struct bpf_cpumask __kptr *cpus;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct dom_mask);
	__uint(max_entries, MAX_LLCS);
} llc_masks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, u32);
	__type(value, struct dom_mask);
	__uint(max_entries, MAX_L2S);
} l2_masks SEC(".maps");

/* Mask @idx of the domain map @masks, or NULL if not built. */
static __always_inline const struct cpumask *dom_cpus(void *masks, u32 idx)
{
	struct dom_mask *m = bpf_map_lookup_elem(masks, &idx);

	if (!m || !m->cpus)
		return NULL;
	return (const struct cpumask *)m->cpus;
}

/* The CPUs of @llc. */
static __always_inline const struct cpumask *llc_cpus(u32 llc)
{
	return dom_cpus(&llc_masks, llc);
}

/* The CPUs of L2 group @l2. */
static __always_inline const struct cpumask *l2_cpus(u32 l2)
{
	return dom_cpus(&l2_masks, l2);
}

/* Whether CPUs @a and @b share an L2. */
static __always_inline bool cpus_share_l2(s32 a, s32 b)
{
	return l2_of(a) == l2_of(b);
}

/* Give each of the @nr entries of @masks an empty cpumask. */
static __always_inline s32 alloc_masks(void *masks, u32 nr)
{
	struct bpf_cpumask *mask, *old;
	struct dom_mask *m;
	u32 i;

	bpf_for (i, 0, nr) {
		m = bpf_map_lookup_elem(masks, &i);
		mask = bpf_cpumask_create();
		if (!m || !mask) {
			if (mask)
				bpf_cpumask_release(mask);
			scx_bpf_error("cannot allocate topology mask %u", i);
			return -ENOMEM;
		}
		old = bpf_kptr_xchg(&m->cpus, mask);
		if (old)
			bpf_cpumask_release(old);
	}
	return 0;
}

/* Set @cpu in entry @idx of @masks. */
static __always_inline void mask_set(void *masks, u32 idx, u32 cpu)
{
	struct dom_mask *m = bpf_map_lookup_elem(masks, &idx);

	if (m && m->cpus)
		bpf_cpumask_set_cpu(cpu, m->cpus);
}

/* Build the L2 and LLC masks. Called from the sleepable ops.init. */
static s32 topo_init(void)
{
	s32 ret;
	u32 cpu;

	ret = alloc_masks(&llc_masks, nr_llcs);
	if (!ret)
		ret = alloc_masks(&l2_masks, nr_l2s);
	if (ret)
		return ret;

	bpf_rcu_read_lock();
	bpf_for (cpu, 0, nr_cpu_ids) {
		mask_set(&llc_masks, llc_of(cpu), cpu);
		mask_set(&l2_masks, l2_of(cpu), cpu);
	}
	bpf_rcu_read_unlock();
	return 0;
}
