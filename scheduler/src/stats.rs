//! The scheduler's counters: read from the BPF per-CPU maps, summed, shown
//! as a periodic line and written as JSON.

use crate::bpf_intf;
use crate::bpf_skel::BpfSkel;
use anyhow::{Context, Result};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags};
use serde_json::{json, Map, Value};
use std::os::fd::{AsFd, AsRawFd};

/// JSON name of each counter, indexed by enum mosaic_stat (intf.h).
pub const STAT_NAMES: [(u32, &str); bpf_intf::mosaic_stat_NR_MOSAIC_STATS as usize] = [
    (bpf_intf::mosaic_stat_STAT_SHARD_ENQUEUES, "shard_enqueues"),
    (
        bpf_intf::mosaic_stat_STAT_SHARD_PULLS_LOCAL,
        "shard_pulls_local",
    ),
    (
        bpf_intf::mosaic_stat_STAT_SHARD_PULLS_SIBLING,
        "shard_pulls_sibling",
    ),
    (bpf_intf::mosaic_stat_STAT_CPU_ENQUEUES, "cpu_enqueues"),
    (bpf_intf::mosaic_stat_STAT_CPU_PULLS, "cpu_pulls"),
    (bpf_intf::mosaic_stat_STAT_KICKS, "kicks"),
    (bpf_intf::mosaic_stat_STAT_DISPATCH_EMPTY, "dispatch_empty"),
    (bpf_intf::mosaic_stat_STAT_SIBLING_SCANS, "sibling_scans"),
    (bpf_intf::mosaic_stat_STAT_STEAL_SCANS, "steal_scans"),
    (
        bpf_intf::mosaic_stat_STAT_STEAL_SCANS_SKIPPED,
        "steal_scans_skipped",
    ),
    (bpf_intf::mosaic_stat_STAT_STEAL_HITS, "steal_hits"),
    (
        bpf_intf::mosaic_stat_STAT_STEAL_PULLS_NODE,
        "steal_pulls_node",
    ),
    (
        bpf_intf::mosaic_stat_STAT_STEAL_PULLS_REMOTE,
        "steal_pulls_remote",
    ),
    (bpf_intf::mosaic_stat_STAT_OVERLOAD_SETS, "overload_sets"),
    (bpf_intf::mosaic_stat_STAT_OVERLOAD_NS, "overload_ns"),
    (
        bpf_intf::mosaic_stat_STAT_IDLE_WAITING_SCANS,
        "idle_waiting_scans",
    ),
    (
        bpf_intf::mosaic_stat_STAT_IDLE_WAITING_MAX_US,
        "idle_waiting_max_us",
    ),
    (bpf_intf::mosaic_stat_STAT_PREV_KEPT, "prev_kept"),
    (
        bpf_intf::mosaic_stat_STAT_PREV_REJECTED_CAPACITY,
        "prev_rejected_capacity",
    ),
    (bpf_intf::mosaic_stat_STAT_WAKE_SYNC, "wake_sync"),
    (bpf_intf::mosaic_stat_STAT_WAKE_L2_IDLE, "wake_l2_idle"),
    (bpf_intf::mosaic_stat_STAT_WAKE_LLC_IDLE, "wake_llc_idle"),
    (
        bpf_intf::mosaic_stat_STAT_WAKE_REMOTE_IDLE,
        "wake_remote_idle",
    ),
    (bpf_intf::mosaic_stat_STAT_WAKE_CAPACITY, "wake_capacity"),
    (
        bpf_intf::mosaic_stat_STAT_WAKE_GROUP_PART,
        "wake_group_part",
    ),
    (bpf_intf::mosaic_stat_STAT_GROUP_FALLBACK, "group_fallback"),
    (bpf_intf::mosaic_stat_STAT_WAKE_BUSY, "wake_busy"),
    (
        bpf_intf::mosaic_stat_STAT_DIRECT_DISPATCHES,
        "direct_dispatches",
    ),
    (
        bpf_intf::mosaic_stat_STAT_INSERT_DIRECT_L2,
        "insert_direct_l2",
    ),
    (
        bpf_intf::mosaic_stat_STAT_INSERT_DIRECT_WIDE,
        "insert_direct_wide",
    ),
    (bpf_intf::mosaic_stat_STAT_INSERT_QUEUED, "insert_queued"),
    (bpf_intf::mosaic_stat_STAT_MIGRATIONS, "migrations"),
    (bpf_intf::mosaic_stat_STAT_MISFIT_MOVES, "misfit_moves"),
    (bpf_intf::mosaic_stat_STAT_GROUP_MOVES, "group_moves"),
    (bpf_intf::mosaic_stat_STAT_GROUP_QUEUED, "group_queued"),
    (bpf_intf::mosaic_stat_STAT_DEBUG_DROPS, "debug_drops"),
    (
        bpf_intf::mosaic_stat_STAT_CGROUPS_UNTRACKED,
        "cgroups_untracked",
    ),
    (
        bpf_intf::mosaic_stat_STAT_SHARD_PULLS_OLDER,
        "shard_pulls_older",
    ),
];

/// Counter totals: the mosaic_stat counters and the per-shard enqueues.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    pub stats: Vec<u64>,
    pub per_shard: Vec<u64>,
    /// Each counter's value on each CPU (by counter id, then CPU id).
    pub per_cpu: Vec<Vec<u64>>,
}

/// Whether counter @idx is a maximum over CPUs rather than a sum.
fn is_maximum(idx: u32) -> bool {
    idx == bpf_intf::mosaic_stat_STAT_IDLE_WAITING_MAX_US
}

/// The values of one entry of a per-CPU array map of u64, one per CPU.
fn percpu_values(map: &dyn MapCore, idx: u32) -> Result<Vec<u64>> {
    let per_cpu = map
        .lookup_percpu(&idx.to_ne_bytes(), MapFlags::ANY)
        .context("reading a counter map")?
        .unwrap_or_default();
    Ok(per_cpu
        .iter()
        .map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap()))
        .collect())
}

/// Sums one entry of a per-CPU array map of u64 over all CPUs.
pub fn sum_percpu(map: &dyn MapCore, idx: u32) -> Result<u64> {
    Ok(percpu_values(map, idx)?.iter().sum())
}

/// Counter @idx over several CPUs, or restarts: the sum, or for a maximum
/// the largest.
fn combine(idx: u32, values: impl IntoIterator<Item = u64>) -> u64 {
    let values = values.into_iter();
    match is_maximum(idx) {
        true => values.max().unwrap_or(0),
        false => values.sum(),
    }
}

/// Adds @b into @a element-wise, growing @a as needed.
fn add_into(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl Counters {
    /// Reads the live counters of a loaded scheduler with @nr_shards shards.
    pub fn read(skel: &BpfSkel, nr_shards: usize) -> Result<Self> {
        let per_cpu: Vec<Vec<u64>> = (0..bpf_intf::mosaic_stat_NR_MOSAIC_STATS)
            .map(|i| percpu_values(&skel.maps.stats, i))
            .collect::<Result<_>>()?;
        let stats = per_cpu
            .iter()
            .enumerate()
            .map(|(i, v)| combine(i as u32, v.iter().copied()))
            .collect();
        let per_shard = (0..nr_shards as u32)
            .map(|i| sum_percpu(&skel.maps.shard_enqueues, i))
            .collect::<Result<_>>()?;
        Ok(Counters {
            stats,
            per_shard,
            per_cpu,
        })
    }

    /// Adds @other into self (totals across scheduler restarts; maxima
    /// stay maxima).
    pub fn add(&mut self, other: &Counters) {
        let n = bpf_intf::mosaic_stat_NR_MOSAIC_STATS as usize;
        self.stats.resize(n, 0);
        self.per_cpu.resize(n, Vec::new());
        for i in 0..n {
            let b = other.stats.get(i).copied().unwrap_or(0);
            self.stats[i] = combine(i as u32, [self.stats[i], b]);
            let (mine, theirs) = (&mut self.per_cpu[i], other.per_cpu.get(i));
            let theirs = theirs.map_or(&[][..], |v| &v[..]);
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), 0);
            }
            for (x, y) in mine.iter_mut().zip(theirs) {
                *x = combine(i as u32, [*x, *y]);
            }
        }
        add_into(&mut self.per_shard, &other.per_shard);
    }

    /// Counter @idx over the CPUs @cpus.
    pub fn on_cpus(&self, idx: u32, cpus: &[usize]) -> u64 {
        let per_cpu = self.per_cpu.get(idx as usize).map_or(&[][..], |v| &v[..]);
        combine(idx, cpus.iter().filter_map(|&c| per_cpu.get(c).copied()))
    }

    /// The value of counter @name.
    pub fn get(&self, name: &str) -> u64 {
        STAT_NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .and_then(|(i, _)| self.stats.get(*i as usize).copied())
            .unwrap_or(0)
    }

    /// Counters as a JSON object keyed by their names.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for (i, name) in STAT_NAMES {
            m.insert(
                name.into(),
                self.stats.get(i as usize).copied().unwrap_or(0).into(),
            );
        }
        m.insert(
            "shard_enqueues_per_shard".into(),
            self.per_shard.clone().into(),
        );
        m
    }

    /// One line of rates since @prev, over @secs seconds.
    pub fn rate_line(&self, prev: &Counters, secs: f64) -> String {
        let r = |name| (self.get(name).saturating_sub(prev.get(name))) as f64 / secs.max(1e-3);
        format!(
            "direct {:>7.0}/s | shard enq {:>7.0}/s pull own {:>7.0}/s sibling {:>6.0}/s | \
             cpu-q {:>6.0}/s | kicks {:>6.0}/s | idle dispatch {:>6.0}/s",
            r("direct_dispatches"),
            r("shard_enqueues"),
            r("shard_pulls_local"),
            r("shard_pulls_sibling"),
            r("cpu_enqueues"),
            r("kicks"),
            r("dispatch_empty"),
        )
    }
}

/// Per BPF program: (name, runs, total ns).
pub type ProgCosts = Vec<(String, u64, u64)>;

/// Kernel-measured cost of each BPF program: (name, runs, total ns).
/// The kernel counts only while kernel.bpf_stats_enabled is 1 (--bpf-stats).
pub fn bpf_prog_costs(skel: &BpfSkel) -> ProgCosts {
    skel.object()
        .progs()
        .filter_map(|prog| {
            let mut info: libbpf_rs::libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of_val(&info) as u32;
            let ret = unsafe {
                libbpf_rs::libbpf_sys::bpf_obj_get_info_by_fd(
                    prog.as_fd().as_raw_fd(),
                    &mut info as *mut _ as *mut std::ffi::c_void,
                    &mut len,
                )
            };
            (ret == 0).then(|| {
                (
                    prog.name().to_string_lossy().into_owned(),
                    info.run_cnt,
                    info.run_time_ns,
                )
            })
        })
        .collect()
}

/// Adds @other's per-program costs into @totals, by program name.
pub fn add_costs(totals: &mut ProgCosts, other: &[(String, u64, u64)]) {
    for (name, cnt, ns) in other {
        match totals.iter_mut().find(|(n, _, _)| n == name) {
            Some(t) => {
                t.1 += cnt;
                t.2 += ns;
            }
            None => totals.push((name.clone(), *cnt, *ns)),
        }
    }
}

/// Per-program costs as JSON, with the mean ns per call over all programs.
pub fn costs_json(costs: &[(String, u64, u64)]) -> Value {
    let calls: u64 = costs.iter().map(|c| c.1).sum();
    let ns: u64 = costs.iter().map(|c| c.2).sum();
    let progs: Map<String, Value> = costs
        .iter()
        .map(|(name, cnt, ns)| (name.clone(), json!({"run_cnt": cnt, "run_time_ns": ns})))
        .collect();
    json!({"programs": progs, "calls": calls, "ns_per_call": if calls > 0 { ns as f64 / calls as f64 } else { 0.0 }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counter_has_one_name() {
        let mut ids: Vec<u32> = STAT_NAMES.iter().map(|(i, _)| *i).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..bpf_intf::mosaic_stat_NR_MOSAIC_STATS).collect::<Vec<_>>()
        );
        let mut names: Vec<&str> = STAT_NAMES.iter().map(|(_, n)| *n).collect();
        names.dedup();
        assert_eq!(names.len(), STAT_NAMES.len());
    }

    #[test]
    fn bpf_costs_add_by_name_and_average_over_calls() {
        let mut t = vec![("a".to_string(), 1, 100)];
        add_costs(&mut t, &[("a".into(), 3, 300), ("b".into(), 4, 1600)]);
        assert_eq!(
            t,
            vec![("a".to_string(), 4, 400), ("b".to_string(), 4, 1600)]
        );
        let j = costs_json(&t);
        assert_eq!(j["calls"], 8);
        assert_eq!(j["ns_per_call"], 250.0);
        assert_eq!(j["programs"]["b"]["run_time_ns"], 1600);
        assert_eq!(costs_json(&[])["ns_per_call"], 0.0);
    }

    #[test]
    fn totals_add_up_across_restarts() {
        let n = bpf_intf::mosaic_stat_NR_MOSAIC_STATS as usize;
        let mut a = Counters {
            stats: vec![1; n],
            per_shard: vec![2, 3],
            ..Default::default()
        };
        let b = Counters {
            stats: vec![5; n],
            per_shard: vec![1, 1, 7],
            ..Default::default()
        };
        a.add(&b);
        assert_eq!(a.get("shard_enqueues"), 6);
        assert_eq!(a.per_shard, vec![3, 4, 7]);
        let json = a.to_json();
        assert_eq!(json["direct_dispatches"], 6);
        assert_eq!(
            json["shard_enqueues_per_shard"],
            serde_json::json!([3, 4, 7])
        );
    }
}
