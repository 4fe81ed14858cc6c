//! The report's shape: Metrics, everything the scheduler reports, live over
//! the scx_stats socket (stats_server.rs) and at exit in --stats-file, with
//! the structs inside it. Its fields and their JSON types are what clients
//! read: keep them. One u64 field per counter of intf.h (with_stats! makes
//! the build fail for a counter without one); report.rs fills them in.

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

    #[stat(desc = "task queued on a shard of its LLC")]
    pub shard_enqueues: u64,
    #[stat(desc = "CPU took a task from its own shard")]
    pub shard_pulls_local: u64,
    #[stat(desc = "CPU took a task from a sibling shard of its LLC")]
    pub shard_pulls_sibling: u64,
    #[stat(desc = "task queued on a per-CPU queue")]
    pub cpu_enqueues: u64,
    #[stat(desc = "CPU took a task from its own queue")]
    pub cpu_pulls: u64,
    #[stat(desc = "idle CPU woken to run a queued task")]
    pub kicks: u64,
    #[stat(desc = "dispatch found nothing to run")]
    pub dispatch_empty: u64,
    #[stat(desc = "dispatch looked at the sibling shards")]
    pub sibling_scans: u64,
    #[stat(
        desc = "seed design: a CPU's own queue gained a waiter: its bit went up in its shard's index"
    )]
    pub seed_index_sets: u64,
    #[stat(
        desc = "seed design: a CPU about to idle took the waiter of a busy CPU of its own shard"
    )]
    pub seed_pulls_own: u64,
    #[stat(desc = "seed design: ... of a sibling shard of its LLC")]
    pub seed_pulls_sibling: u64,
    #[stat(
        desc = "seed design: the index named an idle CPU (it runs its own waiter next): passed over"
    )]
    pub seed_skips_idle: u64,
    #[stat(
        desc = "seed design: the index named a CPU with no waiter to give: its bit was cleared"
    )]
    pub seed_index_stale: u64,
    #[stat(desc = "seed design: a CPU about to idle found no waiter to take in its LLC's index")]
    pub seed_pull_misses: u64,
    #[stat(desc = "cross-LLC steal scans done")]
    pub steal_scans: u64,
    #[stat(desc = "cross-LLC steal scans skipped: the overload flag was clear")]
    pub steal_scans_skipped: u64,
    #[stat(desc = "cross-LLC steal scans that moved a task")]
    pub steal_hits: u64,
    #[stat(desc = "tasks stolen from an LLC of the same NUMA node")]
    pub steal_pulls_node: u64,
    #[stat(desc = "tasks stolen from another NUMA node")]
    pub steal_pulls_remote: u64,
    #[stat(desc = "times the overload flag went up")]
    pub overload_sets: u64,
    #[stat(desc = "time the overload flag spent up, ns (closed spells)")]
    pub overload_ns: u64,
    #[stat(desc = "periodic scans that saw a CPU idle while a task allowed on it waited")]
    pub idle_waiting_scans: u64,
    #[stat(desc = "longest such stretch of a CPU idle while a task waited, us (a maximum)")]
    pub idle_waiting_max_us: u64,
    #[stat(desc = "wakeup kept the previous CPU: idle, and the task fits it")]
    pub prev_kept: u64,
    #[stat(desc = "previous CPU was idle but too small for the task")]
    pub prev_rejected_capacity: u64,
    #[stat(desc = "sync wakeup placed on the waker's CPU (prev busy, or the two wake in turn)")]
    pub wake_sync: u64,
    #[stat(desc = "wakeup found an idle CPU in the previous CPU's L2 group")]
    pub wake_l2_idle: u64,
    #[stat(desc = "wakeup found an idle CPU in the previous CPU's LLC")]
    pub wake_llc_idle: u64,
    #[stat(desc = "wakeup found an idle CPU beyond the previous CPU's LLC")]
    pub wake_remote_idle: u64,
    #[stat(desc = "wakeup found an idle CPU by the capacity search")]
    pub wake_capacity: u64,
    #[stat(desc = "wakeup found no idle CPU: the task queues")]
    pub wake_busy: u64,
    #[stat(desc = "wakeup found an idle CPU in the group's partition")]
    pub wake_group_part: u64,
    #[stat(desc = "the group's partition had no idle CPU: searched wider")]
    pub group_fallback: u64,
    #[stat(desc = "woken task inserted straight into a CPU's local queue")]
    pub direct_dispatches: u64,
    #[stat(desc = "direct insertion: the waker's CPU shares an L2 with the target")]
    pub insert_direct_l2: u64,
    #[stat(desc = "direct insertion beyond the L2 (--no-l2-locality)")]
    pub insert_direct_wide: u64,
    #[stat(desc = "direct insertion beyond the L2 of an exiting task (never passed to enqueue)")]
    pub insert_direct_exiting: u64,
    #[stat(desc = "woken task beyond the L2 handed to its claimed CPU in enqueue, CPU kicked")]
    pub insert_queued: u64,
    #[stat(desc = "task started on a CPU other than its last")]
    pub migrations: u64,
    #[stat(desc = "task too big for its CPU moved to an idle one")]
    pub misfit_moves: u64,
    #[stat(desc = "task moved into its group's partition")]
    pub group_moves: u64,
    #[stat(desc = "task moved into its group's partition by queueing on a shard there")]
    pub group_queued: u64,
    #[stat(desc = "tasks lost on purpose by --debug-drop-comm")]
    pub debug_drops: u64,
    #[stat(desc = "cgroups beyond the cgroup table: tasks charged by nice weight only")]
    pub cgroups_untracked: u64,
    #[stat(desc = "CPU took a sibling shard's head, a slice older than its own shard's")]
    pub shard_pulls_older: u64,
    #[stat(desc = "dispatch found nothing queued: the runnable prev kept its CPU, slice refilled")]
    pub prev_refilled: u64,
    #[stat(desc = "a lone task due to move (misfit, partition) found no idle CPU: stayed")]
    pub last_kept: u64,
    #[stat(
        desc = "longest runnable wait (woken or requeued until running; a cpu.max park apart), microseconds"
    )]
    pub wait_max_us: u64,
    #[stat(desc = "task outside its partition took the CPU of one that belongs where it was")]
    pub group_swaps: u64,
    #[stat(desc = "a tick ended the slice of a task outside its partition that could move")]
    pub group_tick_moves: u64,
    #[stat(desc = "--no-shared-runq: a CPU about to idle took from its LLC's busiest CPU queue")]
    pub newidle_pulls: u64,
    #[stat(desc = "--no-shared-runq: ... from another LLC's busiest CPU queue (none in its own)")]
    pub newidle_pulls_remote: u64,
    #[stat(
        desc = "per-CPU queues: newidle balance skipped: average idle time below the migration cost"
    )]
    pub newidle_skips_avg_idle: u64,
    #[stat(desc = "per-CPU queues: newidle balance skipped: the overload flag was clear")]
    pub newidle_skips_overload: u64,
    #[stat(
        desc = "per-CPU queues: a newidle domain skipped: its last balance cost more than the idle time expected"
    )]
    pub newidle_skips_cost: u64,
    #[stat(
        desc = "per-CPU queues: a busy CPU's periodic balance found its LLC imbalanced by more than one"
    )]
    pub periodic_balances: u64,
    #[stat(desc = "per-CPU queues: ... and its next dispatch took a task from the busiest queue")]
    pub periodic_pulls: u64,
    #[stat(desc = "cpu.max: a limited cgroup's pool ran dry (throttled)")]
    pub bw_throttles: u64,
    #[stat(desc = "cpu.max: time limited cgroups spent throttled, ns, summed over cgroups")]
    pub bw_throttled_ns: u64,
    #[stat(desc = "cpu.max: period refills of limited cgroups' pools")]
    pub bw_refills: u64,
    #[stat(desc = "cpu.max: task of a throttled cgroup parked off the shards")]
    pub bw_parked: u64,
    #[stat(desc = "cpu.max: parked task moved back to a queue after a refill")]
    pub bw_unparked: u64,
    #[stat(desc = "cpu.max: parked task left its park queue another way (cgroup move, affinity)")]
    pub bw_park_left: u64,
    #[stat(desc = "cpu.max limits that found no slot or park queue: not enforced until retried")]
    pub bw_untracked: u64,
    #[stat(desc = "a CPU's cpu.max budget handed back to its pool for another cgroup's")]
    pub bw_budget_returns: u64,
    #[stat(desc = "cpu.idle: a task of an idle cgroup gave up its CPU at a tick to a waiter")]
    pub idle_cgroup_yields: u64,
    #[stat(desc = "cpu.idle: a task of an idle cgroup queued on its LLC's idle queue")]
    pub idle_cgroup_queued: u64,
    #[stat(desc = "cpu.idle: a CPU took a task from its LLC's idle queue")]
    pub idle_cgroup_pulls: u64,
    #[stat(desc = "slice end: the runnable prev kept its CPU though tasks were queued (none due)")]
    pub prev_kept_ahead: u64,
    #[stat(desc = "own-shard pull took, ahead of the head, a task already on the CPU's runqueue")]
    pub shard_pulls_same_rq: u64,
    #[stat(
        desc = "own-shard pull (--same-rq-pull) took the head off another CPU's runqueue: none of its own in reach"
    )]
    pub shard_pulls_remote_rq: u64,
    #[stat(desc = "cpu.weight: a cgroup's task became runnable or quiescent (noted per CPU)")]
    pub cgroup_load_notes: u64,
    #[stat(desc = "cpu.weight: a CPU's net change to a cgroup's load folded into shared counters")]
    pub cgroup_load_folds: u64,
    #[stat(
        desc = "busy LLCs: the periodic scan told an LLC to take a task from one with more weight per CPU"
    )]
    pub llc_balance_hints: u64,
    #[stat(desc = "busy LLCs: a CPU took a task from the busier LLC it was told of")]
    pub llc_balance_pulls: u64,
    #[stat(
        desc = "cpu.idle: of idle_cgroup_pulls, a task that waited a quarter of the watchdog timeout took a busy CPU"
    )]
    pub idle_cgroup_overdue: u64,
    #[stat(
        desc = "cpu.max: longest a task stayed parked by its cgroup's limit (not in wait_max_us), microseconds"
    )]
    pub bw_parked_max_us: u64,
    #[stat(
        desc = "pinned tasks: a task started with a shorter slice, more than CPU_QUEUE_FULL_SLICES (intf.h) waiting on its CPU's own queue"
    )]
    pub short_slices: u64,
    #[stat(
        desc = "pinned tasks: most tasks a dispatch saw waiting on one CPU's own queue (a maximum)"
    )]
    pub cpu_queue_max: u64,

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
    #[stat(desc = "per-CPU queues only (--no-shared-runq)")]
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
