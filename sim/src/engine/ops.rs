//! The scheduler's callbacks the kernel rules call, as a table: the native
//! C scheduler's (csrc/) in a simulation, a do-nothing scheduler in the
//! engine's unit tests (the kernel's default behaviour: every task goes to
//! the global DSQ).
use crate::ffi::{self, task_struct};

/// The per-event callbacks (the run's setup calls the others directly).
/// Calling one is unsafe: it runs C that takes the raw task pointers the
/// engine allocated (sim_task_alloc, never freed), and must run inside
/// `Engine::call` so the kfuncs it calls find the engine.
#[derive(Clone, Copy)]
pub(super) struct Ops {
    pub(super) select_cpu: unsafe extern "C" fn(*mut task_struct, i32, u64, *mut i32) -> i32,
    pub(super) enqueue: unsafe extern "C" fn(*mut task_struct, u64) -> i32,
    pub(super) dispatch: unsafe extern "C" fn(i32, *mut task_struct) -> i32,
    pub(super) tick: unsafe extern "C" fn(*mut task_struct),
    pub(super) runnable: unsafe extern "C" fn(*mut task_struct, u64),
    pub(super) running: unsafe extern "C" fn(*mut task_struct),
    pub(super) stopping: unsafe extern "C" fn(*mut task_struct, bool),
    pub(super) quiescent: unsafe extern "C" fn(*mut task_struct, u64),
    pub(super) update_idle: unsafe extern "C" fn(i32, bool),
    pub(super) has_update_idle: unsafe extern "C" fn() -> i32,
    pub(super) disable: unsafe extern "C" fn(*mut task_struct),
    pub(super) exit_task: unsafe extern "C" fn(*mut task_struct, bool),
}

impl Ops {
    /// scx_mosaic's own callbacks, compiled natively.
    pub(super) fn native() -> Ops {
        Ops {
            select_cpu: ffi::sim_op_select_cpu,
            enqueue: ffi::sim_op_enqueue,
            dispatch: ffi::sim_op_dispatch,
            tick: ffi::sim_op_tick,
            runnable: ffi::sim_op_runnable,
            running: ffi::sim_op_running,
            stopping: ffi::sim_op_stopping,
            quiescent: ffi::sim_op_quiescent,
            update_idle: ffi::sim_op_update_idle,
            has_update_idle: ffi::sim_has_update_idle,
            disable: ffi::sim_op_disable,
            exit_task: ffi::sim_op_exit_task,
        }
    }
}

#[cfg(test)]
pub(super) mod null {
    //! A scheduler that implements no callback: select_cpu and enqueue
    //! leave the choice to the kernel, dispatch has nothing.
    use super::Ops;
    use crate::ffi::task_struct;

    unsafe extern "C" fn select_cpu(_: *mut task_struct, _: i32, _: u64, has: *mut i32) -> i32 {
        *has = 0;
        0
    }
    unsafe extern "C" fn no_result(_: *mut task_struct, _: u64) -> i32 {
        0
    }
    unsafe extern "C" fn dispatch(_: i32, _: *mut task_struct) -> i32 {
        0
    }
    unsafe extern "C" fn task(_: *mut task_struct) {}
    unsafe extern "C" fn task_flags(_: *mut task_struct, _: u64) {}
    unsafe extern "C" fn task_bool(_: *mut task_struct, _: bool) {}
    unsafe extern "C" fn update_idle(_: i32, _: bool) {}
    unsafe extern "C" fn has_update_idle() -> i32 {
        0
    }

    /// The table of do-nothing callbacks.
    pub(in crate::engine) fn ops() -> Ops {
        Ops {
            select_cpu,
            enqueue: no_result,
            dispatch,
            tick: task,
            runnable: task_flags,
            running: task,
            stopping: task_bool,
            quiescent: task_flags,
            update_idle,
            has_update_idle,
            disable: task,
            exit_task: task_bool,
        }
    }
}
