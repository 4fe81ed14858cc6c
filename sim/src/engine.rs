//! The discrete-event engine: CPUs, tasks, DSQs, ticks, wakeups, kicks, and
//! the kernel's sched_ext rules around the scheduler's callbacks.
//!
//! One engine per process (the native scheduler's globals are process
//! state): `Engine::run` refuses a second run in the same process.
//!
//! Borrowing: callbacks into the scheduler re-enter the engine through the
//! kfuncs, so engine code never holds a `&mut Engine` across a call into C;
//! it re-fetches the engine with `eng()` after each one.
use crate::cost::{Costs, Dist, DIST_NAMES};
use crate::ffi::{self, task_struct};
use crate::machine::Machine;
use crate::maps::Maps;
use serde_json::{json, Value};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::ffi::CString;

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
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum TState {
    New,
    Sleeping,
    /// runnable, waiting: in a DSQ, a local DSQ, or the scheduler's custody
    Queued,
    Running,
    Dead,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Loc {
    None,
    Dsq(u64),
    Local(usize),
    /// ops.enqueue returned without inserting: the BPF side holds it
    Custody,
}

pub struct Task {
    pub p: *mut task_struct,
    pub spec: TaskSpec,
    state: TState,
    loc: Loc,
    /// task_cpu(): the CPU it runs or will run on
    pub cpu: usize,
    /// where it last ran (for migration costs)
    last_ran: Option<usize>,
    pub allowed: Vec<bool>,
    nr_allowed: usize,
    /// work left of the current Run step, ns at reference speed
    work_left: f64,
    in_step: bool,
    runnable_since: u64,
    woken_at: Option<u64>,
    /// a pending direct dispatch from select_cpu/enqueue: (dsq, slice, vtime, flags, vtime?)
    ddsp: Option<(u64, u64, u64, u64, bool)>,
    pub runtime: u64,
    exited_at: u64,
    enq_key: (u64, u64),
}

#[derive(Default, Clone)]
pub struct Lock {
    free_at: u64,
    last_cpu: usize,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: u64,
}

struct Dsq {
    fifo: VecDeque<usize>,
    vt: BTreeMap<(u64, u64), usize>,
    /// None until the first insert; true = vtime-ordered
    vtime: Option<bool>,
    lock: Lock,
}

impl Dsq {
    fn new() -> Dsq {
        Dsq {
            fifo: VecDeque::new(),
            vt: BTreeMap::new(),
            vtime: None,
            lock: Lock::default(),
        }
    }
    fn len(&self) -> usize {
        self.fifo.len() + self.vt.len()
    }
    fn order(&self) -> Vec<usize> {
        if self.vtime == Some(true) {
            self.vt.values().copied().collect()
        } else {
            self.fifo.iter().copied().collect()
        }
    }
    fn first(&self) -> Option<usize> {
        if self.vtime == Some(true) {
            self.vt.values().next().copied()
        } else {
            self.fifo.front().copied()
        }
    }
    /// Removes @t, inserted with vtime key @key if vtime-ordered.
    fn remove(&mut self, t: usize, key: (u64, u64)) {
        if self.vtime == Some(true) {
            if self.vt.get(&key) == Some(&t) {
                self.vt.remove(&key);
            }
            return;
        }
        if let Some(i) = self.fifo.iter().position(|&x| x == t) {
            self.fifo.remove(i);
        }
    }

    /// The first task in order that @ok accepts.
    fn find(&self, ok: impl Fn(usize) -> bool) -> Option<usize> {
        if self.vtime == Some(true) {
            self.vt.values().copied().find(|&t| ok(t))
        } else {
            self.fifo.iter().copied().find(|&t| ok(t))
        }
    }
}

struct Cpu {
    curr: Option<usize>,
    local: VecDeque<usize>,
    gen: u64,
    /// when the current task's run segment started (for work accounting)
    seg_start: u64,
    seg_rate: f64,
    /// last slice/runtime accounting of curr
    last_update: u64,
    tick_pending: bool,
    /// a Resched event is pending
    resched_pending: bool,
    /// overhead (ns) to charge before whatever runs next
    overhead: f64,
    idle_since: Option<u64>,
    rq_lock: Lock,
    busy_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
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
    pub trace: bool,
    pub trace_limit: usize,
    pub watchdog_ns: u64,
    /// bound for "idle while an allowed task waits in its LLC" (ns)
    pub idle_bound_ns: u64,
    /// ops flags the loader adds to the ops table's (sched::LOADER_OPS_FLAGS)
    pub ops_flags_or: u64,
    /// the group balancer's userspace half, with --gb-parent (group.rs)
    pub group_balancer: Option<crate::group::GbConfig>,
}

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
    pub maps: Maps,
    /// CPU whose context a callback runs in
    pub cur_cpu: usize,
    pub ctx: Ctx,
    dispatch_buf: Vec<(usize, u64, u64, u64, u64, bool)>,
    dispatch_max: usize,
    kicks: Vec<(usize, u64)>,
    pub idle_mask: Vec<u64>,
    pub smt_mask: Vec<u64>,
    pub online_mask: Vec<u64>,
    pub rng: u64,
    pub ops_flags: u64,
    pub exit: Option<(i32, String)>,
    pub iters: BTreeMap<u64, (u64, usize)>,
    pick_cursor: usize,
    // ---- metrics
    wake_lat: Vec<u64>,
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
    trace: Vec<(usize, usize, u64, u64)>,
    group_llc_ns: BTreeMap<usize, Vec<u64>>,
    wakeups_remote_lock: u64,
    wakeups_queued: u64,
    wakeups_local: u64,
    pub kfunc_calls: u64,
    pub events_done: u64,
    cgroups: Vec<*mut ffi::cgroup>,
    gb: Option<crate::group::Balancer>,
    /// BPF timers by address: (map, callback, cpu, generation, key)
    timers: BTreeMap<usize, (usize, usize, usize, u64, u32)>,
    nr_dead: usize,
}

static mut ENGINE: *mut Engine = std::ptr::null_mut();
static mut USED: bool = false;

/// The engine, from inside a kfunc or engine code (see the module comment).
#[allow(static_mut_refs)]
pub fn eng() -> &'static mut Engine {
    unsafe {
        assert!(!ENGINE.is_null(), "mosaic-sim: kfunc called with no engine");
        &mut *ENGINE
    }
}

fn words(n: usize) -> usize {
    // the C side's struct cpumask size, in u64 words
    (unsafe { ffi::sim_sizeof_cpumask() } / 8).max(n.div_ceil(64))
}

fn setbit(m: &mut [u64], i: usize, v: bool) {
    if v {
        m[i / 64] |= 1 << (i % 64);
    } else {
        m[i / 64] &= !(1 << (i % 64));
    }
}

pub fn bit(m: &[u64], i: usize) -> bool {
    m[i / 64] >> (i % 64) & 1 == 1
}

pub fn percentiles(v: &[u64]) -> Value {
    if v.is_empty() {
        return json!(null);
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let p = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    json!({"count": s.len(), "p50": p(0.5), "p90": p(0.9), "p99": p(0.99), "p999": p(0.999),
           "max": s[s.len() - 1], "mean": s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64})
}

impl Engine {
    pub fn new(m: Machine, cfg: Config, wl: Box<dyn Wl>) -> Box<Engine> {
        let n = m.nr_cpus();
        let w = words(n);
        let mut online = vec![0u64; w];
        for c in 0..n {
            setbit(&mut online, c, true);
        }
        let cpus = (0..n)
            .map(|_| Cpu {
                curr: None,
                local: VecDeque::new(),
                gen: 0,
                seg_start: 0,
                seg_rate: 1.0,
                last_update: 0,
                tick_pending: false,
                resched_pending: false,
                overhead: 0.0,
                idle_since: Some(0),
                rq_lock: Lock::default(),
                busy_ns: 0,
            })
            .collect();
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
            pick_cursor: 0,
            wake_lat: Vec::new(),
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
            trace: Vec::new(),
            group_llc_ns: BTreeMap::new(),
            wakeups_remote_lock: 0,
            wakeups_queued: 0,
            wakeups_local: 0,
            kfunc_calls: 0,
            events_done: 0,
            cgroups: Vec::new(),
            gb: None,
            timers: BTreeMap::new(),
            nr_dead: 0,
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

    /// Acquire @lock from @cpu at now + overhead already accrued; charges the
    /// wait and hold (plus the line transfer from the last holder) to @cpu.
    fn lock(&mut self, which: LockId, cpu: usize, hold: f64) {
        let at = self.now + self.cpus[cpu].overhead as u64;
        let last = self.lock_ref(which).last_cpu;
        let xfer = self.cfg.costs.line(self.m.dist(cpu, last));
        let l = self.lock_ref(which);
        let start = at.max(l.free_at);
        let wait = start - at;
        l.acquisitions += 1;
        if wait > 0 {
            l.contended += 1;
            l.wait_ns += wait;
        }
        let held = (hold + xfer) as u64;
        l.free_at = start + held;
        l.last_cpu = cpu;
        self.cpus[cpu].overhead += (wait + held) as f64;
    }

    fn lock_ref(&mut self, which: LockId) -> &mut Lock {
        match which {
            LockId::Rq(c) => &mut self.cpus[c].rq_lock,
            LockId::Dsq(id) => &mut self.dsqs.get_mut(&id).unwrap().lock,
            LockId::Global => &mut self.global.lock,
        }
    }

    /// Cost of a lock-free read of a DSQ's state from @cpu.
    pub fn dsq_peek_cost(&mut self, id: u64, cpu: usize) {
        if let Some(d) = self.dsqs.get(&id) {
            let last = d.lock.last_cpu;
            self.cpus[cpu].overhead += self.cfg.costs.line(self.m.dist(cpu, last)) * 0.5;
        }
    }

    fn set_idle(&mut self, cpu: usize, idle: bool) {
        setbit(&mut self.idle_mask, cpu, idle);
        let core_idle = idle
            && self.m.siblings[cpu]
                .iter()
                .all(|&s| bit(&self.idle_mask, s));
        let sibs = self.m.siblings[cpu].clone();
        for c in std::iter::once(cpu).chain(sibs) {
            setbit(&mut self.smt_mask, c, core_idle);
        }
    }

    /// scx_bpf_test_and_clear_cpu_idle
    pub fn test_and_clear_idle(&mut self, cpu: usize) -> bool {
        if cpu >= self.cpus.len() || !bit(&self.idle_mask, cpu) {
            return false;
        }
        self.set_idle(cpu, false);
        true
    }

    /// scx_bpf_pick_idle_cpu: an idle CPU of @mask (whole idle core first
    /// with SCX_PICK_IDLE_CORE, only), claimed; spreads like the kernel's
    /// cpumask_any_and_distribute by starting after the last pick.
    pub fn pick_idle(&mut self, mask: &[u64], core: bool) -> i32 {
        let n = self.cpus.len();
        let nw = n.div_ceil(64);
        let src = if core {
            &self.smt_mask
        } else {
            &self.idle_mask
        };
        let mut cand = [0u64; 8];
        let mut any = 0;
        for w in 0..nw {
            cand[w] = mask[w] & src[w];
            any |= cand[w];
        }
        if any == 0 {
            return -16; // -EBUSY
        }
        // first candidate at or after the cursor, wrapping
        let start = self.pick_cursor % n;
        let (sw, sb) = (start / 64, start % 64);
        let mut found = None;
        let hi = cand[sw] & (!0u64 << sb);
        if hi != 0 {
            found = Some(sw * 64 + hi.trailing_zeros() as usize);
        } else {
            for i in 1..=nw {
                let w = (sw + i) % nw;
                if cand[w] != 0 {
                    found = Some(w * 64 + cand[w].trailing_zeros() as usize);
                    break;
                }
            }
        }
        let c = found.unwrap();
        self.pick_cursor = c + 1;
        self.set_idle(c, false);
        c as i32
    }

    pub fn kick(&mut self, cpu: usize, flags: u64) {
        if cpu < self.cpus.len() {
            self.kicks.push((cpu, flags));
        }
    }

    pub fn create_dsq(&mut self, id: u64) -> i32 {
        if id & ffi::SCX_DSQ_FLAG_BUILTIN != 0 || self.dsqs.contains_key(&id) {
            return -17; // -EEXIST / -EINVAL
        }
        self.dsqs.insert(id, Dsq::new());
        0
    }

    pub fn dsq_len(&self, id: u64) -> i32 {
        if id == ffi::SCX_DSQ_LOCAL {
            return self.cpus[self.cur_cpu].local.len() as i32;
        }
        if id & ffi::SCX_DSQ_LOCAL_ON == ffi::SCX_DSQ_LOCAL_ON {
            let c = (id & ffi::SCX_DSQ_LOCAL_CPU_MASK) as usize;
            return self.cpus.get(c).map_or(-2, |c| c.local.len() as i32);
        }
        if id == ffi::SCX_DSQ_GLOBAL {
            return self.global.len() as i32;
        }
        self.dsqs.get(&id).map_or(-2, |d| d.len() as i32)
    }

    pub fn dsq_order(&self, id: u64) -> Vec<usize> {
        if id == ffi::SCX_DSQ_GLOBAL {
            return self.global.order();
        }
        if id == ffi::SCX_DSQ_LOCAL {
            return self.cpus[self.cur_cpu].local.iter().copied().collect();
        }
        self.dsqs.get(&id).map_or(Vec::new(), |d| d.order())
    }

    pub fn dsq_first(&self, id: u64) -> Option<usize> {
        if id == ffi::SCX_DSQ_GLOBAL {
            return self.global.first();
        }
        self.dsqs.get(&id).and_then(|d| d.first())
    }

    /// scx_bpf_dsq_insert[_vtime]: record by context, as the kernel does.
    pub fn insert(
        &mut self,
        t: usize,
        dsq: u64,
        slice: u64,
        vtime: u64,
        flags: u64,
        vt: bool,
    ) -> bool {
        match self.ctx {
            Ctx::Select { t: ct } | Ctx::Enqueue { t: ct } if ct == t => {
                if self.tasks[t].ddsp.is_some() {
                    self.error(
                        ffi::SCX_EXIT_ERROR_BPF,
                        "task inserted twice in one callback".into(),
                    );
                    return false;
                }
                self.tasks[t].ddsp = Some((dsq, slice, vtime, flags, vt));
                true
            }
            Ctx::Dispatch { .. } => {
                if self.dispatch_buf.len() >= self.dispatch_max {
                    self.error(ffi::SCX_EXIT_ERROR_BPF, "dispatch buffer overflow".into());
                    return false;
                }
                self.dispatch_buf.push((t, dsq, slice, vtime, flags, vt));
                true
            }
            _ => {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    "scx_bpf_dsq_insert() called from a context that cannot insert".into(),
                );
                false
            }
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

    pub fn is_running(&self, t: usize) -> bool {
        self.tasks[t].state == TState::Running
    }

    pub fn task_cgroup(&self, t: usize) -> *mut ffi::cgroup {
        self.cgroups[self.tasks[t].spec.cgroup]
    }

    pub fn dispatch_nr_slots(&self) -> u32 {
        (self.dispatch_max - self.dispatch_buf.len()) as u32
    }

    pub fn dispatch_cancel(&mut self) {
        self.dispatch_buf.pop();
    }

    /// Puts @t on DSQ @dsq (resolved against @rq_cpu for SCX_DSQ_LOCAL).
    fn dispatch_enqueue(
        &mut self,
        t: usize,
        dsq: u64,
        slice: u64,
        vtime: u64,
        flags: u64,
        vt: bool,
        rq_cpu: usize,
    ) {
        if self.tasks[t].state != TState::Queued
            || !matches!(self.tasks[t].loc, Loc::None | Loc::Custody)
        {
            self.violation(format!(
                "task {t} inserted while {:?}/{:?}",
                self.tasks[t].state, self.tasks[t].loc
            ));
            return;
        }
        if self.tasks[t].loc == Loc::Custody {
            self.enqueue_matched += 1;
        }
        let p = self.tasks[t].p;
        unsafe {
            if slice != 0 {
                *ffi::sim_task_slice(p) = slice;
            }
            if vt {
                *ffi::sim_task_dsq_vtime(p) = vtime;
            }
        }
        let local_target = if dsq == ffi::SCX_DSQ_LOCAL {
            Some(rq_cpu)
        } else if dsq & ffi::SCX_DSQ_LOCAL_ON == ffi::SCX_DSQ_LOCAL_ON {
            let c = (dsq & ffi::SCX_DSQ_LOCAL_CPU_MASK) as usize;
            if c >= self.cpus.len() {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    format!("invalid CPU {c} in SCX_DSQ_LOCAL_ON"),
                );
                return;
            }
            if self.tasks[t].allowed[c] {
                Some(c)
            } else {
                // the kernel falls back to the global DSQ
                None
            }
        } else {
            None
        };
        if let Some(c) = local_target {
            if vt {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    "cannot use vtime ordering for built-in DSQs".into(),
                );
                return;
            }
            if c != self.tasks[t].cpu {
                // moving into a remote local DSQ locks that runqueue
                let from = self.cur_cpu;
                self.lock(LockId::Rq(c), from, self.cfg.costs.rq_lock_hold_ns);
                self.tasks[t].cpu = c;
            }
            if flags & ffi::SCX_ENQ_HEAD != 0 {
                self.cpus[c].local.push_front(t);
            } else {
                self.cpus[c].local.push_back(t);
            }
            self.tasks[t].loc = Loc::Local(c);
            self.inserts_local += 1;
            if self.cpus[c].curr.is_none() {
                self.resched(c, self.cur_cpu);
            } else if flags & ffi::SCX_ENQ_PREEMPT != 0 {
                self.kicks.push((c, ffi::SCX_KICK_PREEMPT));
            }
            return;
        }
        let cur = self.cur_cpu;
        let seq = {
            self.seq += 1;
            self.seq
        };
        if dsq == ffi::SCX_DSQ_GLOBAL || dsq & ffi::SCX_DSQ_LOCAL_ON == ffi::SCX_DSQ_LOCAL_ON {
            if vt {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    "cannot use vtime ordering for built-in DSQs".into(),
                );
                return;
            }
            self.lock(LockId::Global, cur, self.cfg.costs.dsq_lock_hold_ns);
            self.global.fifo.push_back(t);
            self.tasks[t].loc = Loc::Dsq(ffi::SCX_DSQ_GLOBAL);
            self.inserts_global += 1;
            return;
        }
        if !self.dsqs.contains_key(&dsq) {
            self.error(
                ffi::SCX_EXIT_ERROR_BPF,
                format!("insert into non-existent DSQ 0x{dsq:x}"),
            );
            return;
        }
        self.lock(LockId::Dsq(dsq), cur, self.cfg.costs.dsq_lock_hold_ns);
        let d = self.dsqs.get_mut(&dsq).unwrap();
        match d.vtime {
            Some(m) if m != vt => {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    format!("DSQ 0x{dsq:x} mixes FIFO and vtime ordering"),
                );
                return;
            }
            _ => d.vtime = Some(vt),
        }
        if vt {
            d.vt.insert((vtime, seq), t);
            self.tasks[t].enq_key = (vtime, seq);
        } else if flags & ffi::SCX_ENQ_HEAD != 0 {
            d.fifo.push_front(t);
        } else {
            d.fifo.push_back(t);
        }
        self.tasks[t].loc = Loc::Dsq(dsq);
        self.inserts_dsq += 1;
    }

    /// scx_bpf_dsq_move_to_local from ops.dispatch on @cpu: the first task of
    /// @dsq allowed on @cpu moves to @cpu's local DSQ.
    pub fn move_to_local(&mut self, dsq: u64) -> bool {
        self.move_task_to_local(dsq, None)
    }

    /// Moves the first task of @dsq that may run here (or only task @only,
    /// as scx_bpf_dsq_move() from an iterator does) to this CPU's local DSQ.
    pub fn move_task_to_local(&mut self, dsq: u64, only: Option<usize>) -> bool {
        let cpu = match self.ctx {
            Ctx::Dispatch { cpu } => cpu,
            _ => {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    "dsq_move_to_local outside ops.dispatch".into(),
                );
                return false;
            }
        };
        let d = if dsq == ffi::SCX_DSQ_GLOBAL {
            &self.global
        } else if let Some(d) = self.dsqs.get(&dsq) {
            d
        } else {
            self.error(
                ffi::SCX_EXIT_ERROR_BPF,
                format!("move from non-existent DSQ 0x{dsq:x}"),
            );
            return false;
        };
        if d.len() == 0 {
            return false;
        }
        let tasks = &self.tasks;
        let found = d.find(|t| tasks[t].allowed[cpu] && only.is_none_or(|o| o == t));
        let which = if dsq == ffi::SCX_DSQ_GLOBAL {
            LockId::Global
        } else {
            LockId::Dsq(dsq)
        };
        self.lock(which, cpu, self.cfg.costs.dsq_lock_hold_ns);
        let Some(t) = found else {
            return false;
        };
        let key = self.tasks[t].enq_key;
        if dsq == ffi::SCX_DSQ_GLOBAL {
            self.global.remove(t, key);
        } else {
            self.dsqs.get_mut(&dsq).unwrap().remove(t, key);
        }
        let src = self.tasks[t].cpu;
        if src != cpu {
            // move_remote_task_to_local_dsq: lock the task's runqueue
            self.lock(LockId::Rq(src), cpu, self.cfg.costs.rq_lock_hold_ns);
            self.tasks[t].cpu = cpu;
        }
        self.cpus[cpu].local.push_back(t);
        self.tasks[t].loc = Loc::Local(cpu);
        true
    }

    /// Makes @cpu run its scheduler soon (an IPI if from another CPU).
    fn resched(&mut self, cpu: usize, from: usize) {
        if self.cpus[cpu].resched_pending {
            return;
        }
        self.cpus[cpu].resched_pending = true;
        let delay = if cpu == from {
            0.0
        } else {
            self.cfg.costs.ipi_ns
        };
        self.push(self.now + delay as u64, Ev::Resched { cpu });
    }

    fn account(&mut self) {
        let dt = self.now - self.last_acct;
        if dt > 0 && self.nr_waiting > 0 && self.nr_idle > 0 {
            self.idle_runnable_ns += self.nr_waiting.min(self.nr_idle) as u128 * dt as u128;
        }
        self.last_acct = self.now;
    }

    fn set_state(&mut self, t: usize, s: TState) {
        let old = self.tasks[t].state;
        if old == TState::Queued {
            self.nr_waiting -= 1;
        }
        if s == TState::Dead {
            self.nr_dead += 1;
        }
        if s == TState::Queued {
            self.nr_waiting += 1;
            self.tasks[t].runnable_since = self.now;
        }
        self.tasks[t].state = s;
        let runnable = matches!(s, TState::Queued | TState::Running);
        unsafe { ffi::sim_task_set_queued(self.tasks[t].p, runnable) };
    }
}

#[derive(Clone, Copy)]
enum LockId {
    Rq(usize),
    Dsq(u64),
    Global,
}

/// Processes kicks recorded by the last callbacks (never lost: each one
/// leads to a Resched unless its condition is false).
fn flush_kicks() {
    let e = eng();
    let kicks = std::mem::take(&mut e.kicks);
    let from = e.cur_cpu;
    for (cpu, flags) in kicks {
        let idle = e.cpus[cpu].curr.is_none();
        if flags & ffi::SCX_KICK_IDLE != 0 && !idle {
            continue;
        }
        if flags & ffi::SCX_KICK_PREEMPT != 0 {
            if let Some(t) = e.cpus[cpu].curr {
                unsafe { *ffi::sim_task_slice(e.tasks[t].p) = 0 };
            }
        }
        e.cpus[from].overhead += if cpu == from { 0.0 } else { 200.0 };
        e.resched(cpu, from);
    }
}

fn set_ctx(cpu: usize, ctx: Ctx) {
    let e = eng();
    e.cur_cpu = cpu;
    e.ctx = ctx;
    e.cpus[cpu].overhead += e.cfg.costs.bpf_call_ns;
}

/// Charges @cpu's current task for the time since its last update:
/// p->scx.slice decreases, runtime grows.
fn update_curr(cpu: usize) {
    let e = eng();
    let Some(t) = e.cpus[cpu].curr else { return };
    let dt = e.now.saturating_sub(e.cpus[cpu].last_update);
    e.cpus[cpu].last_update = e.now;
    e.tasks[t].runtime += dt;
    e.cpus[cpu].busy_ns += dt;
    let llc = e.m.cpu(cpu).llc;
    let g = e.tasks[t].spec.cgroup;
    let nllc = e.m.topo.llcs.len();
    e.group_llc_ns.entry(g).or_insert_with(|| vec![0; nllc])[llc] += dt;
    unsafe {
        let s = ffi::sim_task_slice(e.tasks[t].p);
        *s = s.read().saturating_sub(dt);
    }
}

/// Work done on @cpu's current step since the segment started.
fn settle_work(cpu: usize) {
    let e = eng();
    let Some(t) = e.cpus[cpu].curr else { return };
    let c = &e.cpus[cpu];
    if e.now > c.seg_start {
        let done = (e.now - c.seg_start) as f64 * c.seg_rate;
        e.tasks[t].work_left = (e.tasks[t].work_left - done).max(0.0);
    }
    e.cpus[cpu].seg_start = e.now.max(e.cpus[cpu].seg_start);
}

/// Speed of a task on @cpu now: capacity, SMT sharing, LLC pressure.
fn rate(cpu: usize, t: usize) -> f64 {
    let e = eng();
    let cap = e.m.cpu(cpu).capacity as f64 / 1024.0;
    let mut r = e.m.speed * cap;
    if e.m.siblings[cpu].iter().any(|&s| e.cpus[s].curr.is_some()) {
        r *= e.cfg.costs.smt_rate.max(0.05);
    }
    if e.tasks[t].spec.memory_bound {
        let llc = e.m.cpu(cpu).llc;
        let ws: u64 = e.m.topo.llcs[llc]
            .iter()
            .filter_map(|&c| e.cpus[c].curr)
            .filter(|&x| e.tasks[x].spec.memory_bound)
            .map(|x| e.tasks[x].spec.ws_bytes)
            .sum::<u64>()
            + if e.cpus[cpu].curr == Some(t) {
                0
            } else {
                e.tasks[t].spec.ws_bytes
            };
        let over = ws as f64 / e.m.llc_bytes as f64;
        if over > 1.0 {
            r /= 1.0 + e.cfg.costs.llc_interference * (over - 1.0).min(4.0);
        }
    }
    r
}

/// Starts (or continues) the current task's step on @cpu after overhead.
fn start_segment(cpu: usize) {
    let e = eng();
    let Some(t) = e.cpus[cpu].curr else { return };
    let r = rate(cpu, t);
    let e = eng();
    let ovh = std::mem::take(&mut e.cpus[cpu].overhead);
    e.cpus[cpu].gen += 1;
    e.cpus[cpu].seg_start = e.now + ovh as u64;
    e.cpus[cpu].seg_rate = r;
    let end = e.cpus[cpu].seg_start + (e.tasks[t].work_left / r).ceil() as u64;
    let gen = e.cpus[cpu].gen;
    e.push(end.max(e.now), Ev::RunDone { cpu, gen });
}

/// try_to_wake_up(@t) from @from.
pub fn wake(t: usize, from: usize, sync: bool) {
    let e = eng();
    if e.tasks[t].state != TState::Sleeping {
        return;
    }
    e.account();
    e.set_state(t, TState::Queued);
    e.tasks[t].woken_at = Some(e.now);
    e.cpus[from].overhead += e.cfg.costs.ttwu_ns;
    let prev = e.tasks[t].cpu;
    let mut cpu = prev;
    if e.tasks[t].nr_allowed > 1 {
        set_ctx(from, Ctx::Select { t });
        let p = eng().tasks[t].p;
        let wf = ffi::SCX_WAKE_TTWU | if sync { ffi::SCX_WAKE_SYNC } else { 0 };
        let mut has = 0;
        let sel = unsafe { ffi::sim_op_select_cpu(p, prev as i32, wf, &mut has) };
        let e = eng();
        e.ctx = Ctx::None;
        if has != 0 {
            if sel < 0 || sel as usize >= e.cpus.len() {
                e.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    format!("select_cpu returned invalid CPU {sel}"),
                );
            } else if e.tasks[t].allowed[sel as usize] {
                cpu = sel as usize;
            }
        }
    } else {
        cpu = e.tasks[t].allowed.iter().position(|&a| a).unwrap();
    }
    let e = eng();
    if !e.tasks[t].allowed[cpu] {
        cpu = e.tasks[t].allowed.iter().position(|&a| a).unwrap();
    }
    e.tasks[t].cpu = cpu;
    // the kernel's ttwu_queue_cond(): queue the wakeup on the target's
    // wake list (IPI; the target does the enqueue) or take its rq lock
    let costs = &e.cfg.costs;
    let share = if costs.ttwu_boundary_l2 {
        e.m.cpu(from).l2 == e.m.cpu(cpu).l2
    } else {
        e.m.cpu(from).llc == e.m.cpu(cpu).llc
    };
    let queued = e.ops_flags & ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP != 0 && cpu != from && !share;
    if queued {
        e.wakeups_queued += 1;
        e.cpus[from].overhead += costs.ttwu_queue_ns + costs.line(e.m.dist(from, cpu));
        let at = e.now + costs.ipi_ns as u64;
        e.push(at, Ev::TtwuPending { cpu, t, from });
        flush_kicks();
        return;
    }
    if cpu == from {
        e.wakeups_local += 1;
    } else {
        e.wakeups_remote_lock += 1;
    }
    let hold = e.cfg.costs.rq_lock_hold_ns;
    e.lock(LockId::Rq(cpu), from, hold);
    activate(t, cpu, from, ffi::SCX_ENQ_WAKEUP);
    flush_kicks();
}

/// enqueue_task_scx: ops.runnable, then the direct dispatch or ops.enqueue.
fn activate(t: usize, cpu: usize, ctx_cpu: usize, enq_flags: u64) {
    let p = eng().tasks[t].p;
    set_ctx(ctx_cpu, Ctx::Other);
    unsafe { ffi::sim_op_runnable(p, enq_flags) };
    do_enqueue(t, cpu, ctx_cpu, enq_flags);
}

/// do_enqueue_task: direct dispatch if select_cpu inserted, else ops.enqueue;
/// SCX_DSQ_LOCAL resolves to @cpu's local DSQ after the callback returns.
fn do_enqueue(t: usize, cpu: usize, ctx_cpu: usize, enq_flags: u64) {
    let e = eng();
    e.tasks[t].loc = Loc::None;
    if let Some((dsq, slice, vt, fl, v)) = e.tasks[t].ddsp.take() {
        e.cur_cpu = ctx_cpu;
        e.dispatch_enqueue(t, dsq, slice, vt, fl | enq_flags, v, cpu);
        return;
    }
    let p = e.tasks[t].p;
    set_ctx(ctx_cpu, Ctx::Enqueue { t });
    let has = unsafe { ffi::sim_op_enqueue(p, enq_flags) };
    let e = eng();
    e.ctx = Ctx::None;
    if has == 0 {
        e.tasks[t].ddsp = Some((ffi::SCX_DSQ_GLOBAL, ffi::SCX_SLICE_DFL, 0, 0, false));
    }
    e.enqueues += 1;
    if let Some((dsq, slice, vt, fl, v)) = e.tasks[t].ddsp.take() {
        e.enqueue_matched += 1;
        e.cur_cpu = ctx_cpu;
        e.dispatch_enqueue(t, dsq, slice, vt, fl | enq_flags, v, cpu);
    } else {
        e.tasks[t].loc = Loc::Custody;
    }
}

/// Consumes the global DSQ into @cpu's local DSQ (the kernel does this
/// before and after ops.dispatch).
fn consume_global(cpu: usize) -> bool {
    let e = eng();
    if e.global.len() == 0 {
        return false;
    }
    let saved = e.ctx;
    e.ctx = Ctx::Dispatch { cpu };
    let r = e.move_to_local(ffi::SCX_DSQ_GLOBAL);
    e.ctx = saved;
    r
}

/// __schedule() on @cpu: balance (ops.dispatch), put prev, pick next.
fn schedule(cpu: usize) {
    let e = eng();
    e.account();
    e.cpus[cpu].resched_pending = false;
    let prev = e.cpus[cpu].curr;
    settle_work(cpu);
    update_curr(cpu);
    let e = eng();
    let prev_runnable = prev.is_some_and(|t| e.tasks[t].state == TState::Running);
    let slice_left = |t: usize| unsafe { *ffi::sim_task_slice(eng().tasks[t].p) } > 0;
    let mut keep = prev_runnable && slice_left(prev.unwrap());
    if !keep && e.cpus[cpu].local.is_empty() && !consume_global(cpu) {
        let e = eng();
        let prev_p = prev.map_or(std::ptr::null_mut(), |t| e.tasks[t].p);
        let mut loops = 0;
        loop {
            eng().dispatch_buf.clear();
            set_ctx(cpu, Ctx::Dispatch { cpu });
            let has = unsafe { ffi::sim_op_dispatch(cpu as i32, prev_p) };
            let e = eng();
            e.ctx = Ctx::None;
            if has == 0 {
                break;
            }
            let buf = std::mem::take(&mut e.dispatch_buf);
            let n = buf.len();
            e.cur_cpu = cpu;
            for (t, dsq, slice, vt, fl, v) in buf {
                if e.tasks[t].state != TState::Queued {
                    continue; // raced: already running or asleep
                }
                if let Loc::Dsq(id) = e.tasks[t].loc {
                    let key = e.tasks[t].enq_key;
                    if id == ffi::SCX_DSQ_GLOBAL {
                        e.global.remove(t, key);
                    } else if let Some(d) = e.dsqs.get_mut(&id) {
                        d.remove(t, key);
                    }
                    e.tasks[t].loc = Loc::None;
                }
                if let Loc::Local(c) = e.tasks[t].loc {
                    e.cpus[c].local.retain(|&x| x != t);
                    e.tasks[t].loc = Loc::None;
                }
                e.dispatch_enqueue(t, dsq, slice, vt, fl, v, cpu);
            }
            if prev_runnable && slice_left(prev.unwrap()) {
                keep = true;
                break;
            }
            let e = eng();
            if !e.cpus[cpu].local.is_empty() || consume_global(cpu) {
                break;
            }
            loops += 1;
            if loops >= ffi::SCX_DSP_MAX_LOOPS {
                eng().kick(cpu, 0);
                break;
            }
            if n == 0 {
                break;
            }
        }
        let e = eng();
        if !keep
            && e.cpus[cpu].local.is_empty()
            && prev_runnable
            && e.ops_flags & ffi::SCX_OPS_ENQ_LAST == 0
        {
            // nothing else to run: prev keeps the CPU (slice refilled)
            keep = true;
            unsafe {
                let s = ffi::sim_task_slice(e.tasks[prev.unwrap()].p);
                if *s == 0 {
                    *s = ffi::SCX_SLICE_DFL;
                }
            }
        }
    }
    if keep {
        start_segment(cpu);
        flush_kicks();
        return;
    }
    // put_prev_task_scx: a runnable prev is stopped and enqueued again
    if let Some(t) = prev {
        stop_curr(cpu, t);
        if prev_runnable {
            let e = eng();
            e.set_state(t, TState::Queued);
            set_ctx(cpu, Ctx::Other);
            unsafe { ffi::sim_op_stopping(eng().tasks[t].p, true) };
            // put_prev_task_scx: with SCX_OPS_ENQ_LAST, a prev that leaves its
            // CPU to idle is enqueued with SCX_ENQ_LAST
            let e = eng();
            let last = e.ops_flags & ffi::SCX_OPS_ENQ_LAST != 0 && e.cpus[cpu].local.is_empty();
            do_enqueue(t, cpu, cpu, if last { ffi::SCX_ENQ_LAST } else { 0 });
        }
    }
    pick_next(cpu);
    flush_kicks();
}

/// Takes @t off @cpu (no callbacks).
fn stop_curr(cpu: usize, t: usize) {
    let e = eng();
    e.cpus[cpu].curr = None;
    e.cpus[cpu].gen += 1;
    if e.cfg.trace && e.trace.len() < e.cfg.trace_limit {
        let start = e.tasks[t].woken_at.unwrap_or(0);
        let _ = start;
    }
}

/// Runs the first task of @cpu's local DSQ, or idles.
fn pick_next(cpu: usize) {
    let e = eng();
    let next = e.cpus[cpu].local.pop_front();
    let Some(t) = next else {
        // entering idle (again, after a kick found nothing) sets the idle
        // bit, as the kernel's idle-class switch does
        e.set_idle(cpu, true);
        if e.cpus[cpu].idle_since.is_none() {
            e.cpus[cpu].idle_since = Some(e.now);
            e.nr_idle += 1;
            if unsafe { ffi::sim_has_update_idle() } != 0 {
                set_ctx(cpu, Ctx::Other);
                unsafe { ffi::sim_op_update_idle(cpu as i32, true) };
            }
        }
        eng().cpus[cpu].overhead = 0.0;
        return;
    };
    if let Some(_since) = e.cpus[cpu].idle_since.take() {
        e.nr_idle -= 1;
        e.set_idle(cpu, false);
        if unsafe { ffi::sim_has_update_idle() } != 0 {
            set_ctx(cpu, Ctx::Other);
            unsafe { ffi::sim_op_update_idle(cpu as i32, false) };
        }
    }
    let e = eng();
    e.set_state(t, TState::Running);
    e.tasks[t].loc = Loc::None;
    e.tasks[t].cpu = cpu;
    if let Some(w) = e.tasks[t].woken_at.take() {
        e.wake_lat.push(e.now - w);
    }
    // context switch, and the cache refill of a migration
    e.ctx_switches += 1;
    let c = &e.cfg.costs;
    let mut ovh = c.ctx_switch_ns * if e.tasks[t].spec.mm_switch { 1.2 } else { 1.0 };
    if let Some(last) = e.tasks[t].last_ran {
        let d = e.m.dist(last, cpu);
        if d != Dist::Same {
            e.migrations[d as usize] += 1;
            ovh += c.refill(e.tasks[t].spec.ws_bytes, d);
        }
    }
    e.tasks[t].last_ran = Some(cpu);
    e.cpus[cpu].overhead += ovh;
    e.cpus[cpu].curr = Some(t);
    e.cpus[cpu].last_update = e.now;
    if !e.cpus[cpu].tick_pending {
        e.cpus[cpu].tick_pending = true;
        let tick = 1_000_000_000 / e.cfg.hz;
        let phase = (cpu as u64 * 7919) % tick;
        let next = (e.now.saturating_sub(phase) / tick + 1) * tick + phase;
        e.push(next, Ev::Tick { cpu });
    }
    if e.cfg.trace && e.trace.len() < e.cfg.trace_limit {
        e.trace.push((cpu, t, e.now, u64::MAX));
    }
    set_ctx(cpu, Ctx::Other);
    unsafe { ffi::sim_op_running(eng().tasks[t].p) };
    let e = eng();
    if e.tasks[t].in_step {
        start_segment(cpu);
    } else {
        next_step(cpu, t);
    }
}

/// Asks the workload what @t (current on @cpu) does next, and does it.
fn next_step(cpu: usize, t: usize) {
    let e = eng();
    let mut wakes = Vec::new();
    let step = e.wl.step(t, e.now, &mut wakes);
    for w in wakes {
        wake(w, cpu, true);
    }
    let e = eng();
    match step {
        Step::Run(ns) => {
            e.tasks[t].work_left = ns as f64;
            e.tasks[t].in_step = true;
            start_segment(cpu);
        }
        Step::Block | Step::Sleep(_) | Step::Exit => {
            e.tasks[t].in_step = false;
            update_curr(cpu);
            let e = eng();
            let p = e.tasks[t].p;
            close_trace(cpu, t);
            stop_curr(cpu, t);
            let e = eng();
            if let Step::Sleep(ns) = step {
                e.push(e.now + ns, Ev::TimerWake { t });
            }
            // dequeue_task_scx(SLEEP): stopping(false), quiescent
            e.set_state(
                t,
                if step == Step::Exit {
                    TState::Dead
                } else {
                    TState::Sleeping
                },
            );
            set_ctx(cpu, Ctx::Other);
            unsafe {
                ffi::sim_op_stopping(p, false);
                ffi::sim_op_quiescent(p, ffi::SCX_DEQ_SLEEP);
            }
            if step == Step::Exit {
                unsafe {
                    ffi::sim_op_disable(p);
                    ffi::sim_op_exit_task(p, false);
                }
                let e = eng();
                e.tasks[t].exited_at = e.now;
            }
            schedule(cpu);
        }
    }
}

fn close_trace(cpu: usize, t: usize) {
    let e = eng();
    if !e.cfg.trace {
        return;
    }
    if let Some(seg) = e
        .trace
        .iter_mut()
        .rev()
        .take(4096)
        .find(|s| s.0 == cpu && s.1 == t && s.3 == u64::MAX)
    {
        seg.3 = e.now;
    }
}

fn on_event(ev: Ev) {
    match ev {
        Ev::RunDone { cpu, gen } => {
            let e = eng();
            if e.cpus[cpu].gen != gen {
                return;
            }
            let Some(t) = e.cpus[cpu].curr else { return };
            settle_work(cpu);
            let e = eng();
            e.tasks[t].work_left = 0.0;
            e.tasks[t].in_step = false;
            if e.exit.is_some() {
                return;
            }
            next_step(cpu, t);
        }
        Ev::Tick { cpu } => {
            let e = eng();
            e.cpus[cpu].tick_pending = false;
            let Some(t) = e.cpus[cpu].curr else { return };
            update_curr(cpu);
            set_ctx(cpu, Ctx::Other);
            unsafe { ffi::sim_op_tick(eng().tasks[t].p) };
            let e = eng();
            let tick = 1_000_000_000 / e.cfg.hz;
            e.cpus[cpu].tick_pending = true;
            e.push(e.now + tick, Ev::Tick { cpu });
            if unsafe { *ffi::sim_task_slice(e.tasks[t].p) } == 0 {
                close_trace(cpu, t);
                e.cpus[cpu].gen += 1;
                schedule_preempt(cpu);
            }
            flush_kicks();
        }
        Ev::Resched { cpu } => {
            let e = eng();
            match e.cpus[cpu].curr {
                None => schedule(cpu),
                Some(t) => {
                    if unsafe { *ffi::sim_task_slice(e.tasks[t].p) } == 0 {
                        close_trace(cpu, t);
                        schedule_preempt(cpu);
                    } else {
                        e.cpus[cpu].resched_pending = false;
                    }
                }
            }
        }
        Ev::TimerWake { t } => {
            let e = eng();
            let from = e.tasks[t].cpu;
            wake(t, from, false);
        }
        Ev::TtwuPending { cpu, t, from: _ } => {
            let e = eng();
            let hold = e.cfg.costs.rq_lock_hold_ns;
            e.lock(LockId::Rq(cpu), cpu, hold);
            if e.cpus[cpu].curr.is_some() {
                // the IPI interrupts the running task
                e.cpus[cpu].overhead += e.cfg.costs.ipi_ns * 0.3;
            }
            activate(t, cpu, cpu, ffi::SCX_ENQ_WAKEUP);
            flush_kicks();
        }
        Ev::Timer { id, gen } => {
            let e = eng();
            let Some(&(map, cb, cpu, g, key)) = e.timers.get(&id) else {
                return;
            };
            if g != gen || cb == 0 {
                return;
            }
            let mut key = key;
            set_ctx(cpu, Ctx::Other);
            let f: extern "C" fn(*mut std::ffi::c_void, *mut u32, *mut std::ffi::c_void) -> i32 =
                unsafe { std::mem::transmute(cb) };
            f(map as *mut _, &mut key, id as *mut _);
            flush_kicks();
        }
        Ev::Check => check(),
        Ev::Balance => {
            let e = eng();
            if let Some(mut b) = e.gb.take() {
                b.tick(e);
                let e = eng();
                let at = e.now + b.period_ns();
                e.gb = Some(b);
                e.push(at, Ev::Balance);
            }
        }
    }
}

/// Preempts @cpu's current task (slice exhausted) and reschedules.
fn schedule_preempt(cpu: usize) {
    let e = eng();
    if let Some(t) = e.cpus[cpu].curr {
        settle_work(cpu);
        let e = eng();
        e.tasks[t].in_step = e.tasks[t].work_left > 0.0;
        if !e.tasks[t].in_step {
            // finished exactly at the tick: it still needs its next step
            e.tasks[t].in_step = true;
            e.tasks[t].work_left = 1.0;
        }
    }
    schedule(cpu);
    let e = eng();
    if let Some(t) = e.cpus[cpu].curr {
        if e.cfg.trace
            && e.trace.last().is_some_and(|s| s.1 != t || s.0 != cpu)
            && e.trace.len() < e.cfg.trace_limit
        {
            e.trace.push((cpu, t, e.now, u64::MAX));
        }
    }
}

/// Periodic invariant checks and the stall watchdog.
fn check() {
    let e = eng();
    let now = e.now;
    let bound = e.cfg.idle_bound_ns;
    let mut msgs = Vec::new();
    for (i, t) in e.tasks.iter().enumerate() {
        if t.state != TState::Queued {
            continue;
        }
        let waited = now - t.runnable_since;
        if waited > e.cfg.watchdog_ns {
            e.exit = Some((
                ffi::SCX_EXIT_ERROR_STALL,
                format!(
                    "{}[{}] stalled: runnable for {} ms",
                    t.spec.name,
                    i + 1,
                    waited / 1_000_000
                ),
            ));
            break;
        }
        if waited <= bound {
            continue;
        }
        // a waiting task, and a CPU it may run on, in the LLC it waits
        // for, idle for the whole wait: the work was not conserved
        let llc = e.m.cpu(t.cpu).llc;
        if let Loc::Local(c) = t.loc {
            if e.cpus[c].curr.is_none() {
                msgs.push(format!(
                    "task {} waits on the local DSQ of idle CPU {c}",
                    i + 1
                ));
            }
            continue;
        }
        for &c in &e.m.topo.llcs[llc] {
            if t.allowed[c] && e.cpus[c].idle_since.is_some_and(|s| s <= t.runnable_since) {
                msgs.push(format!(
                    "CPU {c} idle for {} us while task {} waited {} us in its LLC",
                    (now - e.cpus[c].idle_since.unwrap()) / 1000,
                    i + 1,
                    waited / 1000
                ));
                break;
            }
        }
    }
    for m in msgs {
        e.violation(m);
    }
    e.push(now + 1_000_000, Ev::Check);
}

/// Result of one simulation.
pub struct Outcome {
    pub json: Value,
    pub ok: bool,
}

impl Engine {
    /// Loads the scheduler, runs the workload, returns the report.
    pub fn run(mut self: Box<Self>, sched_label: &str) -> Outcome {
        unsafe {
            assert!(
                !USED,
                "mosaic-sim: one simulation per process (the scheduler's globals)"
            );
            USED = true;
            ENGINE = &mut *self as *mut Engine;
        }
        std::mem::forget(self);
        unsafe { ffi::sim_register_maps() };
        let e = eng();
        e.ops_flags = unsafe { ffi::sim_ops_flags() } | e.cfg.ops_flags_or;
        let timeout = unsafe { ffi::sim_ops_timeout_ms() };
        if timeout > 0 {
            e.cfg.watchdog_ns = timeout as u64 * 1_000_000;
        }
        let batch = unsafe { ffi::sim_ops_dispatch_max_batch() };
        if batch > 0 {
            e.dispatch_max = batch as usize;
        }
        set_ctx(0, Ctx::Other);
        let rc = unsafe { ffi::sim_op_init() };
        let e = eng();
        if rc != 0 {
            e.error(ffi::SCX_EXIT_ERROR, format!("ops.init failed: {rc}"));
        }
        let n = e.cpus.len();
        for c in 0..n {
            set_ctx(c, Ctx::Other);
            unsafe { ffi::sim_op_cpu_online(c as i32) };
        }
        // cgroups, then tasks: init_task, enable, and a first wakeup
        let specs = eng().wl.tasks();
        let start = eng().wl.first_cpu();
        let ngroups = specs.iter().map(|s| s.cgroup).max().unwrap_or(0) + 1;
        let mut cgroups = Vec::new();
        for g in 0..ngroups {
            let cg = unsafe { ffi::sim_cgroup_alloc(g as u64 + 1, if g == 0 { 0 } else { 1 }) };
            set_ctx(0, Ctx::Other);
            unsafe { ffi::sim_op_cgroup_init(cg, 100) };
            cgroups.push(cg);
        }
        eng().cgroups = cgroups.clone();
        // the balancer registers the cgroups below --gb-parent: all but root
        if let Some(cfg) = eng().cfg.group_balancer.clone() {
            let e = eng();
            let mut b = crate::group::Balancer::new(cfg, e);
            for &cg in &cgroups[1..] {
                b.register(e, unsafe { ffi::sim_cgroup_id(cg) });
            }
            let first = b.period_ns();
            e.gb = Some(b);
            e.push(first, Ev::Balance);
        }
        for (i, s) in specs.into_iter().enumerate() {
            let e = eng();
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
            let nr_allowed = allowed.iter().filter(|&&a| a).count();
            let first = allowed.iter().position(|&a| a).unwrap_or(0);
            // spread the initial placement like fork balancing does
            let cpu = (first + start + i) % n;
            let cpu = if allowed[cpu] { cpu } else { first };
            let cg = cgroups[s.cgroup];
            unsafe { ffi::sim_task_set_cgroup(p, cg) };
            e.tasks.push(Task {
                p,
                spec: s,
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
            });
            set_ctx(cpu, Ctx::Other);
            let rc = unsafe { ffi::sim_op_init_task(p, cg, true) };
            if rc != 0 {
                eng().error(ffi::SCX_EXIT_ERROR, format!("init_task failed: {rc}"));
            }
            unsafe { ffi::sim_op_enable(p) };
        }
        let e = eng();
        let nt = e.tasks.len();
        for t in 0..nt {
            eng().tasks[t].state = TState::Sleeping;
            let cpu = eng().tasks[t].cpu;
            wake(t, cpu, false);
        }
        let e = eng();
        e.push(1_000_000, Ev::Check);
        let mut end = 0;
        while let Some(Reverse((at, _, ev))) = e.events.pop() {
            if e.exit.is_some() {
                break;
            }
            if at > e.cfg.max_ns {
                end = e.cfg.max_ns;
                break;
            }
            e.now = at;
            e.events_done += 1;
            on_event(ev);
            if e.nr_dead == e.tasks.len() {
                end = e.now;
                break;
            }
            if e.wl.done() {
                end = e.now;
                break;
            }
        }
        let e = eng();
        if end == 0 {
            end = e.now;
        }
        e.now = end;
        let (kind, msg) = e
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
        set_ctx(0, Ctx::Other);
        unsafe { ffi::sim_op_exit(kind, 0, reason.as_ptr(), cmsg.as_ptr()) };
        let e = eng();
        e.report(end, kind, &msg, sched_label)
    }

    fn report(&mut self, end: u64, kind: i32, msg: &str, label: &str) -> Outcome {
        let alive: Vec<usize> = (0..self.tasks.len())
            .filter(|&t| self.tasks[t].state != TState::Dead)
            .collect();
        let completed = alive.is_empty();
        if kind < 1024 && !completed && end < self.cfg.max_ns {
            self.violation(format!("{} tasks never finished", alive.len()));
        }
        let custody = self.tasks.iter().filter(|t| t.loc == Loc::Custody).count() as u64;
        if self.enqueues != self.enqueue_matched + custody + self.custody_dequeued {
            self.violation(format!(
                "enqueues {} != inserted {} + held {}",
                self.enqueues, self.enqueue_matched, custody
            ));
        }
        let names = crate::intf::STAT_NAMES;
        let stats = self.maps.combine_percpu("stats", |i| {
            names.get(i).is_some_and(|n| n.ends_with("_max_us"))
        });
        let mut counters = serde_json::Map::new();
        for (i, n) in names.iter().enumerate() {
            counters.insert(n.to_string(), json!(stats.get(i).copied().unwrap_or(0)));
        }
        let mut maps = serde_json::Map::new();
        for (name, v) in self.maps.all_percpu_sums() {
            if name != "stats" {
                maps.insert(name, json!(v));
            }
        }
        let mut migr = serde_json::Map::new();
        for d in 1..6 {
            migr.insert(DIST_NAMES[d].into(), json!(self.migrations[d]));
        }
        let (mut dsq_wait, mut dsq_acq, mut dsq_cont) = (0u64, 0u64, 0u64);
        for d in self.dsqs.values().chain(std::iter::once(&self.global)) {
            dsq_wait += d.lock.wait_ns;
            dsq_acq += d.lock.acquisitions;
            dsq_cont += d.lock.contended;
        }
        let rq_wait: u64 = self.cpus.iter().map(|c| c.rq_lock.wait_ns).sum();
        let rq_acq: u64 = self.cpus.iter().map(|c| c.rq_lock.acquisitions).sum();
        let rq_cont: u64 = self.cpus.iter().map(|c| c.rq_lock.contended).sum();
        let mut groups = serde_json::Map::new();
        for (g, per_llc) in &self.group_llc_ns {
            if *g == 0 && self.group_llc_ns.len() > 1 {
                continue;
            }
            let total: u64 = per_llc.iter().sum();
            let best = per_llc.iter().copied().max().unwrap_or(0);
            groups.insert(
                format!("cgroup{g}"),
                json!({"runtime_ns": total, "home_llc": per_llc.iter().position(|&x| x == best),
                       "exclusivity": if total > 0 { best as f64 / total as f64 } else { 0.0 }}),
            );
        }
        let busy: u64 = self.cpus.iter().map(|c| c.busy_ns).sum();
        let ok = kind < 1024 && self.violations.is_empty();
        let json = json!({
            "machine": self.m.name,
            "nr_cpus": self.cpus.len(),
            "scheduler": label,
            "seed": self.cfg.seed,
            "hz": self.cfg.hz,
            "completed": completed,
            "completion_time_s": end as f64 / 1e9,
            "workload": self.wl.metrics(end),
            "wakeup_latency_ns": percentiles(&self.wake_lat),
            "migrations": migr,
            "context_switches": self.ctx_switches,
            "counters": counters,
            "maps": maps,
            "inserts": {"direct_local": self.inserts_local, "user_dsq": self.inserts_dsq, "global": self.inserts_global},
            "wakeups": {"local": self.wakeups_local, "remote_lock": self.wakeups_remote_lock, "queued_ipi": self.wakeups_queued},
            "idle_while_runnable_s": self.idle_runnable_ns as f64 / 1e9,
            "cpu_utilisation": busy as f64 / (end.max(1) as f64 * self.cpus.len() as f64),
            "lock_wait": {"dsq_wait_s": dsq_wait as f64 / 1e9, "dsq_acquisitions": dsq_acq, "dsq_contended": dsq_cont,
                          "rq_wait_s": rq_wait as f64 / 1e9, "rq_acquisitions": rq_acq, "rq_contended": rq_cont},
            "groups": groups,
            "group_balancer": self.gb.as_ref().map_or(Value::Null, |b| b.to_json()),
            "exit": {"kind": kind, "msg": msg},
            "invariants": {"ok": self.violations.is_empty(), "violations": self.violations},
            "events": self.events_done,
            "costs": self.cfg.costs,
        });
        Outcome { json, ok }
    }

    /// Chrome trace events (Perfetto loads them): one track per CPU.
    pub fn trace_json(&self) -> Value {
        let mut ev = Vec::new();
        for c in 0..self.cpus.len() {
            ev.push(json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": c, "args": {"name": format!("CPU {c}")}}));
        }
        for &(cpu, t, s, e) in &self.trace {
            let e = if e == u64::MAX { self.now } else { e };
            ev.push(json!({"name": format!("{}[{}]", self.tasks[t].spec.name, t + 1), "ph": "X", "pid": 1, "tid": cpu,
                           "ts": s as f64 / 1000.0, "dur": (e.saturating_sub(s)) as f64 / 1000.0}));
        }
        json!({"traceEvents": ev, "displayTimeUnit": "ns"})
    }
}

/// The trace of the finished run (after Engine::run).
pub fn trace_of_last_run() -> Value {
    eng().trace_json()
}
