//! The kernel's sched_ext rules around the scheduler's callbacks: wakeup
//! (select_cpu, queued or locked ttwu), enqueue (direct dispatch or
//! ops.enqueue), __schedule (ops.dispatch, put_prev, pick_next), ticks and
//! slice preemption, kicks, and the work/runtime accounting of a run.
use super::locks::LockId;
use super::state::{Ctx, Ev, Insert, Loc, Step, TState};
use super::Engine;
use crate::cost::Dist;
use crate::ffi;

impl Engine {
    /// Makes @cpu run its scheduler soon (an IPI if from another CPU).
    pub(super) fn resched(&mut self, cpu: usize, from: usize) {
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

    /// Adds the time since the last call during which a task waited while a
    /// CPU idled.
    pub(super) fn account(&mut self) {
        let dt = self.now - self.last_acct;
        if dt > 0 && self.nr_waiting > 0 && self.nr_idle > 0 {
            self.idle_runnable_ns += self.nr_waiting.min(self.nr_idle) as u128 * dt as u128;
        }
        self.last_acct = self.now;
    }

    /// Moves @t to state @s, keeping the counts and SCX_TASK_QUEUED in step.
    pub(super) fn set_state(&mut self, t: usize, s: TState) {
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

/// Processes kicks recorded by the last callbacks (never lost: each one
/// leads to a Resched unless its condition is false).
pub(super) fn flush_kicks(e: &mut Engine) {
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

/// Enters callback context @ctx on @cpu (charging the BPF call).
pub(super) fn set_ctx(e: &mut Engine, cpu: usize, ctx: Ctx) {
    e.cur_cpu = cpu;
    e.ctx = ctx;
    e.cpus[cpu].overhead += e.cfg.costs.bpf_call_ns;
}

/// Charges @cpu's current task for the time since its last update:
/// p->scx.slice decreases, runtime grows.
pub(super) fn update_curr(e: &mut Engine, cpu: usize) {
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
pub(super) fn settle_work(e: &mut Engine, cpu: usize) {
    let Some(t) = e.cpus[cpu].curr else { return };
    let c = &e.cpus[cpu];
    if e.now > c.seg_start {
        let done = (e.now - c.seg_start) as f64 * c.seg_rate;
        e.tasks[t].work_left = (e.tasks[t].work_left - done).max(0.0);
    }
    e.cpus[cpu].seg_start = e.now.max(e.cpus[cpu].seg_start);
}

/// Speed of a task on @cpu now: capacity, SMT sharing, LLC pressure, and
/// the lines it shares with its group's other running tasks.
fn rate(e: &Engine, cpu: usize, t: usize) -> f64 {
    let cap = e.m.cpu(cpu).capacity as f64 / 1024.0;
    let mut r = e.m.speed * cap;
    if e.tcg.is_some() {
        // one host thread: no sibling shares a core, no cache is shared
        return r;
    }
    if e.m.siblings[cpu].iter().any(|&s| e.cpus[s].curr.is_some()) {
        r *= e.cfg.costs.smt_rate.max(0.05);
    }
    let spec = &e.tasks[t].spec;
    if spec.memory_bound {
        // working sets in this LLC: each running memory-bound task's, a
        // group's shared one once
        let llc = e.m.cpu(cpu).llc;
        let mut groups: Vec<usize> = Vec::new();
        let mut ws = 0u64;
        let running = e.m.topo.llcs[llc]
            .iter()
            .filter_map(|&c| e.cpus[c].curr)
            .filter(|&x| x != t);
        for x in running.chain(std::iter::once(t)) {
            let s = &e.tasks[x].spec;
            if !s.memory_bound {
                continue;
            }
            if s.ws_shared {
                if groups.contains(&s.cgroup) {
                    continue;
                }
                groups.push(s.cgroup);
            }
            ws += s.ws_bytes;
        }
        let over = ws as f64 / e.m.llc_bytes as f64;
        if over > 1.0 {
            r /= 1.0 + e.cfg.costs.llc_interference * (over - 1.0).min(4.0);
        }
    }
    if spec.shared_lines_per_ns > 0.0 {
        // each shared line comes from the group-mate that wrote it last, any
        // running one alike: the mean transfer over where they run
        let (mut sum, mut n) = (0.0, 0u32);
        for (c, st) in e.cpus.iter().enumerate() {
            let Some(x) = st.curr else { continue };
            let o = &e.tasks[x].spec;
            if c != cpu && x != t && o.cgroup == spec.cgroup && o.shared_lines_per_ns > 0.0 {
                sum += e.cfg.costs.line(e.m.dist(cpu, c));
                n += 1;
            }
        }
        if n > 0 {
            // work w takes w / r computing plus w * lines * latency
            r /= 1.0 + r * spec.shared_lines_per_ns * sum / n as f64;
        }
    }
    r
}

/// Starts (or continues) the current task's step on @cpu after overhead
/// (both stretched by TCG's slowdown in the VM's model, tcg.rs).
pub(super) fn start_segment(e: &mut Engine, cpu: usize) {
    let Some(t) = e.cpus[cpu].curr else { return };
    let slow = e.tcg_slowdown();
    let r = rate(e, cpu, t) / slow;
    let ovh = std::mem::take(&mut e.cpus[cpu].overhead) * slow;
    e.cpus[cpu].gen += 1;
    e.cpus[cpu].seg_start = e.now + ovh as u64;
    e.cpus[cpu].seg_rate = r;
    let end = e.cpus[cpu].seg_start + (e.tasks[t].work_left / r).ceil() as u64;
    let gen = e.cpus[cpu].gen;
    e.push(end.max(e.now), Ev::RunDone { cpu, gen });
}

/// try_to_wake_up(@t) from @from.
pub(super) fn wake(e: &mut Engine, t: usize, from: usize, sync: bool) {
    wake_as(e, t, from, sync, false);
}

/// try_to_wake_up(@t) from @from, or with @fork wake_up_new_task(): a child
/// the task on @from just forked starts on @from's CPU (sched_fork() copies
/// the parent's), select_cpu gets SCX_WAKE_FORK (neither TTWU nor SYNC), the
/// parent takes the target's runqueue lock itself (no wake list) and enqueues
/// it without SCX_ENQ_WAKEUP.
pub(super) fn wake_as(e: &mut Engine, t: usize, from: usize, sync: bool, fork: bool) {
    if e.tasks[t].state != TState::Sleeping {
        return;
    }
    e.account();
    e.set_state(t, TState::Queued);
    e.tasks[t].woken_at = Some(e.now);
    e.cpus[from].overhead += e.cfg.costs.ttwu_ns;
    if fork && e.tasks[t].allowed[from] {
        e.tasks[t].cpu = from;
    }
    let prev = e.tasks[t].cpu;
    let mut cpu = prev;
    if e.tasks[t].nr_allowed > 1 {
        set_ctx(e, from, Ctx::Select { t });
        let p = e.tasks[t].p;
        let wf = if fork {
            ffi::SCX_WAKE_FORK
        } else {
            ffi::SCX_WAKE_TTWU | if sync { ffi::SCX_WAKE_SYNC } else { 0 }
        };
        let mut has = 0;
        let sel = e.call(|o| unsafe { (o.select_cpu)(p, prev as i32, wf, &mut has) });
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
    if !e.tasks[t].allowed[cpu] {
        cpu = e.tasks[t].allowed.iter().position(|&a| a).unwrap();
    }
    e.tasks[t].cpu = cpu;
    // the kernel's ttwu_queue_cond(): queue the wakeup on the target's
    // wake list (IPI; the target does the enqueue) when the two CPUs share no
    // cache, or when the target is idle with nothing on its runqueue
    // (nr_running 0: the waker is likely busy, the idle CPU does the
    // enqueue); else take its rq lock
    let costs = &e.cfg.costs;
    let share = if costs.ttwu_boundary_l2 {
        e.m.cpu(from).l2 == e.m.cpu(cpu).l2
    } else {
        e.m.cpu(from).llc == e.m.cpu(cpu).llc
    };
    let target_idle = e.cpus[cpu].curr.is_none() && e.cpus[cpu].local.is_empty();
    let queued = !fork
        && e.ops_flags & ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP != 0
        && cpu != from
        && (!share || (e.cfg.costs.ttwu_queue_idle && target_idle));
    if let Some(tr) = &mut e.tracer {
        tr.wake(e.now, from, t, cpu, queued);
    }
    if queued {
        e.wakeups_queued += 1;
        e.cpus[from].overhead += costs.ttwu_queue_ns + costs.line(e.m.dist(from, cpu));
        let at = e.now + costs.ipi_ns as u64;
        e.push(at, Ev::TtwuPending { cpu, t, from });
        flush_kicks(e);
        return;
    }
    if cpu == from {
        e.wakeups_local += 1;
    } else {
        e.wakeups_remote_lock += 1;
    }
    let hold = e.cfg.costs.rq_lock_hold_ns;
    e.lock(LockId::Rq(cpu), from, hold);
    let enq = if fork { 0 } else { ffi::SCX_ENQ_WAKEUP };
    activate(e, t, cpu, from, enq);
    flush_kicks(e);
}

/// enqueue_task_scx: ops.runnable, then the direct dispatch or ops.enqueue.
pub(super) fn activate(e: &mut Engine, t: usize, cpu: usize, ctx_cpu: usize, enq_flags: u64) {
    let p = e.tasks[t].p;
    set_ctx(e, ctx_cpu, Ctx::Other);
    e.call(|o| unsafe { (o.runnable)(p, enq_flags) });
    do_enqueue(e, t, cpu, ctx_cpu, enq_flags);
    // wakeup_preempt(): the woken task's class is above the idle class, so
    // an idle CPU reschedules, whatever DSQ the task went to
    if e.cpus[cpu].curr.is_none() {
        e.resched(cpu, ctx_cpu);
    }
}

/// @ins with enqueue flags @enq_flags added.
fn with_flags(ins: Insert, enq_flags: u64) -> Insert {
    Insert {
        flags: ins.flags | enq_flags,
        ..ins
    }
}

/// do_enqueue_task: direct dispatch if select_cpu inserted, else ops.enqueue;
/// SCX_DSQ_LOCAL resolves to @cpu's local DSQ after the callback returns.
fn do_enqueue(e: &mut Engine, t: usize, cpu: usize, ctx_cpu: usize, enq_flags: u64) {
    e.tasks[t].loc = Loc::None;
    if let Some(ins) = e.tasks[t].ddsp.take() {
        e.cur_cpu = ctx_cpu;
        e.dispatch_enqueue(t, with_flags(ins, enq_flags), cpu);
        return;
    }
    let p = e.tasks[t].p;
    set_ctx(e, ctx_cpu, Ctx::Enqueue { t });
    let has = e.call(|o| unsafe { (o.enqueue)(p, enq_flags) });
    e.ctx = Ctx::None;
    if has == 0 {
        e.tasks[t].ddsp = Some(Insert {
            dsq: ffi::SCX_DSQ_GLOBAL,
            slice: ffi::SCX_SLICE_DFL,
            vtime: 0,
            flags: 0,
            vtime_ordered: false,
        });
    }
    e.enqueues += 1;
    if let Some(ins) = e.tasks[t].ddsp.take() {
        e.enqueue_matched += 1;
        e.cur_cpu = ctx_cpu;
        e.dispatch_enqueue(t, with_flags(ins, enq_flags), cpu);
    } else {
        e.tasks[t].loc = Loc::Custody;
    }
}

/// Consumes the global DSQ into @cpu's local DSQ (the kernel does this
/// before and after ops.dispatch).
fn consume_global(e: &mut Engine, cpu: usize) -> bool {
    if e.global.len() == 0 {
        return false;
    }
    let saved = e.ctx;
    e.ctx = Ctx::Dispatch { cpu };
    let r = e.move_to_local(ffi::SCX_DSQ_GLOBAL);
    e.ctx = saved;
    r
}

/// Whether task @t has slice left (p->scx.slice > 0).
fn slice_left(e: &Engine, t: usize) -> bool {
    (unsafe { *ffi::sim_task_slice(e.tasks[t].p) }) > 0
}

/// Idle-time balance attempts (steal scans done, not skipped) counted on
/// @cpu so far; 0 when the cost model charges none (no map read).
fn balance_scans(e: &Engine, cpu: usize) -> u64 {
    if e.cfg.costs.balance_scan_ns <= 0.0 {
        return 0;
    }
    let idx = crate::intf::STAT_NAMES
        .iter()
        .position(|n| *n == "steal_scans")
        .expect("intf.h has a steal_scans counter");
    e.maps
        .percpu_row("stats", cpu)
        .and_then(|row| row.get(idx).copied())
        .unwrap_or(0)
}

/// Charges @cpu the cost model's balance_scan_ns for each balance attempt
/// its ops.dispatch made (counted from @before): the kernel's load-balance
/// walk that a BPF scan stands for (seed 003).
fn charge_balance_scans(e: &mut Engine, cpu: usize, before: u64) {
    if e.cfg.costs.balance_scan_ns <= 0.0 {
        return;
    }
    let done = balance_scans(e, cpu).saturating_sub(before);
    if done == 0 {
        return;
    }
    let c = &mut e.cpus[cpu];
    c.overhead += done as f64 * e.cfg.costs.balance_scan_ns;
    // if nothing was found the CPU idles and its overhead is dropped
    // (pick_next), but the walk still runs: remember when it ends
    c.balancing_until = e.now + c.overhead as u64;
}

/// __schedule() on @cpu: balance (ops.dispatch), put prev, pick next.
pub(super) fn schedule(e: &mut Engine, cpu: usize) {
    e.account();
    e.cpus[cpu].resched_pending = false;
    let prev = e.cpus[cpu].curr;
    settle_work(e, cpu);
    update_curr(e, cpu);
    let prev_runnable = prev.is_some_and(|t| e.tasks[t].state == TState::Running);
    let mut keep = prev_runnable && slice_left(e, prev.unwrap());
    if !keep && e.cpus[cpu].local.is_empty() && !consume_global(e, cpu) {
        let prev_p = prev.map_or(std::ptr::null_mut(), |t| e.tasks[t].p);
        let mut loops = 0;
        loop {
            e.dispatch_buf.clear();
            set_ctx(e, cpu, Ctx::Dispatch { cpu });
            let scans = balance_scans(e, cpu);
            let has = e.call(|o| unsafe { (o.dispatch)(cpu as i32, prev_p) });
            e.ctx = Ctx::None;
            charge_balance_scans(e, cpu, scans);
            if has == 0 {
                break;
            }
            let buf = std::mem::take(&mut e.dispatch_buf);
            let n = buf.len();
            e.cur_cpu = cpu;
            for (t, ins) in buf {
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
                e.dispatch_enqueue(t, ins, cpu);
            }
            if prev_runnable && slice_left(e, prev.unwrap()) {
                keep = true;
                break;
            }
            if !e.cpus[cpu].local.is_empty() || consume_global(e, cpu) {
                break;
            }
            loops += 1;
            if loops >= ffi::SCX_DSP_MAX_LOOPS {
                e.kick(cpu, 0);
                break;
            }
            if n == 0 {
                break;
            }
        }
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
        start_segment(e, cpu);
        flush_kicks(e);
        return;
    }
    // put_prev_task_scx: a runnable prev is stopped and enqueued again
    if let Some(t) = prev {
        stop_curr(e, cpu);
        if prev_runnable {
            e.set_state(t, TState::Queued);
            set_ctx(e, cpu, Ctx::Other);
            let p = e.tasks[t].p;
            e.call(|o| unsafe { (o.stopping)(p, true) });
            // put_prev_task_scx: with SCX_OPS_ENQ_LAST, a prev that leaves its
            // CPU to idle is enqueued with SCX_ENQ_LAST
            let last = e.ops_flags & ffi::SCX_OPS_ENQ_LAST != 0 && e.cpus[cpu].local.is_empty();
            do_enqueue(e, t, cpu, cpu, if last { ffi::SCX_ENQ_LAST } else { 0 });
        }
    }
    pick_next(e, cpu);
    flush_kicks(e);
}

/// Preempts @cpu's current task (slice exhausted) and reschedules.
pub(super) fn schedule_preempt(e: &mut Engine, cpu: usize) {
    if let Some(t) = e.cpus[cpu].curr {
        settle_work(e, cpu);
        e.tasks[t].in_step = e.tasks[t].work_left > 0.0;
        if !e.tasks[t].in_step {
            // finished exactly at the tick: it still needs its next step
            e.tasks[t].in_step = true;
            e.tasks[t].work_left = 1.0;
        }
    }
    schedule(e, cpu);
}

/// Takes @cpu's current task off it (no callbacks).
fn stop_curr(e: &mut Engine, cpu: usize) {
    e.cpus[cpu].curr = None;
    e.cpus[cpu].gen += 1;
    if let Some(tr) = &mut e.tracer {
        tr.stop(e.now, cpu);
    }
}

/// Runs the first task of @cpu's local DSQ, or idles.
fn pick_next(e: &mut Engine, cpu: usize) {
    let next = e.cpus[cpu].local.pop_front();
    let Some(t) = next else {
        // entering idle (again, after a kick found nothing) sets the idle
        // bit, as the kernel's idle-class switch does
        e.set_idle(cpu, true);
        if e.cpus[cpu].idle_since.is_none() {
            e.cpus[cpu].idle_since = Some(e.now);
            e.nr_idle += 1;
            if unsafe { (e.ops.has_update_idle)() } != 0 {
                set_ctx(e, cpu, Ctx::Other);
                e.call(|o| unsafe { (o.update_idle)(cpu as i32, true) });
            }
        }
        e.cpus[cpu].overhead = 0.0;
        return;
    };
    // a task picked by a CPU still in the balance walk it began before
    // idling starts when the walk ends
    let balancing = std::mem::take(&mut e.cpus[cpu].balancing_until);
    if let Some(_since) = e.cpus[cpu].idle_since.take() {
        e.cpus[cpu].overhead += balancing.saturating_sub(e.now) as f64;
        e.nr_idle -= 1;
        e.set_idle(cpu, false);
        if unsafe { (e.ops.has_update_idle)() } != 0 {
            set_ctx(e, cpu, Ctx::Other);
            e.call(|o| unsafe { (o.update_idle)(cpu as i32, false) });
        }
    }
    if e.tasks[t].state == TState::Queued {
        e.run_wait.push(e.now - e.tasks[t].runnable_since);
    }
    e.set_state(t, TState::Running);
    e.tasks[t].loc = Loc::None;
    e.tasks[t].cpu = cpu;
    if let Some(w) = e.tasks[t].woken_at.take() {
        e.wake_lat.push(e.now - w);
        e.wake_lat_task.push(t);
    }
    // context switch, and the cache refill of a migration
    e.ctx_switches += 1;
    let c = &e.cfg.costs;
    let mut ovh = c.ctx_switch_ns * if e.tasks[t].spec.mm_switch { 1.2 } else { 1.0 };
    let last = e.tasks[t].last_ran;
    let mut dist = Dist::Same;
    if let Some(last) = last {
        dist = e.m.dist(last, cpu);
        if dist != Dist::Same {
            e.migrations[dist as usize] += 1;
            if e.tcg.is_none() {
                // TCG has no caches to refill
                ovh += c.refill(e.tasks[t].spec.ws_bytes, dist);
            }
        }
    }
    if e.tasks[t].spec.mm_switch {
        if e.tcg.is_some() && e.cpus[cpu].mm != Some(t) {
            // guest time: the overhead is stretched by the slowdown later
            ovh += c.tcg_mm_switch_ns / e.tcg_slowdown();
        }
        e.cpus[cpu].mm = Some(t);
    }
    e.tasks[t].last_ran = Some(cpu);
    e.cpus[cpu].overhead += ovh;
    e.cpus[cpu].curr = Some(t);
    e.cpus[cpu].last_update = e.now;
    if !e.cpus[cpu].tick_pending {
        e.cpus[cpu].tick_pending = true;
        e.push(next_tick(e), Ev::Tick { cpu });
    }
    if let Some(tr) = &mut e.tracer {
        let since = e.tasks[t].runnable_since;
        tr.start(e.now, cpu, t, since, last, dist as usize);
    }
    set_ctx(e, cpu, Ctx::Other);
    let p = e.tasks[t].p;
    e.call(|o| unsafe { (o.running)(p) });
    if e.tasks[t].in_step {
        start_segment(e, cpu);
    } else {
        next_step(e, cpu, t);
    }
}

/// The factor a step's work is scaled by: 1, or with the cost model's
/// step_jitter j > 0 uniform in [1 - j, 1 + j] from the run's RNG seed (a
/// step's CPU time varies from call to call on real machines; the jitter
/// makes runs of different seeds differ, so a claim can be measured as a
/// distribution).
fn step_jitter(e: &mut Engine) -> f64 {
    let j = e.cfg.costs.step_jitter;
    if j <= 0.0 {
        return 1.0;
    }
    let u = (e.rand() >> 11) as f64 / (1u64 << 53) as f64;
    1.0 + j * (2.0 * u - 1.0)
}

/// Asks the workload what @t (current on @cpu) does next, and does it.
pub(super) fn next_step(e: &mut Engine, cpu: usize, t: usize) {
    let mut wakes = Vec::new();
    let step = e.wl.step(t, e.now, &mut wakes);
    let sync = e.wl.wakes_sync();
    for w in wakes {
        let fork = e.wl.wake_is_fork(w);
        wake_as(e, w, cpu, sync, fork);
    }
    match step {
        Step::Run(ns) => {
            e.tasks[t].work_left = ns as f64 * step_jitter(e);
            e.tasks[t].in_step = true;
            start_segment(e, cpu);
        }
        Step::Block | Step::Sleep(_) | Step::Exit => {
            e.tasks[t].in_step = false;
            update_curr(e, cpu);
            let p = e.tasks[t].p;
            stop_curr(e, cpu);
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
            set_ctx(e, cpu, Ctx::Other);
            e.call(|o| unsafe {
                (o.stopping)(p, false);
                (o.quiescent)(p, ffi::SCX_DEQ_SLEEP);
            });
            if step == Step::Exit {
                e.call(|o| unsafe {
                    (o.disable)(p);
                    (o.exit_task)(p, false);
                });
                e.tasks[t].exited_at = e.now;
                let mut later = Vec::new();
                e.wl.exited_on(t, cpu, e.now, &mut later);
                for (w, at) in later {
                    e.push(at, Ev::TimerWake { t: w });
                }
            }
            schedule(e, cpu);
        }
    }
}

/// When a CPU's next tick falls: the first point after now of the tick grid
/// every CPU shares. The kernel's per-CPU tick timers start on one grid
/// (tick_setup_sched_timer() without skew_tick, which Debian's kernels leave
/// off) and stay on it: a tick served late, or restarted after idle, is
/// forwarded to the grid (hrtimer_forward()), not set a period after now.
pub(super) fn next_tick(e: &Engine) -> u64 {
    let tick = tick_ns(e);
    (e.now / tick + 1) * tick
}

/// The tick's period (ns), 1 / HZ.
pub(super) fn tick_ns(e: &Engine) -> u64 {
    1_000_000_000 / e.cfg.hz
}

#[cfg(test)]
mod tests {
    use super::super::state::bit;
    use super::super::tests::{run_until, with_tasks};
    use super::*;
    use crate::cost::Costs;
    use crate::ffi::task_struct;

    /// select_cpu of a scheduler that keeps a task on its previous CPU and
    /// inserts it into that CPU's local DSQ (through the kfunc, as C does).
    unsafe extern "C" fn select_local(
        p: *mut task_struct,
        prev: i32,
        _wake_flags: u64,
        has: *mut i32,
    ) -> i32 {
        *has = 1;
        crate::kfuncs::sim_kf_dsq_insert(p, ffi::SCX_DSQ_LOCAL, ffi::SCX_SLICE_DFL, 0, 0, false);
        prev
    }

    /// Two 100 ms tasks woken onto CPU 0's local DSQ (select_local).
    fn two_long_tasks_woken_on_cpu0() -> Box<Engine> {
        let long = vec![Step::Run(100_000_000)];
        let mut e = with_tasks("1llc", vec![(0, long.clone()), (0, long)]);
        e.ops.select_cpu = select_local;
        wake(&mut e, 0, 0, false);
        wake(&mut e, 1, 0, false);
        e
    }

    static SEEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// select_cpu that records its wake flags and prev, and picks CPU 6.
    unsafe extern "C" fn select_6_seen(
        _p: *mut task_struct,
        prev: i32,
        wake_flags: u64,
        has: *mut i32,
    ) -> i32 {
        SEEN.store(
            wake_flags << 8 | prev as u64,
            std::sync::atomic::Ordering::SeqCst,
        );
        *has = 1;
        6
    }

    #[test]
    fn a_fork_is_placed_from_the_parents_cpu_without_the_wake_list() {
        // 2node: CPU 1 (the parent's) and CPU 6 share no LLC, so a wakeup
        // from 1 to 6 would be queued on 6's wake list
        let mut e = with_tasks(
            "2node",
            vec![(3, vec![Step::Run(1000)]), (3, vec![Step::Run(1000)])],
        );
        e.ops.select_cpu = select_6_seen;
        e.ops_flags |= ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP;
        wake_as(&mut e, 0, 1, true, true);
        let seen = SEEN.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!((seen >> 8, seen & 0xff), (ffi::SCX_WAKE_FORK, 1));
        assert_eq!(e.wakeups_queued, 0);
        assert_eq!(e.tasks[0].cpu, 6);
        // a wakeup of the other: TTWU | SYNC from its previous CPU, queued
        wake_as(&mut e, 1, 1, true, false);
        let seen = SEEN.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            (seen >> 8, seen & 0xff),
            (ffi::SCX_WAKE_TTWU | ffi::SCX_WAKE_SYNC, 3)
        );
        assert_eq!(e.wakeups_queued, 1);
    }

    #[test]
    fn a_wakeup_onto_an_idle_cpu_of_the_llc_goes_through_its_wake_list() {
        // ttwu_queue_cond(): CPU 2 shares the LLC with the waker's CPU 0 but
        // is idle with nothing queued, so the wakeup is queued for it (an
        // IPI); once it runs a task, the next wakeup there takes its rq lock
        let steps = vec![Step::Run(1_000_000)];
        let mut e = with_tasks("1llc", vec![(2, steps.clone()), (2, steps.clone())]);
        e.ops.select_cpu = select_local;
        e.ops_flags |= ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP;
        wake(&mut e, 0, 0, false);
        assert_eq!((e.wakeups_queued, e.wakeups_remote_lock), (1, 0));
        run_until(&mut e, 10_000);
        assert_eq!(e.cpus[2].curr, Some(0));
        wake(&mut e, 1, 0, false);
        assert_eq!((e.wakeups_queued, e.wakeups_remote_lock), (1, 1));
        // without the idle rule (kernels before 6.0): the rq lock
        let mut e = with_tasks("1llc", vec![(2, steps)]);
        e.ops.select_cpu = select_local;
        e.ops_flags |= ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP;
        e.cfg.costs.ttwu_queue_idle = false;
        wake(&mut e, 0, 0, false);
        assert_eq!((e.wakeups_queued, e.wakeups_remote_lock), (0, 1));
    }

    #[test]
    fn a_wakeup_to_an_idle_cpu_runs_the_task_there() {
        let mut e = with_tasks("1llc", vec![(2, vec![Step::Run(1_000_000)])]);
        e.ops.select_cpu = select_local;
        wake(&mut e, 0, 0, false);
        assert_eq!(e.tasks[0].loc, Loc::Local(2));
        assert_eq!(e.wakeups_remote_lock, 1);
        assert_eq!(e.cpus[2].curr, None, "ran before the IPI arrived");
        run_until(&mut e, 10_000);
        assert_eq!(e.cpus[2].curr, Some(0));
        assert_eq!(e.tasks[0].state, TState::Running);
        assert!(!bit(&e.idle_mask, 2), "a running CPU is idle");
        assert_eq!(e.wake_lat, vec![e.cfg.costs.ipi_ns as u64]);
        assert_eq!(e.run_wait, e.wake_lat, "its one wait was its wakeup's");
        run_until(&mut e, 5_000_000);
        assert_eq!(e.tasks[0].state, TState::Dead);
        assert!(e.tasks[0].runtime >= 1_000_000);
        assert_eq!(e.cpus[2].curr, None);
        assert!(bit(&e.idle_mask, 2), "an idle CPU is not in the idle mask");
    }

    #[test]
    fn without_a_choice_a_woken_task_waits_in_the_global_dsq_for_a_cpu() {
        let mut e = with_tasks("1llc", vec![(1, vec![Step::Run(1000)])]);
        wake(&mut e, 0, 1, false);
        assert_eq!(e.tasks[0].loc, Loc::Dsq(ffi::SCX_DSQ_GLOBAL));
        assert_eq!((e.enqueues, e.enqueue_matched), (1, 1));
        assert_eq!(e.wakeups_local, 1);
        schedule(&mut e, 3);
        assert_eq!(e.cpus[3].curr, Some(0), "schedule did not consume global");
        assert_eq!(e.tasks[0].cpu, 3);
        assert_eq!(e.dsq_len(ffi::SCX_DSQ_GLOBAL), 0);
    }

    #[test]
    fn a_wakeup_onto_an_idle_runqueue_reschedules_it_whatever_the_dsq() {
        // the task goes to the global DSQ, not CPU 1's local one: CPU 1,
        // idle, is rescheduled all the same (wakeup_preempt()) and runs it
        let mut e = with_tasks("1llc", vec![(1, vec![Step::Run(1000)])]);
        wake(&mut e, 0, 2, false);
        assert_eq!(e.tasks[0].loc, Loc::Dsq(ffi::SCX_DSQ_GLOBAL));
        assert!(
            e.cpus[1].resched_pending,
            "the idle runqueue was not kicked"
        );
        assert!(!e.cpus[0].resched_pending && !e.cpus[3].resched_pending);
        run_until(&mut e, 1_000_000);
        assert_eq!(e.tasks[0].state, TState::Dead, "the task never ran");
        assert_eq!(e.tasks[0].cpu, 1);
    }

    #[test]
    fn an_exhausted_slice_is_preempted_at_the_next_tick() {
        let mut e = two_long_tasks_woken_on_cpu0();
        run_until(&mut e, 1_000_000);
        assert_eq!(e.cpus[0].curr, Some(0));
        assert_eq!(e.cpus[0].local, [1]);
        run_until(&mut e, 19_500_000);
        assert_eq!(
            e.cpus[0].curr,
            Some(0),
            "preempted before its slice ran out"
        );
        run_until(&mut e, 21_500_000);
        assert_eq!(
            e.cpus[0].curr,
            Some(1),
            "not preempted when its slice ran out"
        );
        assert_eq!(e.tasks[0].state, TState::Queued);
        assert_eq!(e.ctx_switches, 2);
    }

    #[test]
    fn a_preempting_kick_ends_the_current_slice() {
        let mut e = two_long_tasks_woken_on_cpu0();
        run_until(&mut e, 5_000_000);
        assert_eq!(e.cpus[0].curr, Some(0));
        e.cur_cpu = 2;
        e.kick(0, ffi::SCX_KICK_PREEMPT);
        flush_kicks(&mut e);
        run_until(&mut e, 5_100_000);
        assert_eq!(e.cpus[0].curr, Some(1), "the kick did not preempt");
    }

    /// Three tasks of cgroup 1 sharing lines, task 0 placed on CPU 0 and its
    /// mates on @mates (made current there by hand, as rate() reads it).
    fn shared_line_rate(machine: &str, mates: &[usize], mate_cgroup: usize) -> (f64, f64) {
        let mut e = with_tasks(machine, vec![(0, vec![]), (1, vec![]), (2, vec![])]);
        for (i, t) in e.tasks.iter_mut().enumerate() {
            t.spec.cgroup = if i == 0 { 1 } else { mate_cgroup };
            t.spec.shared_lines_per_ns = 0.02;
        }
        for (i, &c) in mates.iter().enumerate() {
            e.cpus[c].curr = Some(i + 1);
        }
        (rate(&e, 0, 0), e.m.speed)
    }

    #[test]
    fn shared_lines_cost_the_transfer_from_where_the_group_mates_run() {
        let c = Costs::default();
        // alone: nothing to take over
        let (alone, speed) = shared_line_rate("arm64-128-cl", &[], 1);
        assert_eq!(alone, speed);
        // both mates in CPU 0's cluster: each line at the in-cluster latency
        let (near, _) = shared_line_rate("arm64-128-cl", &[1, 2], 1);
        let want = speed / (1.0 + speed * 0.02 * c.line(Dist::Llc));
        assert!((near - want).abs() < 1e-9, "{near} vs {want}");
        // one mate in another cluster: the mean of the two latencies
        let (mixed, _) = shared_line_rate("arm64-128-cl", &[1, 16], 1);
        let mean = (c.line(Dist::Llc) + c.line(Dist::Node)) / 2.0;
        let want = speed / (1.0 + speed * 0.02 * mean);
        assert!((mixed - want).abs() < 1e-9, "{mixed} vs {want}");
        assert!(mixed < near);
        // tasks of another cgroup share nothing with it
        let (other, _) = shared_line_rate("arm64-128-cl", &[1, 16], 2);
        assert_eq!(other, speed);
    }

    #[test]
    fn a_shared_working_set_fills_an_llc_once() {
        // 1llc: 16 MiB; four 6 MiB tasks of one cgroup on it
        let mut e = with_tasks("1llc", (0..4).map(|c| (c, vec![])).collect());
        for t in e.tasks.iter_mut() {
            t.spec.cgroup = 1;
            t.spec.memory_bound = true;
            t.spec.ws_bytes = 6 << 20;
        }
        for c in 1..4 {
            e.cpus[c].curr = Some(c);
        }
        // private: 24 MiB in a 16 MiB LLC, slowed
        assert!(rate(&e, 0, 0) < e.m.speed);
        // one buffer of the group: 6 MiB, fits
        for t in e.tasks.iter_mut() {
            t.spec.ws_shared = true;
        }
        assert_eq!(rate(&e, 0, 0), e.m.speed);
    }
}
