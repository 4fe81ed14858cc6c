//! Workload models. A workload owns its tasks' behaviour: what each task does
//! when it is on a CPU (run for some time, block, sleep, exit) and whom it
//! wakes. The engine owns where and when tasks run.
//!
//! Costs are nanoseconds of CPU time on a reference core (speed 1.0).
use crate::engine::{Step, TaskSpec, Wl};
use anyhow::{bail, Result};
use serde_json::{json, Value};
use std::collections::VecDeque;

/// A byte pipe / socket between tasks, counted in messages.
#[derive(Clone)]
struct Chan {
    msgs: u64,
    cap: u64,
    /// writers blocked on a full channel wake once a read leaves at most
    /// this many messages in it (the kernel's write-space threshold)
    space_at: u64,
    reader_waiting: Option<usize>,
    writers_waiting: VecDeque<usize>,
}

impl Chan {
    fn new(cap: u64, space_at: u64) -> Chan {
        Chan {
            msgs: 0,
            cap,
            space_at,
            reader_waiting: None,
            writers_waiting: VecDeque::new(),
        }
    }
}

/// Parses "k=v,k=v" options with defaults.
struct Opts(Vec<(String, String)>);

impl Opts {
    fn parse(s: &str) -> Opts {
        Opts(
            s.split(',')
                .filter(|x| !x.is_empty())
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (kv.to_string(), "1".to_string()),
                })
                .collect(),
        )
    }
    fn get(&self, k: &str, d: u64) -> u64 {
        self.0
            .iter()
            .rev()
            .find(|(x, _)| x == k)
            .map_or(d, |(_, v)| v.parse().unwrap_or(d))
    }
    fn s(&self, k: &str, d: &str) -> String {
        self.0
            .iter()
            .rev()
            .find(|(x, _)| x == k)
            .map_or(d.to_string(), |(_, v)| v.clone())
    }
}

pub const WORKLOADS: &[(&str, &str)] = &[
    ("hackbench", "messaging groups: groups=10,fds=20,loops=100,size=100,mode=socket|pipe,threads=0|1,startup=0 (1: a main task forks the workers, starts them at a barrier and reaps them, as the programs do; a fork costs fork_ns=60000),write_space=1 (a socket wakes its blocked writers only once a read leaves a quarter of its buffer, as unix_write_space() does; 0: at every read, as a pipe does),write_ns=,read_ns= (a message's cost to its writer and to its reader, ns of hardware time; by default the model's cost per message split by the host's ratio, scripts/msg-cost)"),
    ("pipe", "pipe ping-pong between pairs: pairs=1,loops=50000,start=0 (first CPU); hackbench and pipe take bg_ms=0,bg_unbound_us=0,bg_percpu_us=0,bg_during=0 (bg_ms > 0: the machine's background runs that long before the workload: scx_mosaic's agent every 50 ms, an unbound kernel thread and one per CPU at those periods; bg_during=1: and on while the workload runs; bg_rcu_gp_us > 0: a worker's exit past its CPU's two cached stacks frees the stack through RCU, the CPU's softirq thread and kworker waking at the end of the next grace period of that length; bg_tail_us > 0: the run goes on that long after the workload, until a reader of the counters runs)"),
    ("rr", "request/response (netperf UDP_RR-like): clients=N(cpus),loops=2000,think=0,client_ns=server_ns=UDP_RR_SIDE_NS (cost.rs),sync=1 (0: wakeups without WF_SYNC, peers on other hosts),hogs=0,hog_us=3000,hog_every_us=20000 (hogs busy loops run hog_us every hog_every_us, all at once, until the clients finish)"),
    ("memgroups", "CPU+memory groups in cgroups (sysbench memory-like): groups=8,threads=16,work_ms=20,ws_kb=4096,sleep_us=0,interleave=0,shared=0 (1: a group's threads share one buffer and mutex, sysbench's default global scope)"),
    ("hogs", "busy loops in cgroups of set cpu.weight (test_weight-like): counts=8:4,weights=100:300,ms=4000,late_ms=0 (the last group starts then, all from CPU 0, as a shell forks them),nested=0 (1: the groups under one parent cgroup),probe_ms=0 (a root-cgroup task runs probe_us=100 every probe_ms: its waits),probes=1 (that many such tasks, staggered),pinned=0 (1: each group's loop i pinned to CPU i mod the CPUs, as taskset -c does),cpus=: (per group, the CPUs its loops may run on, as a cpuset: a-b, or empty for all)"),
    ("schbench", "wakeup latency (schbench-like): mthreads=2,workers=16,requests=2000,work_ns=20000,sleep_ns=30000"),
];

pub fn make(name: &str, opts: &str, nr_cpus: usize) -> Result<Box<dyn Wl>> {
    let o = Opts::parse(opts);
    let inner = make_inner(name, &o, nr_cpus)?;
    Ok(match (o.get("bg_ms", 0), o.get("bg_during", 0)) {
        (0, 0) => inner,
        // their metrics read the run's end as their own duration
        _ if !matches!(name, "hackbench" | "pipe") => {
            bail!("bg_ms, bg_during: only hackbench and pipe run with a background")
        }
        _ => Box::new(Background::new(inner, &o, nr_cpus)),
    })
}

/// The workload @name alone, without the machine's background.
fn make_inner(name: &str, o: &Opts, nr_cpus: usize) -> Result<Box<dyn Wl>> {
    Ok(match name {
        "hackbench" => Box::new(Hackbench::new(o)),
        "pipe" => Box::new(PingPong::new(o)),
        "rr" => Box::new(Rr::new(o, nr_cpus)),
        "memgroups" => Box::new(MemGroups::new(o)),
        "schbench" => Box::new(Schbench::new(o)),
        "hogs" => Box::new(Hogs::new(o, nr_cpus)?),
        _ => bail!("unknown workload {name:?} (--list-workloads)"),
    })
}

// ---------------------------------------------------------------- background

/// The period of scx_mosaic's own agent: its main loop waits for the stats
/// server (or sleeps) this long per round (scheduler/src/main.rs,
/// Scheduler::run's tick), on bare metal and in the VM alike.
pub const AGENT_PERIOD_NS: u64 = 50_000_000;
/// CPU time of one round of the agent (its stats-server poll and one per-CPU
/// counter read) and of one kernel thread's run: small fixed costs of the
/// order of a few syscalls (not measured).
const AGENT_RUN_NS: u64 = 20_000;
const KTHREAD_RUN_NS: u64 = 10_000;

/// A workload run as a scheduler's counters see it on a live system
/// (bg_ms=T > 0): the scheduler is loaded for T before the workload starts,
/// and what the machine runs meanwhile passes through it too. scx_mosaic's
/// own agent wakes every AGENT_PERIOD_NS; kernel threads not bound to a CPU
/// (RCU's grace-period thread, unbound kworkers: one task here, woken by
/// work each CPU in turn queues) every bg_unbound_us, and one thread bound
/// to each CPU (kworker/N, which waits on that CPU's own queue) every
/// bg_percpu_us; each runs a moment and sleeps again. The workload's tasks
/// start at T. With bg_during=1 the background goes on while the workload
/// runs (T may be 0), as the guest's does: the fidelity report compares the
/// VM's counters over the workload's window, which hold it, and fits the
/// periods on them (fidelity.rs); else it stops at T. With bg_rcu_gp_us a
/// worker's exit frees its stack as the kernel does, through RCU, a softirq
/// thread and a kworker of its CPU (Background::exited_on); with bg_tail_us
/// the run goes on after the workload until a reader of the counters runs,
/// as the VM's window closes. The workload's own time is the run's less T,
/// up to its last exit (workload_time_s).
pub struct Background {
    inner: Box<dyn Wl>,
    /// the workload's tasks come first, then the agent, the unbound
    /// thread and the per-CPU ones
    n: usize,
    nr_cpus: usize,
    /// when the workload starts
    start_ns: u64,
    /// whether the background goes on while the workload runs
    during: bool,
    /// the workload's tasks that have exited
    exited: usize,
    unbound_ns: u64,
    percpu_ns: u64,
    /// per background task: whether its last step was its run
    ran: Vec<bool>,
    /// the CPU whose work woke the unbound thread last
    queued_from: usize,
    /// RCU's grace period, ns (bg_rcu_gp_us; 0: exits free nothing later)
    rcu_gp_ns: u64,
    /// per CPU, the freed stacks its cache holds (at most STACK_CACHE)
    stack_cache: Vec<u8>,
    /// per CPU, the grace periods' ends its free worker is woken at
    free_due: Vec<Vec<u64>>,
    /// per CPU, whether its free worker's last step was its run
    free_ran: Vec<bool>,
    /// grace periods' ends that freed stacks, over the CPUs
    deferred_frees: u64,
    /// how long after the workload's end its counters are read (bg_tail_us;
    /// 0: at once): the run goes on that long, the background with it
    tail_ns: u64,
    /// when the workload's last task exited, and whether the reader ran
    workload_end: u64,
    reading: bool,
    read: bool,
}

/// Stacks a CPU keeps for its next forks instead of freeing them
/// (NR_CACHED_STACKS, kernel/fork.c).
const STACK_CACHE: u8 = 2;

impl Background {
    fn new(inner: Box<dyn Wl>, o: &Opts, nr_cpus: usize) -> Background {
        let n = inner.tasks().len();
        Background {
            inner,
            n,
            nr_cpus,
            start_ns: o.get("bg_ms", 0) * 1_000_000,
            during: o.get("bg_during", 0) != 0,
            exited: 0,
            unbound_ns: o.get("bg_unbound_us", 0) * 1000,
            percpu_ns: o.get("bg_percpu_us", 0) * 1000,
            ran: vec![false; 2 + nr_cpus],
            queued_from: 0,
            rcu_gp_ns: o.get("bg_rcu_gp_us", 0) * 1000,
            stack_cache: vec![0; nr_cpus],
            free_due: vec![Vec::new(); nr_cpus],
            free_ran: vec![false; nr_cpus],
            deferred_frees: 0,
            tail_ns: o.get("bg_tail_us", 0) * 1000,
            workload_end: 0,
            reading: false,
            read: false,
        }
    }

    /// Background task @b's period (0: it never wakes).
    fn period(&self, b: usize) -> u64 {
        match b {
            0 => AGENT_PERIOD_NS,
            1 => self.unbound_ns,
            _ if b >= 2 + self.nr_cpus => 0,
            _ => self.percpu_ns,
        }
    }

    /// Background task @b as a thread of deferred frees: (whether it is the
    /// kworker, else the softirq thread; its CPU). None: another task.
    fn free_thread(&self, b: usize) -> Option<(bool, usize)> {
        let i = b.checked_sub(2 + self.nr_cpus)?;
        (self.rcu_gp_ns > 0 && i < 2 * self.nr_cpus).then(|| (i >= self.nr_cpus, i % self.nr_cpus))
    }

    /// The task index of @cpu's softirq thread (its kworker's is nr_cpus on).
    fn softirq_thread(&self, cpu: usize) -> usize {
        self.n + 2 + self.nr_cpus + cpu
    }

    /// The task that reads the counters after the workload (last of all).
    fn client(&self) -> usize {
        let frees = if self.rcu_gp_ns > 0 {
            2 * self.nr_cpus
        } else {
            0
        };
        self.n + 2 + self.nr_cpus + frees
    }
}

impl Wl for Background {
    fn tasks(&self) -> Vec<TaskSpec> {
        let mut v = self.inner.tasks();
        v.push(TaskSpec::simple("scx_mosaic", 64 << 10));
        v.push(TaskSpec::simple("kthread-unbound", 16 << 10));
        for c in 0..self.nr_cpus {
            let mut k = TaskSpec::simple(&format!("kworker/{c}"), 16 << 10);
            k.cpus = Some(vec![c]);
            v.push(k);
        }
        let tail = (self.tail_ns > 0).then(|| TaskSpec::simple("stats-client", 64 << 10));
        if self.rcu_gp_ns > 0 {
            for name in ["ksoftirqd", "kworker-free"] {
                for c in 0..self.nr_cpus {
                    let mut k = TaskSpec::simple(&format!("{name}/{c}"), 16 << 10);
                    k.cpus = Some(vec![c]);
                    v.push(k);
                }
            }
        }
        v.extend(tail);
        v
    }
    fn step(&mut self, t: usize, now: u64, wakes: &mut Vec<usize>) -> Step {
        if t < self.n {
            let step = self.inner.step(t, now, wakes);
            if matches!(step, Step::Exit) {
                self.exited += 1;
            }
            return step;
        }
        let b = t - self.n;
        if t == self.client() {
            // its read, then it is gone
            if self.reading {
                self.read = true;
                return Step::Exit;
            }
            self.reading = true;
            return Step::Run(AGENT_RUN_NS);
        }
        if let Some((kworker, c)) = self.free_thread(b) {
            if kworker {
                // the CPU's worker: the vfree, then sleep
                self.free_ran[c] = !self.free_ran[c];
                return if self.free_ran[c] {
                    Step::Run(KTHREAD_RUN_NS)
                } else {
                    Step::Block
                };
            }
            // the CPU's softirq thread at a grace period's end: run the
            // callbacks, which hand the stacks' vfree to the worker
            let due = self.free_due[c].len();
            self.free_due[c].retain(|&at| at > now);
            if self.free_due[c].len() == due {
                return Step::Block;
            }
            self.deferred_frees += 1;
            wakes.push(t + self.nr_cpus);
            return Step::Run(KTHREAD_RUN_NS);
        }
        self.ran[b] = !self.ran[b];
        if !self.ran[b] {
            // it ran: sleep, unless its next wake falls in the workload's
            // time and it does not go on there
            let p = self.period(b);
            return if now + p < self.start_ns || (self.during && !self.done()) {
                Step::Sleep(p)
            } else {
                Step::Exit
            };
        }
        Step::Run(if b == 0 { AGENT_RUN_NS } else { KTHREAD_RUN_NS })
    }
    /// The workload is done (its own test, or all its tasks gone): the
    /// background's tasks, asleep or not, do not hold the run open.
    fn done(&self) -> bool {
        (self.inner.done() || self.exited == self.n) && (self.tail_ns == 0 || self.read)
    }
    fn metrics(&self, end: u64) -> Value {
        let mut m = self.inner.metrics(end.saturating_sub(self.start_ns));
        if let Some(o) = m.as_object_mut() {
            let end = if self.workload_end > 0 {
                self.workload_end
            } else {
                end
            };
            o.insert(
                "workload_time_s".into(),
                json!(end.saturating_sub(self.start_ns) as f64 / 1e9),
            );
            o.insert("deferred_frees".into(), json!(self.deferred_frees));
        }
        m
    }
    fn first_cpu(&self) -> usize {
        self.inner.first_cpu()
    }
    fn wakes_sync(&self) -> bool {
        self.inner.wakes_sync()
    }
    fn wake_is_fork(&self, t: usize) -> bool {
        t < self.n && self.inner.wake_is_fork(t)
    }
    fn starts_asleep(&self, t: usize) -> bool {
        t >= self.n || self.inner.starts_asleep(t)
    }
    fn first_wake_ns(&self, t: usize) -> Option<u64> {
        if t < self.n {
            // the workload's tasks that would start at once start at T
            return match self.inner.first_wake_ns(t) {
                Some(at) => Some(self.start_ns + at),
                None if self.inner.starts_asleep(t) => None,
                None => Some(self.start_ns),
            };
        }
        // each background task first wakes at a point of its period, spread
        // over them, if that is before the workload or it goes on there
        let b = t - self.n;
        let p = self.period(b);
        let at = p * (b as u64 + 1) / (self.nr_cpus as u64 + 3);
        (p > 0 && (at < self.start_ns || self.during)).then_some(at)
    }
    fn sleep_waker(&mut self, t: usize) -> Option<usize> {
        if t < self.n {
            return self.inner.sleep_waker(t);
        }
        if t != self.n + 1 {
            return None;
        }
        // the unbound thread's work is queued by whichever CPU needs it done
        // (a callback, a deferred free): each CPU in turn
        self.queued_from = (self.queued_from + 1) % self.nr_cpus;
        Some(self.queued_from)
    }
    /// A worker's exit on @cpu frees its stack (free_thread_stack(),
    /// kernel/fork.c): into the CPU's cache while it has room, else through
    /// call_rcu(), whose callback runs on @cpu once a whole grace period has
    /// passed after it and hands the vfree to the CPU's worker
    /// (vfree_atomic(), mm/vmalloc.c). Grace periods run back to back,
    /// bg_rcu_gp_us each, so a callback waits for the rest of the current
    /// one and the next, and the CPUs' callbacks of one period run together.
    fn exited_on(&mut self, t: usize, cpu: usize, now: u64, later: &mut Vec<(usize, u64)>) {
        if t >= self.n || cpu >= self.nr_cpus {
            return;
        }
        if self.exited == self.n && self.tail_ns > 0 {
            self.workload_end = now;
            later.push((self.client(), now + self.tail_ns));
        }
        let gp = self.rcu_gp_ns;
        if gp == 0 {
            return;
        }
        if self.stack_cache[cpu] < STACK_CACHE {
            self.stack_cache[cpu] += 1;
            return;
        }
        let at = (now / gp + 2) * gp;
        if !self.free_due[cpu].contains(&at) {
            self.free_due[cpu].push(at);
            later.push((self.softirq_thread(cpu), at));
        }
    }
    fn machine_task(&self, t: usize) -> bool {
        t >= self.n
    }
    fn start_cpu(&self, t: usize) -> Option<usize> {
        if t < self.n {
            return self.inner.start_cpu(t);
        }
        let b = t - self.n;
        Some(if t == self.client() {
            0
        } else if let Some((_, c)) = self.free_thread(b) {
            c
        } else if b >= 2 {
            b - 2
        } else {
            (b + 1) % self.nr_cpus
        })
    }
    fn cgroup_weights(&self) -> Vec<u32> {
        self.inner.cgroup_weights()
    }
    fn cgroup_parents(&self) -> Vec<usize> {
        self.inner.cgroup_parents()
    }
}

// ---------------------------------------------------------------- hackbench

/// hackbench: G groups of F senders and F receivers; each sender writes
/// `loops` rounds of one message to each of its group's receivers; each
/// receiver reads F × loops messages. Pipe or socket (capacity in messages),
/// threads or processes (a process switch costs a little more: mm switch).
pub struct Hackbench {
    fds: usize,
    loops: u64,
    chans: Vec<Chan>, // group * fds + receiver
    /// per task: sender (round, next fd) or receiver (left to read)
    role: Vec<Role>,
    write_ns: u64,
    read_ns: u64,
    pending: Vec<Vec<Effect>>,
    ws: u64,
    threads: bool,
    groups: usize,
    /// startup=1: the program's own life around its messages (Life)
    life: Option<Life>,
    /// times a receiver blocked on an empty channel, a sender on a full one
    blocks: [u64; 2],
}

/// The life of the hackbench (or perf bench messaging) program around the
/// messages, as both programs run it: a main task forks the workers one by
/// one; each writes "ready" to a pipe and polls a start pipe; once every
/// worker is ready the main task writes the start byte, waking them all, and
/// then reaps each worker as it exits. Costs are the hardware's (the VM's
/// model stretches them by tcg_slowdown): a fork of a small process 60 us and
/// its exit 30 us (lmbench's fork+exit class, ~90 us on recent x86), a pipe
/// write 2 us, a reap 5 us.
struct Life {
    /// the main task's index (after the workers)
    main: usize,
    phase: Vec<Phase>,
    /// workers forked, ready, exited, reaped
    forked: usize,
    ready: usize,
    exited: usize,
    reaped: usize,
    /// the worker whose fork the main task's last step made
    forking: Option<usize>,
    main_waiting: bool,
    started: bool,
    at_barrier: Vec<usize>,
    /// a fork's cost, ns (fork_ns; default FORK_NS): the host-thread model
    /// fits it per program on the VM's start-up time (fidelity.rs)
    fork_ns: u64,
    /// a worker's exit, ns of hardware time (exit_ns; default EXIT_NS)
    exit_ns: u64,
    /// when the main task first ran, and when it opened the start barrier
    first_at: Option<u64>,
    opened_at: u64,
}

/// Where a worker (or the main task) is in the program's life.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    New,
    Readying,
    AtBarrier,
    Working,
    Exiting,
    /// the main task: forking, waiting for the workers, reaping
    Main,
}

pub const FORK_NS: u64 = 60_000;
const EXIT_NS: u64 = 30_000;
const PIPE_WRITE_NS: u64 = 2_000;
const REAP_NS: u64 = 5_000;

#[derive(Clone)]
enum Role {
    Sender { group: usize, round: u64, fd: usize },
    Receiver { chan: usize, left: u64 },
}

#[derive(Clone, Copy)]
enum Effect {
    Put(usize, u64),
    Take(usize, u64),
}

/// Messages a sender or receiver handles in one step at most.
const BATCH: u64 = 24;

/// A 100-byte message's write over its read, on one CPU, socket and pipe
/// (scripts/msg-cost on the 2-core build host, natively: 335 / 370 ns and
/// 131 / 138 ns, medians of 3 runs).
const WRITE_PER_READ_SOCKET: f64 = 0.91;
const WRITE_PER_READ_PIPE: f64 = 0.95;

impl Hackbench {
    fn new(o: &Opts) -> Hackbench {
        let groups = o.get("groups", 10) as usize;
        let fds = o.get("fds", 20) as usize;
        let loops = o.get("loops", 100);
        let size = o.get("size", 100);
        let pipe = o.s("mode", "socket") == "pipe";
        // pipe: 16 pages, small writes merge (64 KiB); unix socket: ~212 KiB
        // of sk_wmem at ~ 768 B truesize per small skb
        let cap = if pipe {
            (65536 / size.max(1)).max(1)
        } else {
            280
        };
        // When a read wakes the writers blocked on a full channel: pipe_read()
        // wakes them after any read that found the pipe full, which the
        // first read after a writer blocked is. A unix socket's reader frees
        // skbs, and unix_write_space() wakes them only once the socket is
        // writable again, its queued bytes at most a quarter of sk_sndbuf
        // (unix_writable(): wmem_alloc << 2 <= sndbuf). write_space=0 wakes
        // them at every read, as a pipe does.
        let space_at = if pipe || o.get("write_space", 1) == 0 {
            cap
        } else {
            cap / 4
        };
        // A message's cost to its writer and its reader together; how it
        // splits between them is measured (scripts/msg-cost).
        let per_byte = size / 64;
        let fixed_ns = if pipe { 900 } else { 1620 };
        let message_ns = fixed_ns + 2 * per_byte * 20;
        let write_per_read = if pipe {
            WRITE_PER_READ_PIPE
        } else {
            WRITE_PER_READ_SOCKET
        };
        let write_ns = (message_ns as f64 * write_per_read / (1.0 + write_per_read)).round() as u64;
        let mut role = Vec::new();
        for g in 0..groups {
            for r in 0..fds {
                role.push(Role::Receiver {
                    chan: g * fds + r,
                    left: loops * fds as u64,
                });
            }
            for _ in 0..fds {
                role.push(Role::Sender {
                    group: g,
                    round: 0,
                    fd: 0,
                });
            }
        }
        let n = role.len();
        Hackbench {
            fds,
            loops,
            chans: vec![Chan::new(cap, space_at); groups * fds],
            role,
            write_ns: o.get("write_ns", write_ns),
            read_ns: o.get("read_ns", message_ns - write_ns),
            pending: vec![Vec::new(); n],
            ws: 16 << 10,
            threads: o.get("threads", 0) != 0,
            groups,
            life: (o.get("startup", 0) != 0).then(|| Life {
                main: n,
                phase: (0..=n)
                    .map(|i| if i == n { Phase::Main } else { Phase::New })
                    .collect(),
                forked: 0,
                ready: 0,
                exited: 0,
                reaped: 0,
                forking: None,
                main_waiting: false,
                started: false,
                at_barrier: Vec::new(),
                fork_ns: o.get("fork_ns", FORK_NS),
                exit_ns: o.get("exit_ns", EXIT_NS),
                first_at: None,
                opened_at: 0,
            }),
            blocks: [0; 2],
        }
    }

    /// The main task's next step (startup=1): fork each worker, wait until
    /// all are ready, open the start barrier, reap the workers.
    fn main_step(&mut self, now: u64, wakes: &mut Vec<usize>) -> Step {
        let n = self.role.len();
        let l = self.life.as_mut().unwrap();
        l.first_at.get_or_insert(now);
        if let Some(c) = l.forking.take() {
            wakes.push(c);
        }
        if l.forked < n {
            l.forking = Some(l.forked);
            l.forked += 1;
            return Step::Run(l.fork_ns);
        }
        if !l.started {
            if l.ready < n {
                l.main_waiting = true;
                return Step::Block;
            }
            l.started = true;
            l.opened_at = now;
            // the start byte: the workers at the barrier wake as the write
            // begins, the write's own cost follows
            wakes.append(&mut l.at_barrier);
            return Step::Run(PIPE_WRITE_NS);
        }
        if l.reaped < l.exited {
            let k = (l.exited - l.reaped) as u64;
            l.reaped = l.exited;
            return Step::Run(k * REAP_NS);
        }
        if l.reaped == n {
            return Step::Exit;
        }
        l.main_waiting = true;
        Step::Block
    }

    /// A worker's step outside its messages (startup=1): report ready and
    /// wait at the start barrier first, exit last; None while it works.
    fn life_step(&mut self, t: usize, wakes: &mut Vec<usize>) -> Option<Step> {
        let n = self.role.len();
        let l = self.life.as_mut()?;
        match l.phase[t] {
            Phase::New => {
                l.phase[t] = Phase::Readying;
                Some(Step::Run(PIPE_WRITE_NS))
            }
            Phase::Readying => {
                l.ready += 1;
                if l.ready == n && l.main_waiting {
                    l.main_waiting = false;
                    wakes.push(l.main);
                }
                if l.started {
                    l.phase[t] = Phase::Working;
                    return None;
                }
                l.phase[t] = Phase::AtBarrier;
                l.at_barrier.push(t);
                Some(Step::Block)
            }
            Phase::AtBarrier => {
                l.phase[t] = Phase::Working;
                None
            }
            Phase::Working | Phase::Main => None,
            Phase::Exiting => {
                l.exited += 1;
                if l.main_waiting {
                    l.main_waiting = false;
                    wakes.push(l.main);
                }
                Some(Step::Exit)
            }
        }
    }
}

impl Wl for Hackbench {
    fn tasks(&self) -> Vec<TaskSpec> {
        let main = self.life.as_ref().map(|_| "hb-main");
        self.role
            .iter()
            .map(|r| match r {
                Role::Sender { .. } => "hb-sender",
                Role::Receiver { .. } => "hb-receiver",
            })
            .chain(main)
            .map(|name| TaskSpec {
                name: name.into(),
                cgroup: 0,
                weight: 100,
                cpus: None,
                ws_bytes: self.ws,
                mm_switch: !self.threads,
                memory_bound: false,
                ws_shared: false,
                shared_lines_per_ns: 0.0,
            })
            .collect()
    }

    fn starts_asleep(&self, t: usize) -> bool {
        self.life.as_ref().is_some_and(|l| t != l.main)
    }

    fn start_cpu(&self, _t: usize) -> Option<usize> {
        // forked workers start where the main task runs
        self.life.as_ref().map(|_| 0)
    }

    fn wake_is_fork(&self, t: usize) -> bool {
        // a worker's first wake is the main task's fork of it
        self.life.as_ref().is_some_and(|l| l.phase[t] == Phase::New)
    }

    fn step(&mut self, t: usize, now: u64, wakes: &mut Vec<usize>) -> Step {
        if self.life.as_ref().is_some_and(|l| t == l.main) {
            return self.main_step(now, wakes);
        }
        self.apply_effects(t, wakes);
        if let Some(step) = self.life_step(t, wakes) {
            return step;
        }
        let step = self.message_step(t);
        if step != Step::Exit {
            return step;
        }
        match self.life.as_mut() {
            Some(l) => {
                l.phase[t] = Phase::Exiting;
                Step::Run(l.exit_ns)
            }
            None => Step::Exit,
        }
    }

    fn done(&self) -> bool {
        false
    }

    fn metrics(&self, _end: u64) -> Value {
        // the start-up: from the main task's first run to the start barrier
        // (the programs' own timers start there)
        let startup_s = self.life.as_ref().map_or(0.0, |l| {
            l.opened_at
                .saturating_sub(l.first_at.unwrap_or(l.opened_at)) as f64
                / 1e9
        });
        json!({"groups": self.groups, "fds": self.fds, "loops": self.loops,
               "startup": self.life.is_some(), "startup_s": startup_s,
               "receiver_blocks": self.blocks[0], "sender_blocks": self.blocks[1],
               "exits_s": self.life.as_ref().map_or(0.0, |l| (l.exited as u64 * l.exit_ns) as f64 / 1e9),
               "messages": self.groups as u64 * (self.fds * self.fds) as u64 * self.loops})
    }
}

impl Hackbench {
    /// Applies what @t's previous step did to the pipes: messages put and
    /// taken, and the tasks that wakes.
    fn apply_effects(&mut self, t: usize, wakes: &mut Vec<usize>) {
        for e in std::mem::take(&mut self.pending[t]) {
            match e {
                Effect::Put(c, k) => {
                    let ch = &mut self.chans[c];
                    ch.msgs += k;
                    if let Some(r) = ch.reader_waiting.take() {
                        wakes.push(r);
                    }
                }
                Effect::Take(c, k) => {
                    let ch = &mut self.chans[c];
                    ch.msgs -= k;
                    if ch.msgs > ch.space_at {
                        continue;
                    }
                    while let Some(w) = ch.writers_waiting.pop_front() {
                        wakes.push(w);
                    }
                }
            }
        }
    }

    /// @t's next step of messages: a batch read or written, a block on an
    /// empty or full pipe, or the exit once its messages are done.
    fn message_step(&mut self, t: usize) -> Step {
        match self.role[t].clone() {
            Role::Receiver { chan, left } => {
                if left == 0 {
                    return Step::Exit;
                }
                let ch = &mut self.chans[chan];
                if ch.msgs == 0 {
                    ch.reader_waiting = Some(t);
                    self.blocks[0] += 1;
                    return Step::Block;
                }
                let mut k = ch.msgs.min(left).min(BATCH);
                if !ch.writers_waiting.is_empty() && ch.msgs > ch.space_at {
                    // the read that brings the channel down to its
                    // write-space threshold wakes the writers: the batch
                    // ends there (Effect::Take wakes them at its end)
                    k = k.min(ch.msgs - ch.space_at);
                }
                // reserve now so that a concurrent reader-side count is right
                self.pending[t].push(Effect::Take(chan, 0));
                ch.msgs -= k;
                self.role[t] = Role::Receiver {
                    chan,
                    left: left - k,
                };
                Step::Run(k * self.read_ns)
            }
            Role::Sender { group, round, fd } => {
                if round >= self.loops {
                    return Step::Exit;
                }
                // write to fd, fd+1, ... until a write wakes a reader, a
                // pipe is full, the round ends or the batch is done
                let (mut r, mut f, mut n) = (round, fd, 0u64);
                while n < BATCH && r < self.loops {
                    let c = group * self.fds + f;
                    let ch = &mut self.chans[c];
                    if ch.msgs >= ch.cap {
                        if n == 0 {
                            ch.writers_waiting.push_back(t);
                            self.blocks[1] += 1;
                            return Step::Block;
                        }
                        break;
                    }
                    // in flight until the end of the step
                    ch.msgs += 1;
                    self.pending[t].push(Effect::Put(c, 0));
                    let wakes_reader = ch.reader_waiting.is_some();
                    n += 1;
                    f += 1;
                    if f == self.fds {
                        f = 0;
                        r += 1;
                    }
                    if wakes_reader {
                        break;
                    }
                }
                self.role[t] = Role::Sender {
                    group,
                    round: r,
                    fd: f,
                };
                Step::Run(n * self.write_ns)
            }
        }
    }
}

// ---------------------------------------------------------------- pipe ping-pong

/// perf bench sched pipe: pairs of tasks bouncing one token through two pipes.
pub struct PingPong {
    loops: u64,
    left: Vec<u64>,
    has_token: Vec<bool>,
    waiting: Vec<bool>,
    sending: Vec<bool>,
    cost: u64,
    start: usize,
}

impl PingPong {
    fn new(o: &Opts) -> PingPong {
        let pairs = o.get("pairs", 1) as usize;
        let loops = o.get("loops", 50000);
        let mut has_token = vec![false; pairs * 2];
        for p in 0..pairs {
            has_token[2 * p] = true;
        }
        PingPong {
            loops,
            left: vec![loops; pairs * 2],
            has_token,
            waiting: vec![false; pairs * 2],
            sending: vec![false; pairs * 2],
            cost: 1200,
            start: o.get("start", 0) as usize,
        }
    }
}

impl Wl for PingPong {
    fn tasks(&self) -> Vec<TaskSpec> {
        (0..self.left.len())
            .map(|_| TaskSpec::simple("pipe", 8 << 10))
            .collect()
    }
    fn step(&mut self, t: usize, _now: u64, wakes: &mut Vec<usize>) -> Step {
        let peer = t ^ 1;
        // the write of the previous step lands now: the peer gets the token
        if self.sending[t] {
            self.sending[t] = false;
            self.has_token[peer] = true;
            if self.waiting[peer] {
                self.waiting[peer] = false;
                wakes.push(peer);
            }
        }
        if self.left[t] == 0 {
            return Step::Exit;
        }
        if !self.has_token[t] {
            self.waiting[t] = true;
            return Step::Block;
        }
        // read the token, then write it to the peer (lands at the step's end)
        self.has_token[t] = false;
        self.left[t] -= 1;
        self.sending[t] = true;
        Step::Run(self.cost)
    }
    fn done(&self) -> bool {
        false
    }
    fn metrics(&self, end: u64) -> Value {
        let ops = self.loops as f64 * self.left.len() as f64 / 2.0;
        json!({"loops": self.loops, "ops_per_sec": ops / (end as f64 / 1e9)})
    }
    fn first_cpu(&self) -> usize {
        self.start
    }
}

// ---------------------------------------------------------------- request/response

/// netperf RR-like: N client/server pairs; a client sends a request and
/// waits in recv for the response, the server receives it and replies. A
/// message lands (wakes its reader) at the end of the sender's step, after
/// its network-stack work, and each side's step is its recvmsg of the
/// message that woke it plus its sendmsg of the next (cost.rs: UDP_RR_SIDE_NS).
/// Throughput counts, like netperf -l, only the window in which every pair
/// runs: transactions completed before the first client finishes, divided
/// by that time (`tps`); `tps_to_end` divides all by the run's end.
/// Loopback wakes the reader with WF_SYNC (sock_def_readable); sync=0 models
/// peers on other hosts, whose messages arrive from the network.
/// hogs=N adds N busy loops that wake together every hog_every_us and run
/// hog_us: load bursts over the steady request/response load, during which
/// tasks wait for a CPU (seed 003's overload flag rises, then clears).
pub struct Rr {
    think: u64,
    hogs: usize,
    hog_ns: u64,
    hog_every_ns: u64,
    /// hog h's last step was a sleep (its next one is a burst)
    hog_asleep: Vec<bool>,
    sync: bool,
    server_ns: u64,
    client_ns: u64,
    left: Vec<u64>,
    /// a request / response is waiting to be read
    req: Vec<bool>,
    resp: Vec<bool>,
    /// task t's current step sends (its message lands when the step ends)
    sending: Vec<bool>,
    waiting: Vec<bool>,
    sent_at: Vec<u64>,
    lat: Vec<u64>,
    /// when each transaction completed
    done_at: Vec<u64>,
    /// when each client completed its last transaction
    finished_at: Vec<Option<u64>>,
    in_req: Vec<bool>,
    stop: Vec<bool>,
}

impl Rr {
    fn new(o: &Opts, nr_cpus: usize) -> Rr {
        let n = o.get("clients", nr_cpus as u64) as usize;
        let loops = o.get("loops", 2000);
        let hogs = o.get("hogs", 0) as usize;
        let hog_ns = o.get("hog_us", 3000) * 1000;
        Rr {
            think: o.get("think", 0),
            hogs,
            hog_ns,
            hog_every_ns: (o.get("hog_every_us", 20000) * 1000).max(hog_ns + 1),
            hog_asleep: vec![false; hogs],
            sync: o.get("sync", 1) != 0,
            server_ns: o.get("server_ns", crate::cost::UDP_RR_SIDE_NS),
            client_ns: o.get("client_ns", crate::cost::UDP_RR_SIDE_NS),
            left: vec![loops; n],
            req: vec![false; n],
            resp: vec![false; n],
            sending: vec![false; 2 * n],
            waiting: vec![false; 2 * n],
            sent_at: vec![0; n],
            lat: Vec::new(),
            done_at: Vec::new(),
            finished_at: vec![None; n],
            in_req: vec![false; n],
            stop: vec![false; n],
        }
    }
}

impl Rr {
    /// Hog @h's next step: sleep until the next burst, run the burst, and
    /// exit once every client has finished.
    fn hog_step(&mut self, h: usize) -> Step {
        if self.finished_at.iter().all(Option::is_some) {
            return Step::Exit;
        }
        self.hog_asleep[h] = !self.hog_asleep[h];
        if self.hog_asleep[h] {
            Step::Sleep(self.hog_every_ns - self.hog_ns)
        } else {
            Step::Run(self.hog_ns)
        }
    }
}

impl Wl for Rr {
    fn tasks(&self) -> Vec<TaskSpec> {
        let n = self.left.len();
        (0..2 * n + self.hogs)
            .map(|i| {
                let name = match i {
                    i if i < n => "rr-client",
                    i if i < 2 * n => "rr-server",
                    _ => "rr-hog",
                };
                TaskSpec::simple(name, 32 << 10)
            })
            .collect()
    }
    fn step(&mut self, t: usize, now: u64, wakes: &mut Vec<usize>) -> Step {
        let n = self.left.len();
        if t >= 2 * n {
            return self.hog_step(t - 2 * n);
        }
        // the message sent in the previous step lands now
        if std::mem::take(&mut self.sending[t]) {
            let (c, peer) = if t < n { (t, n + t) } else { (t - n, t - n) };
            if t < n {
                self.req[c] = true;
            } else {
                self.resp[c] = true;
            }
            if std::mem::take(&mut self.waiting[peer]) {
                wakes.push(peer);
            }
        }
        if t < n {
            // client
            if self.in_req[t] {
                if !self.resp[t] {
                    self.waiting[t] = true;
                    return Step::Block;
                }
                self.resp[t] = false;
                self.in_req[t] = false;
                self.lat.push(now - self.sent_at[t]);
                self.done_at.push(now);
                self.left[t] -= 1;
                if self.left[t] == 0 {
                    self.finished_at[t] = Some(now);
                }
                if self.think > 0 {
                    return Step::Sleep(self.think);
                }
            }
            if self.left[t] == 0 {
                // tell the server to stop
                self.stop[t] = true;
                if std::mem::take(&mut self.waiting[n + t]) {
                    wakes.push(n + t);
                }
                return Step::Exit;
            }
            // receive the response (if any), send the next request
            self.in_req[t] = true;
            self.sent_at[t] = now;
            self.sending[t] = true;
            Step::Run(self.client_ns)
        } else {
            let c = t - n;
            if self.req[c] {
                // receive the request, send the response
                self.req[c] = false;
                self.sending[t] = true;
                return Step::Run(self.server_ns);
            }
            if self.stop[c] {
                return Step::Exit;
            }
            self.waiting[t] = true;
            Step::Block
        }
    }
    fn done(&self) -> bool {
        false
    }
    fn metrics(&self, end: u64) -> Value {
        let tx = self.lat.len() as f64;
        let window = self
            .finished_at
            .iter()
            .flatten()
            .min()
            .copied()
            .unwrap_or(end);
        let in_window = self.done_at.iter().filter(|&&d| d <= window).count();
        json!({"transactions": self.lat.len(),
               "tps": in_window as f64 / (window.max(1) as f64 / 1e9),
               "tps_to_end": tx / (end as f64 / 1e9),
               "window_s": window as f64 / 1e9,
               "latency_ns": crate::engine::percentiles(&self.lat)})
    }
    fn wakes_sync(&self) -> bool {
        self.sync
    }
}

// ---------------------------------------------------------------- memory groups

/// sysbench memory, one event (sb_memory.c, defaults: --memory-block-size=1K,
/// --memory-scope=global, --memory-oper=write, seq): memory_next_event takes
/// the process-wide mutex to add to total_ops/total_bytes, then
/// memory_execute_event writes the one 1 KiB buffer all threads share.
/// CPU time of an event with every line already in the core's cache: 256
/// 4-byte stores at about one a cycle (~100 ns at 2.5 GHz) plus an
/// uncontended mutex lock/unlock and the counter update (~50 ns).
pub const SYSBENCH_EVENT_NS: f64 = 150.0;
/// Line transfers per event whose last writer is another thread of the
/// group: the mutex's line and the counters' line, taken one after the other
/// (2), plus the buffer's 16 lines, whose ownership requests a core overlaps
/// (cost.rs refill_mlp: 8 outstanding misses) → 2 + 16 / 8.
pub const SYSBENCH_SHARED_LINES_PER_EVENT: f64 = 4.0;

/// sysbench memory-like: G cgroups × T threads, each thread runs work_ms of
/// memory-bound work in 1 ms chunks, sleeping sleep_us between chunks
/// (default 0: back to back). Tasks
/// of groups sharing an LLC slow each other down when their working sets
/// exceed the LLC (engine: memory_bound). With shared=1 a group's threads
/// share one working set (counted once per LLC) and write the same lines
/// (sysbench's global scope): each event takes those lines over from a
/// group-mate, at the transfer latency of where the mates run
/// (engine: shared_lines_per_ns).
pub struct MemGroups {
    left: Vec<u64>,
    sleep_ns: u64,
    slept: Vec<bool>,
    /// task i is in group i % groups (spread over CPUs at start), not i / threads
    interleave: bool,
    groups: usize,
    threads: usize,
    ws: u64,
    shared: bool,
}

impl MemGroups {
    fn new(o: &Opts) -> MemGroups {
        let groups = o.get("groups", 8) as usize;
        let threads = o.get("threads", 16) as usize;
        MemGroups {
            left: vec![o.get("work_ms", 20); groups * threads],
            sleep_ns: o.get("sleep_us", 0) * 1000,
            slept: vec![true; groups * threads],
            interleave: o.get("interleave", 0) != 0,
            groups,
            threads,
            ws: o.get("ws_kb", 4096) << 10,
            shared: o.get("shared", 0) != 0,
        }
    }
}

impl Wl for MemGroups {
    fn tasks(&self) -> Vec<TaskSpec> {
        (0..self.groups * self.threads)
            .map(|i| {
                (
                    i,
                    if self.interleave {
                        i % self.groups
                    } else {
                        i / self.threads
                    },
                )
            })
            .map(|(_, g)| TaskSpec {
                name: format!("mem-g{g}"),
                cgroup: 1 + g,
                weight: 100,
                cpus: None,
                ws_bytes: self.ws,
                mm_switch: false,
                memory_bound: true,
                ws_shared: self.shared,
                shared_lines_per_ns: if self.shared {
                    SYSBENCH_SHARED_LINES_PER_EVENT / SYSBENCH_EVENT_NS
                } else {
                    0.0
                },
            })
            .collect()
    }
    fn step(&mut self, t: usize, _now: u64, _w: &mut Vec<usize>) -> Step {
        if self.left[t] == 0 {
            return Step::Exit;
        }
        if self.sleep_ns > 0 && !self.slept[t] {
            self.slept[t] = true;
            return Step::Sleep(self.sleep_ns);
        }
        self.slept[t] = false;
        self.left[t] -= 1;
        Step::Run(1_000_000)
    }
    fn done(&self) -> bool {
        false
    }
    fn metrics(&self, _end: u64) -> Value {
        json!({"groups": self.groups, "threads": self.threads, "shared": self.shared})
    }
}

// ---------------------------------------------------------------- hogs

/// Busy loops in cgroups of set cpu.weight: group g (cgroup g + 1, or g + 2
/// under the parent cgroup 1 when `nested`) holds counts[g] loops at
/// weights[g], all running until `ms` of simulated time.
/// The report's per-cgroup runtime_ns shows how the CPU time was split.
pub struct Hogs {
    counts: Vec<usize>,
    weights: Vec<u32>,
    until_ns: u64,
    /// the last group sleeps this long first, placed on CPU 0
    late_ns: u64,
    started: Vec<bool>,
    /// ms of CPU each group ran from `from_ns` on (1 ms steps completed)
    window_ms: Vec<u64>,
    from_ns: u64,
    group_of: Vec<usize>,
    /// the groups are siblings under one parent cgroup (of weight 100)
    nested: bool,
    /// root-cgroup probes wake this often to run probe_run_ns (0: none)
    probe_period_ns: u64,
    probe_run_ns: u64,
    /// per probe, when its current sleep ends (0: it is not asleep)
    probe_wake_at: Vec<u64>,
    /// the probe's waits from the end of a sleep to its next run
    probe_waits: Vec<u64>,
    /// each loop pinned to one CPU (its index in its group, mod nr_cpus)
    pinned_on: Option<usize>,
    /// per group, the CPUs its loops may run on (None: all)
    group_cpus: Vec<Option<Vec<usize>>>,
}

/// Per group, a ':'-separated list of CPU lists in the kernel's format
/// without commas (`4-7`; empty: every CPU).
fn group_cpu_ranges(s: &str, groups: usize, nr_cpus: usize) -> Result<Vec<Option<Vec<usize>>>> {
    if s.is_empty() {
        return Ok(vec![None; groups]);
    }
    let v: Vec<&str> = s.split(':').collect();
    if v.len() != groups {
        bail!("hogs: cpus={s:?} needs one entry per group");
    }
    v.iter()
        .map(|r| {
            if r.is_empty() {
                return Ok(None);
            }
            let cpus = scx_mosaic::cpulist::parse(r)?;
            if cpus.last().is_some_and(|&c| c >= nr_cpus) {
                bail!("hogs: CPUs {r:?} are not within 0-{}", nr_cpus - 1);
            }
            Ok(Some(cpus))
        })
        .collect()
}

/// A ':'-separated list of numbers.
fn colon_list(s: &str) -> Result<Vec<u64>> {
    s.split(':')
        .map(|x| {
            x.parse()
                .map_err(|_| anyhow::anyhow!("bad number {x:?} in {s:?}"))
        })
        .collect()
}

impl Hogs {
    fn new(o: &Opts, nr_cpus: usize) -> Result<Hogs> {
        let counts = colon_list(&o.s("counts", "8:4"))?;
        let weights = colon_list(&o.s("weights", "100:300"))?;
        if counts.len() != weights.len() || weights.iter().any(|&w| !(1..=10000).contains(&w)) {
            bail!("hogs: counts and weights need one entry per group, weights 1-10000");
        }
        Ok(Hogs {
            counts: counts.iter().map(|&c| c as usize).collect(),
            weights: weights.iter().map(|&w| w as u32).collect(),
            until_ns: o.get("ms", 4000) * 1_000_000,
            late_ns: o.get("late_ms", 0) * 1_000_000,
            started: vec![false; counts.iter().sum::<u64>() as usize],
            window_ms: vec![0; counts.len()],
            from_ns: o.get("from_ms", o.get("late_ms", 0) + 1000) * 1_000_000,
            group_of: counts
                .iter()
                .enumerate()
                .flat_map(|(g, &n)| std::iter::repeat_n(g, n as usize))
                .collect(),
            nested: o.get("nested", 0) != 0,
            probe_period_ns: o.get("probe_ms", 0) * 1_000_000,
            // manylimits' probe: spin -s 100000
            probe_run_ns: o.get("probe_us", 100) * 1_000,
            probe_wake_at: vec![0; o.get("probes", 1) as usize],
            probe_waits: Vec::new(),
            pinned_on: (o.get("pinned", 0) != 0).then_some(nr_cpus.max(1)),
            group_cpus: group_cpu_ranges(&o.s("cpus", ""), counts.len(), nr_cpus)?,
        })
    }
}

impl Hogs {
    /// Whether task @t belongs to the last group.
    fn in_last_group(&self, t: usize) -> bool {
        let before: usize = self.counts[..self.counts.len() - 1].iter().sum();
        t >= before
    }
}

impl Wl for Hogs {
    fn tasks(&self) -> Vec<TaskSpec> {
        let mut v = Vec::new();
        for (g, &n) in self.counts.iter().enumerate() {
            for i in 0..n {
                let mut t = TaskSpec::simple(&format!("hog-g{g}-{i}"), 64 << 10);
                t.cgroup = 1 + usize::from(self.nested) + g;
                t.cpus = self.pinned_on.map(|n| vec![i % n]);
                if t.cpus.is_none() {
                    t.cpus = self.group_cpus[g].clone();
                }
                v.push(t);
            }
        }
        if self.probe_period_ns > 0 {
            for k in 0..self.probe_wake_at.len() {
                v.push(TaskSpec::simple(&format!("probe-{k}"), 16 << 10));
            }
        }
        v
    }
    fn step(&mut self, t: usize, now: u64, _w: &mut Vec<usize>) -> Step {
        if now >= self.until_ns {
            return Step::Exit;
        }
        if t >= self.started.len() {
            // a probe: after a sleep it is on a CPU now, else it just ran
            let k = t - self.started.len();
            if self.probe_wake_at[k] == 0 {
                // the probes' first sleeps are staggered over one period
                let n = self.probe_wake_at.len() as u64;
                let sleep = match now {
                    0 => self.probe_period_ns * (k as u64 + 1) / n,
                    _ => self.probe_period_ns,
                };
                self.probe_wake_at[k] = now + sleep;
                return Step::Sleep(sleep);
            }
            if now >= self.from_ns {
                self.probe_waits
                    .push(now.saturating_sub(self.probe_wake_at[k]));
            }
            self.probe_wake_at[k] = 0;
            return Step::Run(self.probe_run_ns);
        }
        if !self.started[t] {
            self.started[t] = true;
            if self.late_ns > 0 && self.in_last_group(t) {
                return Step::Sleep(self.late_ns);
            }
        } else if now >= self.from_ns + 1_000_000 {
            self.window_ms[self.group_of[t]] += 1;
        }
        Step::Run(1_000_000)
    }
    fn start_cpu(&self, i: usize) -> Option<usize> {
        (self.late_ns > 0 && self.in_last_group(i)).then_some(0)
    }
    fn done(&self) -> bool {
        false
    }
    fn metrics(&self, _end: u64) -> Value {
        let per_weight: Vec<f64> = (self.window_ms.iter().zip(&self.weights))
            .map(|(&ms, &w)| ms as f64 / w as f64)
            .collect();
        let lo = per_weight.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = per_weight.iter().copied().fold(0.0, f64::max);
        let mut waits = self.probe_waits.clone();
        waits.sort_unstable();
        let probe = (!waits.is_empty()).then(|| {
            json!({"runs": waits.len(),
                   "mean_wait_us": waits.iter().sum::<u64>() as f64 / waits.len() as f64 / 1e3,
                   "p99_wait_us": waits[waits.len() * 99 / 100] as f64 / 1e3,
                   "max_wait_us": waits[waits.len() - 1] as f64 / 1e3})
        });
        json!({"counts": self.counts, "weights": self.weights, "window_ms": self.window_ms,
               "probe": probe,
               "window_from_s": self.from_ns as f64 / 1e9,
               "share_min_over_max": if hi > 0.0 { lo / hi } else { 0.0 }})
    }
    fn cgroup_weights(&self) -> Vec<u32> {
        let parent = self.nested.then_some(100);
        std::iter::once(100)
            .chain(parent)
            .chain(self.weights.iter().copied())
            .collect()
    }
    fn cgroup_parents(&self) -> Vec<usize> {
        if !self.nested {
            return Vec::new();
        }
        [0, 0]
            .into_iter()
            .chain(self.weights.iter().map(|_| 1))
            .collect()
    }
}

// ---------------------------------------------------------------- schbench

/// schbench-like: M message threads each feed W workers; a message thread
/// wakes a worker with a request, the worker runs work_ns and replies, the
/// message thread sleeps sleep_ns between rounds. Wakeup latency (wake to
/// run) of workers and request latency are recorded.
pub struct Schbench {
    m: usize,
    w: usize,
    left: Vec<u64>,
    work: u64,
    sleep: u64,
    req: Vec<bool>,
    worker_waiting: Vec<bool>,
    sent: Vec<u64>,
    outstanding: Vec<usize>,
    msg_waiting: Vec<bool>,
    lat: Vec<u64>,
}

impl Schbench {
    fn new(o: &Opts) -> Schbench {
        let m = o.get("mthreads", 2) as usize;
        let w = o.get("workers", 16) as usize;
        Schbench {
            m,
            w,
            left: vec![o.get("requests", 2000); m],
            work: o.get("work_ns", 20000),
            sleep: o.get("sleep_ns", 30000),
            req: vec![false; m * w],
            worker_waiting: vec![false; m * w],
            sent: vec![0; m * w],
            outstanding: vec![0; m],
            msg_waiting: vec![false; m],
            lat: Vec::new(),
        }
    }
}

impl Wl for Schbench {
    fn tasks(&self) -> Vec<TaskSpec> {
        let mut v: Vec<TaskSpec> = (0..self.m)
            .map(|_| TaskSpec::simple("sch-msg", 16 << 10))
            .collect();
        v.extend((0..self.m * self.w).map(|_| TaskSpec::simple("sch-worker", 64 << 10)));
        v
    }
    fn step(&mut self, t: usize, now: u64, wakes: &mut Vec<usize>) -> Step {
        if t < self.m {
            if self.outstanding[t] > 0 {
                self.msg_waiting[t] = true;
                return Step::Block;
            }
            if self.left[t] == 0 {
                for k in 0..self.w {
                    let wk = t * self.w + k;
                    if self.worker_waiting[wk] {
                        self.worker_waiting[wk] = false;
                        wakes.push(self.m + wk);
                    }
                }
                return Step::Exit;
            }
            self.left[t] -= 1;
            for k in 0..self.w {
                let wk = t * self.w + k;
                self.req[wk] = true;
                self.sent[wk] = now;
                self.outstanding[t] += 1;
                if self.worker_waiting[wk] {
                    self.worker_waiting[wk] = false;
                    wakes.push(self.m + wk);
                }
            }
            // send, then sleep: the next round starts after the replies
            Step::Run(2000)
        } else {
            let wk = t - self.m;
            let mt = wk / self.w;
            if self.req[wk] {
                self.req[wk] = false;
                self.lat.push(now + self.work - self.sent[wk]);
                self.outstanding[mt] -= 1;
                if self.outstanding[mt] == 0 && self.msg_waiting[mt] {
                    self.msg_waiting[mt] = false;
                    wakes.push(mt);
                }
                return Step::Run(self.work);
            }
            if self.left[mt] == 0 && self.outstanding[mt] == 0 {
                return Step::Exit;
            }
            self.worker_waiting[wk] = true;
            Step::Block
        }
    }
    fn done(&self) -> bool {
        false
    }
    fn metrics(&self, end: u64) -> Value {
        json!({"requests": self.lat.len(), "rps": self.lat.len() as f64 / (end as f64 / 1e9),
               "request_latency_ns": crate::engine::percentiles(&self.lat), "sleep_ns": self.sleep})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs task @t of @w one step; the tasks it wakes.
    fn step(w: &mut Hackbench, t: usize) -> (Step, Vec<usize>) {
        let mut wakes = Vec::new();
        let s = w.step(t, 0, &mut wakes);
        (s, wakes)
    }

    #[test]
    fn a_socket_writer_wakes_when_a_quarter_of_the_buffer_is_left() {
        // one receiver (task 0), one sender (task 1), a 280-message socket
        // (the default; write_space=1 says it)
        let mut w = Hackbench::new(&Opts::parse("groups=1,fds=1,loops=1000"));
        let mut sent = 0;
        loop {
            match step(&mut w, 1).0 {
                Step::Run(ns) => sent += ns / w.write_ns,
                Step::Block => break,
                s => panic!("sender: {s:?}"),
            }
        }
        assert_eq!(sent, 280);
        // the reader's batches of 24: the sender wakes at the end of the
        // batch that leaves at most 70 (280 / 4), not before
        let mut left = 280;
        loop {
            let (s, wakes) = step(&mut w, 0);
            if wakes.contains(&1) {
                assert!(left <= 70 && left + 24 > 70, "woken with {left} left");
                break;
            }
            assert!(wakes.is_empty(), "{wakes:?}");
            if let Step::Run(ns) = s {
                left -= ns / w.read_ns;
            }
        }
    }

    #[test]
    fn a_socket_writer_wakes_at_the_next_read_with_write_space_0() {
        let mut w = Hackbench::new(&Opts::parse("groups=1,fds=1,loops=1000,write_space=0"));
        while step(&mut w, 1).0 != Step::Block {}
        assert!(step(&mut w, 0).1.is_empty());
        assert_eq!(step(&mut w, 0).1, vec![1]);
    }

    #[test]
    fn a_pipe_writer_wakes_at_the_next_read() {
        // 400-byte messages: 163 fill the 64 KiB pipe
        let mut w = Hackbench::new(&Opts::parse("groups=1,fds=1,loops=1000,mode=pipe,size=400"));
        while step(&mut w, 1).0 != Step::Block {}
        let (s, wakes) = step(&mut w, 0);
        assert!(matches!(s, Step::Run(_)) && wakes.is_empty());
        // the read's end wakes the writer
        assert_eq!(step(&mut w, 0).1, vec![1]);
    }

    /// A message program of one sender and one receiver on 2 CPUs, with a
    /// background of @opts.
    fn background(opts: &str) -> Background {
        let inner = Box::new(Hackbench::new(&Opts::parse("groups=1,fds=1,loops=1")));
        Background::new(inner, &Opts::parse(&format!("bg_during=1,{opts}")), 2)
    }

    #[test]
    fn an_exit_past_the_cpu_s_stack_cache_frees_after_a_grace_period() {
        // grace periods of 1 ms; the workload's two tasks, then the agent, the
        // unbound thread, 2 kworkers, 2 softirq threads (6, 7), 2 free workers
        let mut w = background("bg_rcu_gp_us=1000");
        assert_eq!(w.tasks().len(), 2 + 2 + 2 + 2 + 2);
        let exit = |w: &mut Background, cpu| {
            let mut later = Vec::new();
            w.exited_on(0, cpu, 2_500_000, &mut later);
            later
        };
        // CPU 1 keeps two stacks for its next forks
        assert!(exit(&mut w, 1).is_empty() && exit(&mut w, 1).is_empty());
        // the third goes through RCU: freed at the end of the period after
        // the current one (it began at 2 ms), by CPU 1's softirq thread
        assert_eq!(exit(&mut w, 1), vec![(7, 4_000_000)]);
        // another exit of that period joins the same callbacks' run
        assert!(exit(&mut w, 1).is_empty());
        let mut wakes = Vec::new();
        assert_eq!(w.step(7, 3_999_999, &mut wakes), Step::Block);
        assert_eq!(w.step(7, 4_000_000, &mut wakes), Step::Run(KTHREAD_RUN_NS));
        // it hands the vfree to CPU 1's worker, which runs once and sleeps
        assert_eq!(wakes, vec![9]);
        assert_eq!(w.step(9, 4_000_000, &mut wakes), Step::Run(KTHREAD_RUN_NS));
        assert_eq!(w.step(9, 4_010_000, &mut wakes), Step::Block);
        assert_eq!(w.tasks()[9].cpus, Some(vec![1]));
        assert_eq!(w.start_cpu(7), Some(1));
    }

    #[test]
    fn the_run_goes_on_until_the_counters_are_read() {
        // the reader comes last, after the agent, the unbound thread and the
        // 2 kworkers; it wakes bg_tail_us after the workload's last exit
        let mut w = background("bg_tail_us=500");
        let client = w.tasks().len() - 1;
        assert_eq!(w.tasks()[client].name, "stats-client");
        let mut later = Vec::new();
        w.exited = 1;
        w.exited_on(0, 0, 9_000_000, &mut later);
        assert!(later.is_empty() && !w.done());
        w.exited = 2;
        w.exited_on(1, 0, 10_000_000, &mut later);
        assert_eq!(later, vec![(client, 10_500_000)]);
        assert!(!w.done());
        let mut wakes = Vec::new();
        assert_eq!(
            w.step(client, 10_500_000, &mut wakes),
            Step::Run(AGENT_RUN_NS)
        );
        assert!(!w.done());
        assert_eq!(w.step(client, 10_520_000, &mut wakes), Step::Exit);
        assert!(w.done());
        // the workload's time ends at its last exit, not at the read
        let m = w.metrics(10_520_000);
        assert_eq!(m["workload_time_s"], json!(0.01));
    }
}
