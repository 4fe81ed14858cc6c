//! QEMU's single-threaded TCG (`vm/run`'s accelerator here): one host
//! thread runs the guest's vCPUs in turn, so the VM presets' counters come
//! from a machine whose CPUs do not run at once. With the cost model's
//! `tcg_slowdown` > 0 the engine models that host thread:
//!
//! - WHAT: one vCPU at a time holds the host thread (the turn); only its
//!   task makes progress, and only its events (ticks, IPIs, timers) are
//!   served. An event for another vCPU waits for that vCPU's next turn.
//! - HOW (QEMU's round-robin loop, accel/tcg/tcg-accel-ops-rr.c): a turn
//!   ends when its vCPU halts (idles), when a host timer raises an interrupt
//!   for any vCPU (the guest's ticks, hrtimers, the scheduler's BPF timers:
//!   the main loop kicks the running vCPU out), or at the round-robin kick
//!   period; the next turn goes to the next vCPU in index order that has a
//!   task or a pending event. An IPI from one vCPU to another raises no kick
//!   (both live on the one thread): the target serves it on its turn.
//!   Timers that expire together kick once (the main loop serves them in one
//!   pass), and every vCPU's tick falls on one grid (kernel.rs, next_tick),
//!   so they do; a vCPU's timers share its one local APIC timer, which its
//!   guest re-arms only when it runs, so a vCPU off the thread raises one
//!   interrupt at most until its next turn. With every vCPU busy that gives
//!   one turn per tick of the grid, as the guest measures them
//!   (scripts/tcg-turns: 2-4 ms turns, 200-300 a second on 4 and 8 vCPUs).
//!   Not modelled: a turn that a spin's PAUSE ends (QEMU's PAUSE helper
//!   yields the host thread); docs/testing.md gives the VM's count.
//!   Guest time is host time, and every instruction of the guest costs
//!   `tcg_slowdown` times its hardware time: work and overheads stretch by
//!   it.
//! - WHY: the VM's counters (docs/sim-vm-counters.json) are what the
//!   simulator is held to; a hardware-like model runs every CPU at once, so
//!   a CPU that idles there finds the other LLC's queue drained, where in the
//!   VM its vCPUs sit frozen with their queues full.
use super::kernel::{settle_work, start_segment};
use super::state::Ev;
use super::Engine;

/// QEMU's TCG_KICK_PERIOD: the longest turn (ns).
const KICK_PERIOD_NS: u64 = 100_000_000;

/// The host thread's state (Engine::tcg, when the cost model asks for it).
pub(super) struct Tcg {
    /// the vCPU holding the host thread; None: every vCPU halted
    on: Option<usize>,
    /// bumped at each turn, to drop a stale kick period
    turn: u64,
    /// events for each vCPU raised while it was off the host thread
    pending: Vec<Vec<Ev>>,
    /// turns begun, and those ended by a host timer's kick
    pub(super) turns: u64,
    pub(super) kicks: u64,
    /// when a host timer last kicked: timers that expire together (every
    /// vCPU's tick on the shared grid) kick once
    kicked_at: Option<u64>,
    /// when each vCPU's last turn began
    turn_began: Vec<u64>,
}

impl Tcg {
    pub(super) fn new(nr_cpus: usize) -> Tcg {
        Tcg {
            on: None,
            turn: 0,
            pending: vec![Vec::new(); nr_cpus],
            turns: 0,
            kicks: 0,
            kicked_at: None,
            turn_began: vec![0; nr_cpus],
        }
    }
}

/// The vCPU an event is served on, and whether it is raised by a host timer
/// (which kicks the running vCPU off the host thread); None: not a vCPU's
/// event (the simulator's own checks, the group balancer's period).
fn target(e: &Engine, ev: &Ev) -> Option<(usize, bool)> {
    match *ev {
        Ev::RunDone { cpu, .. } => Some((cpu, false)),
        Ev::Resched { cpu } => Some((cpu, false)),
        Ev::TtwuPending { cpu, .. } => Some((cpu, false)),
        Ev::Tick { cpu } => Some((cpu, true)),
        Ev::TimerWake { t } => Some((e.tasks[t].cpu, true)),
        Ev::Timer { id, .. } => e.timers.get(&id).map(|t| (t.2, true)),
        Ev::Check | Ev::Balance | Ev::TcgKick { .. } => None,
    }
}

/// Whether @cpu idles only for want of the host thread: events wait for it
/// (a kick, an IPI) and it has had no turn since @since, or its turn begins
/// at this instant. The engine's work-conservation check does not blame the
/// scheduler for such a wait.
pub(super) fn awaits_turn(e: &Engine, cpu: usize, since: u64) -> bool {
    e.tcg.as_ref().is_some_and(|tcg| match tcg.on {
        Some(on) if on == cpu => tcg.turn_began[cpu] == e.now,
        _ => !tcg.pending[cpu].is_empty() && tcg.turn_began[cpu] <= since,
    })
}

/// Whether @cpu wants the host thread: it has a task or a pending event.
fn wants_turn(e: &Engine, cpu: usize) -> bool {
    let tcg = e.tcg.as_ref().unwrap();
    e.cpus[cpu].curr.is_some() || !tcg.pending[cpu].is_empty()
}

/// Whether @ev may be served now; if not, it is kept for its vCPU's turn
/// (and a host timer's interrupt ends the turn under way).
pub(super) fn admit(e: &mut Engine, ev: Ev) -> bool {
    if e.tcg.is_none() {
        return true;
    }
    if let Ev::TcgKick { turn } = ev {
        if e.tcg.as_ref().unwrap().turn == turn {
            e.tcg.as_mut().unwrap().kicks += 1;
            next_turn(e);
        }
        return false;
    }
    let Some((cpu, kick)) = target(e, &ev) else {
        return true;
    };
    let on = e.tcg.as_ref().unwrap().on;
    if let Ev::RunDone { gen, .. } = ev {
        // a vCPU off the host thread has no segment under way
        return on == Some(cpu) || e.cpus[cpu].gen != gen;
    }
    if on == Some(cpu) && !kick {
        return true;
    }
    // A host timer kicks the running vCPU off the thread unless
    // - its vCPU is off the thread with a timer already fired: a vCPU's
    //   timers share its one local APIC timer, which the guest sets to the
    //   earliest of them when it runs, so no second interrupt until then;
    // - another timer kicked at this instant: QEMU's main loop runs every
    //   expired timer in one pass, holding the lock the vCPU thread needs
    //   to go on, so their kicks end one turn.
    let tcg = e.tcg.as_ref().unwrap();
    let kicks = kick
        && tcg.kicked_at != Some(e.now)
        && (on == Some(cpu)
            || !tcg.pending[cpu]
                .iter()
                .any(|p| target(e, p).is_some_and(|(_, k)| k)));
    e.tcg.as_mut().unwrap().pending[cpu].push(ev);
    if on.is_none() {
        begin_turn(e, cpu);
    } else if kicks {
        let tcg = e.tcg.as_mut().unwrap();
        tcg.kicked_at = Some(e.now);
        tcg.kicks += 1;
        next_turn(e);
    }
    false
}

/// After an event: the vCPU holding the host thread serves the events
/// raised for it while it was off, in order; one that halted with nothing
/// pending (no event, no reschedule on its way) gives the thread to the next
/// that wants it.
pub(super) fn serve(e: &mut Engine) {
    while e.exit.is_none() {
        let Some(on) = e.tcg.as_ref().and_then(|t| t.on) else {
            return;
        };
        let tcg = e.tcg.as_mut().unwrap();
        if !tcg.pending[on].is_empty() {
            let ev = tcg.pending[on].remove(0);
            super::run::on_event(e, ev);
        } else if e.cpus[on].curr.is_none() && !e.cpus[on].resched_pending {
            next_turn(e);
        } else {
            // running, or idle with a reschedule on its way (its own kick,
            // an insert into its local DSQ): a vCPU with an interrupt
            // pending does not halt, it schedules in this turn
            return;
        }
    }
}

/// Ends the turn under way and begins the next vCPU's in round-robin order
/// (the same vCPU again if it is the only one that wants the thread).
fn next_turn(e: &mut Engine) {
    let n = e.cpus.len();
    let on = e.tcg.as_ref().unwrap().on;
    if let Some(c) = on {
        freeze(e, c);
    }
    e.tcg.as_mut().unwrap().on = None;
    let from = on.map_or(0, |c| c + 1);
    let next = (0..n).map(|i| (from + i) % n).find(|&c| wants_turn(e, c));
    if let Some(c) = next {
        begin_turn(e, c);
    }
}

/// Stops @cpu's segment: its task keeps the work it has done and the
/// overhead it has not yet paid.
fn freeze(e: &mut Engine, cpu: usize) {
    if e.cpus[cpu].curr.is_none() {
        return;
    }
    let slow = e.cfg.costs.tcg_slowdown;
    let unpaid = e.cpus[cpu].seg_start.saturating_sub(e.now) as f64 / slow;
    settle_work(e, cpu);
    e.cpus[cpu].overhead += unpaid;
    e.cpus[cpu].gen += 1;
}

/// Gives @cpu the host thread: its segment resumes; the events raised for
/// it meanwhile are served next (serve), ticks missed meanwhile once, as a
/// one-shot timer fires.
fn begin_turn(e: &mut Engine, cpu: usize) {
    let tcg = e.tcg.as_mut().unwrap();
    tcg.on = Some(cpu);
    tcg.turn_began[cpu] = e.now;
    tcg.turn += 1;
    tcg.turns += 1;
    let turn = tcg.turn;
    let mut ticked = false;
    tcg.pending[cpu]
        .retain(|ev| !matches!(ev, Ev::Tick { .. }) || !std::mem::replace(&mut ticked, true));
    e.push(e.now + KICK_PERIOD_NS, Ev::TcgKick { turn });
    if e.cpus[cpu].curr.is_some() {
        start_segment(e, cpu);
    }
}
