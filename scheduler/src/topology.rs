//! CPU topology from sysfs (SMT cores, L2 groups, LLCs, NUMA nodes,
//! capacity), and the shard layout of the shared runqueue built on it.
//!
//! Read from a sysfs root so that tests can hand in a fake tree.
//!
//! Why not scx_utils::Topology (1.1.4, read for this): it does read the
//! cache sharing lists (a core's `l2_id` comes from index2/shared_cpu_list,
//! as Mosaic's L2 groups do), but its sysfs root is one process-wide prefix
//! (an environment variable read once), where the tests here hand each call a
//! tree of their own; and mosaic-sim builds 8- to 384-CPU machines, some with
//! L2 clusters and mixed capacities, from data, which scx_utils' synthetic
//! topologies (uniform node/LLC/core/SMT counts, behind a test feature) cannot
//! express. What Mosaic takes from the scx conventions instead: capacities
//! from cpu_capacity, overridable with --cpu-capacity, and only online CPUs.

use crate::cpulist;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One online CPU.
#[derive(Debug, Clone, Serialize)]
pub struct Cpu {
    pub id: usize,
    /// Index into `Topology::cores`.
    pub core: usize,
    /// Index into `Topology::l2s`.
    pub l2: usize,
    /// Index into `Topology::llcs`.
    pub llc: usize,
    /// NUMA node id (0 on machines without NUMA).
    pub node: usize,
    /// Capacity in the kernel's scale (1024 = the biggest CPU).
    pub capacity: u32,
}

/// The machine as the scheduler sees it. Each group lists CPU ids.
#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    /// One more than the largest CPU id the scheduler covers (see
    /// nr_cpu_ids(): the possible CPUs, or those that can come online).
    pub nr_cpu_ids: usize,
    pub cpus: Vec<Cpu>,
    pub cores: Vec<Vec<usize>>,
    pub l2s: Vec<Vec<usize>>,
    pub llcs: Vec<Vec<usize>>,
    pub nodes: Vec<usize>,
    /// The machine is a virtual machine's guest (its vCPUs can be preempted
    /// by the host): see `running_as_guest()`.
    pub guest: bool,
}

/// At most this many shards per LLC by default (see default_shard_size).
pub const DEFAULT_SHARDS_PER_LLC: usize = 8;

/// How the shared runqueue splits each LLC.
#[derive(Debug, Clone, Serialize)]
pub struct ShardLayout {
    /// The shard size asked for, in CPUs.
    pub shard_size: usize,
    /// CPUs of each shard, shards of one LLC contiguous.
    pub shards: Vec<Vec<usize>>,
    /// First shard of each LLC.
    pub llc_first_shard: Vec<usize>,
    /// Number of shards of each LLC.
    pub llc_nr_shards: Vec<usize>,
}

/// Whether this machine runs as a virtual machine's guest: its CPUs carry the
/// `hypervisor` flag (@cpuinfo, x86) or the hypervisor shows in @sys (Xen).
pub fn running_as_guest(cpuinfo: &Path, sys: &Path) -> bool {
    let flagged = fs::read_to_string(cpuinfo).is_ok_and(|text| {
        text.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
    });
    flagged || read(&sys.join("hypervisor/type")).is_ok_and(|t| !t.is_empty())
}

/// Reads a sysfs file as a trimmed string.
fn read(path: &Path) -> Result<String> {
    Ok(fs::read_to_string(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .trim()
        .to_string())
}

/// Dense index of `key` in `groups`, adding it if new.
fn group_index(groups: &mut Vec<Vec<usize>>, key: Vec<usize>) -> usize {
    match groups.iter().position(|g| *g == key) {
        Some(i) => i,
        None => {
            groups.push(key);
            groups.len() - 1
        }
    }
}

/// The CPUs sharing @cpu's cache at @level (unified or data), if sysfs says.
fn cache_cpus(cpu_dir: &Path, level: u32) -> Result<Option<Vec<usize>>> {
    let cache = cpu_dir.join("cache");
    let Ok(entries) = fs::read_dir(&cache) else {
        return Ok(None);
    };
    let mut dirs: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    dirs.sort();
    for dir in dirs {
        if !dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("index"))
        {
            continue;
        }
        let Ok(lvl) = read(&dir.join("level")) else {
            continue;
        };
        let kind = read(&dir.join("type")).unwrap_or_default();
        if lvl == level.to_string() && kind != "Instruction" {
            return Ok(Some(cpulist::parse(&read(&dir.join("shared_cpu_list"))?)?));
        }
    }
    Ok(None)
}

/// The highest cache level sysfs lists for a CPU.
fn last_level(cpu_dir: &Path) -> u32 {
    (1..=4)
        .rev()
        .find(|&l| matches!(cache_cpus(cpu_dir, l), Ok(Some(_))))
        .unwrap_or(0)
}

/// The CPU ids the scheduler's tables cover (Topology::nr_cpu_ids): the
/// kernel's nr_cpu_ids (one more than the highest possible CPU) where the
/// BPF tables hold that many, for the BPF side compares a task's
/// nr_cpus_allowed with it; else one more than the highest CPU that can come
/// online (present, or online), however large a hotplug range a VM's
/// firmware advertises (possible). The kernel unloads the scheduler with a
/// restart request when a CPU comes online, and the topology is read again.
/// On such a machine a task allowed everywhere has more CPUs allowed than
/// this, so the BPF side's whole-machine shortcuts (`p->nr_cpus_allowed ==
/// nr_cpu_ids`) do not apply: wakeups take the affinity-checked paths and
/// the group balancer binds no task (safe, less placement, rather than no
/// load at all).
fn nr_cpu_ids(cpu_root: &Path, possible: &[usize], online: &[usize]) -> Result<usize> {
    let max = crate::bpf_intf::mosaic_limits_MAX_CPUS as usize;
    let kernel = possible.iter().chain(online).max().map_or(0, |m| m + 1);
    if kernel <= max {
        return Ok(kernel);
    }
    let present = match read(&cpu_root.join("present")) {
        Ok(s) => cpulist::parse(&s)?,
        Err(_) => possible.to_vec(),
    };
    let ids = present.iter().chain(online).max().map_or(0, |m| m + 1);
    if ids > max {
        bail!(
            "{ids} CPUs can come online (the highest present CPU is {}): more than the {max} \
             Mosaic supports",
            ids - 1
        );
    }
    Ok(ids)
}

impl Topology {
    /// Reads the topology of the running machine.
    pub fn from_sysfs() -> Result<Self> {
        let mut topo = Self::from_root(Path::new("/sys"))?;
        topo.guest = running_as_guest(Path::new("/proc/cpuinfo"), Path::new("/sys"));
        Ok(topo)
    }

    /// Reads the topology under a sysfs root.
    pub fn from_root(sys: &Path) -> Result<Self> {
        let cpu_root = sys.join("devices/system/cpu");
        let online = cpulist::parse(&read(&cpu_root.join("online"))?)?;
        let possible = match read(&cpu_root.join("possible")) {
            Ok(s) => cpulist::parse(&s)?,
            Err(_) => online.clone(),
        };
        if online.is_empty() {
            bail!("sysfs lists no online CPU");
        }
        let nr_cpu_ids = nr_cpu_ids(&cpu_root, &possible, &online)?;

        let mut node_of = BTreeMap::new();
        let mut nodes = Vec::new();
        if let Ok(entries) = fs::read_dir(sys.join("devices/system/node")) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                let Some(id) = name.strip_prefix("node").and_then(|n| n.parse().ok()) else {
                    continue;
                };
                for cpu in cpulist::parse(&read(&e.path().join("cpulist"))?)? {
                    node_of.insert(cpu, id);
                }
                nodes.push(id);
            }
        }
        nodes.sort_unstable();
        if nodes.is_empty() {
            nodes.push(0);
        }

        let llc_level = last_level(&cpu_root.join(format!("cpu{}", online[0])));
        let (mut cores, mut l2s, mut llcs) = (Vec::new(), Vec::new(), Vec::new());
        let mut cpus = Vec::new();
        for &id in &online {
            let dir = cpu_root.join(format!("cpu{id}"));
            let siblings = match read(&dir.join("topology/thread_siblings_list")) {
                Ok(s) => cpulist::parse(&s)?,
                Err(_) => vec![id],
            };
            let package = read(&dir.join("topology/physical_package_id")).unwrap_or_default();
            let llc_cpus = match cache_cpus(&dir, llc_level)? {
                Some(c) if llc_level >= 2 => c,
                _ => package_cpus(&cpu_root, &online, &package),
            };
            let l2_cpus = match cache_cpus(&dir, 2)? {
                Some(c) => c,
                None => siblings.clone(),
            };
            let capacity = match read(&dir.join("cpu_capacity")) {
                Ok(s) => s
                    .parse()
                    .with_context(|| format!("bad cpu_capacity {s:?} for CPU {id}"))?,
                Err(_) => 1024,
            };
            // Only online CPUs belong to the groups the scheduler uses.
            let keep = |v: Vec<usize>| v.into_iter().filter(|c| online.contains(c)).collect();
            cpus.push(Cpu {
                id,
                core: group_index(&mut cores, keep(siblings)),
                l2: group_index(&mut l2s, keep(l2_cpus)),
                llc: group_index(&mut llcs, keep(llc_cpus)),
                node: node_of.get(&id).copied().unwrap_or(0),
                capacity,
            });
        }
        Ok(Topology {
            nr_cpu_ids,
            cpus,
            cores,
            l2s,
            llcs,
            nodes,
            guest: false,
        })
    }

    /// Whether CPUs differ in capacity (big.LITTLE, hybrid, or --cpu-capacity).
    pub fn asymmetric(&self) -> bool {
        self.cpus
            .iter()
            .any(|c| c.capacity != self.cpus[0].capacity)
    }

    /// Overrides CPU capacities with "RANGE:CAP,..." (e.g. "0-3:1024,4-7:446"),
    /// for machines and VMs whose firmware reports none. CPUs not named keep
    /// theirs. Rejects malformed entries, capacities outside 1..=1024,
    /// CPUs named twice and CPUs that are not online; on error, changes none.
    pub fn set_capacities(&mut self, spec: &str) -> Result<()> {
        let mut caps: BTreeMap<usize, u32> = BTreeMap::new();
        for entry in spec.split(',') {
            let quoted = cpulist::quote(entry);
            let Some((range, cap)) = entry.split_once(':') else {
                bail!("bad --cpu-capacity entry {quoted}: expected CPUS:CAPACITY, e.g. 0-3:1024");
            };
            if range.trim().is_empty() {
                bail!("bad --cpu-capacity entry {quoted}: expected a CPU or a range before ':'");
            }
            let cpus = cpulist::parse(range)
                .with_context(|| format!("bad --cpu-capacity entry {quoted}"))?;
            let cap: u32 = match cap.trim().parse() {
                Ok(c) if (1..=1024).contains(&c) => c,
                _ => bail!("bad --cpu-capacity entry {quoted}: capacity must be 1 to 1024"),
            };
            for id in cpus {
                if self.cpu(id).is_none() {
                    bail!("bad --cpu-capacity: CPU {id} is not an online CPU");
                }
                if caps.insert(id, cap).is_some() {
                    bail!("bad --cpu-capacity: CPU {id} is given twice");
                }
            }
        }
        for c in &mut self.cpus {
            if let Some(&cap) = caps.get(&c.id) {
                c.capacity = cap;
            }
        }
        Ok(())
    }

    /// Whether some core runs several hardware threads.
    pub fn smt(&self) -> bool {
        self.cores.iter().any(|c| c.len() > 1)
    }

    /// The CPU with id @id, if online.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|c| c.id == id)
    }

    /// The shard size used when none is given: the CPUs that share an L2
    /// (one SMT core on most x86 parts, a 4-core module on some), at least 2
    /// and at most 8 - but large enough that no LLC has more than
    /// DEFAULT_SHARDS_PER_LLC shards. Queue operations between CPUs sharing
    /// an L2 are cheap (seed 001), and small shards contend least (seed 000);
    /// but a CPU out of work reads the head of every shard of its LLC, so the
    /// shard count bounds that walk: in the simulator, shards of 2 on a 48-CPU
    /// LLC (xeon-4s, hackbench) made a callback do 2.9x the work it does on 8
    /// CPUs, 8 shards of 6 1.7x (kfunc calls + loop iterations per callback,
    /// bpf_work; the seed's own v3 used shards of about 6 CPUs). The price, by
    /// the simulator's lock model (which charges no walk): request/response
    /// 4 % slower on xeon-4s and 23 % on skylake-18c (36 CPUs, one LLC) than
    /// with shards of 2 - the shard-lock contention the seed measured; pass
    /// --shard-size 2 for such a workload on such a machine.
    ///
    /// A VM's guest keeps the same default. One vCPU per shard there cut BPF
    /// ns/call by 10-23 % under TCG (remote-runqueue moves stall on a vCPU
    /// the host descheduled). It first broke cpu.weight (a 3:1 split ran
    /// 2.2:1, 2llc-smt): sibling shards were taken in walk order whatever
    /// their heads' ages (an idle cgroup took 2.6 % of a busy one's CPU on
    /// 1llc then; not re-measured since). Since they are taken oldest first
    /// when a head is more than a slice older (llc_scan()), the split holds
    /// (2.9-3.1:1), but 1llc hackbench ran slower than with shards of 2 in
    /// both boots tried (4.66 against 4.26 s; 6.47 against 5.26 s; TCG).
    pub fn default_shard_size(&self) -> usize {
        let mut sizes: Vec<usize> = self.l2s.iter().map(|l| l.len()).collect();
        sizes.sort_unstable();
        let l2 = sizes.get(sizes.len() / 2).copied().unwrap_or(1).clamp(2, 8);
        let widest = self.llcs.iter().map(Vec::len).max().unwrap_or(1);
        l2.max(widest.div_ceil(DEFAULT_SHARDS_PER_LLC))
    }

    /// Splits each LLC into shards of about @shard_size CPUs, never splitting
    /// an SMT core, with shard sizes within one core of each other.
    pub fn shard_layout(&self, shard_size: usize, max_per_llc: usize) -> ShardLayout {
        let mut layout = ShardLayout {
            shard_size,
            shards: Vec::new(),
            llc_first_shard: Vec::new(),
            llc_nr_shards: Vec::new(),
        };
        for llc in &self.llcs {
            // CPUs of the LLC, core by core, so that siblings are adjacent.
            let mut cores: Vec<&Vec<usize>> = self
                .cores
                .iter()
                .filter(|core| core.iter().any(|c| llc.contains(c)))
                .collect();
            cores.sort_by_key(|core| core[0]);
            let n = llc.len().div_ceil(shard_size.max(1)).clamp(1, max_per_llc);
            let mut shards: Vec<Vec<usize>> = vec![Vec::new(); n];
            let mut before = 0;
            for core in cores {
                // a core goes to the shard its first CPU's rank falls in
                let shard = before * n / llc.len();
                for &cpu in core.iter().filter(|c| llc.contains(c)) {
                    shards[shard].push(cpu);
                    before += 1;
                }
            }
            // cores larger than the shard size can leave a shard empty
            shards.retain(|s| !s.is_empty());
            let first = layout.shards.len();
            let kept = shards.len();
            layout.shards.extend(shards);
            layout.llc_first_shard.push(first);
            layout.llc_nr_shards.push(kept);
        }
        layout
    }
}

/// CPUs of one physical package, for machines whose sysfs lists no caches.
fn package_cpus(cpu_root: &Path, online: &[usize], package: &str) -> Vec<usize> {
    online
        .iter()
        .copied()
        .filter(|c| {
            read(&cpu_root.join(format!("cpu{c}/topology/physical_package_id"))).unwrap_or_default()
                == package
        })
        .collect()
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::OnceLock;

    #[test]
    fn a_guest_is_known_by_the_hypervisor_cpu_flag_or_sysfs() {
        let dir = tempfile::tempdir().unwrap();
        let (info, sys) = (dir.path().join("cpuinfo"), dir.path().join("sys"));
        std::fs::create_dir_all(sys.join("hypervisor")).unwrap();
        let flags = |f: &str| format!("processor\t: 0\nflags\t\t: fpu {f} sse2\n\n");
        std::fs::write(&info, flags("vme")).unwrap();
        assert!(!running_as_guest(&info, &sys));
        // a flag whose name only contains the word is not it
        std::fs::write(&info, flags("hypervisor_x")).unwrap();
        assert!(!running_as_guest(&info, &sys));
        std::fs::write(&info, flags("hypervisor")).unwrap();
        assert!(running_as_guest(&info, &sys));
        std::fs::write(&info, flags("vme")).unwrap();
        std::fs::write(sys.join("hypervisor/type"), "xen\n").unwrap();
        assert!(running_as_guest(&info, &sys));
        assert!(running_as_guest(&dir.path().join("none"), &sys));
        assert!(!running_as_guest(&info, &dir.path().join("none")));
    }

    /// Writes a fake sysfs tree: @llcs CPU ranges sharing an L3, SMT pairs
    /// when @smt, and optional NUMA nodes.
    pub fn fake_sysfs(dir: &Path, nr: usize, llc_size: usize, smt: bool, nodes: usize) {
        let cpu_root = dir.join("devices/system/cpu");
        let w = |p: PathBuf, s: String| {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, s + "\n").unwrap();
        };
        w(cpu_root.join("online"), format!("0-{}", nr - 1));
        w(cpu_root.join("possible"), format!("0-{}", nr - 1));
        for c in 0..nr {
            let d = cpu_root.join(format!("cpu{c}"));
            let core = if smt { c & !1 } else { c };
            let sib = if smt {
                format!("{}-{}", core, core + 1)
            } else {
                c.to_string()
            };
            w(d.join("topology/thread_siblings_list"), sib.clone());
            w(d.join("topology/physical_package_id"), "0".into());
            let l3 = c / llc_size * llc_size;
            for (idx, lvl, kind, shared) in [
                (0, 1, "Data", sib.clone()),
                (1, 1, "Instruction", sib.clone()),
                (2, 2, "Unified", sib.clone()),
                (3, 3, "Unified", format!("{}-{}", l3, l3 + llc_size - 1)),
            ] {
                let ci = d.join(format!("cache/index{idx}"));
                w(ci.join("level"), lvl.to_string());
                w(ci.join("type"), kind.into());
                w(ci.join("shared_cpu_list"), shared);
            }
        }
        for n in 0..nodes {
            let per = nr / nodes;
            w(
                dir.join(format!("devices/system/node/node{n}/cpulist")),
                format!("{}-{}", n * per, n * per + per - 1),
            );
        }
    }

    fn topo(nr: usize, llc: usize, smt: bool, nodes: usize) -> Topology {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), nr, llc, smt, nodes);
        Topology::from_root(dir.path()).unwrap()
    }

    #[test]
    fn a_large_hotplug_range_is_no_reason_to_refuse() {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 8, 4, true, 1);
        let cpu_root = dir.path().join("devices/system/cpu");
        // a VM's firmware allows 4096 vCPUs, 8 are there
        fs::write(cpu_root.join("possible"), "0-4095\n").unwrap();
        fs::write(cpu_root.join("present"), "0-7\n").unwrap();
        let t = Topology::from_root(dir.path()).unwrap();
        assert_eq!((t.nr_cpu_ids, t.cpus.len()), (8, 8));
        // present but offline CPUs count: they can come online
        fs::write(cpu_root.join("present"), "0-11\n").unwrap();
        assert_eq!(Topology::from_root(dir.path()).unwrap().nr_cpu_ids, 12);
        // where the tables hold every possible CPU, the kernel's nr_cpu_ids
        fs::write(cpu_root.join("possible"), "0-15\n").unwrap();
        assert_eq!(Topology::from_root(dir.path()).unwrap().nr_cpu_ids, 16);
        // more present CPUs than the tables hold: one line with both numbers
        fs::write(cpu_root.join("possible"), "0-4095\n").unwrap();
        fs::write(cpu_root.join("present"), "0-599\n").unwrap();
        let err = format!("{:#}", Topology::from_root(dir.path()).unwrap_err());
        assert_eq!(
            err,
            "600 CPUs can come online (the highest present CPU is 599): more than the 512 \
             Mosaic supports"
        );
    }

    #[test]
    fn reads_llcs_cores_and_nodes() {
        let t = topo(8, 4, true, 2);
        assert_eq!(t.nr_cpu_ids, 8);
        assert_eq!(t.llcs, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        assert_eq!(t.cores.len(), 4);
        assert!(t.smt());
        assert_eq!(t.nodes, vec![0, 1]);
        assert_eq!(t.cpu(5).unwrap().node, 1);
        assert_eq!(t.cpu(5).unwrap().llc, 1);
        assert_eq!(t.cpu(5).unwrap().capacity, 1024);
    }

    #[test]
    fn shards_split_llcs_without_splitting_cores() {
        let t = topo(16, 8, true, 1);
        let l = t.shard_layout(4, 64);
        assert_eq!(l.llc_nr_shards, vec![2, 2]);
        assert_eq!(l.llc_first_shard, vec![0, 2]);
        assert_eq!(l.shards[0], vec![0, 1, 2, 3]);
        assert_eq!(l.shards[3], vec![12, 13, 14, 15]);
        // a shard size smaller than a core still keeps siblings together
        let l = t.shard_layout(1, 64);
        assert_eq!(l.llc_nr_shards, vec![4, 4]);
        assert!(l
            .shards
            .iter()
            .all(|s| s.len() == 2 && s[0] / 2 == s[1] / 2));
        // every CPU is in exactly one shard
        let mut all: Vec<usize> = l.shards.concat();
        all.sort_unstable();
        assert_eq!(all, (0..16).collect::<Vec<_>>());
    }

    #[test]
    fn default_shard_is_an_l2_group_of_2_to_8_cpus_at_most_8_per_llc() {
        assert_eq!(topo(8, 4, true, 1).default_shard_size(), 2);
        assert_eq!(topo(4, 4, false, 1).default_shard_size(), 2);
        let mut t = topo(16, 16, false, 1);
        t.l2s = (0..4).map(|i| (i * 4..i * 4 + 4).collect()).collect();
        assert_eq!(t.default_shard_size(), 4);
        t.l2s = vec![(0..16).collect()];
        assert_eq!(t.default_shard_size(), 8);
        // 48 CPUs of one LLC in SMT pairs: shards of 6, not 24 shards of 2
        let wide = topo(96, 48, true, 1);
        assert_eq!(wide.default_shard_size(), 6);
        assert_eq!(wide.shard_layout(6, 64).llc_nr_shards, vec![8, 8]);
    }

    #[test]
    fn shard_count_is_capped_and_uneven_llcs_balance() {
        let t = topo(6, 6, false, 1);
        let l = t.shard_layout(4, 64);
        assert_eq!(l.llc_nr_shards, vec![2]);
        assert_eq!(l.shards, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        let l = t.shard_layout(1, 4);
        assert_eq!(l.llc_nr_shards, vec![4]);
    }

    #[test]
    fn capacity_overrides_make_a_machine_asymmetric() {
        let mut t = topo(8, 4, true, 1);
        assert!(!t.asymmetric());
        t.set_capacities("0-3:1024,4-7:446").unwrap();
        assert!(t.asymmetric());
        assert_eq!(t.cpu(5).unwrap().capacity, 446);
        assert_eq!(t.cpu(0).unwrap().capacity, 1024);
        t.set_capacities("6:512").unwrap();
        assert_eq!(t.cpu(6).unwrap().capacity, 512);
        assert_eq!(t.cpu(7).unwrap().capacity, 446);
    }

    #[test]
    fn bad_capacity_overrides_are_refused() {
        let mut t = topo(8, 4, true, 1);
        for (bad, why) in [
            ("0-3", "expected CPUS:CAPACITY"),
            ("0-3:0", "1 to 1024"),
            ("0-3:2048", "1 to 1024"),
            ("0-3:big", "1 to 1024"),
            ("0-3:1024,3:446", "given twice"),
            ("8:100", "not an online CPU"),
            ("3-1:100", "runs backwards"),
            (":100", "a CPU or a range"),
            ("x:100", "bad --cpu-capacity entry \"x:100\": bad CPU list"),
            ("", "expected CPUS:CAPACITY"),
            ("0-3:1024,", "expected CPUS:CAPACITY"),
            ("0,1:5", "expected CPUS:CAPACITY"),
        ] {
            let err = format!("{:#}", t.set_capacities(bad).unwrap_err());
            assert!(err.contains(why), "{bad}: {err}");
        }
        // a refused spec changes nothing, not even its valid entries
        t.set_capacities("0-3:100,9:5").unwrap_err();
        assert!(!t.asymmetric());
    }

    #[test]
    fn missing_online_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Topology::from_root(dir.path()).unwrap_err().to_string();
        assert!(err.contains("cannot read"), "{err}");
    }

    /// A fake machine of 8 CPUs (4 per LLC, SMT pairs), read from a fake sysfs
    /// once: the property tests clone it for each case.
    fn shared_topo() -> Topology {
        static TOPO: OnceLock<Topology> = OnceLock::new();
        TOPO.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            fake_sysfs(dir.path(), 8, 4, true, 1);
            Topology::from_root(dir.path()).unwrap()
        })
        .clone()
    }

    proptest! {
        #[test]
        fn capacity_specs_never_panic_and_errors_are_one_line(
            spec in "\\PC{0,30}|[0-9:, -]{0,24}"
        ) {
            let mut t = shared_topo();
            if let Err(e) = t.set_capacities(&spec) {
                let msg = format!("{e:#}");
                prop_assert!(msg.starts_with("bad --cpu-capacity"), "{msg}");
                prop_assert!(!msg.contains('\n'), "{msg:?}");
                prop_assert!(t.cpus.iter().all(|c| c.capacity == 1024), "changed on error");
            }
        }

        /// Capacities given per CPU, grouped into CPU lists: applied as given.
        #[test]
        fn capacity_lists_round_trip(
            caps in prop::collection::vec(prop::option::of(prop_oneof![1u32..=1024, Just(446)]), 8),
        ) {
            let mut by_cap: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (cpu, cap) in caps.iter().enumerate() {
                if let Some(cap) = cap {
                    by_cap.entry(*cap).or_default().push(cpu);
                }
            }
            prop_assume!(!by_cap.is_empty());
            // a CPU list with gaps ("0,2") is one entry per range ("0:5,2:5")
            let spec: Vec<String> = by_cap
                .iter()
                .flat_map(|(cap, cpus)| {
                    let list = cpulist::format(cpus);
                    list.split(',').map(|r| format!("{r}:{cap}")).collect::<Vec<_>>()
                })
                .collect();
            let mut t = shared_topo();
            t.set_capacities(&spec.join(",")).unwrap();
            for (cpu, cap) in caps.iter().enumerate() {
                prop_assert_eq!(t.cpu(cpu).unwrap().capacity, cap.unwrap_or(1024));
            }
        }
    }
}
