//! The scheduler's "loader" for the simulator: --sched-arg flags to the
//! tunables, written into the native scheduler's `const volatile` globals
//! before ops.init, as scheduler/src/main.rs (Scheduler::init) writes them
//! into .rodata before load.
//!
//! Shared with the loader, not duplicated: the topology, the default shard
//! size and the shard layout (scheduler/src/topology.rs, compiled into this
//! crate). Mirrored from Scheduler::init (keep in step when it changes): the
//! list of tunable assignments in `write_tunables`, and the ops flags the
//! loader adds at open time (`LOADER_OPS_FLAGS`). Boolean `--no-X` flags map
//! to a tunable `no_X` generically, so new on/off switches need no change.
//! The group balancer's flags (--gb-parent, --gb-partitions, --gb-period-ms,
//! --no-group-balancer) configure the simulated balancer (group.rs); in the
//! simulator --gb-parent's value is not a path: every cgroup of the workload
//! other than the root is balanced.
use crate::ffi;
use crate::group::{self, GbConfig};
use crate::intf;
use crate::machine::Machine;
use crate::topology::ShardLayout;
use anyhow::{bail, Context, Result};
use std::ffi::{c_void, CString};

#[derive(Debug, Clone, Default)]
pub struct SchedArgs {
    pub shard_size: Option<usize>,
    pub slice_us: u64,
    /// `no_X` tunables to set, from `--no-X`.
    pub switches: Vec<String>,
    pub cpu_capacity: Option<String>,
    pub overload_scan_us: u64,
    pub gb_parent: Option<String>,
    pub gb_partitions: Option<String>,
    pub gb_period_ms: u64,
    pub no_group_balancer: bool,
}

/// What loading produced: the shard layout, the ops flags the loader adds,
/// and the group balancer's configuration (with --gb-parent).
pub struct Loaded {
    pub layout: ShardLayout,
    pub ops_flags: u64,
    pub gb: Option<GbConfig>,
}

/// Scheduler::init ORs SCX_OPS_ALLOW_QUEUED_WAKEUP into the ops flags when
/// the kernel knows it (all kernels the simulator models do).
pub const LOADER_OPS_FLAGS: u64 = ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP;

impl SchedArgs {
    pub fn parse(args: &[String]) -> Result<SchedArgs> {
        let mut a = SchedArgs {
            slice_us: 5000,
            overload_scan_us: 10_000,
            gb_period_ms: 200,
            ..Default::default()
        };
        let mut it = args.iter().flat_map(|s| {
            // "--shard-size=2" and "--shard-size 2" both work
            match s.split_once('=') {
                Some((k, v)) if k.starts_with("--") => vec![k.to_string(), v.to_string()],
                _ => s.split_whitespace().map(String::from).collect(),
            }
        });
        while let Some(flag) = it.next() {
            let mut value = |f: &str| it.next().with_context(|| format!("{f} needs a value"));
            match flag.as_str() {
                "--shard-size" => a.shard_size = Some(value("--shard-size")?.parse()?),
                "--slice-us" => a.slice_us = value("--slice-us")?.parse()?,
                "--cpu-capacity" => a.cpu_capacity = Some(value("--cpu-capacity")?),
                "--overload-scan-us" => {
                    a.overload_scan_us = value("--overload-scan-us")?.parse()?;
                    if !(100..=10_000_000).contains(&a.overload_scan_us) {
                        bail!("--overload-scan-us must be 100..=10000000");
                    }
                }
                "--gb-parent" => a.gb_parent = Some(value("--gb-parent")?),
                "--gb-partitions" => a.gb_partitions = Some(value("--gb-partitions")?),
                "--gb-period-ms" => {
                    a.gb_period_ms = value("--gb-period-ms")?.parse()?;
                    if !(10..=60_000).contains(&a.gb_period_ms) {
                        bail!("--gb-period-ms must be 10..=60000");
                    }
                }
                "--no-group-balancer" => a.no_group_balancer = true,
                f if f.starts_with("--no-") => a.switches.push(f[2..].replace('-', "_")),
                f => bail!("unknown scheduler flag {f:?}"),
            }
        }
        Ok(a)
    }
}

/// Address and sizes of the tunable @name, made writable.
fn tunable(name: &str) -> Result<(*mut u8, usize, usize)> {
    let c = CString::new(name).unwrap();
    let (mut addr, mut size, mut elem) = (std::ptr::null_mut::<c_void>(), 0usize, 0usize);
    if unsafe { ffi::sim_tunable_find(c.as_ptr(), &mut addr, &mut size, &mut elem) } == 0 {
        bail!("the scheduler has no tunable {name:?}");
    }
    // const volatile globals live in .rodata: unprotect their pages, as
    // libbpf writes .rodata before load
    let page = 4096usize;
    let start = addr as usize & !(page - 1);
    let end = (addr as usize + size).div_ceil(page) * page;
    let rc = unsafe {
        libc::mprotect(
            start as *mut c_void,
            end - start,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    if rc != 0 {
        bail!("cannot make tunable {name} writable");
    }
    Ok((addr as *mut u8, size, elem))
}

/// Writes element @idx of tunable @name (an integer or bool of any width).
pub fn set(name: &str, idx: usize, value: u64) -> Result<()> {
    let (addr, size, elem) = tunable(name)?;
    if (idx + 1) * elem > size {
        bail!("tunable {name}[{idx}] out of range");
    }
    let bytes = value.to_ne_bytes();
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr.add(idx * elem), elem.min(8)) };
    Ok(())
}

/// Whether the scheduler has tunable @name.
pub fn has(name: &str) -> bool {
    let c = CString::new(name).unwrap();
    let (mut a, mut s, mut e) = (std::ptr::null_mut::<c_void>(), 0usize, 0usize);
    unsafe { ffi::sim_tunable_find(c.as_ptr(), &mut a, &mut s, &mut e) != 0 }
}

/// The loader's work: capacities, shard layout, tunables.
pub fn write_tunables(m: &mut Machine, args: &SchedArgs) -> Result<Loaded> {
    if let Some(spec) = &args.cpu_capacity {
        m.topo.set_capacities(spec)?;
    }
    let topo = &m.topo;
    if topo.nr_cpu_ids > intf::MAX_CPUS || topo.llcs.len() > intf::MAX_LLCS {
        bail!("machine exceeds the scheduler's MAX_CPUS/MAX_LLCS");
    }
    if args.gb_parent.is_none() && (args.gb_partitions.is_some() || args.no_group_balancer) {
        bail!("--gb-partitions and --no-group-balancer need --gb-parent");
    }
    let gb = match &args.gb_parent {
        Some(_) => Some(GbConfig {
            partitions: group::parse_partitions(
                args.gb_partitions.as_deref().unwrap_or("llc"),
                topo,
            )?,
            period_ns: args.gb_period_ms * 1_000_000,
            enabled: !args.no_group_balancer,
        }),
        None => None,
    };
    let shard_size = args.shard_size.unwrap_or_else(|| topo.default_shard_size());
    let layout = topo.shard_layout(shard_size, intf::MAX_SHARDS_PER_LLC);
    if layout.shards.len() > intf::MAX_SHARDS {
        bail!("{} shards: more than MAX_SHARDS", layout.shards.len());
    }
    // --- mirrored from scheduler/src/main.rs Scheduler::init ---
    set("nr_cpu_ids", 0, topo.nr_cpu_ids as u64)?;
    set("nr_llcs", 0, topo.llcs.len() as u64)?;
    set("nr_shards", 0, layout.shards.len() as u64)?;
    set("slice_ns", 0, args.slice_us * 1000)?;
    set("smt_enabled", 0, topo.smt() as u64)?;
    set("asym_capacity", 0, topo.asymmetric() as u64)?;
    // no_shared_runq, no_l2_locality, no_prev_first, no_overload_gate: the
    // generic --no-X switches below
    set("overload_scan_ns", 0, args.overload_scan_us * 1000)?;
    for (llc, cpus) in topo.llcs.iter().enumerate() {
        set(
            "llc_node",
            llc,
            topo.cpu(cpus[0]).map_or(0, |c| c.node as u64),
        )?;
    }
    if let Some(gb) = &gb {
        set("group_accounting", 0, 1)?;
        set("group_balancer", 0, gb.enabled as u64)?;
        set("nr_parts", 0, gb.partitions.len() as u64)?;
        for (cpu, part) in gb.cpu_parts(topo.nr_cpu_ids).into_iter().enumerate() {
            set("cpu_part", cpu, part as u32 as u64)?;
        }
    }
    set("nr_l2s", 0, topo.l2s.len() as u64)?;
    for cpu in &topo.cpus {
        set("cpu_llc", cpu.id, cpu.llc as u64)?;
        set("cpu_l2", cpu.id, cpu.l2 as u64)?;
        set("cpu_capacity", cpu.id, cpu.capacity as u64)?;
    }
    for (shard, cpus) in layout.shards.iter().enumerate() {
        for &cpu in cpus {
            set("cpu_shard", cpu, shard as u64)?;
        }
    }
    for (llc, (&first, &n)) in layout
        .llc_first_shard
        .iter()
        .zip(&layout.llc_nr_shards)
        .enumerate()
    {
        set("llc_first_shard", llc, first as u64)?;
        set("llc_nr_shards", llc, n as u64)?;
        for shard in first..first + n {
            set("shard_llc", shard, llc as u64)?;
        }
    }
    // --- end of mirror ---
    for s in &args.switches {
        if !has(s) {
            bail!(
                "unknown scheduler flag --{} (no tunable {s})",
                s.replace('_', "-")
            );
        }
        set(s, 0, 1)?;
    }
    Ok(Loaded {
        layout,
        ops_flags: LOADER_OPS_FLAGS,
        gb,
    })
}
