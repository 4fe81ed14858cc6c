/* SPDX-License-Identifier: GPL-2.0 */
/*
 * sched.c - the scheduler's own BPF C, compiled as native C for mosaic-sim.
 *
 * One translation unit: the scx headers first (their include guards then
 * keep later includes out), the shim that rewrites the BPF-only constructs,
 * the unmodified scheduler (SIM_SCHED_MAIN, its main.bpf.c, which includes
 * every mechanism file), then the glue the Rust engine calls.
 * No decision logic lives here: a change to a .bpf.c changes the simulator.
 */
#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
/* the helpers' function-pointer constants get other names (see shim.h) */
#include "sim_helpers_hide.h"
#include <bpf/bpf_helpers.h>
#include "sim_helpers_unhide.h"
#include "helpers.h"
/* kfuncs become ordinary, strong externs: a missing one fails the link */
#undef __ksym
#define __ksym
#undef __weak
#define __weak
#undef __kconfig
#define __kconfig
/*
 * CO-RE: natively every field, type and enum value exists as vmlinux.h has
 * it, and every kfunc exists (so compat wrappers take the newest interface).
 */
#define __builtin_preserve_field_info(x, kind) 1
#define __builtin_preserve_type_info(x, kind) 1
#define __builtin_preserve_enum_value(x, kind) 1
#define __builtin_preserve_access_index(x) (x)
#define bpf_ksym_exists(sym) 1
#include <scx/common.bpf.h>

#include "shim.h"

#include SIM_SCHED_MAIN

#include "glue.c"
