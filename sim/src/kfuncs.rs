//! The kfuncs and BPF helpers the scheduler calls, as linked symbols.
//!
//! HOW TO ADD ONE: the scx headers already declare every kfunc; write
//! `#[no_mangle] pub extern "C" fn <exact kernel name>(...)` here with the
//! C signature (u64/u32/s32 as in common.bpf.h; pointers as *mut/*const),
//! using `with_engine(|e| ...)` for engine state (engine/context.rs). A
//! kfunc the scheduler calls but nobody implements is a link error naming it ("undefined reference to
//! `scx_bpf_xxx'"). Compat wrappers pick the newest kernel interface, so
//! implement the suffixed name the wrapper calls (e.g.
//! scx_bpf_dsq_move_to_local___v2___compat). Kfuncs that take a struct
//! (e.g. __scx_bpf_dsq_insert_vtime) unpack it in csrc/glue.c and call a
//! `sim_kf_*` function here. A helper (bpf_*, from bpf_helper_defs.h) needs
//! a macro in csrc/shim.h and a `sim_*` function here.
#![allow(clippy::missing_safety_doc)]

use crate::engine::{bit, with_engine, Insert};
use crate::ffi::*;
use std::ffi::{c_char, c_void, CStr};

fn cpumask_words(m: *const c_void) -> &'static [u64] {
    let n = unsafe { sim_sizeof_cpumask() } / 8;
    unsafe { std::slice::from_raw_parts(m as *const u64, n) }
}

// ------------------------------------------------------------------ helpers

#[no_mangle]
pub extern "C" fn sim_map_register(
    map: *mut c_void,
    name: *const c_char,
    kind: u32,
    ks: u32,
    vs: u32,
    max: u32,
    _f: u32,
) {
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    with_engine(|e| {
        e.maps.register(
            map as usize,
            name,
            kind,
            ks as usize,
            vs as usize,
            max as usize,
        )
    });
}

#[no_mangle]
pub unsafe extern "C" fn sim_map_lookup_elem(map: *mut c_void, key: *const c_void) -> *mut c_void {
    with_engine(|e| {
        let cpu = e.cur_cpu;
        e.maps.lookup(map as usize, key as *const u8, cpu) as *mut c_void
    })
}

#[no_mangle]
pub unsafe extern "C" fn sim_map_update_elem(
    map: *mut c_void,
    key: *const c_void,
    val: *const c_void,
    flags: u64,
) -> i64 {
    with_engine(|e| {
        let cpu = e.cur_cpu;
        e.maps
            .update(map as usize, key as *const u8, val as *const u8, flags, cpu)
    })
}

#[no_mangle]
pub unsafe extern "C" fn sim_map_delete_elem(map: *mut c_void, key: *const c_void) -> i64 {
    with_engine(|e| e.maps.delete(map as usize, key as *const u8))
}

#[no_mangle]
pub extern "C" fn sim_task_storage_get(
    map: *mut c_void,
    p: *mut task_struct,
    v: *mut c_void,
    flags: u64,
) -> *mut c_void {
    if p.is_null() {
        return std::ptr::null_mut();
    }
    let id = unsafe { sim_task_pid(p) } as u64;
    let create = flags & BPF_LOCAL_STORAGE_GET_F_CREATE != 0;
    with_engine(|e| e.maps.storage(map as usize, id, create, v as *const u8) as *mut c_void)
}

#[no_mangle]
pub extern "C" fn sim_task_storage_delete(map: *mut c_void, p: *mut task_struct) -> i64 {
    let id = unsafe { sim_task_pid(p) } as u64;
    with_engine(|e| e.maps.storage_delete(map as usize, id))
}

/// Cgroup storage keyed by the cgroup's kernfs id (set by sim_cgroup_alloc).
fn cgroup_id(c: *mut cgroup) -> u64 {
    extern "C" {
        fn sim_cgroup_id(c: *mut cgroup) -> u64;
    }
    unsafe { sim_cgroup_id(c) }
}

#[no_mangle]
pub extern "C" fn sim_cgrp_storage_get(
    map: *mut c_void,
    c: *mut cgroup,
    v: *mut c_void,
    flags: u64,
) -> *mut c_void {
    if c.is_null() {
        return std::ptr::null_mut();
    }
    let create = flags & BPF_LOCAL_STORAGE_GET_F_CREATE != 0;
    with_engine(|e| {
        e.maps
            .storage(map as usize, cgroup_id(c), create, v as *const u8)
    }) as *mut c_void
}

#[no_mangle]
pub extern "C" fn sim_cgrp_storage_delete(map: *mut c_void, c: *mut cgroup) -> i64 {
    with_engine(|e| e.maps.storage_delete(map as usize, cgroup_id(c)))
}

#[no_mangle]
pub unsafe extern "C" fn sim_kptr_xchg(slot: *mut c_void, ptr: *mut c_void) -> *mut c_void {
    let s = slot as *mut *mut c_void;
    let old = s.read();
    s.write(ptr);
    old
}

#[no_mangle]
pub extern "C" fn sim_ktime_get_ns() -> u64 {
    with_engine(|e| e.ktime())
}

#[no_mangle]
pub extern "C" fn sim_get_smp_processor_id() -> u32 {
    with_engine(|e| e.cur_cpu as u32)
}

#[no_mangle]
pub extern "C" fn sim_get_prandom_u32() -> u32 {
    with_engine(|e| e.rand() as u32)
}

/// A BPF helper that csrc/helpers.h names (the scx headers' inline functions
/// call it) but the simulator does not model: calling it is a simulator bug.
#[no_mangle]
pub extern "C" fn sim_unmodelled_helper(name: *const std::ffi::c_char) -> *mut std::ffi::c_void {
    let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    panic!("mosaic-sim: the scheduler called {name}, which the simulator does not model");
}

/// bpf_get_current_task_btf(): see Engine::current_task().
#[no_mangle]
pub extern "C" fn sim_get_current_task() -> *mut task_struct {
    with_engine(|e| e.current_task())
}

// ------------------------------------------------------------------ scx kfuncs

#[no_mangle]
pub extern "C" fn scx_bpf_create_dsq(id: u64, _node: i32) -> i32 {
    with_engine(|e| e.create_dsq(id))
}

#[no_mangle]
pub extern "C" fn scx_bpf_destroy_dsq(id: u64) {
    let _ = id;
}

#[no_mangle]
pub extern "C" fn sim_kf_dsq_insert(
    p: *mut task_struct,
    dsq: u64,
    slice: u64,
    vtime: u64,
    flags: u64,
    vt: bool,
) -> bool {
    with_engine(|e| {
        let t = e.task_of(p);
        let ins = Insert {
            dsq,
            slice,
            vtime,
            flags,
            vtime_ordered: vt,
        };
        e.insert(t, ins)
    })
}

#[no_mangle]
pub extern "C" fn scx_bpf_dsq_move_to_local___v2___compat(dsq: u64, _enq_flags: u64) -> bool {
    with_engine(|e| e.move_to_local(dsq))
}

#[no_mangle]
pub extern "C" fn scx_bpf_dsq_nr_queued(dsq: u64) -> i32 {
    with_engine(|e| {
        let cpu = e.cur_cpu;
        e.dsq_peek_cost(dsq, cpu);
        e.dsq_len(dsq)
    })
}

#[no_mangle]
pub extern "C" fn scx_bpf_dsq_peek(dsq: u64) -> *mut task_struct {
    with_engine(|e| {
        let cpu = e.cur_cpu;
        e.dsq_peek_cost(dsq, cpu);
        match e.dsq_first(dsq) {
            Some(t) => e.tasks[t].p,
            None => std::ptr::null_mut(),
        }
    })
}

/// scx_bpf_dsq_move(): move task @p, met while iterating a DSQ, to this
/// CPU's local DSQ (the only destination Mosaic uses).
#[no_mangle]
pub unsafe extern "C" fn scx_bpf_dsq_move___new(
    it: *mut u64,
    p: *mut task_struct,
    dsq_id: u64,
    _enq_flags: u64,
) -> bool {
    with_engine(|e| {
        let Some(&(src, _)) = e.iters.get(&it.read()) else {
            return false;
        };
        if dsq_id != SCX_DSQ_LOCAL {
            e.error(
                SCX_EXIT_ERROR_BPF,
                format!("scx_bpf_dsq_move to 0x{dsq_id:x}: only SCX_DSQ_LOCAL is modelled"),
            );
            return false;
        }
        let t = e.task_of(p);
        e.move_task_to_local(src, Some(t))
    })
}

/// scx_bpf_dsq_move_set_vtime(): the vtime of the iterator's next vtime move.
#[no_mangle]
pub unsafe extern "C" fn scx_bpf_dsq_move_set_vtime___new(it: *mut u64, vtime: u64) {
    let id = it.read();
    with_engine(|e| e.iter_vtime.insert(id, vtime));
}

/// scx_bpf_dsq_move_vtime(): move task @p, met while iterating a DSQ, to the
/// vtime-ordered user DSQ @dsq_id (the cpu.max park queues' way back).
#[no_mangle]
pub unsafe extern "C" fn scx_bpf_dsq_move_vtime___new(
    it: *mut u64,
    p: *mut task_struct,
    dsq_id: u64,
    _enq_flags: u64,
) -> bool {
    let id = it.read();
    with_engine(|e| {
        let Some(&(src, _)) = e.iters.get(&id) else {
            return false;
        };
        let vtime = e.iter_vtime.get(&id).copied().unwrap_or(0);
        let t = e.task_of(p);
        e.move_task_to_dsq(src, t, dsq_id, vtime)
    })
}

/// struct bpf_iter_scx_dsq is 6 opaque u64s: [iterator id, ...].
#[no_mangle]
pub unsafe extern "C" fn bpf_iter_scx_dsq_new(it: *mut u64, dsq: u64, _flags: u64) -> i32 {
    with_engine(|e| {
        let id = e.iters.keys().next_back().map_or(1, |k| k + 1);
        e.iters.insert(id, (dsq, 0));
        it.write(id);
        0
    })
}

#[no_mangle]
pub unsafe extern "C" fn bpf_iter_scx_dsq_next(it: *mut u64) -> *mut task_struct {
    with_engine(|e| {
        let id = it.read();
        let Some(&(dsq, pos)) = e.iters.get(&id) else {
            return std::ptr::null_mut();
        };
        let order = e.dsq_order(dsq);
        e.iters.insert(id, (dsq, pos + 1));
        match order.get(pos) {
            Some(&t) => e.tasks[t].p,
            None => std::ptr::null_mut(),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn bpf_iter_scx_dsq_destroy(it: *mut u64) {
    let id = it.read();
    with_engine(|e| {
        e.iter_vtime.remove(&id);
        e.iters.remove(&id)
    });
}

/// Formats a bstr kfunc's message: %d %u %x %s %p %c with l/ll/z modifiers.
unsafe fn format_bstr(fmt: *const c_char, data: *const u64, len: u32) -> String {
    let fmt = CStr::from_ptr(fmt).to_string_lossy().into_owned();
    let args: Vec<u64> = if data.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(data, len as usize / 8).to_vec()
    };
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut ai = 0;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut conv = it.next().unwrap_or('%');
        while matches!(conv, 'l' | 'z' | 'h' | '0'..='9' | '-') {
            conv = it.next().unwrap_or('%');
        }
        let a = args.get(ai).copied().unwrap_or(0);
        match conv {
            '%' => {
                out.push('%');
                continue;
            }
            'd' | 'i' => out.push_str(&(a as i64).to_string()),
            'u' => out.push_str(&a.to_string()),
            'x' => out.push_str(&format!("{a:x}")),
            'p' => out.push_str(&format!("{a:#x}")),
            'c' => out.push(a as u8 as char),
            's' => out.push_str(&if a == 0 {
                "(null)".into()
            } else {
                CStr::from_ptr(a as *const c_char)
                    .to_string_lossy()
                    .into_owned()
            }),
            other => out.push(other),
        }
        ai += 1;
    }
    out
}

#[no_mangle]
pub unsafe extern "C" fn scx_bpf_error_bstr(fmt: *const c_char, data: *const u64, len: u32) {
    let msg = format_bstr(fmt, data, len);
    with_engine(|e| e.error(SCX_EXIT_ERROR_BPF, msg));
}

#[no_mangle]
pub unsafe extern "C" fn scx_bpf_exit_bstr(
    _code: i64,
    fmt: *const c_char,
    data: *const u64,
    len: u32,
) {
    let msg = format_bstr(fmt, data, len);
    with_engine(|e| e.error(SCX_EXIT_UNREG + 1, msg));
}

#[no_mangle]
pub extern "C" fn scx_bpf_get_idle_cpumask() -> *const c_void {
    with_engine(|e| e.idle_mask.as_ptr() as *const c_void)
}

#[no_mangle]
pub extern "C" fn scx_bpf_get_idle_smtmask() -> *const c_void {
    with_engine(|e| e.smt_mask.as_ptr() as *const c_void)
}

#[no_mangle]
pub extern "C" fn scx_bpf_put_idle_cpumask(_m: *const c_void) {}

#[no_mangle]
pub extern "C" fn scx_bpf_get_online_cpumask() -> *const c_void {
    with_engine(|e| e.online_mask.as_ptr() as *const c_void)
}

#[no_mangle]
pub extern "C" fn scx_bpf_get_possible_cpumask() -> *const c_void {
    with_engine(|e| e.online_mask.as_ptr() as *const c_void)
}

#[no_mangle]
pub extern "C" fn scx_bpf_put_cpumask(_m: *const c_void) {}

#[no_mangle]
pub extern "C" fn scx_bpf_test_and_clear_cpu_idle(cpu: i32) -> bool {
    cpu >= 0 && with_engine(|e| e.test_and_clear_idle(cpu as usize))
}

#[no_mangle]
pub extern "C" fn scx_bpf_pick_idle_cpu(mask: *const c_void, flags: u64) -> i32 {
    let mut m = [0u64; 8];
    let src = cpumask_words(mask);
    let n = m.len().min(src.len());
    m[..n].copy_from_slice(&src[..n]);
    with_engine(|e| e.pick_idle(&m, flags & SCX_PICK_IDLE_CORE != 0))
}

#[no_mangle]
pub extern "C" fn scx_bpf_pick_any_cpu(mask: *const c_void, flags: u64) -> i32 {
    let m = cpumask_words(mask).to_vec();
    with_engine(|e| {
        let c = e.pick_idle(&m, flags & SCX_PICK_IDLE_CORE != 0);
        if c >= 0 {
            return c;
        }
        (0..e.m.nr_cpus())
            .find(|&c| bit(&m, c))
            .map_or(-16, |c| c as i32)
    })
}

#[no_mangle]
pub extern "C" fn scx_bpf_kick_cpu(cpu: i32, flags: u64) {
    if cpu >= 0 {
        with_engine(|e| e.kick(cpu as usize, flags));
    }
}

#[no_mangle]
pub extern "C" fn scx_bpf_now() -> u64 {
    with_engine(|e| e.now)
}

#[no_mangle]
pub extern "C" fn scx_bpf_task_cpu(p: *const task_struct) -> i32 {
    with_engine(|e| {
        let t = e.task_of(p);
        e.tasks[t].cpu as i32
    })
}

#[no_mangle]
pub extern "C" fn scx_bpf_task_running(p: *const task_struct) -> bool {
    with_engine(|e| {
        let t = e.task_of(p);
        e.is_running(t)
    })
}

#[no_mangle]
pub extern "C" fn scx_bpf_nr_cpu_ids() -> u32 {
    with_engine(|e| e.m.nr_cpus() as u32)
}

#[no_mangle]
pub extern "C" fn scx_bpf_nr_node_ids() -> u32 {
    with_engine(|e| e.m.topo.nodes.len() as u32)
}

#[no_mangle]
pub extern "C" fn scx_bpf_cpu_node(cpu: i32) -> i32 {
    with_engine(|e| e.m.cpu(cpu as usize).node as i32)
}

#[no_mangle]
pub extern "C" fn scx_bpf_cpuperf_cap(cpu: i32) -> u32 {
    with_engine(|e| e.m.cpu(cpu as usize).capacity)
}

#[no_mangle]
pub extern "C" fn scx_bpf_cpuperf_cur(cpu: i32) -> u32 {
    with_engine(|e| e.m.cpu(cpu as usize).capacity)
}

#[no_mangle]
pub extern "C" fn scx_bpf_cpuperf_set(_cpu: i32, _perf: u32) {}

#[no_mangle]
pub extern "C" fn scx_bpf_dispatch_nr_slots() -> u32 {
    with_engine(|e| e.dispatch_nr_slots())
}

#[no_mangle]
pub extern "C" fn scx_bpf_dispatch_cancel() {
    with_engine(|e| e.dispatch_cancel())
}

#[no_mangle]
pub extern "C" fn scx_bpf_task_cgroup(p: *mut task_struct) -> *mut cgroup {
    with_engine(|e| {
        let t = e.task_of(p);
        e.task_cgroup(t)
    })
}

// ------------------------------------------------------------------ BPF timers

#[no_mangle]
pub extern "C" fn sim_timer_init(timer: *mut c_void, map: *mut c_void, _flags: u64) -> i64 {
    with_engine(|e| e.timer_init(timer as usize, map as usize))
}

#[no_mangle]
pub extern "C" fn sim_timer_set_callback(timer: *mut c_void, cb: *mut c_void) -> i64 {
    with_engine(|e| e.timer_set_callback(timer as usize, cb as usize))
}

#[no_mangle]
pub extern "C" fn sim_timer_start(timer: *mut c_void, ns: u64, _flags: u64) -> i64 {
    with_engine(|e| e.timer_start(timer as usize, ns))
}

#[no_mangle]
pub extern "C" fn sim_timer_cancel(timer: *mut c_void) -> i64 {
    with_engine(|e| e.timer_cancel(timer as usize))
}
