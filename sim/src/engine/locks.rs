//! Lock wait accounting: a runqueue or DSQ lock is free at some time; an
//! acquisition waits for it, holds it, and pays the cache line's transfer
//! from the last holder, all charged to the acquiring CPU's overhead.
use super::state::Lock;
use super::Engine;

/// Which lock: a CPU's runqueue lock, a user DSQ's, or the global DSQ's.
#[derive(Clone, Copy)]
pub(super) enum LockId {
    Rq(usize),
    Dsq(u64),
    Global,
}

impl Engine {
    /// Acquire @lock from @cpu at now + overhead already accrued; charges the
    /// wait and hold (plus the line transfer from the last holder) to @cpu.
    pub(super) fn lock(&mut self, which: LockId, cpu: usize, hold: f64) {
        if let LockId::Rq(owner) = which {
            super::tcg::spin(self, owner, cpu);
        }
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

    /// The lock @which names.
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
}

#[cfg(test)]
mod tests {
    use super::super::tests::engine;
    use super::LockId;

    #[test]
    fn an_uncontended_lock_charges_its_hold_only() {
        let mut e = engine("1llc");
        e.lock(LockId::Rq(0), 0, 500.0);
        let l = &e.cpus[0].rq_lock;
        assert_eq!((l.acquisitions, l.contended, l.wait_ns), (1, 0, 0));
        assert_eq!(l.free_at, 500);
        assert_eq!(e.cpus[0].overhead, 500.0);
    }

    #[test]
    fn a_second_cpu_waits_for_the_holder_and_pays_the_line_transfer() {
        let mut e = engine("1llc");
        e.lock(LockId::Global, 0, 300.0);
        e.lock(LockId::Global, 1, 300.0);
        let xfer = e.cfg.costs.line(e.m.dist(1, 0));
        assert!(xfer > 0.0);
        let l = &e.global.lock;
        assert_eq!((l.acquisitions, l.contended), (2, 1));
        assert_eq!(l.wait_ns, 300, "waits out the first hold");
        assert_eq!(l.last_cpu, 1);
        let held = (300.0 + xfer) as u64;
        assert_eq!(l.free_at, 300 + held);
        assert_eq!(e.cpus[1].overhead, (300 + held) as f64);
    }

    #[test]
    fn a_lock_freed_before_the_request_is_not_contended() {
        let mut e = engine("1llc");
        e.lock(LockId::Rq(2), 0, 100.0);
        e.now = 10_000;
        e.lock(LockId::Rq(2), 1, 100.0);
        let l = &e.cpus[2].rq_lock;
        assert_eq!((l.acquisitions, l.contended, l.wait_ns), (2, 0, 0));
    }
}
