//! The group balancer (seed 004), userspace half: settles each cgroup under
//! --gb-parent into the CPU partition with the least predicted load, one
//! cgroup at a time, from the runtime BPF accounts per cgroup and partition
//! (group.bpf.c), and writes cgroup id -> partition for BPF's soft binding.
//!
//! The policy (the seed's try_to_settle() and its per-period state) is
//! `policy`, shared with the simulator; this file is its I/O: the options,
//! the cgroup scan, the BPF map reads and writes, and the reports.

pub mod policy;

use crate::bpf_intf;
use crate::bpf_skel::BpfSkel;
use crate::stats::{CpuIds, Flag, GroupBalancerMetrics, GroupMetrics, MaybeIndex};
use crate::topology::Topology;
use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use policy::Policy;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// At most this many partitions (intf.h), for policy::parse_partitions.
const MAX_PARTS: usize = bpf_intf::mosaic_limits_MAX_PARTS as usize;

/// What the user asked of the group balancer, validated.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// The cgroup whose descendants are balanced (not itself).
    pub parent: PathBuf,
    /// CPUs of each partition.
    pub partitions: Vec<Vec<usize>>,
    /// How often userspace looks and may settle one group.
    pub period: Duration,
    /// False with --no-group-balancer: account, but never settle or bind.
    pub enabled: bool,
    /// Print each settle and move (with --stats: beside the live lines; a
    /// service without them stays quiet).
    pub log_moves: bool,
}

impl GroupConfig {
    /// Checks the cgroup @parent; @partitions come parsed and checked
    /// (tunables::LoadPlan). Nothing is loaded yet.
    pub fn new(
        parent: &str,
        partitions: Vec<Vec<usize>>,
        period_ms: u64,
        enabled: bool,
        log_moves: bool,
    ) -> Result<Self> {
        Ok(GroupConfig {
            parent: cgroup_dir(parent)?,
            partitions,
            period: Duration::from_millis(period_ms),
            enabled,
            log_moves,
        })
    }
}

/// Resolves and checks a cgroup v2 directory (absolute, or under /sys/fs/cgroup).
fn cgroup_dir(path: &str) -> Result<PathBuf> {
    let p = Path::new(path);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(CGROUP_ROOT).join(p)
    };
    if !full.join("cgroup.procs").is_file() {
        bail!(
            "--gb-parent {path:?}: {} is not a cgroup directory",
            full.display()
        );
    }
    let c = std::ffi::CString::new(full.as_os_str().as_encoded_bytes())?;
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut fs) } != 0 || fs.f_type as i64 != CGROUP2_SUPER_MAGIC
    {
        bail!(
            "--gb-parent {path:?}: {} is not on a cgroup v2 file system",
            full.display()
        );
    }
    Ok(full)
}

/// Descendant cgroups of @parent (not @parent itself): id -> path below it.
pub fn scan_cgroups(parent: &Path) -> BTreeMap<u64, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![parent.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_dir() {
                continue;
            }
            let path = e.path();
            let rel = path
                .strip_prefix(parent)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            found.insert(meta.ino(), rel);
            stack.push(path);
        }
    }
    found
}

/// The balancer: the policy's state across periods, and its I/O.
pub struct Balancer {
    cfg: GroupConfig,
    policy: Policy,
    /// Path below the parent of each tracked cgroup, as first seen.
    paths: BTreeMap<u64, String>,
    /// The policy's time 0.
    start: Instant,
    next_tick: Instant,
}

/// Sums a per-CPU map value made of u64s, element-wise.
fn sum_percpu_u64s(per_cpu: &[Vec<u8>], n: usize) -> Vec<u64> {
    let mut out = vec![0u64; n];
    for v in per_cpu {
        for (i, chunk) in v.chunks_exact(8).take(n).enumerate() {
            out[i] += u64::from_ne_bytes(chunk.try_into().unwrap());
        }
    }
    out
}

impl Balancer {
    pub fn new(cfg: GroupConfig, topo: &Topology) -> Self {
        let cap = policy::capacities(&cfg.partitions, topo);
        let policy = Policy::new(cap, cfg.period.as_nanos() as u64, cfg.enabled);
        let now = Instant::now();
        Balancer {
            cfg,
            policy,
            paths: BTreeMap::new(),
            start: now,
            next_tick: now,
        }
    }

    /// Writes @cgid's partition (-1: registered, unsettled) for BPF.
    fn write_pref(skel: &BpfSkel, cgid: u64, part: Option<usize>) -> Result<()> {
        skel.maps
            .group_prefs
            .update(
                &cgid.to_ne_bytes(),
                &policy::pref_value(part),
                MapFlags::ANY,
            )
            .context("writing a group's partition")
    }

    /// One period, if due: track cgroups, read loads, maybe settle one group.
    pub fn tick(&mut self, skel: &BpfSkel) -> Result<()> {
        let now = Instant::now();
        if now < self.next_tick {
            return Ok(());
        }
        self.next_tick = now + self.cfg.period;
        let now_ns = now.duration_since(self.start).as_nanos() as u64;
        let n = self.cfg.partitions.len();

        // cgroups come and go at any time
        let mut found = scan_cgroups(&self.cfg.parent);
        let live: BTreeSet<u64> = found.keys().copied().collect();
        let (added, gone) = self.policy.sync(&live, now_ns);
        for id in gone {
            self.paths.remove(&id);
            let _ = skel.maps.group_prefs.delete(&id.to_ne_bytes());
            let _ = skel.maps.group_runtime.delete(&id.to_ne_bytes());
        }
        for id in added {
            Self::write_pref(skel, id, None)?;
            self.paths.insert(id, found.remove(&id).unwrap_or_default());
        }

        // the seed settles a group only where its effective cpuset reaches
        for (&id, path) in &self.paths {
            let allowed = self.allowed_partitions(path);
            self.policy.set_allowed(id, allowed);
        }

        let part = (0..n)
            .map(|p| crate::stats::sum_percpu(&skel.maps.part_demand, p as u32))
            .collect::<Result<Vec<u64>>>()?;
        let mut groups = BTreeMap::new();
        for &id in self.policy.groups().keys() {
            let per_cpu = skel
                .maps
                .group_runtime
                .lookup_percpu(&id.to_ne_bytes(), MapFlags::ANY)?
                .unwrap_or_default();
            // struct group_runtime: ns[MAX_PARTS], then demand_ns[MAX_PARTS]
            let words = sum_percpu_u64s(&per_cpu, 2 * MAX_PARTS);
            let mut totals = words[..n].to_vec();
            totals.extend_from_slice(&words[MAX_PARTS..MAX_PARTS + n]);
            groups.insert(id, totals);
        }
        for (id, p) in self.policy.tick(now_ns, &part, &groups) {
            Self::write_pref(skel, id, Some(p))?;
            if !self.cfg.log_moves {
                continue;
            }
            // a move is a decision a user may question: one line each, with
            // the loads it was decided on
            let g = &self.policy.groups()[&id];
            let verb = if g.settles().1 > 0 {
                "moved to"
            } else {
                "settled in"
            };
            eprintln!(
                "scx_mosaic: group {} {verb} {}",
                self.path(id),
                g.last_move()
            );
        }
        Ok(())
    }

    /// Per partition, whether the effective cpuset of the cgroup at @path
    /// (relative to the parent) shares a CPU with it; all true when the
    /// cgroup has no cpuset controller (no cpuset.cpus.effective) or the
    /// file cannot be read or parsed.
    fn allowed_partitions(&self, path: &str) -> Vec<bool> {
        let file = self.cfg.parent.join(path).join("cpuset.cpus.effective");
        let cpus = std::fs::read_to_string(file)
            .ok()
            .and_then(|text| crate::cpulist::parse(&text).ok());
        self.cfg
            .partitions
            .iter()
            .map(|part| {
                cpus.as_ref()
                    .is_none_or(|c| part.iter().any(|p| c.contains(p)))
            })
            .collect()
    }

    fn path(&self, id: u64) -> &str {
        self.paths.get(&id).map_or("", |p| p.as_str())
    }

    /// The groups and partitions, for the report (scx_stats, --stats-file).
    pub fn metrics(&self) -> GroupBalancerMetrics {
        let groups = self
            .policy
            .groups()
            .iter()
            .map(|(&id, g)| {
                let (settles, resettles) = g.settles();
                GroupMetrics {
                    path: self.path(id).into(),
                    cgroup_id: id,
                    partition: MaybeIndex(g.pref()),
                    settles: settles.into(),
                    resettles: resettles.into(),
                    exclusivity: g.exclusivity(),
                    runtime_ns: g.total().iter().sum(),
                    runtime_ns_per_partition: g.total().to_vec(),
                    last_move: g.last_move().into(),
                }
            })
            .collect();
        GroupBalancerMetrics {
            enabled: Flag(self.cfg.enabled),
            parent: self.cfg.parent.to_string_lossy().into_owned(),
            partitions: self.cfg.partitions.iter().cloned().map(CpuIds).collect(),
            period_ms: self.cfg.period.as_millis() as u64,
            groups,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The policy's tests are next to its parts (group/policy/).
    use super::*;
    use policy::tests::topo;

    #[test]
    fn the_report_names_each_group_and_its_runtime() {
        let t = topo();
        let cfg = GroupConfig {
            parent: "/sys/fs/cgroup/gb".into(),
            partitions: t.llcs.clone(),
            period: Duration::from_millis(100),
            enabled: true,
            log_moves: false,
        };
        let mut b = Balancer::new(cfg, &t);
        assert_eq!(b.metrics().groups, []);
        // what tick() does with a scan that found a/b, and its runtime
        assert_eq!(b.policy.sync(&BTreeSet::from([42]), 0).0, [42]);
        b.paths.insert(42, "a/b".into());
        let runtime = BTreeMap::from([(42, vec![150, 50])]);
        assert_eq!(b.policy.tick(50_000_000, &[150, 50], &runtime), []);
        let runtime = BTreeMap::from([(42, vec![300, 100])]);
        assert_eq!(b.policy.tick(100_000_000, &[300, 100], &runtime), [(42, 0)]);
        let settled = &b.metrics().groups[0];
        assert_eq!((settled.partition.0, settled.exclusivity), (Some(0), 0.75));
        let json = serde_json::to_value(b.metrics()).unwrap();
        let m: GroupBalancerMetrics = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(m, b.metrics());
        let g = &json["groups"][0];
        assert_eq!((&g["path"], &g["cgroup_id"]), (&"a/b".into(), &42.into()));
        assert_eq!(
            (&g["partition"], &g["runtime_ns"]),
            (&0.into(), &400.into())
        );
        // the policy's own report (the simulator's) says the same of it
        let policy = b.policy.groups()[&42].to_json(42);
        for key in [
            "cgroup_id",
            "partition",
            "settles",
            "resettles",
            "exclusivity",
            "last_move",
        ] {
            assert_eq!(g[key], policy[key], "{key}");
        }
        assert_eq!(
            g["runtime_ns_per_partition"],
            policy["runtime_ns_per_partition"]
        );
    }

    #[test]
    fn non_cgroup_parents_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = cgroup_dir(dir.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a cgroup directory"), "{err}");
        std::fs::write(dir.path().join("cgroup.procs"), "").unwrap();
        let err = cgroup_dir(dir.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not on a cgroup v2"), "{err}");
    }
}
