//! Dispatch queues: a DSQ's FIFO or vtime order, and the kernel's rules
//! for inserting into DSQs (by callback context) and moving tasks from
//! them to a CPU's local DSQ.
use super::locks::LockId;
use super::state::{Ctx, Insert, Loc, Lock, TState};
use super::Engine;
use crate::ffi;
use std::collections::{BTreeMap, VecDeque};

/// A dispatch queue: FIFO, or vtime-ordered (ties in insertion order).
pub(super) struct Dsq {
    pub(super) fifo: VecDeque<usize>,
    pub(super) vt: BTreeMap<(u64, u64), usize>,
    /// None until the first insert; true = vtime-ordered
    pub(super) vtime: Option<bool>,
    pub(super) lock: Lock,
}

impl Dsq {
    /// An empty DSQ, its order not yet set.
    pub(super) fn new() -> Dsq {
        Dsq {
            fifo: VecDeque::new(),
            vt: BTreeMap::new(),
            vtime: None,
            lock: Lock::default(),
        }
    }
    /// How many tasks it holds.
    pub(super) fn len(&self) -> usize {
        self.fifo.len() + self.vt.len()
    }
    /// Its tasks in dispatch order.
    pub(super) fn order(&self) -> Vec<usize> {
        if self.vtime == Some(true) {
            self.vt.values().copied().collect()
        } else {
            self.fifo.iter().copied().collect()
        }
    }
    /// The task it would dispatch first.
    pub(super) fn first(&self) -> Option<usize> {
        if self.vtime == Some(true) {
            self.vt.values().next().copied()
        } else {
            self.fifo.front().copied()
        }
    }
    /// Removes @t, inserted with vtime key @key if vtime-ordered.
    pub(super) fn remove(&mut self, t: usize, key: (u64, u64)) {
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
    pub(super) fn find(&self, ok: impl Fn(usize) -> bool) -> Option<usize> {
        if self.vtime == Some(true) {
            self.vt.values().copied().find(|&t| ok(t))
        } else {
            self.fifo.iter().copied().find(|&t| ok(t))
        }
    }
}

impl Engine {
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
    pub fn insert(&mut self, t: usize, ins: Insert) -> bool {
        match self.ctx {
            Ctx::Select { t: ct } | Ctx::Enqueue { t: ct } if ct == t => {
                if self.tasks[t].ddsp.is_some() {
                    self.error(
                        ffi::SCX_EXIT_ERROR_BPF,
                        "task inserted twice in one callback".into(),
                    );
                    return false;
                }
                self.tasks[t].ddsp = Some(ins);
                true
            }
            Ctx::Dispatch { .. } => {
                if self.dispatch_buf.len() >= self.dispatch_max {
                    self.error(ffi::SCX_EXIT_ERROR_BPF, "dispatch buffer overflow".into());
                    return false;
                }
                self.dispatch_buf.push((t, ins));
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

    pub fn dispatch_nr_slots(&self) -> u32 {
        (self.dispatch_max - self.dispatch_buf.len()) as u32
    }

    pub fn dispatch_cancel(&mut self) {
        self.dispatch_buf.pop();
    }

    /// Puts @t on DSQ @dsq (resolved against @rq_cpu for SCX_DSQ_LOCAL).
    pub(super) fn dispatch_enqueue(&mut self, t: usize, ins: Insert, rq_cpu: usize) {
        let Insert {
            dsq,
            slice,
            vtime,
            flags,
            vtime_ordered: vt,
        } = ins;
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

    /// scx_bpf_dsq_move_vtime() from ops.dispatch: task @t, met iterating
    /// @src, moves to the vtime-ordered user DSQ @dst with key @vtime.
    pub fn move_task_to_dsq(&mut self, src: u64, t: usize, dst: u64, vtime: u64) -> bool {
        let cpu = match self.ctx {
            Ctx::Dispatch { cpu } => cpu,
            _ => {
                self.error(
                    ffi::SCX_EXIT_ERROR_BPF,
                    "dsq_move_vtime outside ops.dispatch".into(),
                );
                return false;
            }
        };
        if self.tasks[t].loc != Loc::Dsq(src) || src == ffi::SCX_DSQ_GLOBAL {
            return false;
        }
        self.lock(LockId::Dsq(src), cpu, self.cfg.costs.dsq_lock_hold_ns);
        let key = self.tasks[t].enq_key;
        self.dsqs.get_mut(&src).unwrap().remove(t, key);
        self.tasks[t].loc = Loc::None;
        let ins = Insert {
            dsq: dst,
            slice: 0,
            vtime,
            flags: 0,
            vtime_ordered: true,
        };
        self.dispatch_enqueue(t, ins, cpu);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::{Ctx, Insert, Loc, Step, TState};
    use super::super::tests::with_tasks;
    use super::super::Engine;
    use crate::ffi;

    /// An insert into @dsq with vtime @vtime, flags @flags, the slice kept.
    fn ins(dsq: u64, vtime: u64, flags: u64, vtime_ordered: bool) -> Insert {
        Insert {
            dsq,
            slice: 0,
            vtime,
            flags,
            vtime_ordered,
        }
    }

    /// An engine on 1llc with @n sleeping tasks on CPU 0, all made runnable
    /// (Queued, on no DSQ yet) and a user DSQ 7.
    fn queued(n: usize) -> Box<Engine> {
        let mut e = with_tasks("1llc", (0..n).map(|_| (0, vec![Step::Run(1000)])).collect());
        for t in 0..n {
            e.set_state(t, TState::Queued);
        }
        assert_eq!(e.create_dsq(7), 0);
        e
    }

    #[test]
    fn vtime_dsq_orders_by_vtime_then_insertion() {
        let mut e = queued(4);
        for (t, vtime) in [(0, 30), (1, 10), (2, 20), (3, 10)] {
            e.dispatch_enqueue(t, ins(7, vtime, 0, true), 0);
        }
        assert_eq!(e.exit, None);
        assert_eq!(e.dsq_order(7), vec![1, 3, 2, 0]);
        assert_eq!(e.dsq_first(7), Some(1));
        assert_eq!(unsafe { *ffi::sim_task_dsq_vtime(e.tasks[2].p) }, 20);
    }

    #[test]
    fn fifo_dsq_keeps_insertion_order_enq_head_first() {
        let mut e = queued(3);
        e.dispatch_enqueue(0, ins(7, 0, 0, false), 0);
        e.dispatch_enqueue(1, ins(7, 0, 0, false), 0);
        e.dispatch_enqueue(2, ins(7, 0, ffi::SCX_ENQ_HEAD, false), 0);
        assert_eq!(e.dsq_order(7), vec![2, 0, 1]);
        assert_eq!(e.dsq_len(7), 3);
    }

    #[test]
    fn mixing_fifo_and_vtime_in_one_dsq_is_an_error() {
        let mut e = queued(2);
        e.dispatch_enqueue(0, ins(7, 5, 0, true), 0);
        e.dispatch_enqueue(1, ins(7, 0, 0, false), 0);
        let (kind, msg) = e.exit.clone().expect("no error");
        assert_eq!(kind, ffi::SCX_EXIT_ERROR_BPF);
        assert!(msg.contains("mixes FIFO and vtime"), "{msg}");
        assert_eq!(e.dsq_order(7), vec![0]);
    }

    #[test]
    fn inserting_a_task_already_queued_is_a_violation() {
        let mut e = queued(1);
        e.dispatch_enqueue(0, ins(7, 0, 0, false), 0);
        e.dispatch_enqueue(0, ins(ffi::SCX_DSQ_GLOBAL, 0, 0, false), 0);
        assert_eq!(e.violations.len(), 1, "{:?}", e.violations);
        assert!(e.violations[0].contains("inserted while Queued/Dsq(7)"));
        assert_eq!(e.dsq_len(ffi::SCX_DSQ_GLOBAL), 0, "task in two places");
    }

    #[test]
    fn insert_records_by_callback_context() {
        let mut e = queued(2);
        e.ctx = Ctx::Enqueue { t: 0 };
        let i = Insert {
            slice: 1,
            ..ins(7, 2, 3, true)
        };
        assert!(e.insert(0, i));
        assert_eq!(e.tasks[0].ddsp, Some(i));
        e.ctx = Ctx::Dispatch { cpu: 0 };
        assert!(e.insert(1, ins(7, 0, 0, false)));
        assert_eq!(e.dispatch_nr_slots() as usize, e.dispatch_max - 1);
        e.ctx = Ctx::None;
        assert!(!e.insert(1, ins(7, 0, 0, false)));
        assert!(e.exit.is_some_and(|(k, _)| k == ffi::SCX_EXIT_ERROR_BPF));
    }

    #[test]
    fn move_to_local_takes_the_first_task_allowed_here() {
        let mut e = queued(3);
        e.tasks[0].allowed[1] = false;
        for t in 0..3 {
            e.dispatch_enqueue(t, ins(7, 0, 0, false), 0);
        }
        e.ctx = Ctx::Dispatch { cpu: 1 };
        e.cur_cpu = 1;
        assert!(e.move_to_local(7));
        assert_eq!(e.tasks[1].loc, Loc::Local(1));
        assert_eq!(e.tasks[1].cpu, 1);
        assert_eq!(e.cpus[1].local, [1]);
        assert_eq!(e.dsq_order(7), vec![0, 2]);
        e.ctx = Ctx::Other;
        assert!(!e.move_to_local(7), "moved outside ops.dispatch");
    }
}
