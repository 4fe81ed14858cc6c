//! The options and the machine turned into the BPF scheduler's settings, once
//! per load and without I/O: `Tunables` holds every value the loader writes
//! into the BPF program's `const volatile` globals (.rodata) before load.
//!
//! One path for both loaders: scx_mosaic (main.rs) copies a `Tunables` into
//! its skeleton's .rodata field by field; mosaic-sim (sim/src/sched.rs)
//! parses its --sched-arg flags with the same `Opts`, builds the same
//! `LoadPlan` and writes `Tunables::by_name` into the natively compiled
//! scheduler's globals. A new setting is a field here, set in
//! `Tunables::new` and named in `with_tunable_fields!` (nothing builds
//! until it is); both loaders then write it by that name.

use crate::bpf_intf;
use crate::group::policy;
use crate::opts::{SameRqPull, SharedRunq};
use crate::topology::{ShardLayout, Topology};
use crate::Opts;
use anyhow::{bail, Result};

/// --shared-runq auto picks per-CPU queues (off) on machines of at most this
/// many CPU ids, the shard design on larger ones. In the simulator (docs/
/// sim-report.md, "Which design the default picks") neither 000 design is
/// faster than per-CPU queues on any machine up to 128 CPUs, and per-CPU
/// queues' BPF work per callback stays within 2x the 8-CPU machine's up to
/// 72 CPUs (milan-72: 1.9x) but not at 128 (3.3x); the shard design's is
/// flat, and it is faster on the 192-CPU machines' UDP_RR. In the VM (at
/// most 8 CPUs) per-CPU queues were as fast or faster on most medians.
pub const AUTO_PER_CPU_MAX_CPUS: usize = 72;

/// The shared-runqueue design @opts ask for on @topo, auto resolved by size.
pub fn shared_runq_design(opts: &Opts, topo: &Topology) -> SharedRunq {
    match opts.shared_runq() {
        SharedRunq::Auto if topo.nr_cpu_ids <= AUTO_PER_CPU_MAX_CPUS => SharedRunq::Off,
        SharedRunq::Auto => SharedRunq::Shard,
        asked => asked,
    }
}

/// The kernel's watchdog timeout when the scheduler asks for none
/// (SCX_WATCHDOG_MAX_TIMEOUT).
pub const KERNEL_TIMEOUT_MS: u32 = 30_000;

/// The longest runnable wait that vtime.bpf.c's lead bound aims at, for the
/// watchdog timeout @timeout_ms (0: the kernel's): an eighth of it, so that
/// the waits the bound does not control (the tasks queued ahead, a busy
/// host) have room, and at most 500 ms, past which a task's share no longer
/// needs protecting.
pub fn wait_target_ns(timeout_ms: u32) -> u64 {
    (watchdog_ns(timeout_ms) / 8).min(500_000_000)
}

/// The shortest slice a CPU gives while tasks crowd its own queue
/// (shard.bpf.c): a sixteenth of @slice_ns (1.25 ms of the default 20 ms;
/// with the kernel's 4 ms tick at HZ=250 a turn lasts at least a tick
/// anyway unless the task sleeps first).
pub fn min_slice_ns(slice_ns: u64) -> u64 {
    slice_ns / 16
}

/// The watchdog timeout in ns for @timeout_ms (0: the kernel's).
fn watchdog_ns(timeout_ms: u32) -> u64 {
    let ms = if timeout_ms == 0 {
        KERNEL_TIMEOUT_MS
    } else {
        timeout_ms
    };
    u64::from(ms) * 1_000_000
}

/// The longest a task of a cpu.idle cgroup waits while other work keeps its
/// LLC busy, for the watchdog timeout @timeout_ms (0: the kernel's): a
/// quarter of it. SCHED_IDLE asks for as little CPU as possible; the
/// watchdog asks that every task runs within its timeout. An idle task runs
/// about a tick each time it becomes overdue, so its share of a saturated
/// machine falls with this wait (a tick per 7.5 s with the kernel's 30 s),
/// and three quarters of the timeout are left for the queueing behind it.
pub fn idle_wait_ns(timeout_ms: u32) -> u64 {
    watchdog_ns(timeout_ms) / 4
}

/// Bytes of the BPF scheduler's debug_drop_comm (the kernel's TASK_COMM_LEN).
pub const COMM_LEN: usize = bpf_intf::mosaic_limits_MAX_COMM as usize;

/// The values of the BPF scheduler's `const volatile` globals, each field
/// named and typed as its global (bpf/mosaic.bpf.h). Arrays hold the
/// elements from index 0; the elements after them keep their zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunables {
    /// CPU ids are below this.
    pub nr_cpu_ids: u32,
    /// LLCs, numbered from 0.
    pub nr_llcs: u32,
    /// Shards over all LLCs.
    pub nr_shards: u32,
    /// L2 groups, numbered from 0.
    pub nr_l2s: u32,
    /// The time slice of each task (--slice-us).
    pub slice_ns: u64,
    /// The shortest slice while tasks crowd a CPU's own queue (min_slice_ns()).
    pub min_slice_ns: u64,
    /// Period of the scan that clears the overload flag (--overload-scan-us).
    pub overload_scan_ns: u64,
    /// The longest wait the vtime lead bound aims at (wait_target_ns()).
    pub wait_target_ns: u64,
    /// The longest a cpu.idle cgroup's task waits for a busy LLC (idle_wait_ns()).
    pub idle_wait_ns: u64,
    /// Some core runs several hardware threads.
    pub smt_enabled: bool,
    /// CPUs differ in capacity.
    pub asym_capacity: bool,
    /// --shared-runq off (or auto on a machine of at most
    /// AUTO_PER_CPU_MAX_CPUS CPU ids): per-CPU queues only.
    pub no_shared_runq: bool,
    /// --shared-runq seed (without --no-shared-runq): per-CPU queues
    /// whose waiters the shards index.
    pub seed_runq: bool,
    /// --same-rq-pull: own-shard pulls prefer a task on the CPU's runqueue.
    pub same_rq_pull: bool,
    /// --no-l2-locality.
    pub no_l2_locality: bool,
    /// --no-prev-first.
    pub no_prev_first: bool,
    /// --no-wake-pair.
    pub no_wake_pair: bool,
    /// --no-wake-preempt.
    pub no_wake_preempt: bool,
    /// --no-overload-gate.
    pub no_overload_gate: bool,
    /// --no-llc-balance.
    pub no_llc_balance: bool,
    /// Honour cgroup cpu.weight (off with --no-cgroup-weights).
    pub cgroup_weights: bool,
    /// --gb-parent given: account cgroups per partition.
    pub group_accounting: bool,
    /// ... and bind them to partitions (off with --no-group-balancer).
    pub group_balancer: bool,
    /// Partitions of the group balancer (0 without --gb-parent).
    pub nr_parts: u32,
    /// --debug-drop-comm, NUL-terminated (all zero without it).
    pub debug_drop_comm: [u8; COMM_LEN],
    /// LLC index of each CPU id (0 for ids that are not online).
    pub cpu_llc: Vec<u32>,
    /// L2 group index of each CPU id (0 for ids that are not online).
    pub cpu_l2: Vec<u32>,
    /// Partition of each CPU id, -1 for none; empty without --gb-parent.
    pub cpu_part: Vec<i32>,
    /// Capacity of each CPU id, 1024 = biggest (0 for ids not online).
    pub cpu_capacity: Vec<u32>,
    /// NUMA node of each LLC.
    pub llc_node: Vec<u32>,
    /// Global shard index of each CPU id (0 for ids that are not online).
    pub cpu_shard: Vec<u32>,
    /// LLC of each shard.
    pub shard_llc: Vec<u32>,
    /// First global shard of each LLC.
    pub llc_first_shard: Vec<u32>,
    /// Number of shards of each LLC.
    pub llc_nr_shards: Vec<u32>,
    /// Number of CPUs of each LLC.
    pub llc_nr_cpus: Vec<u32>,
}

/// The ops flags every load asks for, by their names in the kernel's enum
/// scx_ops_flags; a loader sets each one the kernel knows.
/// SCX_OPS_ALLOW_QUEUED_WAKEUP lets the kernel queue remote wakeups (seed
/// 001's other half).
pub const OPS_FLAGS: &[&str] = &["SCX_OPS_ALLOW_QUEUED_WAKEUP"];

/// Everything one load of the BPF scheduler is set up with, derived from
/// the options and the machine: both loaders (scx_mosaic, mosaic-sim) take
/// every setting from here.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// The machine as the scheduler sees it: --cpu-capacity applied.
    pub topo: Topology,
    /// How the shared runqueue splits each LLC.
    pub layout: ShardLayout,
    /// The group balancer, with --gb-parent.
    pub group: Option<GroupPlan>,
    /// What is written into the BPF globals.
    pub tunables: Tunables,
    /// --shared-runq auto chose the design (by the machine's size).
    pub design_by_size: bool,
    /// The ops table's flags, by name (OPS_FLAGS).
    pub ops_flags: &'static [&'static str],
    /// The ops table's watchdog timeout (--timeout-ms; 0: the kernel's).
    /// (--exit-dump-len, the size of the kernel's dump at an ejection, is
    /// the one ops field outside the plan: it changes nothing the scheduler
    /// runs with.)
    pub timeout_ms: u32,
}

/// The group balancer's settings (seed 004): --gb-parent, --gb-partitions,
/// --gb-period-ms and --no-group-balancer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPlan {
    /// --gb-parent as given: the cgroup whose descendants are balanced.
    pub parent: String,
    /// CPUs of each partition.
    pub partitions: Vec<Vec<usize>>,
    /// How often userspace looks and may settle one group.
    pub period_ms: u64,
    /// False with --no-group-balancer: account, but never settle or bind.
    pub enabled: bool,
}

impl GroupPlan {
    /// The period in ns.
    pub fn period_ns(&self) -> u64 {
        self.period_ms * 1_000_000
    }
}

impl LoadPlan {
    /// Applies the options to @topo, checks the machine against the BPF
    /// limits and derives the shards, the partitions and the tunables.
    pub fn new(opts: &Opts, mut topo: Topology) -> Result<Self> {
        if let Some(spec) = &opts.cpu_capacity {
            topo.set_capacities(spec)?;
        }
        check_limits(&topo)?;
        let shard_size = match opts.shard_size {
            Some(n) => n as usize,
            None => topo.default_shard_size(),
        };
        let layout = topo.shard_layout(
            shard_size,
            bpf_intf::mosaic_limits_MAX_SHARDS_PER_LLC as usize,
        );
        if layout.shards.len() > bpf_intf::mosaic_limits_MAX_SHARDS as usize {
            bail!(
                "{} shards: more than the {} supported; raise --shard-size",
                layout.shards.len(),
                bpf_intf::mosaic_limits_MAX_SHARDS
            );
        }
        let index_bits = bpf_intf::mosaic_limits_SHARD_INDEX_BITS as usize;
        if shared_runq_design(opts, &topo) == SharedRunq::Seed {
            if let Some(big) = layout.shards.iter().find(|s| s.len() > index_bits) {
                bail!(
                    "--shared-runq seed: a shard of {} CPUs; its index holds at most {}: \
                     lower --shard-size",
                    big.len(),
                    index_bits
                );
            }
        }
        let partitions = match &opts.gb_parent {
            Some(_) => Some(policy::parse_partitions(
                opts.gb_partitions.as_deref().unwrap_or("llc"),
                &topo,
            )?),
            None if opts.no_group_balancer || opts.gb_partitions.is_some() => {
                bail!("--gb-partitions and --no-group-balancer need --gb-parent")
            }
            None => None,
        };
        let tunables = Tunables::new(opts, &topo, &layout, partitions.as_deref());
        let group = match (&opts.gb_parent, partitions) {
            (Some(parent), Some(partitions)) => Some(GroupPlan {
                parent: parent.clone(),
                partitions,
                period_ms: opts.gb_period_ms,
                enabled: !opts.no_group_balancer,
            }),
            _ => None,
        };
        Ok(LoadPlan {
            topo,
            layout,
            group,
            tunables,
            design_by_size: opts.shared_runq() == SharedRunq::Auto,
            ops_flags: OPS_FLAGS,
            timeout_ms: opts.timeout_ms,
        })
    }
}

/// A load after a CPU hotplug restart: the options' CPU lists keep what is
/// online (see LoadPlan::restart).
#[derive(Debug, Clone, PartialEq)]
pub struct OnlineLists {
    /// --cpu-capacity without the offline CPUs (None: not given, or none
    /// of its CPUs online).
    pub cpu_capacity: Option<String>,
    /// --gb-partitions as CPU lists without the offline CPUs and the
    /// partitions left empty (None: not given, or a topology name).
    pub gb_partitions: Option<String>,
    /// No partition has an online CPU: no group balancer for this load.
    pub no_partition_left: bool,
    /// The CPUs named but offline, ascending.
    pub dropped: Vec<usize>,
}

/// Cuts the CPU lists of --cpu-capacity and --gb-partitions (explicit
/// lists, not llc/l2/node) of @opts to the online CPUs of @topo. Text that
/// does not parse is kept as it is, for LoadPlan::new to refuse.
pub fn online_lists(opts: &Opts, topo: &Topology) -> OnlineLists {
    let mut dropped = std::collections::BTreeSet::new();
    let mut keep_online = |cpus: Vec<usize>| -> Vec<usize> {
        let (on, off): (Vec<usize>, Vec<usize>) =
            cpus.into_iter().partition(|&c| topo.cpu(c).is_some());
        dropped.extend(off);
        on
    };
    let cpu_capacity = opts.cpu_capacity.as_deref().map(|spec| {
        let mut entries = Vec::new();
        for entry in spec.split(',') {
            let parsed = entry
                .split_once(':')
                .and_then(|(range, cap)| Some((crate::cpulist::parse(range).ok()?, cap)));
            match parsed {
                Some((cpus, cap)) if !range_is_blank(entry) => {
                    let cpus = keep_online(cpus);
                    // one entry per range: ',' separates the entries
                    let list = crate::cpulist::format(&cpus);
                    for range in list.split(',').filter(|r| !r.is_empty()) {
                        entries.push(format!("{range}:{}", cap.trim()));
                    }
                }
                _ => entries.push(entry.to_string()),
            }
        }
        entries.join(",")
    });
    let mut no_partition_left = false;
    let gb_partitions = opts.gb_partitions.as_deref().map(|spec| {
        if matches!(spec.trim(), "llc" | "l2" | "node") {
            return spec.to_string();
        }
        let mut lists: Vec<&str> = spec.split(';').collect();
        if lists.len() > 1 && lists.last().is_some_and(|l| l.trim().is_empty()) {
            lists.pop();
        }
        let mut parts = Vec::new();
        for text in lists {
            match crate::cpulist::parse(text) {
                Ok(cpus) if !cpus.is_empty() => {
                    let cpus = keep_online(cpus);
                    if !cpus.is_empty() {
                        parts.push(crate::cpulist::format(&cpus));
                    }
                }
                // bad or empty as given: LoadPlan::new says so
                _ => return spec.to_string(),
            }
        }
        no_partition_left = parts.is_empty();
        parts.join(";")
    });
    OnlineLists {
        cpu_capacity: cpu_capacity.filter(|s| !s.is_empty()),
        gb_partitions,
        no_partition_left,
        dropped: dropped.into_iter().collect(),
    }
}

/// Whether the CPU range of a --cpu-capacity entry is blank (an error).
fn range_is_blank(entry: &str) -> bool {
    entry
        .split_once(':')
        .is_some_and(|(r, _)| r.trim().is_empty())
}

impl LoadPlan {
    /// The plan of a load after the kernel's restart request (CPU
    /// hotplug): as new(), but the CPUs of --cpu-capacity and
    /// --gb-partitions that are offline now are left out for this load
    /// (the full lists stay in @opts: the next restart, with the CPUs back,
    /// uses them again), and a partition left empty is dropped; with none
    /// left the group balancer is off for this load. Returns the plan and,
    /// if something was left out, one line that says what.
    pub fn restart(opts: &Opts, topo: Topology) -> Result<(Self, Option<String>)> {
        let lists = online_lists(opts, &topo);
        if lists.dropped.is_empty() {
            return Ok((Self::new(opts, topo)?, None));
        }
        let mut cut = opts.clone();
        cut.cpu_capacity = lists.cpu_capacity.clone();
        cut.gb_partitions = lists.gb_partitions.clone();
        let mut what = Vec::new();
        if opts.cpu_capacity != cut.cpu_capacity {
            what.push("--cpu-capacity");
        }
        if opts.gb_partitions != cut.gb_partitions {
            what.push("--gb-partitions");
        }
        let mut line = format!(
            "CPU {} offline: left out of {} until it returns",
            crate::cpulist::format(&lists.dropped),
            what.join(" and ")
        );
        if lists.no_partition_left {
            cut.gb_parent = None;
            cut.gb_partitions = None;
            cut.no_group_balancer = false;
            line += "; no partition has an online CPU: no group balancer meanwhile";
        } else if let Some(spec) = &cut.gb_partitions {
            line += &format!(" (partitions {spec:?})");
        }
        Ok((Self::new(&cut, topo)?, Some(line)))
    }
}

/// Refuses machines with more CPUs, L2 groups or LLCs than the BPF side holds.
fn check_limits(topo: &Topology) -> Result<()> {
    for (what, n, max) in [
        ("CPUs", topo.nr_cpu_ids, bpf_intf::mosaic_limits_MAX_CPUS),
        ("L2 groups", topo.l2s.len(), bpf_intf::mosaic_limits_MAX_L2S),
        ("LLCs", topo.llcs.len(), bpf_intf::mosaic_limits_MAX_LLCS),
    ] {
        if n > max as usize {
            bail!("{n} {what}: more than the {max} supported");
        }
    }
    Ok(())
}

impl Tunables {
    /// The tunables for @opts on @topo split as @layout, with the group
    /// balancer's @partitions if --gb-parent is given.
    pub fn new(
        opts: &Opts,
        topo: &Topology,
        layout: &ShardLayout,
        partitions: Option<&[Vec<usize>]>,
    ) -> Self {
        let design = shared_runq_design(opts, topo);
        let per_cpu = |value: &dyn Fn(&crate::topology::Cpu) -> u32| {
            let mut v = vec![0; topo.nr_cpu_ids];
            for cpu in &topo.cpus {
                v[cpu.id] = value(cpu);
            }
            v
        };
        let mut cpu_shard = vec![0; topo.nr_cpu_ids];
        for (shard, cpus) in layout.shards.iter().enumerate() {
            for &cpu in cpus {
                cpu_shard[cpu] = shard as u32;
            }
        }
        let mut shard_llc = vec![0; layout.shards.len()];
        for (llc, (&first, &n)) in layout
            .llc_first_shard
            .iter()
            .zip(&layout.llc_nr_shards)
            .enumerate()
        {
            for shard in &mut shard_llc[first..first + n] {
                *shard = llc as u32;
            }
        }
        let mut debug_drop_comm = [0; COMM_LEN];
        if let Some(comm) = &opts.debug_drop_comm {
            // the last byte stays the terminating NUL
            for (dst, src) in debug_drop_comm
                .iter_mut()
                .zip(comm.bytes().take(COMM_LEN - 1))
            {
                *dst = src;
            }
        }
        Tunables {
            nr_cpu_ids: topo.nr_cpu_ids as u32,
            nr_llcs: topo.llcs.len() as u32,
            nr_shards: layout.shards.len() as u32,
            nr_l2s: topo.l2s.len() as u32,
            slice_ns: opts.slice_us * 1000,
            min_slice_ns: min_slice_ns(opts.slice_us * 1000),
            overload_scan_ns: opts.overload_scan_us * 1000,
            wait_target_ns: wait_target_ns(opts.timeout_ms),
            idle_wait_ns: idle_wait_ns(opts.timeout_ms),
            smt_enabled: topo.smt(),
            asym_capacity: topo.asymmetric(),
            no_shared_runq: design == SharedRunq::Off,
            seed_runq: design == SharedRunq::Seed,
            same_rq_pull: match opts.same_rq_pull {
                SameRqPull::On => true,
                SameRqPull::Off => false,
                SameRqPull::Auto => topo.guest,
            },
            no_l2_locality: opts.no_l2_locality,
            no_prev_first: opts.no_prev_first,
            no_wake_pair: opts.no_wake_pair,
            no_wake_preempt: opts.no_wake_preempt,
            no_overload_gate: opts.no_overload_gate,
            no_llc_balance: opts.no_llc_balance,
            cgroup_weights: !opts.no_cgroup_weights,
            group_accounting: partitions.is_some(),
            group_balancer: partitions.is_some() && !opts.no_group_balancer,
            nr_parts: partitions.map_or(0, |p| p.len() as u32),
            debug_drop_comm,
            cpu_llc: per_cpu(&|c| c.llc as u32),
            cpu_l2: per_cpu(&|c| c.l2 as u32),
            cpu_part: partitions.map_or_else(Vec::new, |p| policy::cpu_parts(p, topo.nr_cpu_ids)),
            cpu_capacity: per_cpu(&|c| c.capacity),
            llc_node: topo
                .llcs
                .iter()
                .map(|cpus| topo.cpu(cpus[0]).map_or(0, |c| c.node as u32))
                .collect(),
            cpu_shard,
            shard_llc,
            llc_first_shard: layout.llc_first_shard.iter().map(|&s| s as u32).collect(),
            llc_nr_shards: layout.llc_nr_shards.iter().map(|&n| n as u32).collect(),
            llc_nr_cpus: topo.llcs.iter().map(|cpus| cpus.len() as u32).collect(),
        }
    }

    /// Every tunable as its BPF global's name and element values (one for a
    /// scalar; integers as their two's complement bits), for loaders that
    /// write the globals by name.
    pub fn by_name(&self) -> Vec<(&'static str, Vec<u64>)> {
        macro_rules! named {
            ($($field:ident),*) => {{
                let Tunables { $($field),* } = self;
                vec![$((stringify!($field), $field.elements())),*]
            }};
        }
        crate::with_tunable_fields!(named)
    }
}

/// Calls macro @m with the name of every field of `Tunables`, the one list
/// of them, for code that handles each field by name; such code
/// destructures `Tunables { $($field),* }` without `..`, so that a list
/// missing a field does not build.
#[macro_export]
macro_rules! with_tunable_fields {
    ($m:ident) => {
        $m!(
            nr_cpu_ids,
            nr_llcs,
            nr_shards,
            nr_l2s,
            slice_ns,
            min_slice_ns,
            overload_scan_ns,
            wait_target_ns,
            idle_wait_ns,
            smt_enabled,
            asym_capacity,
            no_shared_runq,
            seed_runq,
            same_rq_pull,
            no_l2_locality,
            no_prev_first,
            no_wake_pair,
            no_wake_preempt,
            no_overload_gate,
            no_llc_balance,
            cgroup_weights,
            group_accounting,
            group_balancer,
            nr_parts,
            debug_drop_comm,
            cpu_llc,
            cpu_l2,
            cpu_part,
            cpu_capacity,
            llc_node,
            cpu_shard,
            shard_llc,
            llc_first_shard,
            llc_nr_shards,
            llc_nr_cpus
        )
    };
}

/// A tunable's value copied into a typed global of a skeleton's .rodata
/// (an array from index 0; its other elements are left alone).
pub trait CopyToGlobal<Global> {
    /// Writes this value into @global.
    fn copy_to_global(&self, global: &mut Global);
}

impl<T: Copy> CopyToGlobal<T> for T {
    fn copy_to_global(&self, global: &mut T) {
        *global = *self;
    }
}

impl<T: Copy, const N: usize> CopyToGlobal<[T; N]> for Vec<T> {
    fn copy_to_global(&self, global: &mut [T; N]) {
        global[..self.len()].copy_from_slice(self);
    }
}

/// C's char is signed where libbpf's skeletons say i8.
impl<const N: usize> CopyToGlobal<[i8; N]> for [u8; N] {
    fn copy_to_global(&self, global: &mut [i8; N]) {
        for (dst, &src) in global.iter_mut().zip(self) {
            *dst = src as i8;
        }
    }
}

/// A tunable's value as the element values a global holds.
trait Elements {
    /// The elements, each widened to 64 bits (signed ones as their bits).
    fn elements(&self) -> Vec<u64>;
}

impl Elements for bool {
    fn elements(&self) -> Vec<u64> {
        vec![*self as u64]
    }
}

impl Elements for u32 {
    fn elements(&self) -> Vec<u64> {
        vec![*self as u64]
    }
}

impl Elements for u64 {
    fn elements(&self) -> Vec<u64> {
        vec![*self]
    }
}

impl Elements for [u8; COMM_LEN] {
    fn elements(&self) -> Vec<u64> {
        self.iter().map(|&b| b as u64).collect()
    }
}

impl Elements for Vec<u32> {
    fn elements(&self) -> Vec<u64> {
        self.iter().map(|&v| v as u64).collect()
    }
}

impl Elements for Vec<i32> {
    fn elements(&self) -> Vec<u64> {
        self.iter().map(|&v| v as u32 as u64).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::tests::fake_sysfs;
    use clap::Parser;

    /// 16 CPUs: 2 LLCs of 4 SMT cores (8 CPUs), one node.
    fn topo() -> Topology {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 16, 8, true, 1);
        Topology::from_root(dir.path()).unwrap()
    }

    /// The plan for the flags @args on topo().
    fn plan(args: &[&str]) -> Result<LoadPlan> {
        let opts = Opts::try_parse_from(std::iter::once("scx_mosaic").chain(args.iter().copied()))?;
        LoadPlan::new(&opts, topo())
    }

    /// topo() with CPUs @offline offline.
    fn topo_without(offline: &str) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 16, 8, true, 1);
        let off = crate::cpulist::parse(offline).unwrap();
        let on: Vec<usize> = (0..16).filter(|c| !off.contains(c)).collect();
        let online = dir.path().join("devices/system/cpu/online");
        std::fs::write(online, crate::cpulist::format(&on) + "\n").unwrap();
        Topology::from_root(dir.path()).unwrap()
    }

    fn restart(args: &[&str], offline: &str) -> Result<(LoadPlan, Option<String>)> {
        let opts = Opts::try_parse_from(std::iter::once("scx_mosaic").chain(args.iter().copied()))?;
        LoadPlan::restart(&opts, topo_without(offline))
    }

    #[test]
    fn a_restart_leaves_offline_cpus_out_of_the_cpu_lists() {
        let args = [
            "--gb-parent=x",
            "--gb-partitions=0-3;4-7;8-15",
            "--cpu-capacity=0-7:1024,8-15:446",
        ];
        // at the first load an offline CPU is bad input
        let opts = Opts::try_parse_from(std::iter::once("scx_mosaic").chain(args)).unwrap();
        let err = LoadPlan::new(&opts, topo_without("5")).unwrap_err();
        assert!(
            format!("{err:#}").contains("CPU 5 is not an online CPU"),
            "{err:#}"
        );
        // after a restart it is left out, and said so
        let (p, line) = restart(&args, "5").unwrap();
        assert_eq!(
            p.group.unwrap().partitions,
            [vec![0, 1, 2, 3], vec![4, 6, 7], (8..16).collect()]
        );
        assert_eq!(
            line.unwrap(),
            "CPU 5 offline: left out of --cpu-capacity and --gb-partitions until it returns \
             (partitions \"0-3;4,6-7;8-15\")"
        );
        assert_eq!(p.topo.cpu(9).unwrap().capacity, 446);
        assert_eq!(p.topo.cpu(6).unwrap().capacity, 1024);
        // a partition left empty is dropped
        let (p, line) = restart(&args, "4-7").unwrap();
        assert_eq!(p.group.unwrap().partitions.len(), 2);
        assert!(line.unwrap().starts_with("CPU 4-7 offline"));
        // all offline but the ones no list names: no balancer this load
        let (p, line) = restart(&["--gb-parent=x", "--gb-partitions=2-3"], "2-3").unwrap();
        assert!(p.group.is_none() && !p.tunables.group_balancer);
        assert!(line.unwrap().ends_with("no group balancer meanwhile"));
        // nothing offline: the plan new() makes, nothing said
        let (p, line) = restart(&args, "").unwrap();
        assert_eq!(line, None);
        assert_eq!(p.group.unwrap().partitions[1], [4, 5, 6, 7]);
        // topology names and bad input are not touched
        let (p, line) = restart(&["--gb-parent=x", "--gb-partitions=llc"], "5").unwrap();
        assert_eq!((p.group.unwrap().partitions.len(), line), (2, None));
        let err = restart(&["--gb-parent=x", "--gb-partitions=0-3;;4-7"], "5").unwrap_err();
        assert!(format!("{err:#}").contains("is empty"), "{err:#}");
        let err = restart(&["--cpu-capacity=0-3:2000"], "1").unwrap_err();
        assert!(format!("{err:#}").contains("capacity must be"), "{err:#}");
    }

    #[test]
    fn the_lists_are_cut_per_load_not_for_good() {
        // the options keep the full lists: a CPU back online is used again
        let opts =
            Opts::try_parse_from(["scx_mosaic", "--gb-parent=x", "--gb-partitions=0-7;8-15"])
                .unwrap();
        let (p, _) = LoadPlan::restart(&opts, topo_without("9")).unwrap();
        assert_eq!(p.group.unwrap().partitions[1].len(), 7);
        assert_eq!(opts.gb_partitions.as_deref(), Some("0-7;8-15"));
        let (p, line) = LoadPlan::restart(&opts, topo_without("")).unwrap();
        assert_eq!((p.group.unwrap().partitions[1].len(), line), (8, None));
    }

    #[test]
    fn the_wait_target_is_an_eighth_of_the_watchdog_timeout_at_most_500_ms() {
        assert_eq!(wait_target_ns(0), 500_000_000);
        assert_eq!(wait_target_ns(2000), 250_000_000);
        assert_eq!(wait_target_ns(100_000), 500_000_000);
        let t = plan(&["--timeout-ms=1000"]).unwrap().tunables;
        assert_eq!(t.wait_target_ns, 125_000_000);
    }

    #[test]
    fn idle_cgroups_wait_a_quarter_of_the_watchdog_timeout_at_most() {
        assert_eq!(idle_wait_ns(0), 7_500_000_000);
        assert_eq!(idle_wait_ns(5000), 1_250_000_000);
        let t = plan(&["--timeout-ms=2000"]).unwrap().tunables;
        assert_eq!(t.idle_wait_ns, 500_000_000);
    }

    #[test]
    fn auto_picks_per_cpu_queues_up_to_the_size_limit_and_shards_above() {
        let design = |nr: usize, args: &[&str]| {
            let dir = tempfile::tempdir().unwrap();
            fake_sysfs(dir.path(), nr, 8, true, 1);
            let topo = Topology::from_root(dir.path()).unwrap();
            let argv = std::iter::once("scx_mosaic").chain(args.iter().copied());
            let t = LoadPlan::new(&Opts::try_parse_from(argv).unwrap(), topo)
                .unwrap()
                .tunables;
            (t.no_shared_runq, t.seed_runq)
        };
        assert_eq!(design(AUTO_PER_CPU_MAX_CPUS, &[]), (true, false));
        assert_eq!(design(AUTO_PER_CPU_MAX_CPUS + 8, &[]), (false, false));
        // a design asked for is kept on any size
        assert_eq!(design(16, &["--shared-runq=shard"]), (false, false));
        assert_eq!(design(128, &["--no-shared-runq"]), (true, false));
        assert_eq!(design(128, &["--shared-runq=seed"]), (false, true));
        // --help states the limit
        let help = <Opts as clap::CommandFactory>::command().render_long_help();
        let limit = format!("up to {AUTO_PER_CPU_MAX_CPUS} CPUs");
        assert!(help.to_string().contains(&limit), "{help}");
    }

    #[test]
    fn defaults_are_the_bpf_declarations() {
        let t = plan(&[]).unwrap().tunables;
        assert_eq!((t.nr_cpu_ids, t.nr_llcs, t.nr_l2s), (16, 2, 8));
        // default shard size: an L2 group here (2 CPUs)
        assert_eq!((t.nr_shards, t.slice_ns), (8, 20_000_000));
        assert_eq!(t.min_slice_ns, 1_250_000);
        assert_eq!(t.overload_scan_ns, 10_000_000);
        assert_eq!(t.wait_target_ns, 500_000_000);
        assert_eq!(t.idle_wait_ns, 7_500_000_000);
        assert!(t.cgroup_weights && t.smt_enabled && !t.asym_capacity);
        // 16 CPUs: --shared-runq auto picks per-CPU queues
        assert!(t.no_shared_runq && !t.seed_runq);
        assert!(!t.group_accounting && !t.group_balancer);
        assert_eq!((t.nr_parts, t.cpu_part.len()), (0, 0));
        assert_eq!(t.debug_drop_comm, [0; COMM_LEN]);
    }

    /// Every `const volatile` global of the BPF sources: its name, whether
    /// it is an array, and its initialiser's value (None: none, so zero).
    fn bpf_globals() -> Vec<(String, bool, Option<u64>)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bpf");
        let mut globals = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in text.lines() {
                let Some(decl) = line.trim().strip_prefix("const volatile ") else {
                    continue;
                };
                let decl = decl.split(';').next().unwrap();
                let (lhs, init) = match decl.split_once('=') {
                    Some((l, r)) => (l, Some(r.trim())),
                    None => (decl, None),
                };
                // "<type> <name>" or "<type> <name>[<len>]"
                let name = lhs.split_whitespace().last().unwrap();
                let (name, array) = match name.split_once('[') {
                    Some((n, _)) => (n, true),
                    None => (name, false),
                };
                let value = init.map(|v| match v {
                    "true" => 1,
                    "false" => 0,
                    v => v
                        .parse::<u64>()
                        .unwrap_or_else(|e| panic!("{name} = {v}: {e}")),
                });
                globals.push((name.to_string(), array, value));
            }
        }
        globals
    }

    #[test]
    fn bpf_initialisers_are_the_rust_defaults_or_absent() {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 1, 1, false, 1);
        let one_cpu = Topology::from_root(dir.path()).unwrap();
        let t = LoadPlan::new(&Opts::parse_from(["scx_mosaic"]), one_cpu)
            .unwrap()
            .tunables;
        let named = t.by_name();
        let globals = bpf_globals();
        assert!(globals.len() >= named.len(), "{globals:?}");
        for (name, array, init) in &globals {
            let Some((_, rust)) = named.iter().find(|(n, _)| n == name) else {
                panic!("BPF global {name} is not a tunable: the loader never writes it");
            };
            if *array {
                assert_eq!(
                    *init, None,
                    "{name}: an array starts zero, the loader fills it"
                );
            } else {
                assert_eq!(
                    init.unwrap_or(0),
                    rust[0],
                    "{name}: its BPF initialiser differs from the Rust default"
                );
            }
        }
        assert_eq!(globals.len(), named.len(), "a tunable with no BPF global");
    }

    #[test]
    fn shard_tables_agree_with_the_layout() {
        let p = plan(&["--shard-size", "4"]).unwrap();
        let t = &p.tunables;
        assert_eq!(t.llc_first_shard, [0, 2]);
        assert_eq!(t.llc_nr_shards, [2, 2]);
        assert_eq!(t.shard_llc, [0, 0, 1, 1]);
        for (shard, cpus) in p.layout.shards.iter().enumerate() {
            for &cpu in cpus {
                assert_eq!(t.cpu_shard[cpu], shard as u32);
                assert_eq!(t.cpu_llc[cpu], t.shard_llc[shard]);
            }
        }
        assert_eq!(t.llc_node, [0, 0]);
    }

    #[test]
    fn flags_set_their_tunables() {
        let t = plan(&[
            "--no-cgroup-weights",
            "--no-l2-locality",
            "--slice-us=300",
            "--cpu-capacity=8-15:512",
            "--debug-drop-comm=a-very-long-command",
        ])
        .unwrap()
        .tunables;
        assert!(!t.cgroup_weights && t.no_l2_locality && t.asym_capacity);
        assert_eq!(t.slice_ns, 300_000);
        assert_eq!(t.cpu_capacity[7..9], [1024, 512]);
        assert_eq!(&t.debug_drop_comm, b"a-very-long-com\0");
    }

    #[test]
    fn group_balancer_partitions_reach_the_tunables() {
        let p = plan(&["--gb-parent=x", "--gb-partitions=0-3;4-15"]).unwrap();
        assert_eq!(p.group.as_ref().unwrap().partitions.len(), 2);
        let t = &p.tunables;
        assert!(t.group_accounting && t.group_balancer);
        assert_eq!(t.nr_parts, 2);
        assert_eq!((t.cpu_part[3], t.cpu_part[4]), (0, 1));
        let t = plan(&["--gb-parent=x", "--no-group-balancer"])
            .unwrap()
            .tunables;
        assert!(t.group_accounting && !t.group_balancer);
        assert_eq!(t.nr_parts, 2, "llc partitions by default");
        let err = plan(&["--gb-partitions=llc"]).unwrap_err().to_string();
        assert!(err.contains("need --gb-parent"), "{err}");
    }

    #[test]
    fn by_name_lists_every_global_once_with_its_elements() {
        let t = plan(&["--gb-parent=x"]).unwrap().tunables;
        let named = t.by_name();
        let mut names: Vec<_> = named.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), named.len());
        let get = |name| &named.iter().find(|(n, _)| *n == name).unwrap().1;
        assert_eq!(get("slice_ns"), &[20_000_000]);
        assert_eq!(get("cgroup_weights"), &[1]);
        assert_eq!(get("cpu_llc").len(), 16);
        assert_eq!(get("debug_drop_comm").len(), COMM_LEN);
    }

    #[test]
    fn the_plan_holds_the_ops_tables_settings_and_the_group_balancers() {
        let p = plan(&[]).unwrap();
        assert_eq!(p.ops_flags, ["SCX_OPS_ALLOW_QUEUED_WAKEUP"]);
        assert_eq!((p.timeout_ms, p.group), (0, None));
        let p = plan(&[
            "--timeout-ms=2000",
            "--gb-parent=work",
            "--gb-period-ms=250",
            "--no-group-balancer",
        ])
        .unwrap();
        assert_eq!(p.timeout_ms, 2000);
        let g = p.group.unwrap();
        assert_eq!(
            (g.parent.as_str(), g.period_ms, g.enabled),
            ("work", 250, false)
        );
        assert_eq!((g.partitions.len(), g.period_ns()), (2, 250_000_000));
    }

    #[test]
    fn machines_beyond_the_bpf_limits_are_refused() {
        let mut t = topo();
        t.nr_cpu_ids = bpf_intf::mosaic_limits_MAX_CPUS as usize + 1;
        let err = LoadPlan::new(&Opts::parse_from(["scx_mosaic"]), t).unwrap_err();
        assert!(err.to_string().contains("CPUs: more than the"), "{err}");
    }
}
