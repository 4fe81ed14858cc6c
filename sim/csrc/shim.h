/* SPDX-License-Identifier: GPL-2.0 */
/*
 * shim.h - turns the BPF-only constructs of the scx headers into native C,
 * between the headers and the scheduler's own .bpf.c (see sched.c).
 *
 * Rules of the shim layer (read this before adding a kfunc):
 *  - BPF helpers (bpf_helper_defs.h, function-pointer constants) are
 *    renamed while that header is read and the names dropped after
 *    (build.rs: sim_helpers_hide.h / _unhide.h). A helper that the
 *    scheduler or an inline function of the scx headers calls must get a
 *    macro in helpers.h (read before the scx headers), or the build fails
 *    with "call to undeclared function 'bpf_xxx'".
 *  - kfuncs (__ksym) are plain extern functions: __ksym and __weak are
 *    emptied, so a kfunc without an implementation is an "undefined reference
 *    to `scx_bpf_xxx'" at link time. Implement it in Rust (src/kfuncs.rs,
 *    #[no_mangle] extern "C") or, when it needs kernel struct layouts, in C
 *    (csrc/glue.c).
 *  - bpf_ksym_exists() and the CO-RE existence checks are true: the compat
 *    wrappers always take the newest kernel interface.
 */
#ifndef __MOSAIC_SIM_SHIM_H
#define __MOSAIC_SIM_SHIM_H

/* the scx headers turn enum constants into weak variables; restore them */
#include "sim_enums.h"

#undef SEC
#define SEC(name)
#undef __kptr
#define __kptr
#undef __kptr_untrusted
#define __kptr_untrusted
#undef __percpu_kptr
#define __percpu_kptr

#undef BPF_STRUCT_OPS
#define BPF_STRUCT_OPS(name, args...) name(args)
#undef BPF_STRUCT_OPS_SLEEPABLE
#define BPF_STRUCT_OPS_SLEEPABLE(name, args...) name(args)
/* mosaic.bpf.h's prototype of a callback another file defines */
#define BPF_STRUCT_OPS_DECL(name, args...) name(args)

/*
 * Loop iterations run by the scheduler's BPF code (glue.c): with the kfunc
 * calls, the simulator's measure of the work a callback does (bpf_work in
 * the result), which must not grow with the machine.
 */
extern unsigned long long sim_loop_iters;

#undef bpf_for
#define bpf_for(i, start, end) \
	for ((i) = (start); (i) < (end) && ++sim_loop_iters; (i)++)
#undef bpf_for_each
/* open iterator ___it of @type on @args, step @cur through it, destroy it */
#define bpf_for_each(type, cur, args...)                                      \
	for (struct bpf_iter_##type ___it                                    \
		     __attribute__((cleanup(bpf_iter_##type##_destroy))),     \
	     *___once __attribute__((unused)) =                              \
		     (bpf_iter_##type##_new(&___it, ##args), (void *)0);     \
	     ((cur) = bpf_iter_##type##_next(&___it)) && ++sim_loop_iters;)
#undef bpf_repeat
#define bpf_repeat(n) \
	for (int ___i = 0; ___i < (n) && ++sim_loop_iters; ___i++)
#undef can_loop
#define can_loop 1
#undef bpf_ksym_exists
#define bpf_ksym_exists(sym) 1
#undef bpf_core_type_exists
#define bpf_core_type_exists(type) 1
#undef bpf_core_field_exists
#define bpf_core_field_exists(field...) 1
#undef BPF_CORE_READ
#define BPF_CORE_READ(src, a, ...) ((src)->a)
#undef bpf_core_cast
#define bpf_core_cast(ptr, type) ((type *)(ptr))
#undef MEMBER_VPTR
#define MEMBER_VPTR(base, member) (&((base) member))
#undef ARRAY_ELEM_PTR
#define ARRAY_ELEM_PTR(arr, i, n) ((i) < (n) ? &(arr)[i] : NULL)
#undef barrier_var
#define barrier_var(var) (void)0

struct bpf_timer;
long sim_timer_init(struct bpf_timer *timer, void *map, u64 flags);
long sim_timer_set_callback(struct bpf_timer *timer, void *cb);
long sim_timer_start(struct bpf_timer *timer, u64 nsecs, u64 flags);
long sim_timer_cancel(struct bpf_timer *timer);
#define bpf_timer_init(t, m, f) sim_timer_init((t), (void *)(m), (f))
#define bpf_timer_set_callback(t, cb) sim_timer_set_callback((t), (void *)(cb))
#define bpf_timer_start(t, ns, f) sim_timer_start((t), (ns), (f))
#define bpf_timer_cancel(t) sim_timer_cancel((t))
#define bpf_spin_lock(l) ((void)(l))
#define bpf_spin_unlock(l) ((void)(l))

#endif /* __MOSAIC_SIM_SHIM_H */
