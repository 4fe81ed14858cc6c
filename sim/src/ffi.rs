//! The C side: the scheduler compiled natively (csrc/sched.c) and its glue.
//! Kernel ABI constants come from vmlinux.h (enum values, not logic).
#![allow(non_camel_case_types, dead_code)]

use std::ffi::{c_char, c_void};

/// Opaque kernel structs; only pointers cross the boundary.
#[repr(C)]
pub struct task_struct {
    _p: [u8; 0],
}
#[repr(C)]
pub struct cgroup {
    _p: [u8; 0],
}

pub const SCX_DSQ_FLAG_BUILTIN: u64 = 1 << 63;
pub const SCX_DSQ_FLAG_LOCAL_ON: u64 = 1 << 62;
pub const SCX_DSQ_INVALID: u64 = SCX_DSQ_FLAG_BUILTIN;
pub const SCX_DSQ_GLOBAL: u64 = SCX_DSQ_FLAG_BUILTIN | 1;
pub const SCX_DSQ_LOCAL: u64 = SCX_DSQ_FLAG_BUILTIN | 2;
pub const SCX_DSQ_LOCAL_ON: u64 = SCX_DSQ_FLAG_BUILTIN | SCX_DSQ_FLAG_LOCAL_ON;
pub const SCX_DSQ_LOCAL_CPU_MASK: u64 = 0xffff_ffff;
pub const SCX_SLICE_DFL: u64 = 20_000_000;
pub const SCX_ENQ_WAKEUP: u64 = 1;
pub const SCX_ENQ_HEAD: u64 = 1 << 16;
pub const SCX_ENQ_PREEMPT: u64 = 1 << 32;
pub const SCX_ENQ_LAST: u64 = 1 << 41;
pub const SCX_DEQ_SLEEP: u64 = 1;
pub const SCX_KICK_IDLE: u64 = 1;
pub const SCX_KICK_PREEMPT: u64 = 2;
pub const SCX_PICK_IDLE_CORE: u64 = 1;
pub const SCX_OPS_ENQ_LAST: u64 = 2;
pub const SCX_OPS_ALLOW_QUEUED_WAKEUP: u64 = 32;
pub const SCX_WAKE_FORK: u64 = 4;
pub const SCX_WAKE_TTWU: u64 = 8;
pub const SCX_WAKE_SYNC: u64 = 16;
pub const SCX_EXIT_ERROR: i32 = 1024;
pub const SCX_EXIT_ERROR_BPF: i32 = 1025;
pub const SCX_EXIT_ERROR_STALL: i32 = 1026;
pub const SCX_EXIT_UNREG: i32 = 64;
pub const SCX_DSP_MAX_LOOPS: u32 = 32;

pub const BPF_MAP_TYPE_HASH: u32 = 1;
pub const BPF_MAP_TYPE_ARRAY: u32 = 2;
pub const BPF_MAP_TYPE_PERCPU_HASH: u32 = 5;
pub const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
pub const BPF_MAP_TYPE_LRU_HASH: u32 = 9;
pub const BPF_MAP_TYPE_LRU_PERCPU_HASH: u32 = 10;
pub const BPF_MAP_TYPE_CGRP_STORAGE: u32 = 32;
pub const BPF_MAP_TYPE_TASK_STORAGE: u32 = 29;
pub const BPF_LOCAL_STORAGE_GET_F_CREATE: u64 = 1;
pub const BPF_ANY: u64 = 0;
pub const BPF_NOEXIST: u64 = 1;
pub const BPF_EXIST: u64 = 2;

extern "C" {
    pub fn sim_register_maps();
    pub fn sim_loop_iters_read() -> u64;
    pub fn sim_tunable_find(
        name: *const c_char,
        addr: *mut *mut c_void,
        size: *mut usize,
        elem: *mut usize,
    ) -> i32;
    pub fn sim_sizeof_task() -> usize;
    pub fn sim_sizeof_cpumask() -> usize;
    pub fn sim_task_alloc(pid: i32, comm: *const c_char, nr_cpus: u32) -> *mut task_struct;
    pub fn sim_task_free(p: *mut task_struct);
    pub fn sim_task_pid(p: *const task_struct) -> i32;
    pub fn sim_task_slice(p: *mut task_struct) -> *mut u64;
    pub fn sim_task_dsq_vtime(p: *mut task_struct) -> *mut u64;
    pub fn sim_task_set_weight(p: *mut task_struct, w: u32);
    pub fn sim_task_set_queued(p: *mut task_struct, queued: bool);
    pub fn sim_task_set_cpus(p: *mut task_struct, bits: *const u64, nr_words: u32, nr: u32);
    pub fn sim_cgroup_alloc(id: u64, parent: *mut cgroup) -> *mut cgroup;
    pub fn sim_task_set_cgroup(p: *mut task_struct, cg: *mut cgroup);
    pub fn sim_cgroup_id(c: *mut cgroup) -> u64;
    pub fn sim_ops_name() -> *const c_char;
    pub fn sim_ops_flags() -> u64;
    pub fn sim_ops_timeout_ms() -> u32;
    pub fn sim_ops_dispatch_max_batch() -> u32;
    pub fn sim_op_init() -> i32;
    pub fn sim_op_select_cpu(p: *mut task_struct, prev: i32, wf: u64, has: *mut i32) -> i32;
    pub fn sim_op_enqueue(p: *mut task_struct, f: u64) -> i32;
    pub fn sim_op_dequeue(p: *mut task_struct, f: u64);
    pub fn sim_op_dispatch(cpu: i32, prev: *mut task_struct) -> i32;
    pub fn sim_op_tick(p: *mut task_struct);
    pub fn sim_op_runnable(p: *mut task_struct, f: u64);
    pub fn sim_op_running(p: *mut task_struct);
    pub fn sim_op_stopping(p: *mut task_struct, runnable: bool);
    pub fn sim_op_quiescent(p: *mut task_struct, f: u64);
    pub fn sim_op_set_weight(p: *mut task_struct, w: u32);
    pub fn sim_op_set_cpumask(p: *mut task_struct);
    pub fn sim_op_update_idle(cpu: i32, idle: bool);
    pub fn sim_has_update_idle() -> i32;
    pub fn sim_op_init_task(p: *mut task_struct, cg: *mut cgroup, fork: bool) -> i32;
    pub fn sim_op_exit_task(p: *mut task_struct, cancelled: bool);
    pub fn sim_op_enable(p: *mut task_struct);
    pub fn sim_op_disable(p: *mut task_struct);
    pub fn sim_op_cgroup_init(cg: *mut cgroup, weight: u32) -> i32;
    pub fn sim_op_cgroup_exit(cg: *mut cgroup);
    pub fn sim_op_cgroup_prep_move(p: *mut task_struct, from: *mut cgroup, to: *mut cgroup) -> i32;
    pub fn sim_op_cgroup_move(p: *mut task_struct, from: *mut cgroup, to: *mut cgroup);
    pub fn sim_op_cgroup_set_weight(cg: *mut cgroup, w: u32);
    pub fn sim_op_cpu_online(cpu: i32);
    pub fn sim_op_exit(kind: i32, code: i64, reason: *const c_char, msg: *const c_char);
}
