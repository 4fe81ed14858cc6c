//! Invariant checks: the periodic one (stall watchdog, work conservation in
//! an LLC) and those at the end of a run (every task finished, every
//! ops.enqueue matched by an insert or still held).
use super::state::{Ev, Loc, TState};
use super::tcg::{awaits_turn, tcg_round_ns};
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
        if let Some(tr) = &mut self.tracer {
            tr.counts(now, self.nr_waiting, self.nr_idle);
        }
        if self.cfg.timeline_ns > 0 && now.is_multiple_of(self.cfg.timeline_ns) {
            let row = self.counter_row();
            self.timeline.push(row);
        }
        self.push(now + 1_000_000, Ev::Check);
    }

    /// Sets a stall exit for a task runnable past the watchdog, and returns
    /// a violation for each task that waited past idle_bound_ns while a CPU
    /// it may use in its LLC idled the whole time.
    fn stall_and_idle_checks(&mut self, now: u64) -> Vec<String> {
        let bound = self.cfg.idle_bound_ns + tcg_round_ns(self);
        let mut msgs = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if t.state != TState::Queued {
                continue;
            }
            let waited = now - t.runnable_since;
            if waited > self.cfg.watchdog_ns {
                self.exit = Some((
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
            let llc = self.m.cpu(t.cpu).llc;
            if let Loc::Local(c) = t.loc {
                if self.cpus[c].curr.is_none() && !awaits_turn(self, c, t.runnable_since) {
                    msgs.push(format!(
                        "task {} waits on the local DSQ of idle CPU {c}",
                        i + 1
                    ));
                }
                continue;
            }
            for &c in &self.m.topo.llcs[llc] {
                if t.allowed[c]
                    && self.cpus[c]
                        .idle_since
                        .is_some_and(|s| s <= t.runnable_since)
                    && !awaits_turn(self, c, t.runnable_since)
                {
                    msgs.push(format!(
                        "CPU {c} idle for {} us while task {} waited {} us in its LLC",
                        (now - self.cpus[c].idle_since.unwrap()) / 1000,
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
        let alive = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].state != TState::Dead && !self.wl.machine_task(i))
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

#[cfg(test)]
mod tests {
    use super::super::state::{Loc, TState};
    use super::super::tests::with_tasks;
    use super::super::Engine;
    use crate::ffi;

    /// An engine on 1llc with one task, runnable since 0 and queued at @loc.
    fn waiting_at(loc: Loc) -> Box<Engine> {
        let mut e = with_tasks("1llc", vec![(1, vec![])]);
        e.set_state(0, TState::Queued);
        e.tasks[0].loc = loc;
        e
    }

    #[test]
    fn a_task_waiting_on_an_idle_cpus_local_dsq_is_caught() {
        let mut e = waiting_at(Loc::Local(1));
        e.cpus[1].local.push_back(0);
        e.now = 10_000_000;
        e.check();
        assert!(e.violations.is_empty(), "caught within the bound");
        e.now = 30_000_000;
        e.check();
        assert_eq!(e.violations.len(), 1, "{:?}", e.violations);
        assert!(e.violations[0].contains("task 1 waits on the local DSQ of idle CPU 1"));
    }

    #[test]
    fn an_idle_cpu_in_the_llc_of_a_waiting_task_is_caught() {
        let mut e = waiting_at(Loc::Dsq(ffi::SCX_DSQ_GLOBAL));
        e.now = 30_000_000;
        e.check();
        assert_eq!(e.violations.len(), 1, "{:?}", e.violations);
        assert!(e.violations[0].contains("CPU 0 idle for 30000 us while task 1 waited 30000 us"));
        let mut e = waiting_at(Loc::Dsq(ffi::SCX_DSQ_GLOBAL));
        for c in 0..e.cpus.len() {
            e.cpus[c].idle_since = Some(1);
        }
        e.now = 30_000_000;
        e.check();
        assert!(
            e.violations.is_empty(),
            "CPUs idle only since after it queued"
        );
    }

    #[test]
    fn a_task_runnable_past_the_watchdog_stalls_the_run() {
        let mut e = waiting_at(Loc::Custody);
        e.cfg.watchdog_ns = 50_000_000;
        e.now = 40_000_000;
        e.check();
        assert_eq!(e.exit, None);
        e.now = 60_000_000;
        e.check();
        let (kind, msg) = e.exit.clone().expect("no stall");
        assert_eq!(kind, ffi::SCX_EXIT_ERROR_STALL);
        assert_eq!(msg, "t0[1] stalled: runnable for 60 ms");
    }

    #[test]
    fn unfinished_tasks_and_lost_enqueues_are_caught_at_the_end() {
        let mut e = waiting_at(Loc::None);
        e.enqueues = 1;
        assert!(!e.end_checks(1_000, ffi::SCX_EXIT_UNREG));
        assert_eq!(e.violations.len(), 2, "{:?}", e.violations);
        assert!(e.violations[0].ends_with("1 tasks never finished"));
        assert!(e.violations[1].ends_with("enqueues 1 != inserted 0 + held 0"));
        let mut e = waiting_at(Loc::Custody);
        e.enqueues = 1;
        e.set_state(0, TState::Dead);
        assert!(e.end_checks(1_000, ffi::SCX_EXIT_UNREG));
        assert!(e.violations.is_empty(), "{:?}", e.violations);
    }
}
