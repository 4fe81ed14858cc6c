//! Invariant checks: the periodic one (stall watchdog, work conservation in
//! an LLC) and those at the end of a run (every task finished, every
//! ops.enqueue matched by an insert or still held).
use super::state::{Ev, Loc, TState};
use super::Engine;
use crate::ffi;

impl Engine {
    /// Periodic invariant checks and the stall watchdog.
    pub(super) fn check(&mut self) {
        let now = self.now;
        let msgs = self.stall_and_idle_checks(now);
        for m in msgs {
            self.violation(m);
        }
        self.push(now + 1_000_000, Ev::Check);
    }

    /// Sets a stall exit for a task runnable past the watchdog, and returns
    /// a violation for each task that waited past idle_bound_ns while a CPU
    /// it may use in its LLC idled the whole time.
    fn stall_and_idle_checks(&mut self, now: u64) -> Vec<String> {
        let e = self;
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
        msgs
    }

    /// The end-of-run checks for a run that ended at @end with exit @kind;
    /// returns whether every task finished.
    pub(super) fn end_checks(&mut self, end: u64, kind: i32) -> bool {
        let alive = self
            .tasks
            .iter()
            .filter(|t| t.state != TState::Dead)
            .count();
        let completed = alive == 0;
        if kind < 1024 && !completed && end < self.cfg.max_ns {
            self.violation(format!("{alive} tasks never finished"));
        }
        let custody = self.tasks.iter().filter(|t| t.loc == Loc::Custody).count() as u64;
        if self.enqueues != self.enqueue_matched + custody + self.custody_dequeued {
            self.violation(format!(
                "enqueues {} != inserted {} + held {}",
                self.enqueues, self.enqueue_matched, custody
            ));
        }
        completed
    }
}
