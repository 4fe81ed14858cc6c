//! The report from the model: Metrics built from Counters (the totals, each
//! LLC's share), the Counters back from a Metrics (what --monitor receives),
//! and the BPF programs' costs.

use super::metrics::{BpfMetrics, CpuIds, LlcMetrics, Metrics, ProgMetrics};
use super::{Counters, STATS};
use crate::cpulist;
use crate::topology::{ShardLayout, Topology};

/// Per BPF program: (name, runs, total ns).
pub type ProgCosts = Vec<(String, u64, u64)>;

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

/// CPU ids as CpuIds.
fn cpu_ids(lists: &[Vec<usize>]) -> Vec<CpuIds> {
    lists.iter().cloned().map(CpuIds).collect()
}

impl Metrics {
    /// The counters @c of a scheduler laid out as @topo and @layout; the
    /// caller fills in what else it knows (runtime, exit, BPF cost, groups).
    pub fn new(c: &Counters, topo: &Topology, layout: &ShardLayout) -> Self {
        let mut m = Metrics {
            scheduler: "mosaic".into(),
            shard_enqueues_per_shard: c.per_shard.clone(),
            wait_hist_log2_us: c.wait_hist.clone(),
            shard_size: layout.shard_size as u64,
            shards: cpu_ids(&layout.shards),
            llcs: cpu_ids(&topo.llcs),
            ..Default::default()
        };
        m.set_counters(&c.stats);
        let percentile = |q| super::wait_percentile_us(&c.wait_hist, q);
        m.wait_p50_us = percentile(0.5);
        m.wait_p99_us = percentile(0.99);
        m.wait_p999_us = percentile(0.999);
        m.wait_max_task = c
            .longest_wait
            .as_ref()
            .map_or_else(String::new, |w| w.task());
        for (llc, cpus) in topo.llcs.iter().enumerate() {
            let first = layout.llc_first_shard.get(llc).copied().unwrap_or(0);
            let n = layout.llc_nr_shards.get(llc).copied().unwrap_or(0);
            let shards = first..first + n;
            let counters = STATS
                .iter()
                .map(|s| (s.name.to_string(), c.on_cpus(s.id as u32, cpus)))
                .collect();
            let llc_metrics = LlcMetrics {
                cpus: cpulist::format(cpus),
                enqueued_on_shards: shards.clone().filter_map(|s| c.per_shard.get(s)).sum(),
                shards: shards.map(|s| s as u64).collect(),
                counters,
            };
            m.per_llc.insert(llc as u32, llc_metrics);
        }
        m
    }

    /// The counters back (without their values per CPU, and without the
    /// longest wait's task, which stays in wait_max_task), to compute an
    /// interval's (Counters::delta) on either side of the stats socket.
    pub fn counters(&self) -> Counters {
        Counters {
            stats: self.counter_values(),
            per_shard: self.shard_enqueues_per_shard.clone(),
            per_cpu: Vec::new(),
            wait_hist: self.wait_hist_log2_us.clone(),
            longest_wait: None,
        }
    }
}

impl LlcMetrics {
    /// The LLC's counters by counter id (0 for any it lacks).
    pub fn counter_values(&self) -> Vec<u64> {
        let value = |name: &str| self.counters.get(name).copied().unwrap_or(0);
        STATS.iter().map(|s| value(s.name)).collect()
    }
}

impl From<&[(String, u64, u64)]> for BpfMetrics {
    /// Per-program costs, with the mean ns per call over all programs.
    fn from(costs: &[(String, u64, u64)]) -> Self {
        let calls: u64 = costs.iter().map(|c| c.1).sum();
        let ns: u64 = costs.iter().map(|c| c.2).sum();
        let programs = costs
            .iter()
            .map(|(name, cnt, ns)| {
                let prog = ProgMetrics {
                    run_cnt: *cnt,
                    run_time_ns: *ns,
                };
                (name.clone(), prog)
            })
            .collect();
        BpfMetrics {
            programs,
            calls,
            ns_per_call: if calls > 0 {
                ns as f64 / calls as f64
            } else {
                0.0
            },
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::metrics::{GroupBalancerMetrics, GroupMetrics, MaybeIndex};
    use super::super::{NR_STATS, STAT_NAMES};
    use super::*;
    use crate::bpf_intf;
    use scx_stats::Meta;

    #[test]
    fn bpf_costs_add_by_name_and_average_over_calls() {
        let mut t = vec![("a".to_string(), 1, 100)];
        add_costs(&mut t, &[("a".into(), 3, 300), ("b".into(), 4, 1600)]);
        assert_eq!(
            t,
            vec![("a".to_string(), 4, 400), ("b".to_string(), 4, 1600)]
        );
        let j = serde_json::to_value(BpfMetrics::from(&t[..])).unwrap();
        assert_eq!(j["calls"], 8);
        assert_eq!(j["ns_per_call"], 250.0);
        assert_eq!(j["programs"]["b"]["run_time_ns"], 1600);
        assert_eq!(BpfMetrics::from(&[][..]).ns_per_call, 0.0);
    }

    /// A machine of two LLCs (CPUs 0-1, 2-3) with a shard per LLC.
    pub(crate) fn two_llcs() -> (Topology, ShardLayout) {
        let dir = tempfile::tempdir().unwrap();
        crate::topology::tests::fake_sysfs(dir.path(), 4, 2, false, 1);
        let topo = Topology::from_root(dir.path()).unwrap();
        let layout = topo.shard_layout(2, 8);
        (topo, layout)
    }

    /// Counters where counter i is 100 + i, on CPU c (i + 1) * (c + 1).
    pub(crate) fn distinct_counters() -> Counters {
        let n = NR_STATS as u64;
        Counters {
            stats: (0..n).map(|i| 100 + i).collect(),
            per_shard: vec![7, 9],
            per_cpu: (0..n)
                .map(|i| (0..4).map(|c| (i + 1) * (c + 1)).collect())
                .collect(),
            wait_hist: vec![5, 0, 3, 2],
            longest_wait: Some(super::super::LongestWait {
                us: 130,
                pid: 42,
                comm: "hackbench".into(),
            }),
        }
    }

    /// Metrics' u64 fields that are not counters of intf.h.
    const NOT_COUNTERS: [&str; 7] = [
        "restarts",
        "bw_limits_missed",
        "shard_size",
        "wait_p50_us",
        "wait_p99_us",
        "wait_p999_us",
        "runtime_s",
    ];

    #[test]
    fn every_counter_is_a_metrics_field() {
        let fields = Metrics::meta().fields;
        for name in STAT_NAMES {
            assert_eq!(fields[*name].data.to_string(), "u64", "{name}");
        }
        // and every other number of Metrics is one of the known others
        let numbers: Vec<&str> = fields
            .iter()
            .filter(|(_, f)| ["u64", "f64"].contains(&f.data.to_string().as_str()))
            .map(|(name, _)| name.as_str())
            .filter(|name| !NOT_COUNTERS.contains(name))
            .collect();
        let mut names = STAT_NAMES.to_vec();
        names.sort_unstable();
        assert_eq!(
            numbers, names,
            "Metrics' counter fields != intf.h's counters"
        );
    }

    #[test]
    fn metrics_round_trip_and_give_the_counters_back() {
        let (topo, layout) = two_llcs();
        let c = distinct_counters();
        let m = Metrics::new(&c, &topo, &layout);
        let json = serde_json::to_value(&m).unwrap();
        for (i, name) in STAT_NAMES.iter().enumerate() {
            assert_eq!(json[name], 100 + i as u64, "{name}");
        }
        assert_eq!(json["wait_p50_us"], 2);
        assert_eq!(json["wait_p999_us"], 16);
        assert_eq!(json["wait_max_task"], "hackbench[42]");
        let back: Metrics = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
        let counters = back.counters();
        assert_eq!(
            (counters.stats, counters.per_shard, counters.wait_hist),
            (c.stats, c.per_shard, c.wait_hist)
        );
    }

    #[test]
    fn per_llc_counters_come_from_the_llcs_cpus() {
        let (topo, layout) = two_llcs();
        let m = Metrics::new(&distinct_counters(), &topo, &layout);
        assert_eq!(m.per_llc.len(), 2);
        let (llc0, llc1) = (&m.per_llc[&0], &m.per_llc[&1]);
        assert_eq!((llc0.cpus.as_str(), llc1.cpus.as_str()), ("0-1", "2-3"));
        assert_eq!((&llc0.shards, &llc1.shards), (&vec![0], &vec![1]));
        assert_eq!((llc0.enqueued_on_shards, llc1.enqueued_on_shards), (7, 9));
        // counter 0 is 1, 2, 3, 4 on CPUs 0-3; the maximum takes the largest
        let first = STAT_NAMES[0];
        assert_eq!((llc0.counters[first], llc1.counters[first]), (3, 7));
        let max = bpf_intf::mosaic_stat_STAT_IDLE_WAITING_MAX_US as u64;
        assert_eq!(llc1.counters["idle_waiting_max_us"], (max + 1) * 4);
        assert_eq!(llc1.counter_values()[max as usize], (max + 1) * 4);
    }

    #[test]
    fn stats_file_keeps_its_keys_and_their_json_types() {
        let (topo, layout) = two_llcs();
        let json =
            serde_json::to_value(Metrics::new(&distinct_counters(), &topo, &layout)).unwrap();
        assert_eq!(json["shards"], serde_json::json!([[0, 1], [2, 3]]));
        assert_eq!(json["llcs"], serde_json::json!([[0, 1], [2, 3]]));
        assert_eq!(json["shard_enqueues_per_shard"], serde_json::json!([7, 9]));
        assert_eq!(json["no_shared_runq"], false);
        assert_eq!(json["scheduler"], "mosaic");
        for key in ["runtime_s", "restarts", "shard_size"] {
            assert!(json[key].is_number(), "{key}");
        }
        for key in ["kind", "kind_name", "code", "reason", "msg"] {
            assert!(!json["exit"][key].is_null(), "exit.{key}");
        }
        for key in ["programs", "calls", "ns_per_call"] {
            assert!(!json["bpf"][key].is_null(), "bpf.{key}");
        }
        assert!(
            json.get("group_balancer").is_none(),
            "no --gb-parent, no group_balancer"
        );
    }

    #[test]
    fn the_group_balancers_report_fits_its_struct() {
        let (topo, _) = two_llcs();
        let cfg = crate::group::GroupConfig {
            parent: "/sys/fs/cgroup/gb".into(),
            plan: crate::tunables::GroupPlan {
                parent: "gb".into(),
                partitions: topo.llcs.clone(),
                period_ms: 200,
                enabled: true,
            },
            log_moves: false,
        };
        let m = crate::group::Balancer::new(cfg, &topo).metrics();
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["parent"], "/sys/fs/cgroup/gb");
        assert_eq!(json["partitions"], serde_json::json!([[0, 1], [2, 3]]));
        assert_eq!(
            (&json["period_ms"], &json["enabled"]),
            (&200.into(), &true.into())
        );
        let back: GroupBalancerMetrics = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
        assert!(!m.is_off());
        let g = GroupMetrics {
            partition: MaybeIndex(None),
            ..Default::default()
        };
        assert!(serde_json::to_value(g).unwrap()["partition"].is_null());
    }
}
