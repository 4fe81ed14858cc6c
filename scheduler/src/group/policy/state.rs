//! The balancer's state across periods: a `Group` per tracked cgroup (its
//! partition, runtime totals, windowed load, settle period) and the `Policy`
//! that holds them with the partitions' loads and predicted loads, and runs
//! each period: the accounting, the first settles, and one settle attempt
//! round robin.

use super::settle::{decide, Decision};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;

/// The longest a settled group waits between two settle attempts.
pub const SETTLE_PERIOD_MAX_NS: u64 = 10_000_000_000;
/// Predicted load halves every this long (the seed's DECAY_PERIOD, HZ).
pub const PREDICT_HALF_LIFE_NS: u64 = 1_000_000_000;
/// Loads are averaged over at least this long (and two periods). BPF
/// accounts a running task's time at its CPU's ticks, and a vCPU the host
/// does not run accounts nothing until it runs again, then all at once: on
/// the 8-vCPU TCG guest one partition's load read 3.2 to 7.9 CPUs from one
/// 200 ms period to the next under a steady 4 CPUs of demand. A window
/// longer than the host's round over the vCPUs evens that out.
pub const LOAD_WINDOW_NS: u64 = 1_000_000_000;

/// Loads in CPUs from cumulative ns per partition, averaged over a sliding
/// window: the growth since the newest sample at least a window old (or the
/// oldest there is), over the time between them.
#[derive(Debug)]
struct LoadWindow {
    samples: VecDeque<(u64, Vec<u64>)>,
}

impl LoadWindow {
    /// A window whose counters (@n of them) start from zero at @now.
    fn starting(now: u64, n: usize) -> Self {
        LoadWindow {
            samples: VecDeque::from([(now, vec![0; n])]),
        }
    }

    /// Forgets every sample: the window starts again at @now, with the
    /// totals @cum.
    fn restart(&mut self, now: u64, cum: &[u64]) {
        self.samples.clear();
        self.samples.push_back((now, cum.to_vec()));
    }

    /// Records the totals @cum at @now and returns the loads over the last
    /// @window ns.
    fn update(&mut self, now: u64, cum: &[u64], window: u64) -> Vec<f64> {
        while self.samples.len() >= 2 && now.saturating_sub(self.samples[1].0) >= window {
            self.samples.pop_front();
        }
        let loads = match self.samples.front() {
            Some((then, old)) if now > *then => cum
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let old = old.get(i).copied().unwrap_or(0);
                    c.saturating_sub(old) as f64 / (now - then) as f64
                })
                .collect(),
            _ => vec![0.0; cum.len()],
        };
        self.samples.push_back((now, cum.to_vec()));
        loads
    }
}

/// One balanced cgroup.
#[derive(Debug)]
pub struct Group {
    pref: Option<usize>,
    settles: u32,
    resettles: u32,
    settle_period: u64,
    settle_next: u64,
    /// Runtime per partition since it was first seen, ns.
    total: Vec<u64>,
    /// Runtime since it was first settled, and the part of it spent inside
    /// the partition it was settled into at the time, ns.
    settled_ns: u64,
    inside_ns: u64,
    /// Recent load per partition, CPUs busy or wanted (over the window).
    load: Vec<f64>,
    /// Its runnable demand per partition (ns x weight) in the window.
    demand: LoadWindow,
    /// Periods in a row in which it ran (first settle from two on).
    busy_periods: u32,
    /// Per partition, whether its effective cpuset reaches it (all: no
    /// cpuset controller, or not read yet).
    allowed: Vec<bool>,
    /// A move to this partition that the last attempt found and the next
    /// must confirm, a load window later.
    pending: Option<usize>,
    /// Its last settle or move and the loads it was decided on, as text.
    last_move: String,
}

impl Group {
    /// Its partition, if settled.
    pub fn pref(&self) -> Option<usize> {
        self.pref
    }

    /// Runtime per partition since it was first seen, ns.
    pub fn total(&self) -> &[u64] {
        &self.total
    }

    /// Share of its runtime spent inside its partition since it was settled
    /// (never settled: in the partition where it ran most).
    pub fn exclusivity(&self) -> f64 {
        if self.settled_ns > 0 {
            return self.inside_ns as f64 / self.settled_ns as f64;
        }
        let sum: u64 = self.total.iter().sum();
        let most = self.total.iter().copied().max().unwrap_or(0);
        if sum == 0 {
            0.0
        } else {
            most as f64 / sum as f64
        }
    }

    /// Times it was settled, and moved to another partition.
    pub fn settles(&self) -> (u32, u32) {
        (self.settles, self.resettles)
    }

    /// Takes its load outside its partition (none if unsettled) off
    /// @part_load, keeping every load >= 0.
    fn remove_leaving_load(&self, part_load: &mut [f64]) {
        let Some(pref) = self.pref else { return };
        for (i, (load, own)) in part_load.iter_mut().zip(&self.load).enumerate() {
            if i != pref {
                *load = (*load - own).max(0.0);
            }
        }
    }

    /// Its last settle or move and the loads it was decided on ("" if
    /// never settled).
    pub fn last_move(&self) -> &str {
        &self.last_move
    }

    /// Its state as JSON (the simulator's report; scx_mosaic's is
    /// Balancer::metrics).
    pub fn to_json(&self, cgid: u64) -> Value {
        json!({"cgroup_id": cgid, "partition": self.pref, "settles": self.settles,
               "resettles": self.resettles, "exclusivity": self.exclusivity(),
               "runtime_ns_per_partition": self.total, "last_move": self.last_move})
    }
}

/// One line on @g's move at @now (ns) to its partition: the loads per
/// partition it was decided on (all tasks, its own, predicted).
fn describe_move(g: &Group, now: u64, part_load: &[f64], predict: &[f64]) -> String {
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        "p{} at {:.2} s: load {}; own {}; predicted {}",
        g.pref.unwrap_or(0),
        now as f64 / 1e9,
        list(part_load),
        list(&g.load),
        list(predict)
    )
}

/// The balancer's state across periods, in time @now (ns, any origin: the
/// state starts at 0).
#[derive(Debug)]
pub struct Policy {
    period_ns: u64,
    /// False with --no-group-balancer: account, but never settle.
    enabled: bool,
    groups: BTreeMap<u64, Group>,
    predict: Vec<f64>,
    cap: Vec<f64>,
    /// All tasks' runnable demand per partition in the window, and its load.
    part_demand: LoadWindow,
    part_load: Vec<f64>,
    global_next: u64,
    predict_stamp: u64,
    /// cgid tried last: the next attempt starts after it (round robin).
    cursor: Option<u64>,
}

impl Policy {
    /// @cap: capacity per partition in CPUs (see capacities()).
    pub fn new(cap: Vec<f64>, period_ns: u64, enabled: bool) -> Self {
        let n = cap.len();
        Policy {
            period_ns,
            enabled,
            groups: BTreeMap::new(),
            predict: vec![0.0; n],
            cap,
            part_demand: LoadWindow::starting(0, n),
            part_load: vec![0.0; n],
            global_next: 0,
            predict_stamp: 0,
            cursor: None,
        }
    }

    /// The groups by cgroup id.
    pub fn groups(&self) -> &BTreeMap<u64, Group> {
        &self.groups
    }

    /// Restricts group @cgid to the partitions @allowed (one flag per
    /// partition: does its effective cpuset share a CPU with it).
    pub fn set_allowed(&mut self, cgid: u64, allowed: Vec<bool>) {
        if let Some(g) = self.groups.get_mut(&cgid) {
            if allowed.len() == g.allowed.len() {
                g.allowed = allowed;
            }
        }
    }

    /// Starts tracking cgroup @cgid, unsettled; false if already tracked.
    pub fn add(&mut self, cgid: u64, now: u64) -> bool {
        if self.groups.contains_key(&cgid) {
            return false;
        }
        let n = self.cap.len();
        self.groups.insert(
            cgid,
            Group {
                pref: None,
                settles: 0,
                resettles: 0,
                settle_period: self.period_ns,
                settle_next: now,
                total: vec![0; n],
                settled_ns: 0,
                inside_ns: 0,
                load: vec![0.0; n],
                // BPF accounts a cgroup from when it is registered (now)
                demand: LoadWindow::starting(now, n),
                busy_periods: 0,
                allowed: vec![true; n],
                pending: None,
                last_move: String::new(),
            },
        );
        true
    }

    /// Stops tracking cgroup @cgid (e.g. BPF could not register it: it is
    /// added again, afresh, at a later sync); false if it was not tracked.
    pub fn remove(&mut self, cgid: u64) -> bool {
        // the round robin's cursor may name a gone id: it resumes after it
        self.groups.remove(&cgid).is_some()
    }

    /// Makes the tracked groups those of @live (cgroups come and go at any
    /// time): the ids added, then the ids dropped, both ascending.
    pub fn sync(&mut self, live: &BTreeSet<u64>, now: u64) -> (Vec<u64>, Vec<u64>) {
        let gone: Vec<u64> = self
            .groups
            .keys()
            .filter(|id| !live.contains(id))
            .copied()
            .collect();
        for id in &gone {
            self.groups.remove(id);
        }
        let added = live
            .iter()
            .copied()
            .filter(|&id| self.add(id, now))
            .collect();
        (added, gone)
    }

    /// One period at @now: loads from the runnable demand (ns since the
    /// start, x weight/100, of running or waiting to run: @part_demand per
    /// partition; in @group_totals per tracked group its runtime per
    /// partition, then its demand per partition - absent, the runtime
    /// stands for it; a missing group counts as nothing), exclusivity from
    /// the runtime, then the first settle of every busy group not yet
    /// settled, or else one settle attempt. Returns the groups that moved and their partitions, in
    /// order, for BPF's group_prefs.
    pub fn tick(
        &mut self,
        now: u64,
        part_demand: &[u64],
        group_totals: &BTreeMap<u64, Vec<u64>>,
    ) -> Vec<(u64, usize)> {
        let window = self.window_ns();
        let n = self.cap.len();
        // partition loads, in CPUs, over the window
        let cum: Vec<u64> = (0..n)
            .map(|p| part_demand.get(p).copied().unwrap_or(0))
            .collect();
        self.part_load = self.part_demand.update(now, &cum, window);
        // group loads (from the demand) and exclusivity (from the runtime)
        for (id, g) in self.groups.iter_mut() {
            let totals = group_totals.get(id).map_or(&[][..], |v| &v[..]);
            let n = g.total.len();
            let runtime = &totals[..totals.len().min(n)];
            let demand = totals.get(n..2 * n).unwrap_or(runtime);
            let ran = g
                .total
                .iter()
                .enumerate()
                .any(|(p, &t)| runtime.get(p).is_some_and(|&n| n > t));
            g.busy_periods = if ran { g.busy_periods + 1 } else { 0 };
            for (p, total) in g.total.iter_mut().enumerate() {
                let now = runtime.get(p).copied().unwrap_or(0);
                let delta = now.saturating_sub(*total);
                if let Some(pref) = g.pref {
                    g.settled_ns += delta;
                    if pref == p {
                        g.inside_ns += delta;
                    }
                }
                *total = (*total).max(now);
            }
            let cum: Vec<u64> = (0..n)
                .map(|p| demand.get(p).copied().unwrap_or(0))
                .collect();
            if g.pref.is_none() && !ran {
                // a group not settled yet is weighed from when it began
                // running: its first settle (and what it predicts for its
                // partition) sees its whole load, not a window of mostly idle
                g.demand.restart(now, &cum);
                g.load = vec![0.0; n];
            } else {
                g.load = g.demand.update(now, &cum, window);
            }
        }

        let mut moved = Vec::new();
        if !self.enabled || now < self.global_next {
            return moved;
        }
        self.decay_predictions(now);
        // the load a settled group still has outside its partition is
        // leaving (its tasks move in at their next tick): no decision counts
        // it there, or a group settled a period ago would still weigh on the
        // partition it left and draw the next group into its own
        let mut part_load = self.loads_without_leaving(None);
        // new groups first, all of them, one after the other: each sees the
        // load the ones before it are predicted to bring, and their load
        // gone from the partitions they leave
        while let Some(id) = self.next_candidate(now, true) {
            self.cursor = Some(id);
            if self.try_to_settle(id, now, &part_load) {
                let g = &self.groups[&id];
                moved.extend(g.pref.map(|p| (id, p)));
                g.remove_leaving_load(&mut part_load);
            }
        }
        if moved.is_empty() {
            if let Some(id) = self.next_candidate(now, false) {
                self.cursor = Some(id);
                // a settled group decides on its own load where it is now
                let part_load = self.loads_without_leaving(Some(id));
                if self.try_to_settle(id, now, &part_load) {
                    moved.extend(self.groups[&id].pref.map(|p| (id, p)));
                }
            }
        }
        if !moved.is_empty() {
            self.global_next = now + self.period_ns;
        }
        moved
    }

    /// How long loads are averaged over.
    fn window_ns(&self) -> u64 {
        LOAD_WINDOW_NS.max(2 * self.period_ns)
    }

    /// The partitions' loads without the load that the settled groups,
    /// except @except, still have outside their partitions.
    fn loads_without_leaving(&self, except: Option<u64>) -> Vec<f64> {
        let mut part_load = self.part_load.clone();
        for (&id, g) in &self.groups {
            if Some(id) != except {
                g.remove_leaving_load(&mut part_load);
            }
        }
        part_load
    }

    /// Predicted loads halve every second; gone after ten.
    fn decay_predictions(&mut self, now: u64) {
        let halves = now.saturating_sub(self.predict_stamp) as f64 / PREDICT_HALF_LIFE_NS as f64;
        if halves < 1.0 {
            return;
        }
        // the part of a half-life not yet decayed carries over (the seed's
        // predict_period_stamp)
        self.predict_stamp += halves.floor() as u64 * PREDICT_HALF_LIFE_NS;
        for p in self.predict.iter_mut() {
            *p = if halves > 10.0 {
                0.0
            } else {
                *p / 2f64.powi(halves as i32)
            };
        }
    }

    /// The next group due for a settle attempt, round robin after the last.
    /// Only groups that ran in the last periods take part: the seed tries to
    /// settle from a running task of the group, and an idle group's attempt
    /// would only delay the others' by a period each. A first settle waits
    /// until the group ran in two periods in a row, as the seed's waits until
    /// a task ran a whole period: a group caught as it starts shows a load
    /// near zero, and a batch of those would all land where the noise is
    /// least (test_group saw two busy groups settle into one partition).
    /// With @unsettled_only, only groups never settled.
    fn next_candidate(&self, now: u64, unsettled_only: bool) -> Option<u64> {
        let due = |(&id, g): (&u64, &Group)| {
            let ready = match g.pref {
                None => g.busy_periods >= 2,
                Some(_) => !unsettled_only && g.load.iter().sum::<f64>() > 0.0,
            };
            (g.settle_next <= now && ready).then_some(id)
        };
        match self.cursor {
            None => self.groups.iter().find_map(due),
            Some(c) => self
                .groups
                .range((Bound::Excluded(c), Bound::Unbounded))
                .find_map(due)
                .or_else(|| self.groups.range(..=c).find_map(due)),
        }
    }

    /// Runs the seed's settle step for group @id on the loads per partition
    /// @part_load; true if it moved.
    fn try_to_settle(&mut self, id: u64, now: u64, part_load: &[f64]) -> bool {
        let window = self.window_ns();
        let g = self.groups.get_mut(&id).unwrap();
        let decision = decide(
            part_load,
            &g.load,
            &self.predict,
            &self.cap,
            &g.allowed,
            g.pref,
        );
        // A settled group moves only on an imbalance that lasts: the first
        // attempt that would move it notes where to, and the group moves if
        // the attempt a load window later, on loads that share no sample with
        // these, picks the same partition. One burst fills one window, and
        // demand is scaled by weight: a nice -20 task waiting 150 ms weighs
        // 13 CPUs over a 1 s window, and would draw a group out of a
        // partition it fits in. A partition its cpuset no longer reaches is
        // left at once.
        let can_stay = g
            .pref
            .is_some_and(|p| g.allowed.get(p).copied().unwrap_or(true));
        if let Decision::Resettle(dst) = decision {
            if can_stay && g.pending != Some(dst) {
                g.pending = Some(dst);
                g.settle_next = now + window;
                return false;
            }
        }
        g.pending = None;
        let group_load: f64 = g.load.iter().sum();
        let predicted = self.predict.clone();
        if group_load > 0.0 {
            g.settle_period = (g.settle_period * 2).min(SETTLE_PERIOD_MAX_NS);
        }
        let moved = match decision {
            Decision::Stay => false,
            Decision::Settle(dst) => {
                g.pref = Some(dst);
                g.settles += 1;
                self.predict[dst] += group_load;
                true
            }
            Decision::Resettle(dst) => {
                g.pref = Some(dst);
                g.resettles += 1;
                self.predict[dst] += group_load;
                g.settle_period = self.period_ns * 2;
                true
            }
        };
        if moved {
            g.last_move = describe_move(g, now, part_load, &predicted);
        }
        g.settle_next = now + g.settle_period;
        moved
    }

    /// Mean exclusivity of the settled groups (none settled: of all groups,
    /// each in the partition where it ran most).
    #[allow(dead_code)] // mosaic-sim's report
    pub fn mean_exclusivity(&self) -> f64 {
        let settled: Vec<&Group> = self.groups.values().filter(|g| g.settled_ns > 0).collect();
        if settled.is_empty() {
            self.groups.values().map(|g| g.exclusivity()).sum::<f64>()
                / self.groups.len().max(1) as f64
        } else {
            settled.iter().map(|g| g.exclusivity()).sum::<f64>() / settled.len() as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Two partitions of 4 CPUs, a 100 ms period.
    fn policy() -> Policy {
        Policy::new(vec![4.0, 4.0], 100 * MS, true)
    }

    fn live(ids: &[u64]) -> BTreeSet<u64> {
        ids.iter().copied().collect()
    }

    /// Runtime totals (ns) where each of @busy ran @ns in partition 0.
    fn ran_in_p0(busy: &[u64], ns: u64) -> (Vec<u64>, BTreeMap<u64, Vec<u64>>) {
        let groups = busy.iter().map(|&id| (id, vec![ns, 0])).collect();
        (vec![ns * busy.len() as u64, 0], groups)
    }

    /// One period at @now ms, runtime totals in ms: per partition, and
    /// per group and partition.
    fn tick(
        p: &mut Policy,
        now: u64,
        part: [u64; 2],
        groups: &[(u64, [u64; 2])],
    ) -> Vec<(u64, usize)> {
        let groups = groups
            .iter()
            .map(|(id, t)| (*id, t.iter().map(|ms| ms * MS).collect()))
            .collect();
        p.tick(now * MS, &part.map(|ms| ms * MS), &groups)
    }

    #[test]
    fn loads_average_bursty_accounting_over_the_window_and_forget_older_load() {
        // 4 CPUs of demand accounted in bursts, as by vCPUs the host runs in
        // turn: nothing in one 200 ms period, twice as much in the next
        let mut w = LoadWindow::starting(0, 1);
        let mut cum = 0;
        let mut loads = vec![];
        for period in 1..=10u64 {
            cum += if period % 2 == 1 { 0 } else { 1600 * MS };
            loads.push(w.update(period * 200 * MS, &[cum], LOAD_WINDOW_NS)[0]);
        }
        // per period it would read 0 then 8; over the window it reads 2.0 at
        // worst (the first period), 4 +- 20 % once the window is full
        assert_eq!(loads[0], 0.0);
        for (i, l) in loads.iter().enumerate().skip(5) {
            assert!((3.2..=4.8).contains(l), "period {}: {l}", i + 1);
        }
        // the demand stops: after a window, what came before is gone
        for period in 11..=16u64 {
            loads.push(w.update(period * 200 * MS, &[cum], LOAD_WINDOW_NS)[0]);
        }
        assert_eq!(*loads.last().unwrap(), 0.0, "{loads:?}");
    }

    #[test]
    fn a_new_groups_load_counts_from_when_it_began_running() {
        // group 4, registered at 0, idles for a second, then keeps 2 CPUs of
        // p0 busy: its first settle, two periods later, weighs 2 CPUs (and
        // predicts them for its partition), not 2 CPUs thinned over a window
        // of mostly idle time
        let mut p = policy();
        p.sync(&live(&[4]), 0);
        for t in (100..=1000).step_by(100) {
            assert_eq!(tick(&mut p, t, [0, 0], &[(4, [0, 0])]), []);
        }
        assert_eq!(tick(&mut p, 1100, [200, 0], &[(4, [200, 0])]), []);
        assert_eq!(tick(&mut p, 1200, [400, 0], &[(4, [400, 0])]), [(4, 0)]);
        assert_eq!(
            p.groups()[&4].last_move(),
            "p0 at 1.20 s: load 0.40 0.00; own 2.00 0.00; predicted 0.00 0.00"
        );
        assert_eq!(p.predict, [2.0, 0.0]);
    }

    #[test]
    fn a_groups_load_is_its_runnable_demand_not_its_runtime() {
        // group 3 keeps 1 CPU of p0 busy while 2 more of its tasks wait there:
        // p0's demand, 3 CPUs, is all its own; p1 carries 1.5 CPUs of other
        // work. Its own demand excluded, p0 is free and it settles there; had
        // its load been its runtime (1 CPU), p0 would look 2 CPUs busy and it
        // would move to p1, leaving its waiting tasks' demand behind
        let mut p = policy();
        p.sync(&live(&[3]), 0);
        let totals = |ms: u64| {
            let part = vec![3 * ms * MS, 3 * ms * MS / 2];
            let group = BTreeMap::from([(3, vec![ms * MS, 0, 3 * ms * MS, 0])]);
            (part, group)
        };
        let (part, group) = totals(100);
        assert_eq!(p.tick(100 * MS, &part, &group), []);
        let (part, group) = totals(200);
        assert_eq!(p.tick(200 * MS, &part, &group), [(3, 0)]);
        // exclusivity counts where it ran, not where it waited
        assert_eq!(p.groups()[&3].total(), &[200 * MS, 0]);
    }

    #[test]
    fn new_groups_settle_at_once_then_one_attempt_per_period() {
        let mut p = policy();
        assert_eq!(p.sync(&live(&[7, 3]), 0), (vec![3, 7], vec![]));
        // group 3 alone busy, in p0: not in its first busy period, then its
        // own load excluded, p0 is as free as p1 and comes first; group 7
        // never ran: not settled
        assert_eq!(tick(&mut p, 50, [50, 0], &[(3, [50, 0])]), []);
        assert_eq!(tick(&mut p, 100, [100, 0], &[(3, [100, 0])]), [(3, 0)]);
        assert_eq!(p.groups()[&7].pref(), None);
        // a move: nothing happens until a period has passed
        let busy = [(3, [100, 0]), (7, [50, 0])];
        assert_eq!(tick(&mut p, 150, [150, 0], &busy), []);
        // then group 7, busy in p0 too (a second period): p1 is free
        let busy = [(3, [250, 0]), (7, [150, 0])];
        assert_eq!(tick(&mut p, 250, [400, 0], &busy), [(7, 1)]);
        assert_eq!(p.groups()[&3].pref(), Some(0));
        assert_eq!(p.groups()[&7].pref(), Some(1));
        // group 3 is due again (its period doubled to 200 ms) and stays
        let busy = [(3, [350, 0]), (7, [150, 100])];
        assert_eq!(tick(&mut p, 350, [500, 100], &busy), []);
        assert_eq!(p.groups()[&3].settle_next, 750 * MS);
        // exclusivity counts from each group's settle
        let busy = [(3, [450, 0]), (7, [250, 100])];
        tick(&mut p, 450, [700, 100], &busy);
        assert_eq!(p.groups()[&3].exclusivity(), 1.0);
        assert_eq!(p.groups()[&7].exclusivity(), 0.5);
        assert_eq!(p.mean_exclusivity(), 0.75);
        let j = p.groups()[&7].to_json(7);
        assert_eq!(j["cgroup_id"], 7);
        assert_eq!(j["partition"], 1);
        assert_eq!(j["settles"], 1);
        assert_eq!(j["runtime_ns_per_partition"], json!([250 * MS, 100 * MS]));
    }

    #[test]
    fn a_batch_of_new_groups_spreads_over_the_partitions_in_one_period() {
        let mut p = policy();
        p.sync(&live(&[1, 2, 3, 4]), 0);
        // four busy groups, all in p0: the predictions send them two and two
        let busy = [(1, [50, 0]), (2, [50, 0]), (3, [50, 0]), (4, [50, 0])];
        assert_eq!(tick(&mut p, 50, [200, 0], &busy), []);
        let busy = [(1, [100, 0]), (2, [100, 0]), (3, [100, 0]), (4, [100, 0])];
        let moved = tick(&mut p, 100, [400, 0], &busy);
        assert_eq!(moved.iter().map(|m| m.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
        let in_p0 = moved.iter().filter(|m| m.1 == 0).count();
        assert_eq!(in_p0, 2, "{moved:?}");
        // settled groups then wait their turn: one attempt per period
        let busy = [(1, [200, 0]), (2, [200, 0]), (3, [200, 0]), (4, [200, 0])];
        assert_eq!(tick(&mut p, 150, [800, 0], &busy), []);
    }

    #[test]
    fn a_settled_groups_load_outside_its_partition_is_leaving_it() {
        let mut p = policy();
        p.sync(&live(&[1, 2]), 0);
        // group 1 starts spread, group 2 a period later in p0: group 1
        // settles alone, into the emptier p1
        tick(&mut p, 100, [50, 50], &[(1, [50, 50])]);
        let busy = [(1, [100, 100]), (2, [100, 0])];
        assert_eq!(tick(&mut p, 200, [200, 100], &busy), [(1, 1)]);
        // a period later four of group 1's tasks still run in p0 (they move
        // at their next tick) and its load grows there, past what was
        // predicted for p1. Counted in p0, that load would send group 2 into
        // p1 as well (p0 2.33 - 1.00 own = 1.33 against p1 0.50 - 0.25 own +
        // 1.00 predicted = 1.25; group 2's own load counts from 0.10 s, when
        // it began running); it is leaving p0, and group 2 settles there
        let busy = [(1, [500, 100]), (2, [200, 50])];
        assert_eq!(tick(&mut p, 300, [700, 150], &busy), [(2, 0)]);
        assert_eq!(
            p.groups()[&2].last_move(),
            "p0 at 0.30 s: load 0.67 0.50; own 1.00 0.25; predicted 0.00 1.00"
        );
    }

    #[test]
    fn idle_groups_do_not_delay_a_busy_ones_settle() {
        let mut p = policy();
        p.sync(&live(&[1, 2, 3, 4, 9]), 0);
        // only group 9 ran: the first period settles it; 1-4 wait until busy
        assert_eq!(tick(&mut p, 50, [50, 0], &[(9, [50, 0])]), []);
        assert_eq!(tick(&mut p, 100, [100, 0], &[(9, [100, 0])]), [(9, 0)]);
        assert!((1..=4).all(|id| p.groups()[&id].pref().is_none()));
    }

    #[test]
    fn groups_come_and_go_between_periods() {
        let mut p = policy();
        p.sync(&live(&[1, 2]), 0);
        // both new and busy: both settle in this period, group 1 into the
        // free p1, group 2 then into p0 (p1 carries 1's predicted load)
        let busy = [(1, [50, 0]), (2, [50, 0])];
        assert_eq!(tick(&mut p, 50, [100, 0], &busy), []);
        let busy = [(1, [100, 0]), (2, [100, 0])];
        assert_eq!(tick(&mut p, 100, [200, 0], &busy), [(1, 1), (2, 0)]);
        // each move names the loads it was decided on: group 2 saw p0
        // without group 1's load, and p1 with it predicted
        assert_eq!(
            p.groups()[&2].last_move(),
            "p0 at 0.10 s: load 1.00 0.00; own 1.00 0.00; predicted 0.00 1.00"
        );
        // group 1 (gone) and group 5 (new) between periods
        assert_eq!(p.sync(&live(&[2, 5]), 200 * MS), (vec![5], vec![1]));
        assert!(!p.groups().contains_key(&1));
        // group 5 has no load: not even tried (its settle_next is still the
        // time it appeared), stays unsettled, nothing to write
        let busy = [(2, [200, 0]), (5, [0, 0])];
        assert_eq!(tick(&mut p, 200, [300, 0], &busy), []);
        assert_eq!(p.groups()[&5].pref(), None);
        assert_eq!(p.groups()[&5].settle_next, 200 * MS);
        // once it ran in two periods in a row, it settles
        let busy = [(2, [300, 0]), (5, [0, 100])];
        assert_eq!(tick(&mut p, 300, [400, 100], &busy), []);
        let busy = [(2, [350, 0]), (5, [0, 150])];
        assert_eq!(tick(&mut p, 350, [450, 150], &busy), [(5, 1)]);
        // group 1 comes back (same id): tracked afresh, unsettled
        assert_eq!(p.sync(&live(&[1, 2, 5]), 400 * MS), (vec![1], vec![]));
        let g = &p.groups()[&1];
        assert_eq!((g.pref(), g.total()), (None, &[0, 0][..]));
        // a group missing from the runtime totals counts as idle
        assert_eq!(tick(&mut p, 400, [450, 150], &[]), []);
        assert_eq!(p.groups()[&1].total(), &[0, 0]);
        assert_eq!(p.groups()[&2].total(), &[350 * MS, 0]);
    }

    #[test]
    fn disabled_accounts_but_never_settles() {
        let mut p = Policy::new(vec![4.0, 4.0], 100 * MS, false);
        p.sync(&live(&[1]), 0);
        for t in 1..5 {
            let (part, groups) = ran_in_p0(&[1], t * 100 * MS);
            assert_eq!(p.tick(t * 100 * MS, &part, &groups), []);
        }
        assert_eq!(p.groups()[&1].pref(), None);
        assert_eq!(p.groups()[&1].exclusivity(), 1.0);
        assert_eq!(p.mean_exclusivity(), 1.0);
    }

    #[test]
    fn settle_periods_grow_to_the_max_and_a_move_resets_them() {
        let mut p = policy();
        p.sync(&live(&[1]), 0);
        let mut ns = 0;
        let mut tick = |p: &mut Policy, now: u64| {
            ns += 100 * MS;
            let (part, groups) = ran_in_p0(&[1], ns);
            p.tick(now, &part, &groups)
        };
        assert_eq!(tick(&mut p, 50 * MS), []);
        assert_eq!(tick(&mut p, 100 * MS), [(1, 0)]);
        assert_eq!(p.groups()[&1].settle_period, 200 * MS);
        // attempts at 300, 700, 1500, 3100, 6300, 12700 ms, then every 10 s
        let mut tried = Vec::new();
        for t in (200..30_000).step_by(100) {
            let before = p.groups()[&1].settle_next;
            tick(&mut p, t * MS);
            if p.groups()[&1].settle_next != before {
                tried.push(t);
            }
        }
        assert_eq!(tried, [300, 700, 1500, 3100, 6300, 12700, 22700]);
        assert_eq!(p.groups()[&1].settle_period, SETTLE_PERIOD_MAX_NS);
        // a resettle: the period falls back to two periods
        assert!(
            !p.try_to_settle(1, 30_000 * MS, &[8.0, 0.0]),
            "crowded p0, idle p1: the move waits for a second reading"
        );
        assert!(
            p.try_to_settle(1, 31_000 * MS, &[8.0, 0.0]),
            "still crowded a window later: moves"
        );
        let g = &p.groups()[&1];
        assert_eq!(
            (g.pref(), g.resettles, g.settle_period),
            (Some(1), 1, 200 * MS)
        );
    }

    /// The moves of group 1 (1 CPU busy in p0, settled there at 0.1 s)
    /// over 30 s of 100 ms periods, while other tasks add @extra_ms(t) ms of
    /// demand to p0 up to time t ms.
    fn moves_with_other_load_in_p0(extra_ms: impl Fn(u64) -> u64) -> Vec<(u64, u64, usize)> {
        let mut p = policy();
        p.sync(&live(&[1]), 0);
        let mut moves = Vec::new();
        for t in (50..30_000).step_by(50) {
            let own = [(1, [t, 0])];
            for (id, part) in tick(&mut p, t, [t + extra_ms(t), 0], &own) {
                moves.push((t, id, part));
            }
        }
        moves
    }

    #[test]
    fn a_settled_group_moves_only_when_a_second_window_agrees() {
        // its attempts from 12.7 s come every 10 s: 22.7 s sees 8 CPU-s of
        // other load that arrived at 22.5 s in one burst; the reading a
        // window later (23.7 s) does not, and it stays
        let burst = moves_with_other_load_in_p0(|t| if t >= 22_500 { 8_000 } else { 0 });
        assert_eq!(burst, [(100, 1, 0)]);
        // the same load arriving from 22.5 s on and staying (8 more CPUs
        // busy in p0): the second reading agrees, and it moves
        let lasting = moves_with_other_load_in_p0(|t| 8 * t.saturating_sub(22_500));
        assert_eq!(lasting, [(100, 1, 0), (23_700, 1, 1)]);
    }

    #[test]
    fn predictions_halve_every_second_and_are_gone_after_ten() {
        let mut p = policy();
        p.predict = vec![8.0, 1.0];
        p.decay_predictions(900 * MS);
        assert_eq!(p.predict, [8.0, 1.0]);
        p.decay_predictions(2_100 * MS);
        assert_eq!(p.predict, [2.0, 0.25]);
        // the 0.1 s left over at 2.1 s counts towards the next halving
        p.decay_predictions(2_950 * MS);
        assert_eq!(p.predict, [2.0, 0.25]);
        p.decay_predictions(3_000 * MS);
        assert_eq!(p.predict, [1.0, 0.125]);
        p.decay_predictions(13_200 * MS);
        assert_eq!(p.predict, [0.0, 0.0]);
    }
}
