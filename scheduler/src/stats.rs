//! The scheduler's counters: read from the BPF per-CPU maps, summed, shown
//! as a periodic line; and Metrics, the report built on them that the
//! scx_stats server (stats_server.rs) and --stats-file both serialise.

use crate::bpf_intf;
use crate::bpf_skel::BpfSkel;
use crate::cpulist;
use crate::topology::{ShardLayout, Topology};
use anyhow::{Context, Result};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags};
use scx_stats::{Meta, StatsMeta, StatsStructAttrs};
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd};

/// JSON name of each counter, indexed by enum mosaic_stat (intf.h). Each is
/// also a field of Metrics, with its description (a unit test checks).
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
    (
        bpf_intf::mosaic_stat_STAT_INSERT_DIRECT_EXITING,
        "insert_direct_exiting",
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
    (bpf_intf::mosaic_stat_STAT_PREV_REFILLED, "prev_refilled"),
    (bpf_intf::mosaic_stat_STAT_LAST_KEPT, "last_kept"),
    (bpf_intf::mosaic_stat_STAT_WAIT_MAX_US, "wait_max_us"),
    (bpf_intf::mosaic_stat_STAT_GROUP_SWAPS, "group_swaps"),
    (
        bpf_intf::mosaic_stat_STAT_GROUP_TICK_MOVES,
        "group_tick_moves",
    ),
];

/// Counter totals: the mosaic_stat counters and the per-shard enqueues.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    pub stats: Vec<u64>,
    pub per_shard: Vec<u64>,
    /// Each counter's value on each CPU (by counter id, then CPU id).
    pub per_cpu: Vec<Vec<u64>>,
    /// Runnable waits by log2 of microseconds (wait.bpf.c), summed over CPUs.
    pub wait_hist: Vec<u64>,
}

/// Whether counter @idx is a maximum over CPUs rather than a sum.
fn is_maximum(idx: u32) -> bool {
    idx == bpf_intf::mosaic_stat_STAT_IDLE_WAITING_MAX_US
        || idx == bpf_intf::mosaic_stat_STAT_WAIT_MAX_US
}

/// The wait below which a fraction @q of the waits in log2 histogram @hist
/// fell, in microseconds: the upper edge of the bucket holding that rank
/// (bucket b holds [2^b, 2^(b+1)) us); 0 without waits.
pub fn wait_percentile_us(hist: &[u64], q: f64) -> u64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (b, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return 1u64 << (b + 1).min(63);
        }
    }
    1u64 << hist.len().min(63)
}

/// Element-wise @a - @b (saturating), for interval histograms.
fn hist_delta(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter()
        .enumerate()
        .map(|(i, x)| x.saturating_sub(b.get(i).copied().unwrap_or(0)))
        .collect()
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
        let wait_hist = (0..bpf_intf::mosaic_limits_NR_WAIT_BUCKETS)
            .map(|i| sum_percpu(&skel.maps.wait_hist, i))
            .collect::<Result<_>>()?;
        Ok(Counters {
            stats,
            per_shard,
            per_cpu,
            wait_hist,
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
        add_into(&mut self.wait_hist, &other.wait_hist);
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
        m.insert("wait_hist_log2_us".into(), self.wait_hist.clone().into());
        for (name, q) in WAIT_PERCENTILES {
            m.insert(name.into(), wait_percentile_us(&self.wait_hist, q).into());
        }
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

/// The run's wait percentiles: (Metrics field, fraction).
const WAIT_PERCENTILES: [(&str, f64); 3] = [
    ("wait_p50_us", 0.5),
    ("wait_p99_us", 0.99),
    ("wait_p999_us", 0.999),
];

/// @us as a short human figure: "850us", "12ms", "2.3s".
fn fmt_us(us: u64) -> String {
    match us {
        0..=999 => format!("{us}us"),
        1000..=999_999 => format!("{}ms", us / 1000),
        _ => format!("{:.1}s", us as f64 / 1e6),
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
    #[stat(desc = "sync wakeup placed on the waker's CPU")]
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
    #[stat(desc = "woken task queued on the target's shard, target kicked")]
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
    #[stat(desc = "cgroups beyond the cpu.weight table: tasks charged by nice weight only")]
    pub cgroups_untracked: u64,
    #[stat(desc = "CPU took a sibling shard's head, a slice older than its own shard's")]
    pub shard_pulls_older: u64,
    #[stat(desc = "dispatch found nothing queued: the runnable prev kept its CPU, slice refilled")]
    pub prev_refilled: u64,
    #[stat(desc = "a lone task due to move (misfit, partition) found no idle CPU: stayed")]
    pub last_kept: u64,
    #[stat(desc = "longest runnable wait (woken or requeued until running), microseconds")]
    pub wait_max_us: u64,
    #[stat(desc = "task outside its partition took the CPU of one that belongs where it was")]
    pub group_swaps: u64,
    #[stat(desc = "a tick ended the slice of a task outside its partition that could move")]
    pub group_tick_moves: u64,

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
        CpuIds::meta(),
        Flag::meta(),
        MaybeIndex::meta(),
    ]
}

/// --help-stats: every field of every struct, with its type and meaning.
pub fn help_text() -> String {
    let mut out = String::new();
    for m in all_meta() {
        let desc = m.attrs.desc.as_deref().unwrap_or("");
        out += &format!("[{}] {desc}\n", m.name);
        let types: Vec<String> = m.fields.values().map(|f| format!("({})", f.data)).collect();
        let width = m.fields.keys().map(|k| k.len()).max().unwrap_or(0);
        let ty_width = types.iter().map(|t| t.len()).max().unwrap_or(0);
        for ((name, f), ty) in m.fields.iter().zip(types) {
            let desc = f.attrs.desc.as_deref().unwrap_or("");
            out += &format!("  {name:width$} {ty:ty_width$} {desc}\n");
        }
        out += "\n";
    }
    out
}

/// CPU ids as CpuIds.
fn cpu_ids(lists: &[Vec<usize>]) -> Vec<CpuIds> {
    lists.iter().cloned().map(CpuIds).collect()
}

impl Metrics {
    /// The counters @c of a scheduler laid out as @topo and @layout; the
    /// caller fills in what else it knows (runtime, exit, BPF cost, groups).
    pub fn new(c: &Counters, topo: &Topology, layout: &ShardLayout) -> Result<Self> {
        let mut json = serde_json::to_value(Metrics::default())?;
        for (name, value) in c.to_json() {
            json[name] = value;
        }
        let mut m: Metrics = serde_json::from_value(json)?;
        m.scheduler = "mosaic".into();
        m.shard_size = layout.shard_size as u64;
        m.shards = cpu_ids(&layout.shards);
        m.llcs = cpu_ids(&topo.llcs);
        for (llc, cpus) in topo.llcs.iter().enumerate() {
            let first = layout.llc_first_shard.get(llc).copied().unwrap_or(0);
            let n = layout.llc_nr_shards.get(llc).copied().unwrap_or(0);
            let shards = first..first + n;
            let counters = STAT_NAMES
                .iter()
                .map(|&(i, name)| (name.to_string(), c.on_cpus(i, cpus)))
                .collect();
            let llc_metrics = LlcMetrics {
                cpus: cpulist::format(cpus),
                enqueued_on_shards: shards.clone().filter_map(|s| c.per_shard.get(s)).sum(),
                shards: shards.map(|s| s as u64).collect(),
                counters,
            };
            m.per_llc.insert(llc as u32, llc_metrics);
        }
        Ok(m)
    }

    /// The counters back, to compute rates (rate_line) on either side.
    pub fn counters(&self) -> Result<Counters> {
        let json = serde_json::to_value(self)?;
        let mut stats = vec![0; STAT_NAMES.len()];
        for (i, name) in STAT_NAMES {
            stats[i as usize] = json[name].as_u64().unwrap_or(0);
        }
        Ok(Counters {
            stats,
            per_shard: self.shard_enqueues_per_shard.clone(),
            per_cpu: Vec::new(),
            wait_hist: self.wait_hist_log2_us.clone(),
        })
    }

    /// What --stats and --monitor print for the interval since @prev: the
    /// rates, and per LLC where there are several.
    pub fn interval_lines(&self, prev: &Metrics, secs: f64) -> Result<Vec<String>> {
        let (now_c, prev_c) = (self.counters()?, prev.counters()?);
        let waits = hist_delta(&self.wait_hist_log2_us, &prev.wait_hist_log2_us);
        let mut lines = vec![format!(
            "mosaic {:>7.1}s | {} | wait p50 {} p99 {} max {}",
            self.runtime_s,
            now_c.rate_line(&prev_c, secs),
            fmt_us(wait_percentile_us(&waits, 0.5)),
            fmt_us(wait_percentile_us(&waits, 0.99)),
            fmt_us(self.wait_max_us),
        )];
        if self.per_llc.len() > 1 {
            for (id, llc) in &self.per_llc {
                let before = prev.per_llc.get(id);
                let r = |name: &str| {
                    let b = before.and_then(|l| l.counters.get(name)).copied();
                    let a = llc.counters.get(name).copied().unwrap_or(0);
                    a.saturating_sub(b.unwrap_or(0)) as f64 / secs.max(1e-3)
                };
                let into = before.map_or(0, |l| l.enqueued_on_shards);
                lines.push(format!(
                    "mosaic llc{id:<3} | cpus {:<8} shard enq {:>7.0}/s pull own {:>7.0}/s \
                     sibling {:>6.0}/s | stolen {:>6.0}/s | idle dispatch {:>6.0}/s",
                    llc.cpus,
                    llc.enqueued_on_shards.saturating_sub(into) as f64 / secs.max(1e-3),
                    r("shard_pulls_local"),
                    r("shard_pulls_sibling"),
                    r("steal_hits"),
                    r("dispatch_empty"),
                ));
            }
        }
        Ok(lines)
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
        let j = serde_json::to_value(BpfMetrics::from(&t[..])).unwrap();
        assert_eq!(j["calls"], 8);
        assert_eq!(j["ns_per_call"], 250.0);
        assert_eq!(j["programs"]["b"]["run_time_ns"], 1600);
        assert_eq!(BpfMetrics::from(&[][..]).ns_per_call, 0.0);
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
    /// A machine of two LLCs (CPUs 0-1, 2-3) with a shard per LLC.
    fn two_llcs() -> (Topology, ShardLayout) {
        let dir = tempfile::tempdir().unwrap();
        crate::topology::tests::fake_sysfs(dir.path(), 4, 2, false, 1);
        let topo = Topology::from_root(dir.path()).unwrap();
        let layout = topo.shard_layout(2, 8);
        (topo, layout)
    }

    /// Counters where counter i is 100 + i, on CPU c (i + 1) * (c + 1).
    fn distinct_counters() -> Counters {
        let n = bpf_intf::mosaic_stat_NR_MOSAIC_STATS as u64;
        Counters {
            stats: (0..n).map(|i| 100 + i).collect(),
            per_shard: vec![7, 9],
            per_cpu: (0..n)
                .map(|i| (0..4).map(|c| (i + 1) * (c + 1)).collect())
                .collect(),
            wait_hist: vec![5, 0, 3, 2],
        }
    }

    #[test]
    fn wait_percentiles_are_bucket_upper_edges() {
        // 90 waits under 2 us, 9 in [8, 16) us, 1 in [1024, 2048) us
        let mut hist = vec![0u64; 24];
        hist[0] = 90;
        hist[3] = 9;
        hist[10] = 1;
        assert_eq!(wait_percentile_us(&hist, 0.5), 2);
        assert_eq!(wait_percentile_us(&hist, 0.9), 2);
        assert_eq!(wait_percentile_us(&hist, 0.99), 16);
        assert_eq!(wait_percentile_us(&hist, 0.999), 2048);
        assert_eq!(wait_percentile_us(&[0; 24], 0.99), 0);
        assert_eq!(hist_delta(&[5, 7], &[2]), vec![3, 7]);
    }

    #[test]
    fn help_describes_every_counter_and_field() {
        let help = help_text();
        for (_, name) in STAT_NAMES {
            let line = help
                .lines()
                .find(|l| l.split_whitespace().next() == Some(name));
            let line = line.unwrap_or_else(|| panic!("--help-stats misses {name}"));
            assert!(line.split(')').nth(1).unwrap().trim().len() > 10, "{line}");
        }
        for m in all_meta() {
            assert!(help.contains(&format!("[{}]", m.name)));
            for (name, f) in &m.fields {
                assert!(
                    f.attrs.desc.is_some(),
                    "{}.{name} has no description",
                    m.name
                );
            }
        }
    }

    #[test]
    fn every_counter_is_a_metrics_field() {
        let fields = Metrics::meta().fields;
        for (_, name) in STAT_NAMES {
            assert_eq!(fields[name].data.to_string(), "u64", "{name}");
        }
    }

    #[test]
    fn metrics_round_trip_and_give_the_counters_back() {
        let (topo, layout) = two_llcs();
        let c = distinct_counters();
        let m = Metrics::new(&c, &topo, &layout).unwrap();
        let json = serde_json::to_value(&m).unwrap();
        for (i, name) in STAT_NAMES {
            assert_eq!(json[name], 100 + i as u64, "{name}");
        }
        let back: Metrics = serde_json::from_value(json).unwrap();
        assert_eq!(back, m);
        let counters = back.counters().unwrap();
        assert_eq!(
            (counters.stats, counters.per_shard, counters.wait_hist),
            (c.stats, c.per_shard, c.wait_hist)
        );
    }

    #[test]
    fn per_llc_counters_come_from_the_llcs_cpus() {
        let (topo, layout) = two_llcs();
        let m = Metrics::new(&distinct_counters(), &topo, &layout).unwrap();
        assert_eq!(m.per_llc.len(), 2);
        let (llc0, llc1) = (&m.per_llc[&0], &m.per_llc[&1]);
        assert_eq!((llc0.cpus.as_str(), llc1.cpus.as_str()), ("0-1", "2-3"));
        assert_eq!((&llc0.shards, &llc1.shards), (&vec![0], &vec![1]));
        assert_eq!((llc0.enqueued_on_shards, llc1.enqueued_on_shards), (7, 9));
        // counter 0 is 1, 2, 3, 4 on CPUs 0-3; the maximum takes the largest
        let first = STAT_NAMES.iter().find(|(i, _)| *i == 0).unwrap().1;
        assert_eq!((llc0.counters[first], llc1.counters[first]), (3, 7));
        let max = bpf_intf::mosaic_stat_STAT_IDLE_WAITING_MAX_US as u64;
        assert_eq!(llc1.counters["idle_waiting_max_us"], (max + 1) * 4);
    }

    #[test]
    fn stats_file_keeps_its_keys_and_their_json_types() {
        let (topo, layout) = two_llcs();
        let json =
            serde_json::to_value(Metrics::new(&distinct_counters(), &topo, &layout).unwrap())
                .unwrap();
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
            partitions: topo.llcs.clone(),
            period: std::time::Duration::from_millis(200),
            enabled: true,
        };
        let json = crate::group::Balancer::new(cfg, &topo).to_json();
        let m: GroupBalancerMetrics = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), json);
        assert!(!m.is_off());
        let g = GroupMetrics {
            partition: MaybeIndex(None),
            ..Default::default()
        };
        assert!(serde_json::to_value(g).unwrap()["partition"].is_null());
    }
}
