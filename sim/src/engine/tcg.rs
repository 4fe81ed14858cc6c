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
//!   A spin ends a turn too: QEMU's PAUSE helper yields the host thread. A
//!   vCPU kicked off the thread inside its scheduling code (overhead not yet
//!   paid: the kernel's paths around the callbacks, which hold its runqueue
//!   lock) keeps that lock until its next turn; another vCPU that takes it
//!   meanwhile (a wakeup onto its runqueue, a pull from its queue) spins,
//!   PAUSEs and gives up the host thread after the event (spin()). The
//!   event itself completes at once, as every event does here, but the
//!   clock its callbacks read moves on by the wait: the turns of the vCPUs
//!   between it and the holder (each to the next tick of the grid), then
//!   the holder's own scheduling code (what a newidle balance sees as its
//!   cost, shard.bpf.c). docs/testing.md gives the VM's count.
//!   Guest time is host time, and every instruction of the guest costs
//!   `tcg_slowdown` times its hardware time: work and overheads stretch by
//!   it, but for the load of another process's address space at a switch,
//!   which costs `tcg_mm_switch_ns` of guest time (QEMU's software TLB is
//!   emptied; kernel.rs charges it).
//! - WHY: the VM's counters (docs/sim-vm-counters.json) are what the
//!   simulator is held to; a hardware-like model runs every CPU at once, so
//!   a CPU that idles there finds the other LLC's queue drained, where in the
//!   VM its vCPUs sit frozen with their queues full.
use super::kernel::{next_tick, settle_work, start_segment, tick_ns};
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
    /// vCPUs off the thread inside their scheduling code: their runqueue
    /// lock is held until their next turn
    holds_rq: Vec<bool>,
    /// the vCPU on the thread spun on such a lock: its turn ends after the
    /// event
    paused: bool,
    /// turns a spin ended
    pub(super) pauses: u64,
    /// the waits of the callback under way's spins (its clock, context.rs)
    pub(super) spin_ns: u64,
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
            holds_rq: vec![false; nr_cpus],
            paused: false,
            pauses: 0,
            spin_ns: 0,
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

/// The longest round of the host thread, 0 without TCG: every other vCPU's
/// turn, each ended by a host timer at the latest (a tick). A waiter queued
/// behind a busy vCPU is noticed at that vCPU's tick, in its turn, and the
/// idle vCPU it kicks to balance runs in its own: the engine's check of work
/// conservation allows the scheduler that much more (checks.rs).
pub(super) fn tcg_round_ns(e: &Engine) -> u64 {
    match e.tcg {
        Some(_) => (e.cpus.len() as u64 - 1) * tick_ns(e),
        None => 0,
    }
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
        if std::mem::take(&mut tcg.paused) {
            tcg.pauses += 1;
            next_turn(e);
        } else if !tcg.pending[on].is_empty() {
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
/// overhead it has not yet paid; with overhead unpaid it is still in its
/// scheduling code, its runqueue lock held.
fn freeze(e: &mut Engine, cpu: usize) {
    if e.cpus[cpu].curr.is_none() {
        return;
    }
    let slow = e.cfg.costs.tcg_slowdown;
    let unpaid = e.cpus[cpu].seg_start.saturating_sub(e.now) as f64 / slow;
    settle_work(e, cpu);
    e.cpus[cpu].overhead += unpaid;
    e.cpus[cpu].gen += 1;
    e.tcg.as_mut().unwrap().holds_rq[cpu] = e.cpus[cpu].overhead > 0.0;
}

/// @cpu takes @owner's runqueue lock: if @owner went off the host thread
/// holding it, @cpu spins until @owner's next turn (see the top).
pub(super) fn spin(e: &mut Engine, owner: usize, cpu: usize) {
    let n = e.cpus.len();
    let Some(tcg) = e.tcg.as_ref() else { return };
    if owner == cpu || tcg.on != Some(cpu) || !tcg.holds_rq[owner] {
        return;
    }
    // the turns before @owner's: the vCPUs after @cpu in round-robin order
    let ahead = (1..n)
        .map(|i| (cpu + i) % n)
        .take_while(|&c| c != owner)
        .filter(|&c| wants_turn(e, c))
        .count() as u64;
    // each turn ahead ends at a host timer, the first at the next tick of
    // the grid; then @owner finishes the scheduling code it was in
    let turns = match ahead {
        0 => 0,
        k => next_tick(e) - e.now + (k - 1) * tick_ns(e),
    };
    let release = (e.cpus[owner].overhead * e.cfg.costs.tcg_slowdown) as u64;
    let tcg = e.tcg.as_mut().unwrap();
    tcg.paused = true;
    tcg.spin_ns += turns + release;
}

/// Gives @cpu the host thread: its segment resumes; the events raised for
/// it meanwhile are served next (serve), ticks missed meanwhile once, as a
/// one-shot timer fires.
fn begin_turn(e: &mut Engine, cpu: usize) {
    let tcg = e.tcg.as_mut().unwrap();
    tcg.on = Some(cpu);
    tcg.holds_rq[cpu] = false;
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

#[cfg(test)]
mod tests {
    use super::super::locks::LockId;
    use super::super::tests::engine;
    use super::*;

    /// An engine on @machine with the host thread modelled at slowdown 5,
    /// vCPU 0 holding it.
    fn on_thread(machine: &str) -> Box<Engine> {
        let mut e = engine(machine);
        e.cfg.costs.tcg_slowdown = 5.0;
        e.tcg = Some(Tcg::new(e.cpus.len()));
        e.tcg.as_mut().unwrap().on = Some(0);
        e
    }

    #[test]
    fn a_runqueue_lock_held_off_the_thread_ends_the_takers_turn() {
        let mut e = on_thread("1llc");
        e.now = 1_500_000;
        // vCPU 2 went off the thread in its scheduling code, 1 us of it left
        e.tcg.as_mut().unwrap().holds_rq[2] = true;
        e.cpus[2].overhead = 1000.0;
        // its own lock, and a free one: no spin
        e.lock(LockId::Rq(0), 0, 100.0);
        e.lock(LockId::Rq(1), 0, 100.0);
        assert!(!e.tcg.as_ref().unwrap().paused);
        // vCPU 2's: vCPU 0 spins until 2's turn (1 has none to take: idle,
        // nothing pending), then 2 ends the code it was in
        e.lock(LockId::Rq(2), 0, 100.0);
        let tcg = e.tcg.as_ref().unwrap();
        assert!(tcg.paused);
        assert_eq!(tcg.spin_ns, 5000, "the holder's 1 us at slowdown 5");
        // with vCPU 1 wanting a turn too, the wait reaches the next tick
        // (HZ=1000: at 2 ms) first
        e.tcg.as_mut().unwrap().spin_ns = 0;
        e.tcg.as_mut().unwrap().pending[1].push(Ev::Tick { cpu: 1 });
        e.lock(LockId::Rq(2), 0, 100.0);
        assert_eq!(e.tcg.as_ref().unwrap().spin_ns, 500_000 + 5000);
        // the spin ends the turn after the event: the next vCPU that wants
        // the thread gets it, and the turn counts as a PAUSE's
        serve(&mut e);
        let tcg = e.tcg.as_ref().unwrap();
        assert_eq!(tcg.pauses, 1);
        assert!(!tcg.paused);
        assert_eq!(tcg.turns, 1);
    }

    #[test]
    fn the_clock_a_callback_reads_moves_on_by_its_spins() {
        let mut e = on_thread("1llc");
        e.now = 1_000;
        e.call_began = Some((e.kfuncs_run, super::super::context::loop_iters(), 0.0));
        let before = e.ktime();
        e.tcg.as_mut().unwrap().holds_rq[3] = true;
        e.cpus[3].overhead = 200.0;
        e.lock(LockId::Rq(3), 0, 0.0);
        // the lock's own hold and line transfer are charged too, so compare
        // against the clock without the spin
        let spin = e.tcg.as_ref().unwrap().spin_ns;
        assert_eq!(spin, 1000);
        let held = (e.cpus[0].overhead * 5.0) as u64;
        assert_eq!(e.ktime(), before + held + spin);
    }
}
