//! The group balancer's userspace half (seed 004), in simulated time.
//!
//! The policy is scx_mosaic's own: scheduler/src/group/policy.rs and its
//! parts (settle.rs's decide(), the seed's try_to_settle; partitions.rs's
//! parse_partitions; state.rs's per-period state: windowed loads, round
//! robin, settle periods, predicted loads), from
//! scx_mosaic's library. What this file adds is the
//! simulator's I/O around it, as scheduler/src/group.rs's `Balancer::tick`
//! does for the real maps: read part_runtime and group_runtime, and write
//! cgroup id -> partition into group_prefs. The differences: the cgroups are
//! the workload's (every non-root cgroup is under --gb-parent), none come or
//! go during a run, and time is the simulator's clock.
use crate::maps::Maps;
use crate::topology::Topology;
use scx_mosaic::tunables::GroupPlan;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use policy::Policy;
pub use policy::{decide, parse_partitions, Decision};
pub use scx_mosaic::group::policy;

pub struct Balancer {
    cfg: GroupPlan,
    policy: Policy,
}

impl Balancer {
    pub fn new(cfg: GroupPlan, topo: &Topology) -> Balancer {
        let cap = policy::capacities(&cfg.partitions, topo);
        let policy = Policy::new(cap, cfg.period_ns(), cfg.enabled);
        Balancer { cfg, policy }
    }

    pub fn period_ns(&self) -> u64 {
        self.cfg.period_ns()
    }

    /// Registers cgroup @cgid (group_prefs = -1: accounted, not settled).
    pub fn register(&mut self, maps: &mut Maps, now: u64, cgid: u64) {
        write_pref(maps, cgid, None);
        self.policy.add(cgid, now);
    }

    /// One period at time @now (group.rs Balancer::tick).
    pub fn tick(&mut self, maps: &mut Maps, now: u64) {
        let n = self.cfg.partitions.len();
        let part = maps.sum_percpu("part_demand");
        // struct group_runtime: ns[MAX_PARTS], then demand_ns[MAX_PARTS]
        let max = crate::intf::MAX_PARTS;
        let groups: BTreeMap<u64, Vec<u64>> = self
            .policy
            .groups()
            .keys()
            .map(|&id| {
                let words = maps.percpu_hash_sum("group_runtime", &id.to_ne_bytes(), 2 * max);
                let mut totals = words[..n].to_vec();
                totals.extend_from_slice(&words[max..max + n]);
                (id, totals)
            })
            .collect();
        for (cgid, p) in self.policy.tick(now, &part, &groups) {
            write_pref(maps, cgid, Some(p));
        }
    }

    /// The groups as JSON (like scx_mosaic's --stats-file "group_balancer").
    pub fn to_json(&self) -> Value {
        let groups: Vec<Value> = self
            .policy
            .groups()
            .iter()
            .map(|(&id, g)| g.to_json(id))
            .collect();
        json!({"enabled": self.cfg.enabled, "partitions": self.cfg.partitions,
               "period_ms": self.cfg.period_ms, "groups": groups,
               "mean_exclusivity": self.policy.mean_exclusivity()})
    }
}

/// Writes cgroup @cgid's partition (None: accounted, not settled) to group_prefs.
fn write_pref(maps: &mut Maps, cgid: u64, part: Option<usize>) {
    maps.hash_update(
        "group_prefs",
        &cgid.to_ne_bytes(),
        &policy::pref_value(part),
    );
}
