//! Idle tracking: the idle and idle-core (SMT) masks the scheduler reads,
//! and scx_bpf_test_and_clear_cpu_idle / scx_bpf_pick_idle_cpu on them.
use super::state::{bit, setbit};
use super::Engine;

impl Engine {
    /// Sets @cpu idle or busy in the idle mask, and its core in the SMT mask.
    pub(super) fn set_idle(&mut self, cpu: usize, idle: bool) {
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
}

#[cfg(test)]
mod tests {
    use super::super::state::bit;
    use super::super::tests::engine;

    #[test]
    fn pick_idle_claims_a_cpu_and_spreads_from_the_last_pick() {
        let mut e = engine("1llc");
        let all = vec![!0u64; e.idle_mask.len()];
        assert_eq!(e.pick_idle(&all, false), 0);
        assert!(!bit(&e.idle_mask, 0), "the pick is not claimed");
        assert_eq!(e.pick_idle(&all, false), 1);
        e.set_idle(0, true);
        assert_eq!(e.pick_idle(&all, false), 2, "went back instead of on");
        assert_eq!(e.pick_idle(&all, false), 3);
        assert_eq!(e.pick_idle(&all, false), 0, "did not wrap");
        assert_eq!(e.pick_idle(&all, false), -16, "nothing idle: -EBUSY");
    }

    #[test]
    fn a_busy_thread_takes_its_core_out_of_the_smt_mask() {
        let mut e = engine("2llc-smt");
        let sib = e.m.siblings[0][0];
        assert!(e.test_and_clear_idle(0));
        assert!(!e.test_and_clear_idle(0), "cleared twice");
        assert!(bit(&e.idle_mask, sib));
        assert!(!bit(&e.smt_mask, sib), "half-busy core still idle");
        let all = vec![!0u64; e.idle_mask.len()];
        let c = e.pick_idle(&all, true) as usize;
        assert!(c != 0 && c != sib, "picked CPU {c} of a busy core");
        e.set_idle(0, true);
        assert!(
            bit(&e.smt_mask, 0) && bit(&e.smt_mask, sib),
            "core not idle again"
        );
    }
}
