//! The discrete-event engine: CPUs, tasks, DSQs, ticks, wakeups, kicks, and
//! the kernel's sched_ext rules around the scheduler's callbacks.
//!
//! Layout: `state` (the data model), `dsq` (dispatch queues and inserts),
//! `locks` (lock wait accounting), `idle` (idle masks, idle CPU picking),
//! `kernel` (the rules: wakeup, enqueue, schedule, pick_next, preemption),
//! `run` (loading the scheduler, the event loop), `checks` (invariants),
//! `outcome` (result JSON), `ops` (the scheduler's callbacks),
//! `context` (how the kfuncs reach the engine) and `tcg` (the VM's single
//! host thread, when the cost model asks for it). This file holds the engine
//! itself and the small services the kfuncs ask of it.
//!
//! One run per process (the native scheduler's globals are process state):
//! `Engine::run` refuses a second one.
//!
//! Borrowing: callbacks into the scheduler re-enter the engine through the
//! kfuncs, so the engine is lent to them for each call into C
//! (`Engine::lend`, context.rs); engine code passes `&mut Engine` explicitly.
//!
//! Tracing (--trace, trace.rs): `tracer` is None unless asked for; when set,
//! it is fed where a task starts and leaves a CPU (kernel.rs: pick_next,
//! stop_curr), at each wakeup (wake), each periodic check, and around the
//! callbacks that place tasks (context.rs: Engine::call).
use crate::ffi::{self, task_struct};
use crate::machine::Machine;
use crate::maps::Maps;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

mod checks;
mod context;
mod dsq;
mod idle;
mod kernel;
mod locks;
mod ops;
mod outcome;
mod run;
mod state;
mod tcg;

pub use context::with_engine;
pub use outcome::{percentiles, Outcome};
pub use state::{bit, Config, Ctx, Insert, Lock, Step, Task, TaskSpec, Wl};

use dsq::Dsq;
use state::{setbit, words, Cpu, Ev};

pub struct Engine {
    pub m: Machine,
    pub cfg: Config,
    pub now: u64,
    seq: u64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    cpus: Vec<Cpu>,
    pub tasks: Vec<Task>,
    dsqs: BTreeMap<u64, Dsq>,
    global: Dsq,
    wl: Box<dyn Wl>,
    /// the scheduler's callbacks (ops.rs)
    ops: ops::Ops,
    pub maps: Maps,
    /// CPU whose context a callback runs in
    pub cur_cpu: usize,
    pub ctx: Ctx,
    dispatch_buf: Vec<(usize, Insert)>,
    dispatch_max: usize,
    kicks: Vec<(usize, u64)>,
    pub idle_mask: Vec<u64>,
    pub smt_mask: Vec<u64>,
    pub online_mask: Vec<u64>,
    pub rng: u64,
    pub ops_flags: u64,
    pub exit: Option<(i32, String)>,
    pub iters: BTreeMap<u64, (u64, usize)>,
    /// scx_bpf_dsq_move_set_vtime(): the vtime an iterator's next vtime move gives
    pub iter_vtime: BTreeMap<u64, u64>,
    pick_cursor: usize,
    // ---- metrics
    wake_lat: Vec<u64>,
    /// the task of each wake_lat entry (the run's JSON splits the latencies
    /// by task name)
    wake_lat_task: Vec<usize>,
    /// every wait, from runnable (woken, new, or queued again after a slice
    /// or a preemption) to running: the bench's shared measure (mosaic-bench
    /// waits), where wake_lat counts wakeups only
    run_wait: Vec<u64>,
    migrations: [u64; 6],
    inserts_local: u64,
    inserts_dsq: u64,
    inserts_global: u64,
    idle_runnable_ns: u128,
    last_acct: u64,
    nr_waiting: usize,
    nr_idle: usize,
    ctx_switches: u64,
    enqueues: u64,
    enqueue_matched: u64,
    custody_dequeued: u64,
    pub violations: Vec<String>,
    /// --trace's recorder (trace.rs)
    tracer: Option<Box<crate::trace::Tracer>>,
    /// --timeline-ms: the counters (summed over CPUs) at each sample
    timeline: Vec<Vec<u64>>,
    group_llc_ns: BTreeMap<usize, Vec<u64>>,
    wakeups_remote_lock: u64,
    wakeups_queued: u64,
    wakeups_local: u64,
    /// kfunc shims run (context.rs), and the callbacks' share of the work
    kfuncs_run: u64,
    /// inside a callback: the kfuncs run, loop iterations and its CPU's
    /// overhead when it began (context.rs, ktime)
    call_began: Option<(u64, u64, f64)>,
    bpf_work: context::BpfWork,
    pub events_done: u64,
    cgroups: Vec<*mut ffi::cgroup>,
    gb: Option<crate::group::Balancer>,
    /// BPF timers by address: (map, callback, cpu, generation, key)
    timers: BTreeMap<usize, (usize, usize, usize, u64, u32)>,
    nr_dead: usize,
    /// the VM's host thread, when the cost model asks for TCG (tcg.rs)
    tcg: Option<tcg::Tcg>,
}

impl Engine {
    pub fn new(m: Machine, cfg: Config, wl: Box<dyn Wl>) -> Box<Engine> {
        let n = m.nr_cpus();
        let w = words(n);
        let mut online = vec![0u64; w];
        for c in 0..n {
            setbit(&mut online, c, true);
        }
        let cpus = (0..n).map(|_| Cpu::new()).collect();
        let seed = cfg.seed;
        Box::new(Engine {
            m,
            now: 0,
            seq: 0,
            events: BinaryHeap::new(),
            cpus,
            tasks: Vec::new(),
            dsqs: BTreeMap::new(),
            global: Dsq::new(),
            wl,
            ops: ops::Ops::native(),
            maps: Maps::new(n),
            cur_cpu: 0,
            ctx: Ctx::None,
            dispatch_buf: Vec::new(),
            dispatch_max: 32,
            kicks: Vec::new(),
            idle_mask: online.clone(),
            smt_mask: online.clone(),
            online_mask: online,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
            ops_flags: 0,
            exit: None,
            iters: BTreeMap::new(),
            iter_vtime: BTreeMap::new(),
            pick_cursor: 0,
            wake_lat: Vec::new(),
            wake_lat_task: Vec::new(),
            run_wait: Vec::new(),
            migrations: [0; 6],
            inserts_local: 0,
            inserts_dsq: 0,
            inserts_global: 0,
            idle_runnable_ns: 0,
            last_acct: 0,
            nr_waiting: 0,
            nr_idle: n,
            ctx_switches: 0,
            enqueues: 0,
            enqueue_matched: 0,
            custody_dequeued: 0,
            violations: Vec::new(),
            tracer: cfg.trace.map(|l| Box::new(crate::trace::Tracer::new(l, n))),
            timeline: Vec::new(),
            group_llc_ns: BTreeMap::new(),
            wakeups_remote_lock: 0,
            wakeups_queued: 0,
            wakeups_local: 0,
            kfuncs_run: 0,
            call_began: None,
            bpf_work: Default::default(),
            events_done: 0,
            cgroups: Vec::new(),
            gb: None,
            timers: BTreeMap::new(),
            nr_dead: 0,
            tcg: (cfg.costs.tcg_slowdown > 0.0).then(|| tcg::Tcg::new(n)),
            cfg,
        })
    }

    pub fn rand(&mut self) -> u64 {
        // splitmix64
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Schedules event @ev at @at (ties run in the order pushed).
    fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.events.push(Reverse((at, self.seq, ev)));
    }

    pub fn error(&mut self, kind: i32, msg: String) {
        if self.exit.is_none() {
            self.exit = Some((kind, msg));
        }
    }

    pub fn violation(&mut self, msg: String) {
        if self.violations.len() < 20 {
            self.violations.push(format!("t={}ns: {msg}", self.now));
        }
    }

    pub fn task_of(&self, p: *const task_struct) -> usize {
        let pid = unsafe { ffi::sim_task_pid(p) };
        let t = (pid - 1) as usize;
        assert!(
            t < self.tasks.len() && std::ptr::eq(self.tasks[t].p, p),
            "unknown task pointer"
        );
        t
    }

    pub fn kick(&mut self, cpu: usize, flags: u64) {
        if cpu < self.cpus.len() {
            self.kicks.push((cpu, flags));
        }
    }

    pub fn timer_init(&mut self, timer: usize, map: usize) -> i64 {
        if self.timers.contains_key(&timer) {
            return -16;
        }
        let key = self.maps.array_key_of(map, timer);
        self.timers.insert(timer, (map, 0, self.cur_cpu, 0, key));
        0
    }

    pub fn timer_set_callback(&mut self, timer: usize, cb: usize) -> i64 {
        match self.timers.get_mut(&timer) {
            Some(t) => {
                t.1 = cb;
                0
            }
            None => -22,
        }
    }

    pub fn timer_start(&mut self, timer: usize, ns: u64) -> i64 {
        let cpu = self.cur_cpu;
        let Some(t) = self.timers.get_mut(&timer) else {
            return -22;
        };
        t.2 = cpu;
        t.3 += 1;
        let gen = t.3;
        self.push(self.now + ns.max(1), Ev::Timer { id: timer, gen });
        0
    }

    pub fn timer_cancel(&mut self, timer: usize) -> i64 {
        match self.timers.get_mut(&timer) {
            Some(t) => {
                t.3 += 1;
                0
            }
            None => -22,
        }
    }

    /// How many times slower than the hardware the guest's instructions run:
    /// TCG's slowdown in the VM's model, else 1.
    pub(super) fn tcg_slowdown(&self) -> f64 {
        if self.tcg.is_some() {
            self.cfg.costs.tcg_slowdown
        } else {
            1.0
        }
    }

    /// The task running on the CPU making the current call, NULL if idle
    /// (bpf_get_current_task_btf(): the waker, in select_cpu).
    pub fn current_task(&self) -> *mut task_struct {
        match self.cpus[self.cur_cpu].curr {
            Some(t) => self.tasks[t].p,
            None => std::ptr::null_mut(),
        }
    }

    pub fn is_running(&self, t: usize) -> bool {
        self.tasks[t].state == state::TState::Running
    }

    pub fn task_cgroup(&self, t: usize) -> *mut ffi::cgroup {
        self.cgroups[self.tasks[t].spec.cgroup]
    }

    /// The trace of the run (--trace), its slices under way ended now.
    pub fn take_trace(&mut self) -> Option<Box<crate::trace::Tracer>> {
        let mut tr = self.tracer.take()?;
        tr.finish(self.now);
        Some(tr)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! An engine for unit tests: a preset machine, the do-nothing scheduler
    //! (ops.rs), and tasks that run given steps.
    use super::*;
    use crate::cost::Costs;
    use serde_json::Value;
    use std::ffi::CString;

    /// A workload whose task @t runs its scripted steps, then exits.
    pub(crate) struct Script(pub Vec<Vec<Step>>);

    impl Wl for Script {
        fn tasks(&self) -> Vec<TaskSpec> {
            (0..self.0.len())
                .map(|i| TaskSpec::simple(&format!("t{i}"), 0))
                .collect()
        }
        fn step(&mut self, t: usize, _now: u64, _wakes: &mut Vec<usize>) -> Step {
            if self.0[t].is_empty() {
                Step::Exit
            } else {
                self.0[t].remove(0)
            }
        }
        fn done(&self) -> bool {
            false
        }
        fn metrics(&self, _end: u64) -> Value {
            Value::Null
        }
    }

    /// An engine on preset @machine with the do-nothing scheduler and no tasks.
    pub(crate) fn engine(machine: &str) -> Box<Engine> {
        with_tasks(machine, vec![])
    }

    /// An engine on preset @machine with the do-nothing scheduler and one
    /// sleeping task per (cpu, steps) of @tasks, placed on that CPU, that
    /// runs those steps once woken and then exits.
    pub(crate) fn with_tasks(machine: &str, tasks: Vec<(usize, Vec<Step>)>) -> Box<Engine> {
        let cfg = Config {
            seed: 1,
            hz: 1000,
            costs: Costs::default(),
            max_ns: 1_000_000_000,
            trace: None,
            watchdog_ns: 30_000_000_000,
            idle_bound_ns: 20_000_000,
            ops_flags_or: 0,
            group_balancer: None,
            timeline_ns: 0,
        };
        let m = Machine::preset(machine).unwrap();
        let n = m.nr_cpus();
        let steps = tasks.iter().map(|(_, s)| s.clone()).collect();
        let mut e = Engine::new(m, cfg, Box::new(Script(steps)));
        e.ops = ops::null::ops();
        for (t, (cpu, _)) in tasks.into_iter().enumerate() {
            let comm = CString::new(format!("t{t}")).unwrap();
            // SAFETY: sim_task_alloc only allocates and fills a task_struct.
            let p = unsafe { ffi::sim_task_alloc(t as i32 + 1, comm.as_ptr(), n as u32) };
            let spec = TaskSpec::simple(&format!("t{t}"), 0);
            let mut task = Task::new(p, spec, cpu, vec![true; n]);
            task.state = state::TState::Sleeping;
            e.tasks.push(task);
        }
        e
    }

    /// Processes @e's events up to time @until (as the run's loop does), and
    /// leaves the clock at @until.
    pub(crate) fn run_until(e: &mut Engine, until: u64) {
        while e
            .events
            .peek()
            .is_some_and(|Reverse((at, _, _))| *at <= until)
        {
            let Reverse((at, _, ev)) = e.events.pop().unwrap();
            e.now = at;
            if tcg::admit(e, ev) {
                run::on_event(e, ev);
            }
            tcg::serve(e);
        }
        e.now = until;
    }
}
