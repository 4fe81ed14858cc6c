/* SPDX-License-Identifier: GPL-2.0 */
/*
 * helpers.h - the BPF helpers as the simulator provides them (in Rust unless
 * noted), read right after bpf_helper_defs.h has been included with every
 * helper's name hidden (see shim.h) and before the scx headers, whose inline
 * functions call some of them. A helper named here but not modelled reports
 * itself and stops the simulator if the scheduler ever calls it.
 */
#ifndef __MOSAIC_SIM_HELPERS_H
#define __MOSAIC_SIM_HELPERS_H

void *sim_map_lookup_elem(void *map, const void *key);
long sim_map_update_elem(void *map, const void *key, const void *value,
			 u64 flags);
long sim_map_delete_elem(void *map, const void *key);
void *sim_task_storage_get(void *map, struct task_struct *p, void *value,
			   u64 flags);
long sim_task_storage_delete(void *map, struct task_struct *p);
void *sim_cgrp_storage_get(void *map, struct cgroup *cgrp, void *value,
			   u64 flags);
long sim_cgrp_storage_delete(void *map, struct cgroup *cgrp);
void *sim_kptr_xchg(void *slot, void *ptr);
u64 sim_ktime_get_ns(void);
u32 sim_get_smp_processor_id(void);
u32 sim_get_prandom_u32(void);
long sim_probe_read_str(void *dst, u32 size, const void *src); /* glue.c */
long sim_probe_read(void *dst, u32 size, const void *src);     /* glue.c */
struct task_struct *sim_get_current_task(void);
long sim_trace_printk(const char *fmt, u32 fmt_size, ...); /* glue.c */

#define bpf_map_lookup_elem(m, k) sim_map_lookup_elem((void *)(m), (k))
#define bpf_map_update_elem(m, k, v, f)                                       \
	sim_map_update_elem((void *)(m), (k), (v), (f))
#define bpf_map_delete_elem(m, k) sim_map_delete_elem((void *)(m), (k))
#define bpf_task_storage_get(m, t, v, f)                                      \
	sim_task_storage_get((void *)(m), (t), (v), (f))
#define bpf_task_storage_delete(m, t) sim_task_storage_delete((void *)(m), (t))
#define bpf_cgrp_storage_get(m, c, v, f)                                      \
	sim_cgrp_storage_get((void *)(m), (c), (v), (f))
#define bpf_cgrp_storage_delete(m, c) sim_cgrp_storage_delete((void *)(m), (c))
#define bpf_kptr_xchg(slot, ptr)                                              \
	((typeof(ptr))sim_kptr_xchg((void *)(slot), (void *)(ptr)))
#define bpf_ktime_get_ns() sim_ktime_get_ns()
#define bpf_ktime_get_boot_ns() sim_ktime_get_ns()
#define bpf_get_smp_processor_id() sim_get_smp_processor_id()
#define bpf_get_prandom_u32() sim_get_prandom_u32()
#define bpf_probe_read_kernel_str(d, s, src) sim_probe_read_str((d), (s), (src))
#define bpf_probe_read_kernel(d, s, src) sim_probe_read((d), (s), (src))
#define bpf_get_current_task_btf() sim_get_current_task()
#define bpf_trace_printk(fmt, sz, args...) sim_trace_printk((fmt), (sz), ##args)
void *sim_unmodelled_helper(const char *name); /* panics */
#define bpf_per_cpu_ptr(ptr, cpu)                                             \
	((void *)sim_unmodelled_helper("bpf_per_cpu_ptr"))

#endif /* __MOSAIC_SIM_HELPERS_H */
