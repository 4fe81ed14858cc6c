//! How the scheduler's C code reaches the engine. The BPF C calls kfuncs
//! without a context argument, so while the engine calls into C it lends
//! itself through a thread-local pointer: `Engine::lend` installs it for the
//! duration of one call (a scope guard removes it, also on unwind), and the
//! kfunc shims take it back with `with_engine`, which panics clearly if no
//! engine is installed. There is no global engine and no `static mut`.
use super::state::Ctx;
use super::Engine;
use crate::trace::Decision;
use std::cell::Cell;
use std::ptr::null_mut;

thread_local! {
    /// The engine lent to the kfuncs by the call into C under way, if any.
    static LENT: Cell<*mut Engine> = const { Cell::new(null_mut()) };
}

/// Empties LENT when dropped (the end of a lend).
struct Unlend;

impl Drop for Unlend {
    fn drop(&mut self) {
        LENT.set(null_mut());
    }
}

/// Puts the engine back into LENT when dropped (the end of a kfunc).
struct Return(*mut Engine);

impl Drop for Return {
    fn drop(&mut self) {
        LENT.set(self.0);
    }
}

impl Engine {
    /// Runs @f, a call into the scheduler's C, with the engine lent to the
    /// kfuncs it calls. @f cannot touch `self` (it is borrowed for the call),
    /// so the kfuncs' reference is the only one in use meanwhile.
    pub(super) fn lend<R>(&mut self, f: impl FnOnce() -> R) -> R {
        let prev = LENT.replace(self as *mut Engine);
        assert!(
            prev.is_null(),
            "mosaic-sim: engine lent twice (C called back into the scheduler from a kfunc)"
        );
        let _unlend = Unlend;
        f()
    }

    /// `lend` for a callback of the ops table (ops.rs), counting the work it
    /// did: its kfunc calls and the loop iterations of its C code.
    pub(super) fn call<R>(&mut self, f: impl FnOnce(&super::ops::Ops) -> R) -> R {
        let ops = self.ops;
        let (kfuncs, iters) = (self.kfuncs_run, loop_iters());
        let decision = self.tracer.is_some().then(|| self.trace_before()).flatten();
        self.call_began = Some((kfuncs, iters, self.cpus[self.cur_cpu].overhead));
        if let Some(t) = self.tcg.as_mut() {
            t.spin_ns = 0;
        }
        let r = self.lend(|| f(&ops));
        self.call_began = None;
        if let Some(d) = decision {
            self.trace_after(d);
        }
        let work = (self.kfuncs_run - kfuncs) + (loop_iters() - iters);
        self.bpf_work.callbacks += 1;
        self.bpf_work.kfunc_calls += self.kfuncs_run - kfuncs;
        self.bpf_work.loop_iterations += loop_iters() - iters;
        // the callback's own work, on the CPU it ran on (set_ctx charged the call)
        let cpu = self.cur_cpu;
        self.cpus[cpu].overhead += work as f64 * self.cfg.costs.bpf_work_ns;
        r
    }
}

impl Engine {
    /// bpf_ktime_get_ns(): inside a callback, the clock has moved on by the
    /// work the callback did so far (its kfunc calls and loop iterations, and
    /// the lock waits and holds charged to its CPU meanwhile), in guest time,
    /// so that the scheduler's measure of a newidle balance's cost (its cost
    /// budget, shard.bpf.c) sees what the engine charges for it.
    pub(crate) fn ktime(&self) -> u64 {
        let Some((kfuncs, iters, overhead)) = self.call_began else {
            return self.now;
        };
        let work = (self.kfuncs_run - kfuncs) + (loop_iters() - iters);
        let ns = work as f64 * self.cfg.costs.bpf_work_ns
            + (self.cpus[self.cur_cpu].overhead - overhead).max(0.0);
        let spins = self.tcg.as_ref().map_or(0, |t| t.spin_ns);
        self.now + (ns * self.tcg_slowdown()) as u64 + spins
    }

    /// With --trace, before a callback that places a task (select_cpu,
    /// enqueue, dispatch): reads the calling CPU's counters (trace.rs says
    /// why) and says which decision the callback makes.
    fn trace_before(&mut self) -> Option<Decision> {
        let d = match self.ctx {
            Ctx::Select { t } => Decision::Select { t },
            Ctx::Enqueue { t } => Decision::Enqueue { t },
            Ctx::Dispatch { cpu } => Decision::Dispatch { cpu },
            Ctx::None | Ctx::Other => return None,
        };
        let row = self.maps.percpu_row("stats", self.cur_cpu)?;
        self.tracer.as_mut()?.before_call(row);
        Some(d)
    }

    /// After trace_before's callback: the counters that moved name its path.
    fn trace_after(&mut self, d: Decision) {
        if let (Some(tr), Some(row)) = (
            self.tracer.as_mut(),
            self.maps.percpu_row("stats", self.cur_cpu),
        ) {
            tr.after_call(d, row, self.now);
        }
    }
}

/// Loop iterations the scheduler's C code ran so far (shim.h counts them).
pub(super) fn loop_iters() -> u64 {
    // SAFETY: a plain read of a counter that only the C code on this thread
    // writes, and none of it runs now.
    unsafe { crate::ffi::sim_loop_iters_read() }
}

/// The work the scheduler's callbacks did in a run: the simulator's measure
/// of BPF cost per scheduling event, independent of the cost model.
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
pub struct BpfWork {
    /// callbacks run (select_cpu, enqueue, dispatch, running, ...)
    pub callbacks: u64,
    /// kfunc and helper calls made by them
    pub kfunc_calls: u64,
    /// iterations of their loops (bpf_for, bpf_for_each, bpf_repeat)
    pub loop_iterations: u64,
}

impl BpfWork {
    /// Kfunc calls plus loop iterations, per callback.
    pub fn per_callback(&self) -> f64 {
        (self.kfunc_calls + self.loop_iterations) as f64 / self.callbacks.max(1) as f64
    }
}

/// Runs @f on the engine lent by the call into C under way: what every kfunc
/// shim does. Panics if there is none (a kfunc called outside a simulation's
/// call into the scheduler, or from inside another kfunc).
pub fn with_engine<R>(f: impl FnOnce(&mut Engine) -> R) -> R {
    let p = LENT.replace(null_mut());
    assert!(
        !p.is_null(),
        "mosaic-sim: kfunc called with no engine installed (not inside a call into the scheduler)"
    );
    let _back = Return(p);
    // SAFETY: p comes from the `&mut Engine` that `Engine::lend` keeps
    // borrowed until the call into C returns, so the engine is alive and no
    // Rust code uses it meanwhile; LENT is empty until @f returns, so no
    // second reference can be made from it.
    let e = unsafe { &mut *p };
    e.kfuncs_run += 1;
    f(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "no engine installed")]
    fn kfunc_without_engine_panics() {
        with_engine(|e| e.now);
    }

    #[test]
    fn lend_installs_for_the_call_only() {
        let mut e = super::super::tests::engine("1llc");
        e.now = 42;
        let seen = e.lend(|| with_engine(|e| e.now));
        assert_eq!(seen, 42);
        assert!(LENT.get().is_null(), "still installed after the call");
    }

    #[test]
    fn ktime_moves_on_by_the_work_of_the_callback_under_way() {
        let mut e = super::super::tests::engine("1llc");
        e.now = 1_000;
        assert_eq!(e.ktime(), 1_000, "outside a callback: the event's time");
        e.call_began = Some((e.kfuncs_run, loop_iters(), e.cpus[0].overhead));
        e.kfuncs_run += 3;
        e.cpus[0].overhead += 250.0;
        let work = 3.0 * e.cfg.costs.bpf_work_ns;
        assert_eq!(e.ktime(), 1_000 + (work + 250.0) as u64);
    }

    #[test]
    #[should_panic(expected = "no engine installed")]
    fn nested_kfunc_panics() {
        let mut e = super::super::tests::engine("1llc");
        e.lend(|| with_engine(|_| with_engine(|e| e.now)));
    }
}
