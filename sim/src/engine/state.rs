//! The engine's data model: tasks and what a workload makes them do, CPUs,
//! locks, events, callback contexts, the run's configuration, and cpumask
//! bit helpers.
use crate::cost::Costs;
use crate::ffi::{self, task_struct};
use serde_json::Value;
use std::collections::VecDeque;

/// What a task does next, as its workload says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// Compute for this many ns (reference core).
    Run(u64),
    /// Sleep until another task wakes it.
    Block,
    /// Sleep for this many ns.
    Sleep(u64),
    Exit,
}

#[derive(Debug, Clone)]
pub struct TaskSpec {
    pub name: String,
    /// 0: root; others are child cgroups.
    pub cgroup: usize,
    pub weight: u32,
    pub cpus: Option<Vec<usize>>,
    pub ws_bytes: u64,
    /// A switch to this task changes address space (processes).
    pub mm_switch: bool,
    /// Memory-bound: slowed by LLC over-subscription.
    pub memory_bound: bool,
    /// The task's working set is its cgroup's (threads of one process
    /// working on one buffer): an LLC holds it once however many of the
    /// group's tasks run there.
    pub ws_shared: bool,
    /// Lines written by every task of its cgroup (a shared lock, counters,
    /// buffer) that this task takes over from a group-mate, per ns of
    /// reference work; each costs the line transfer from where the mates run
    /// (0: none).
    pub shared_lines_per_ns: f64,
}

impl TaskSpec {
    pub fn simple(name: &str, ws: u64) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            cgroup: 0,
            weight: 100,
            cpus: None,
            ws_bytes: ws,
            mm_switch: false,
            memory_bound: false,
            ws_shared: false,
            shared_lines_per_ns: 0.0,
        }
    }
}

pub trait Wl {
    fn tasks(&self) -> Vec<TaskSpec>;
    /// Task @t is on a CPU: apply the effects of its previous step, push the
    /// tasks it wakes, and say what it does next.
    fn step(&mut self, t: usize, now: u64, wakes: &mut Vec<usize>) -> Step;
    fn done(&self) -> bool;
    fn metrics(&self, end: u64) -> Value;
    /// CPU the first task starts on (the others follow, one CPU each).
    fn first_cpu(&self) -> usize {
        0
    }
    /// Whether a task's wakeups are sync (WF_SYNC: the waker is about to
    /// block, as a pipe or a local socket write wakes its reader).
    fn wakes_sync(&self) -> bool {
        true
    }
    /// Whether task @i starts asleep, for another task to wake (a forked
    /// worker); the others are woken at the start.
    fn starts_asleep(&self, _i: usize) -> bool {
        false
    }
    /// Whether a wake of task @t the workload asks for is its fork (the
    /// parent's fork returned: the kernel's wake_up_new_task), not a wakeup.
    fn wake_is_fork(&self, _t: usize) -> bool {
        false
    }
    /// Task @i's first wake is a timer's, this many ns into the run (a task
    /// asleep when the run starts); None: starts_asleep decides.
    fn first_wake_ns(&self, _i: usize) -> Option<u64> {
        None
    }
    /// The CPU whose interrupt or work wakes task @t when its sleep ends;
    /// None: its own (a timer armed where it slept fires there).
    fn sleep_waker(&mut self, _t: usize) -> Option<usize> {
        None
    }
    /// Task @t just exited on @cpu at @now: push the tasks the workload wakes
    /// for it later, and when (a deferred free's thread, a reader of the
    /// counters after the workload).
    fn exited_on(&mut self, _t: usize, _cpu: usize, _now: u64, _later: &mut Vec<(usize, u64)>) {}
    /// Whether task @i is the machine's, not the workload's (a background
    /// kernel thread): the run may end with it asleep.
    fn machine_task(&self, _i: usize) -> bool {
        false
    }
    /// CPU task @i starts on; None: spread, one CPU after the other.
    fn start_cpu(&self, _i: usize) -> Option<usize> {
        None
    }
    /// cpu.weight of cgroup g (index as TaskSpec::cgroup); missing: 100.
    fn cgroup_weights(&self) -> Vec<u32> {
        Vec::new()
    }
    /// Parent of cgroup g (index as TaskSpec::cgroup; a parent comes before
    /// its children); missing: the root, 0.
    fn cgroup_parents(&self) -> Vec<usize> {
        Vec::new()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum TState {
    New,
    Sleeping,
    /// runnable, waiting: in a DSQ, a local DSQ, or the scheduler's custody
    Queued,
    Running,
    Dead,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Loc {
    None,
    Dsq(u64),
    Local(usize),
    /// ops.enqueue returned without inserting: the BPF side holds it
    Custody,
}

pub struct Task {
    pub p: *mut task_struct,
    pub spec: TaskSpec,
    pub(super) state: TState,
    pub(super) loc: Loc,
    /// task_cpu(): the CPU it runs or will run on
    pub cpu: usize,
    /// where it last ran (for migration costs)
    pub(super) last_ran: Option<usize>,
    pub allowed: Vec<bool>,
    pub(super) nr_allowed: usize,
    /// work left of the current Run step, ns at reference speed
    pub(super) work_left: f64,
    pub(super) in_step: bool,
    pub(super) runnable_since: u64,
    pub(super) woken_at: Option<u64>,
    /// a pending direct dispatch from select_cpu/enqueue
    pub(super) ddsp: Option<Insert>,
    pub runtime: u64,
    pub(super) exited_at: u64,
    pub(super) enq_key: (u64, u64),
}

impl Task {
    /// A new (not yet woken) task @p of @spec, placed on @cpu.
    pub(super) fn new(p: *mut task_struct, spec: TaskSpec, cpu: usize, allowed: Vec<bool>) -> Task {
        let nr_allowed = allowed.iter().filter(|&&a| a).count();
        Task {
            p,
            spec,
            state: TState::New,
            loc: Loc::None,
            cpu,
            last_ran: None,
            allowed,
            nr_allowed,
            work_left: 0.0,
            in_step: false,
            runnable_since: 0,
            woken_at: None,
            ddsp: None,
            runtime: 0,
            exited_at: 0,
            enq_key: (0, 0),
        }
    }
}

/// One scx_bpf_dsq_insert[_vtime]: the DSQ, slice, vtime and enqueue flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Insert {
    pub dsq: u64,
    /// 0 keeps the task's slice
    pub slice: u64,
    pub vtime: u64,
    pub flags: u64,
    /// from scx_bpf_dsq_insert_vtime: the DSQ orders by vtime
    pub vtime_ordered: bool,
}

#[derive(Default, Clone)]
pub struct Lock {
    pub(super) free_at: u64,
    pub(super) last_cpu: usize,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
}

pub(super) struct Cpu {
    pub(super) curr: Option<usize>,
    pub(super) local: VecDeque<usize>,
    pub(super) gen: u64,
    /// when the current task's run segment started (for work accounting)
    pub(super) seg_start: u64,
    pub(super) seg_rate: f64,
    /// last slice/runtime accounting of curr
    pub(super) last_update: u64,
    pub(super) tick_pending: bool,
    /// a Resched event is pending
    pub(super) resched_pending: bool,
    /// overhead (ns) to charge before whatever runs next
    pub(super) overhead: f64,
    /// the end of the balance walk (cost.rs balance_scan_ns) this CPU made
    /// before it went idle: a task it picks up earlier waits for the rest
    pub(super) balancing_until: u64,
    pub(super) idle_since: Option<u64>,
    pub(super) rq_lock: Lock,
    pub(super) busy_ns: u64,
    /// the task whose address space the CPU last loaded (a task with its own
    /// mm, TaskSpec::mm_switch); others run on the one loaded (kernel
    /// threads borrow it, a process's threads share theirs)
    pub(super) mm: Option<usize>,
}

impl Cpu {
    /// An idle CPU at time 0.
    pub(super) fn new() -> Cpu {
        Cpu {
            curr: None,
            local: VecDeque::new(),
            gen: 0,
            seg_start: 0,
            seg_rate: 1.0,
            last_update: 0,
            tick_pending: false,
            resched_pending: false,
            overhead: 0.0,
            balancing_until: 0,
            idle_since: Some(0),
            rq_lock: Lock::default(),
            busy_ns: 0,
            mm: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ev {
    RunDone {
        cpu: usize,
        gen: u64,
    },
    Tick {
        cpu: usize,
    },
    Resched {
        cpu: usize,
    },
    TimerWake {
        t: usize,
    },
    TtwuPending {
        cpu: usize,
        t: usize,
        from: usize,
    },
    Timer {
        id: usize,
        gen: u64,
    },
    Check,
    /// a period of the group balancer's userspace loop
    Balance,
    /// QEMU's round-robin kick of the vCPU holding the host thread (tcg.rs)
    TcgKick {
        turn: u64,
    },
}

#[derive(Clone, Copy, PartialEq)]
pub enum Ctx {
    None,
    Select { t: usize },
    Enqueue { t: usize },
    Dispatch { cpu: usize },
    Other,
}

pub struct Config {
    pub seed: u64,
    pub hz: u64,
    pub costs: Costs,
    pub max_ns: u64,
    /// --trace: what the trace records (None: no trace, no cost)
    pub trace: Option<crate::trace::TraceLimits>,
    pub watchdog_ns: u64,
    /// bound for "idle while an allowed task waits in its LLC" (ns)
    pub idle_bound_ns: u64,
    /// ops flags the loader adds to the ops table's (LoadPlan::ops_flags)
    pub ops_flags_or: u64,
    /// the group balancer's userspace half, with --gb-parent (group.rs)
    pub group_balancer: Option<scx_mosaic::tunables::GroupPlan>,
    /// --timeline-ms: the scheduler's counters sampled every this many ns,
    /// a multiple of the periodic check's millisecond (0: not sampled)
    pub timeline_ns: u64,
}

/// The C side's struct cpumask size for @n CPUs, in u64 words.
pub(super) fn words(n: usize) -> usize {
    (unsafe { ffi::sim_sizeof_cpumask() } / 8).max(n.div_ceil(64))
}

/// Sets bit @i of cpumask @m to @v.
pub(super) fn setbit(m: &mut [u64], i: usize, v: bool) {
    if v {
        m[i / 64] |= 1 << (i % 64);
    } else {
        m[i / 64] &= !(1 << (i % 64));
    }
}

/// Bit @i of cpumask @m.
pub fn bit(m: &[u64], i: usize) -> bool {
    m[i / 64] >> (i % 64) & 1 == 1
}
