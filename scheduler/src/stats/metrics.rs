//! The report's shape: Metrics, everything the scheduler reports, live over
//! the scx_stats socket (stats_server.rs) and at exit in --stats-file, with
//! the structs inside it. Its fields and their JSON types are what clients
//! read: keep them. One u64 field per counter of intf.h, generated with its
//! description from intf.h (struct_with_counters!); report.rs fills them in.

use scx_stats::{Meta, StatsMeta, StatsStructAttrs};
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Types that scx_stats' metadata has no word for (a boolean, a null, a list
/// of lists): each travels as plain JSON, and its metadata entry, a struct
/// without fields, says in its description what the JSON holds.
macro_rules! plain_json_stat {
    ($(#[$doc:meta])* $name:ident($ty:ty), $desc:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $ty);

        impl Meta for $name {
            fn meta() -> StatsMeta {
                StatsMeta {
                    name: stringify!($name).into(),
                    attrs: StatsStructAttrs {
                        desc: Some($desc.into()),
                        ..Default::default()
                    },
                    fields: BTreeMap::new(),
                }
            }
        }
    };
}

plain_json_stat!(
    /// A set of CPU ids.
    CpuIds(Vec<usize>),
    "CPU ids: a JSON array of integers"
);
plain_json_stat!(
    /// A switch.
    Flag(bool),
    "a JSON boolean"
);
plain_json_stat!(
    /// An index that may be absent.
    MaybeIndex(Option<usize>),
    "an index from 0, or null for none"
);

// The counter fields (one per counter of intf.h, described there) come from
// struct_with_counters! (build/stat_table.rs), between the two lists of fields.
struct_with_counters! {
    /// Everything the scheduler reports, live over the scx_stats socket and at
    /// exit in --stats-file: one struct, serialised the same way for both.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
    #[stat(
        top,
        desc = "scx_mosaic: counters since it started (summed over restarts), layout, exit"
    )]
    pub struct Metrics {
        #[stat(desc = "always \"mosaic\": which scheduler answered")]
        pub scheduler: String,
        #[stat(desc = "seconds since scx_mosaic started")]
        pub runtime_s: f64,
        #[stat(desc = "loads after the first: restarts the kernel asked for (CPU hotplug)")]
        pub restarts: u64,
        #[stat(
            desc = "cgroups whose cpu.max is set but not enforced now (named in warnings; retried)"
        )]
        pub bw_limits_missed: u64,
    } {
        #[stat(desc = "runnable waits by log2 of microseconds: entry b counts [2^b, 2^(b+1)) us")]
        pub wait_hist_log2_us: Vec<u64>,
        #[stat(desc = "median runnable wait over the run, microseconds (log2 bucket's upper edge)")]
        pub wait_p50_us: u64,
        #[stat(
            desc = "99th percentile runnable wait over the run, microseconds (bucket's upper edge)"
        )]
        pub wait_p99_us: u64,
        #[stat(
            desc = "99.9th percentile runnable wait over the run, microseconds (bucket's upper edge)"
        )]
        pub wait_p999_us: u64,
        #[stat(desc = "the task of wait_max_us then, as comm[pid] (empty before any wait)")]
        pub wait_max_task: String,

        #[stat(desc = "shard_enqueues by destination shard, indexed by shard id")]
        pub shard_enqueues_per_shard: Vec<u64>,
        #[stat(
            desc = "per LLC, by LLC id: its CPUs, shards and counters",
            _om_label = "llc"
        )]
        pub per_llc: BTreeMap<u32, LlcMetrics>,

        #[stat(desc = "CPUs per shard asked for (--shard-size or the default)")]
        pub shard_size: u64,
        #[stat(desc = "per-CPU queues only (--shared-runq off, or auto on a small machine)")]
        pub no_shared_runq: Flag,
        #[stat(desc = "CPUs of each shard, by shard id")]
        pub shards: Vec<CpuIds>,
        #[stat(desc = "CPUs of each LLC, by LLC id")]
        pub llcs: Vec<CpuIds>,
        #[stat(desc = "kernel-measured cost of the BPF programs (counted with --bpf-stats)")]
        pub bpf: BpfMetrics,
        #[stat(desc = "why the scheduler stopped (kind 0 while it runs)")]
        pub exit: ExitMetrics,
        #[stat(desc = "group balancer (--gb-parent): partitions and groups; absent without it")]
        #[serde(default, skip_serializing_if = "GroupBalancerMetrics::is_off")]
        pub group_balancer: GroupBalancerMetrics,
        #[stat(desc = "cgroups with a cpu.max limit, and how often they were throttled")]
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub cgroup_bandwidth: Vec<BandwidthMetrics>,
    }
}

/// One LLC's share of the counters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one LLC: its CPUs and shards, and the counters of its CPUs")]
pub struct LlcMetrics {
    #[stat(desc = "CPUs of the LLC, as a kernel CPU list")]
    pub cpus: String,
    #[stat(desc = "ids of the LLC's shards")]
    pub shards: Vec<u64>,
    #[stat(desc = "tasks queued on the LLC's shards, wherever the enqueue ran")]
    pub enqueued_on_shards: u64,
    #[stat(
        desc = "every counter, counted on the LLC's CPUs (the pulls are from its own shards)",
        _om_label = "counter"
    )]
    pub counters: BTreeMap<String, u64>,
}

/// The BPF programs' cost, as the kernel measured it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "kernel-measured BPF cost (kernel.bpf_stats_enabled, --bpf-stats)")]
pub struct BpfMetrics {
    #[stat(desc = "per BPF program, by name", _om_label = "prog")]
    pub programs: BTreeMap<String, ProgMetrics>,
    #[stat(desc = "calls of all programs")]
    pub calls: u64,
    #[stat(desc = "mean ns per call over all programs")]
    pub ns_per_call: f64,
}

/// One BPF program's cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one BPF program")]
pub struct ProgMetrics {
    #[stat(desc = "times it ran")]
    pub run_cnt: u64,
    #[stat(desc = "ns it ran in total")]
    pub run_time_ns: u64,
}

/// The kernel's record of why the scheduler stopped (struct scx_exit_info).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "the kernel's exit record")]
pub struct ExitMetrics {
    #[stat(desc = "enum scx_exit_kind: 0 running, 64.. by request, 1024.. ejected")]
    pub kind: i64,
    #[stat(desc = "the kind's name")]
    pub kind_name: String,
    #[stat(desc = "exit code (flags such as the restart request)")]
    pub code: i64,
    #[stat(desc = "the kernel's reason")]
    pub reason: String,
    #[stat(desc = "the kernel's or the BPF program's message")]
    pub msg: String,
}

/// The group balancer's state (group.rs, Balancer::to_json()).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "group balancer (seed 004)")]
pub struct GroupBalancerMetrics {
    #[stat(desc = "false with --no-group-balancer: accounting only")]
    pub enabled: Flag,
    #[stat(desc = "the cgroup whose children are balanced")]
    pub parent: String,
    #[stat(desc = "CPUs of each partition, by partition id")]
    pub partitions: Vec<CpuIds>,
    #[stat(desc = "balancing period, ms")]
    pub period_ms: u64,
    #[stat(desc = "the balanced cgroups")]
    pub groups: Vec<GroupMetrics>,
    #[stat(desc = "most cgroups it tracks (its BPF maps' size); past it, the busiest")]
    #[serde(default)]
    pub max_groups: u64,
    #[stat(desc = "cgroups below the parent not balanced now: more than max_groups")]
    #[serde(default)]
    pub skipped: u64,
    #[stat(desc = "some of the skipped cgroups, busiest first (paths below the parent)")]
    #[serde(default)]
    pub skipped_groups: String,
    #[stat(desc = "BPF map reads and writes that failed (each retried the next period)")]
    #[serde(default)]
    pub map_errors: u64,
}

impl GroupBalancerMetrics {
    /// Whether there is no group balancer (no --gb-parent).
    pub fn is_off(&self) -> bool {
        *self == Self::default()
    }
}

/// One balanced cgroup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one balanced cgroup")]
pub struct GroupMetrics {
    #[stat(desc = "path below the parent")]
    pub path: String,
    #[stat(desc = "cgroup id")]
    pub cgroup_id: u64,
    #[stat(desc = "partition it is settled in (null: none)")]
    pub partition: MaybeIndex,
    #[stat(desc = "times it was settled")]
    pub settles: u64,
    #[stat(desc = "times it was moved to another partition")]
    pub resettles: u64,
    #[stat(desc = "share of its runtime inside its partition since settled")]
    pub exclusivity: f64,
    #[stat(desc = "runtime, ns")]
    pub runtime_ns: u64,
    #[stat(desc = "runtime per partition, ns")]
    pub runtime_ns_per_partition: Vec<u64>,
    #[stat(desc = "its last settle or move, with the loads per partition it was decided on")]
    pub last_move: String,
}

/// One cgroup with a cpu.max limit (bandwidth.bpf.c's slot, this load only).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one cgroup with a cpu.max limit")]
pub struct BandwidthMetrics {
    #[stat(desc = "path below /sys/fs/cgroup (empty: not found)")]
    pub path: String,
    #[stat(desc = "cgroup id")]
    pub cgroup_id: u64,
    #[stat(desc = "cpu.max quota, us per period")]
    pub quota_us: u64,
    #[stat(desc = "cpu.max period, us")]
    pub period_us: u64,
    #[stat(desc = "cpu.max.burst, us")]
    pub burst_us: u64,
    #[stat(desc = "times its pool ran dry since this load took the limit")]
    pub throttles: u64,
    #[stat(desc = "time throttled, ns, stretches that have ended")]
    pub throttled_ns: u64,
    #[stat(desc = "throttled now")]
    pub throttled: Flag,
}

/// The metadata of every struct in Metrics, the top one first.
pub fn all_meta() -> Vec<StatsMeta> {
    vec![
        Metrics::meta(),
        LlcMetrics::meta(),
        BpfMetrics::meta(),
        ProgMetrics::meta(),
        ExitMetrics::meta(),
        GroupBalancerMetrics::meta(),
        GroupMetrics::meta(),
        BandwidthMetrics::meta(),
        CpuIds::meta(),
        Flag::meta(),
        MaybeIndex::meta(),
    ]
}

/// Metrics' counter fields by counter id, both ways: a counter of intf.h
/// without its field in Metrics does not compile.
macro_rules! metrics_counter_fields {
    ($(($name:ident, $id:expr)),* $(,)?) => {
        impl Metrics {
            /// Sets the counter fields from @stats (by counter id).
            pub(crate) fn set_counters(&mut self, stats: &[u64]) {
                $(self.$name = stats.get($id).copied().unwrap_or(0);)*
            }

            /// The counter fields, by counter id.
            pub(crate) fn counter_values(&self) -> Vec<u64> {
                let mut stats = vec![0; super::NR_STATS];
                $(stats[$id] = self.$name;)*
                stats
            }
        }
    };
}
with_stats!(metrics_counter_fields);
