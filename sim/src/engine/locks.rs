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
