//! One simulation: loading the scheduler (ops.init, CPUs, cgroups, tasks),
//! the event loop, what each event does, and ops.exit.
use super::kernel::{
    flush_kicks, next_step, schedule, schedule_preempt, set_ctx, settle_work, update_curr, wake,
};
use super::locks::LockId;
use super::outcome::Outcome;
use super::state::{setbit, words, Ctx, Ev, TState, Task, TaskSpec};
use super::Engine;
use crate::ffi;
use std::cmp::Reverse;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process has run a simulation (the scheduler's globals are
/// process state, so it may run only one).
static RAN: AtomicBool = AtomicBool::new(false);

impl Engine {
    /// Loads the scheduler, runs the workload, returns the report.
    pub fn run(&mut self, sched_label: &str) -> Outcome {
        assert!(
            !RAN.swap(true, Ordering::SeqCst),
            "mosaic-sim: one simulation per process (the scheduler's globals)"
        );
        self.lend(|| unsafe { ffi::sim_register_maps() });
        self.ops_flags = unsafe { ffi::sim_ops_flags() } | self.cfg.ops_flags_or;
        let timeout = unsafe { ffi::sim_ops_timeout_ms() };
        if timeout > 0 {
            self.cfg.watchdog_ns = timeout as u64 * 1_000_000;
        }
        let batch = unsafe { ffi::sim_ops_dispatch_max_batch() };
        if batch > 0 {
            self.dispatch_max = batch as usize;
        }
        set_ctx(self, 0, Ctx::Other);
        let rc = self.lend(|| unsafe { ffi::sim_op_init() });
        if rc != 0 {
            self.error(ffi::SCX_EXIT_ERROR, format!("ops.init failed: {rc}"));
        }
        let n = self.cpus.len();
        for c in 0..n {
            set_ctx(self, c, Ctx::Other);
            self.lend(|| unsafe { ffi::sim_op_cpu_online(c as i32) });
        }
        let specs = self.wl.tasks();
        self.load_cgroups(&specs);
        self.load_tasks(specs);
        let nt = self.tasks.len();
        for t in 0..nt {
            self.tasks[t].state = TState::Sleeping;
            if let Some(at) = self.wl.first_wake_ns(t) {
                self.push(at, Ev::TimerWake { t });
            } else if !self.wl.starts_asleep(t) {
                let cpu = self.tasks[t].cpu;
                wake(self, t, cpu, false);
            }
        }
        self.push(1_000_000, Ev::Check);
        let end = self.event_loop();
        let (kind, msg) = self
            .exit
            .clone()
            .unwrap_or((ffi::SCX_EXIT_UNREG, "done".into()));
        let reason = CString::new(if kind >= 1024 {
            "error"
        } else {
            "unregistered"
        })
        .unwrap();
        let cmsg = CString::new(msg.clone()).unwrap_or_default();
        set_ctx(self, 0, Ctx::Other);
        self.lend(|| unsafe { ffi::sim_op_exit(kind, 0, reason.as_ptr(), cmsg.as_ptr()) });
        self.report(end, kind, &msg, sched_label)
    }

    /// Creates the workload's cgroups (ops.cgroup_init) and starts the group
    /// balancer on all but the root.
    fn load_cgroups(&mut self, specs: &[TaskSpec]) {
        let ngroups = specs.iter().map(|s| s.cgroup).max().unwrap_or(0) + 1;
        let weights = self.wl.cgroup_weights();
        let parents = self.wl.cgroup_parents();
        let ngroups = ngroups.max(weights.len());
        let mut cgroups: Vec<*mut ffi::cgroup> = Vec::new();
        for g in 0..ngroups {
            let weight = weights.get(g).copied().unwrap_or(100);
            let parent = match g {
                0 => std::ptr::null_mut(),
                _ => cgroups[parents.get(g).copied().unwrap_or(0)],
            };
            let cg = unsafe { ffi::sim_cgroup_alloc(g as u64 + 1, parent) };
            set_ctx(self, 0, Ctx::Other);
            self.lend(|| unsafe { ffi::sim_op_cgroup_init(cg, weight) });
            cgroups.push(cg);
        }
        self.cgroups = cgroups;
        // the balancer registers the cgroups below --gb-parent: all but root
        if let Some(cfg) = self.cfg.group_balancer.clone() {
            let mut b = crate::group::Balancer::new(cfg, &self.m.topo);
            for &cg in &self.cgroups[1..] {
                b.register(&mut self.maps, self.now, unsafe { ffi::sim_cgroup_id(cg) });
            }
            let first = b.period_ns();
            self.gb = Some(b);
            self.push(first, Ev::Balance);
        }
    }

    /// Creates the workload's tasks: placement, ops.init_task, ops.enable.
    fn load_tasks(&mut self, specs: Vec<TaskSpec>) {
        let start = self.wl.first_cpu();
        let n = self.cpus.len();
        for (i, s) in specs.into_iter().enumerate() {
            let comm = CString::new(s.name.clone()).unwrap();
            let p = unsafe { ffi::sim_task_alloc(i as i32 + 1, comm.as_ptr(), n as u32) };
            let mut allowed = vec![true; n];
            if let Some(c) = &s.cpus {
                allowed = (0..n).map(|x| c.contains(&x)).collect();
                let mut bits = vec![0u64; words(n)];
                for &x in c {
                    setbit(&mut bits, x, true);
                }
                unsafe {
                    ffi::sim_task_set_cpus(p, bits.as_ptr(), bits.len() as u32, c.len() as u32)
                };
            }
            if s.weight != 100 {
                unsafe { ffi::sim_task_set_weight(p, s.weight) };
            }
            let first = allowed.iter().position(|&a| a).unwrap_or(0);
            // spread the initial placement like fork balancing does
            let cpu = self.wl.start_cpu(i).unwrap_or((first + start + i) % n);
            let cpu = if allowed[cpu] { cpu } else { first };
            let cg = self.cgroups[s.cgroup];
            unsafe { ffi::sim_task_set_cgroup(p, cg) };
            self.tasks.push(Task::new(p, s, cpu, allowed));
            set_ctx(self, cpu, Ctx::Other);
            let rc = self.lend(|| unsafe { ffi::sim_op_init_task(p, cg, true) });
            if rc != 0 {
                self.error(ffi::SCX_EXIT_ERROR, format!("init_task failed: {rc}"));
            }
            self.lend(|| unsafe { ffi::sim_op_enable(p) });
        }
    }

    /// Runs events until the workload is done, every task exited, the
    /// scheduler exited, or max_ns; returns the end time.
    fn event_loop(&mut self) -> u64 {
        let mut end = 0;
        while let Some(Reverse((at, _, ev))) = self.events.pop() {
            if self.exit.is_some() {
                break;
            }
            if at > self.cfg.max_ns {
                end = self.cfg.max_ns;
                break;
            }
            self.now = at;
            self.events_done += 1;
            if super::tcg::admit(self, ev) {
                on_event(self, ev);
            }
            super::tcg::serve(self);
            if self.nr_dead == self.tasks.len() {
                end = self.now;
                break;
            }
            if self.wl.done() {
                end = self.now;
                break;
            }
        }
        if end == 0 {
            end = self.now;
        }
        self.idle_tail(end);
        self.now = end;
        end
    }

    /// After the workload's last task, each of the scheduler's BPF timers
    /// fires once more, at @end, as they do in the VM before the scheduler is
    /// stopped: the overload gate's scan, finding nothing waiting, lowers the
    /// flag and closes its spell into overload_ns at the workload's end (in
    /// the VM a scan period later, which over seconds of workload is noise,
    /// and over the simulator's milliseconds would not be). Nothing else runs.
    fn idle_tail(&mut self, end: u64) {
        let mut fired = std::collections::BTreeSet::new();
        if self.exit.is_some() || end >= self.cfg.max_ns {
            return;
        }
        while let Some(Reverse((_, _, ev))) = self.events.pop() {
            if self.exit.is_some() {
                break;
            }
            if let Ev::Timer { id, .. } = ev {
                if fired.insert(id) {
                    self.now = end;
                    on_event(self, ev);
                }
            }
        }
    }
}

/// What event @ev does.
pub(super) fn on_event(e: &mut Engine, ev: Ev) {
    match ev {
        Ev::RunDone { cpu, gen } => {
            if e.cpus[cpu].gen != gen {
                return;
            }
            let Some(t) = e.cpus[cpu].curr else { return };
            settle_work(e, cpu);
            e.tasks[t].work_left = 0.0;
            e.tasks[t].in_step = false;
            if e.exit.is_some() {
                return;
            }
            next_step(e, cpu, t);
        }
        Ev::Tick { cpu } => {
            e.cpus[cpu].tick_pending = false;
            let Some(t) = e.cpus[cpu].curr else { return };
            update_curr(e, cpu);
            set_ctx(e, cpu, Ctx::Other);
            let p = e.tasks[t].p;
            e.call(|o| unsafe { (o.tick)(p) });
            e.cpus[cpu].tick_pending = true;
            e.push(super::kernel::next_tick(e), Ev::Tick { cpu });
            if unsafe { *ffi::sim_task_slice(p) } == 0 {
                e.cpus[cpu].gen += 1;
                schedule_preempt(e, cpu);
            }
            flush_kicks(e);
        }
        Ev::Resched { cpu } => match e.cpus[cpu].curr {
            None => schedule(e, cpu),
            Some(t) => {
                if unsafe { *ffi::sim_task_slice(e.tasks[t].p) } == 0 {
                    schedule_preempt(e, cpu);
                } else {
                    e.cpus[cpu].resched_pending = false;
                }
            }
        },
        Ev::TimerWake { t } => {
            let from = match e.wl.sleep_waker(t) {
                Some(c) if c < e.cpus.len() => c,
                _ => e.tasks[t].cpu,
            };
            wake(e, t, from, false);
        }
        Ev::TtwuPending { cpu, t, from: _ } => {
            let hold = e.cfg.costs.rq_lock_hold_ns;
            e.lock(LockId::Rq(cpu), cpu, hold);
            if e.cpus[cpu].curr.is_some() {
                // the IPI interrupts the running task
                e.cpus[cpu].overhead += e.cfg.costs.ipi_ns * 0.3;
            }
            super::kernel::activate(e, t, cpu, cpu, ffi::SCX_ENQ_WAKEUP);
            flush_kicks(e);
        }
        Ev::Timer { id, gen } => {
            let Some(&(map, cb, cpu, g, key)) = e.timers.get(&id) else {
                return;
            };
            if g != gen || cb == 0 {
                return;
            }
            let mut key = key;
            set_ctx(e, cpu, Ctx::Other);
            // SAFETY: cb is the address of the BPF timer callback the
            // scheduler passed to bpf_timer_set_callback, whose C type is
            // int (*)(void *map, int *key, void *timer).
            let f: extern "C" fn(*mut std::ffi::c_void, *mut u32, *mut std::ffi::c_void) -> i32 =
                unsafe { std::mem::transmute(cb) };
            e.lend(|| f(map as *mut _, &mut key, id as *mut _));
            flush_kicks(e);
        }
        Ev::Check => e.check(),
        Ev::TcgKick { .. } => {} // tcg.rs serves it
        Ev::Balance => {
            if let Some(mut b) = e.gb.take() {
                b.tick(&mut e.maps, e.now);
                let at = e.now + b.period_ns();
                e.gb = Some(b);
                e.push(at, Ev::Balance);
            }
        }
    }
}
