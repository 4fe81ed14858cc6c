//! The group balancer's userspace half (seed 004), in simulated time.
//!
//! The policy is not re-implemented here: `decide()` (the seed's
//! try_to_settle) and `parse_partitions()` are scheduler/src/group.rs's own
//! code, extracted at build time by build.rs (group.rs as a whole links
//! libbpf, so it cannot be included the way topology.rs is). What this file
//! adds is the loop around it that scx_mosaic's `Balancer::tick` runs every
//! period: read part_runtime and group_runtime from the BPF maps, smooth the
//! loads over two periods, settle one group at a time round robin (doubling
//! a group's settle period after each attempt, up to 10 s), keep predicted
//! loads decaying by half every second, and write cgroup id -> partition into
//! group_prefs. Differences from group.rs, all of them simplifications: the
//! cgroups are the workload's (every non-root cgroup is under --gb-parent),
//! none come or go during a run, and time is the simulator's clock.
use crate::engine::Engine;
use serde_json::{json, Value};

#[allow(dead_code, clippy::all)]
mod policy {
    use crate::cpulist;
    use crate::topology::Topology;
    use anyhow::{bail, Context, Result};
    /// The one constant group.rs's parse_partitions takes from bpf_intf.
    mod bpf_intf {
        #[allow(non_upper_case_globals)]
        pub const mosaic_limits_MAX_PARTS: u32 = crate::intf::MAX_PARTS as u32;
    }
    include!(concat!(env!("OUT_DIR"), "/group_policy.rs"));
}
pub use policy::{decide, parse_partitions, Decision};

const SETTLE_PERIOD_MAX_NS: u64 = 10_000_000_000;
const PREDICT_HALF_LIFE_NS: u64 = 1_000_000_000;

/// What --gb-parent/--gb-partitions/--gb-period-ms/--no-group-balancer ask.
#[derive(Debug, Clone)]
pub struct GbConfig {
    pub partitions: Vec<Vec<usize>>,
    pub period_ns: u64,
    /// false with --no-group-balancer: account only, never settle
    pub enabled: bool,
}

impl GbConfig {
    pub fn cpu_parts(&self, nr_cpu_ids: usize) -> Vec<i32> {
        let mut parts = vec![-1; nr_cpu_ids];
        for (i, cpus) in self.partitions.iter().enumerate() {
            for &c in cpus {
                parts[c] = i as i32;
            }
        }
        parts
    }
}

struct Group {
    cgid: u64,
    pref: Option<usize>,
    settles: u32,
    resettles: u32,
    settle_period: u64,
    settle_next: u64,
    total: Vec<u64>,
    settled_ns: u64,
    inside_ns: u64,
    load: Vec<f64>,
}

impl Group {
    /// group.rs's exclusivity: runtime inside its partition since settled.
    fn exclusivity(&self) -> f64 {
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
}

pub struct Balancer {
    cfg: GbConfig,
    groups: Vec<Group>,
    predict: Vec<f64>,
    cap: Vec<f64>,
    part_last: Vec<u64>,
    part_load: Vec<f64>,
    last_tick: u64,
    global_next: u64,
    predict_stamp: u64,
    cursor: usize,
}

impl Balancer {
    pub fn new(cfg: GbConfig, e: &Engine) -> Balancer {
        let n = cfg.partitions.len();
        let cap = cfg
            .partitions
            .iter()
            .map(|cpus| {
                cpus.iter()
                    .map(|&c| e.m.cpu(c).capacity as f64 / 1024.0)
                    .sum()
            })
            .collect();
        Balancer {
            cfg,
            groups: Vec::new(),
            predict: vec![0.0; n],
            cap,
            part_last: vec![0; n],
            part_load: vec![0.0; n],
            last_tick: 0,
            global_next: 0,
            predict_stamp: 0,
            cursor: usize::MAX,
        }
    }

    pub fn period_ns(&self) -> u64 {
        self.cfg.period_ns
    }

    /// Registers cgroup @cgid (group_prefs = -1: accounted, not settled).
    pub fn register(&mut self, e: &mut Engine, cgid: u64) {
        let n = self.cfg.partitions.len();
        write_pref(e, cgid, None);
        self.groups.push(Group {
            cgid,
            pref: None,
            settles: 0,
            resettles: 0,
            settle_period: self.cfg.period_ns,
            settle_next: e.now,
            total: vec![0; n],
            settled_ns: 0,
            inside_ns: 0,
            load: vec![0.0; n],
        });
    }

    /// One period (group.rs Balancer::tick).
    pub fn tick(&mut self, e: &mut Engine) {
        let now = e.now;
        let secs = (now.saturating_sub(self.last_tick) as f64 / 1e9).max(1e-3);
        self.last_tick = now;
        let n = self.cfg.partitions.len();
        let part = e.maps.sum_percpu("part_runtime");
        for p in 0..n {
            let ns = part.get(p).copied().unwrap_or(0);
            let fresh = ns.saturating_sub(self.part_last[p]) as f64 / 1e9 / secs;
            self.part_load[p] = (self.part_load[p] + fresh) / 2.0;
            self.part_last[p] = ns;
        }
        for g in self.groups.iter_mut() {
            let now_total = e
                .maps
                .percpu_hash_sum("group_runtime", &g.cgid.to_ne_bytes(), n);
            for p in 0..n {
                let delta = now_total[p].saturating_sub(g.total[p]);
                if let Some(pref) = g.pref {
                    g.settled_ns += delta;
                    if pref == p {
                        g.inside_ns += delta;
                    }
                }
                g.load[p] = (g.load[p] + delta as f64 / 1e9 / secs) / 2.0;
                g.total[p] = g.total[p].max(now_total[p]);
            }
        }
        if !self.cfg.enabled || now < self.global_next || self.groups.is_empty() {
            return;
        }
        // predicted loads halve every second, gone after ten
        let halves = (now - self.predict_stamp) / PREDICT_HALF_LIFE_NS;
        if halves >= 1 {
            self.predict_stamp = now;
            for p in self.predict.iter_mut() {
                *p = if halves > 10 {
                    0.0
                } else {
                    *p / 2f64.powi(halves as i32)
                };
            }
        }
        // next due group, round robin after the last one tried
        let ng = self.groups.len();
        let start = self.cursor.wrapping_add(1) % ng;
        let Some(i) = (0..ng)
            .map(|k| (start + k) % ng)
            .find(|&i| self.groups[i].settle_next <= now)
        else {
            return;
        };
        self.cursor = i;
        let g = &mut self.groups[i];
        let decision = decide(&self.part_load, &g.load, &self.predict, &self.cap, g.pref);
        let group_load: f64 = g.load.iter().sum();
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
                g.settle_period = self.cfg.period_ns * 2;
                true
            }
        };
        g.settle_next = now + g.settle_period;
        if moved {
            self.global_next = now + self.cfg.period_ns;
            let (cgid, pref) = (g.cgid, g.pref);
            write_pref(e, cgid, pref);
        }
    }

    /// The groups as JSON (like scx_mosaic's --stats-file "group_balancer").
    pub fn to_json(&self) -> Value {
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|g| {
                json!({"cgroup_id": g.cgid, "partition": g.pref, "settles": g.settles,
                       "resettles": g.resettles, "exclusivity": g.exclusivity(),
                       "runtime_ns_per_partition": g.total})
            })
            .collect();
        let settled: Vec<&Group> = self.groups.iter().filter(|g| g.settled_ns > 0).collect();
        let mean_excl = if settled.is_empty() {
            // never settled: the share of the partition each ran most in
            self.groups.iter().map(|g| g.exclusivity()).sum::<f64>()
                / self.groups.len().max(1) as f64
        } else {
            settled.iter().map(|g| g.exclusivity()).sum::<f64>() / settled.len() as f64
        };
        json!({"enabled": self.cfg.enabled, "partitions": self.cfg.partitions,
               "period_ms": self.cfg.period_ns / 1_000_000, "groups": groups,
               "mean_exclusivity": mean_excl})
    }
}

fn write_pref(e: &mut Engine, cgid: u64, part: Option<usize>) {
    let mut value = [0u8; 8];
    value[..4].copy_from_slice(&part.map_or(-1, |p| p as i32).to_ne_bytes());
    e.maps
        .hash_update("group_prefs", &cgid.to_ne_bytes(), &value);
}
