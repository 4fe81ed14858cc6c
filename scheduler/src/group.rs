//! The group balancer (seed 004), userspace half: settles each cgroup under
//! --gb-parent into the CPU partition with the least predicted load, one
//! cgroup at a time, from the runtime BPF accounts per cgroup and partition
//! (group.bpf.c), and writes cgroup id -> partition for BPF's soft binding.
//!
//! The algorithm is the seed's try_to_settle(): a group's load is excluded
//! from the partitions it already runs in; partitions other than the group's
//! current one carry the load predicted by recent settles (decaying by half
//! every second, gone after ten); a settled group moves again only if that
//! does not worsen the load/capacity imbalance between the two partitions;
//! and a group's settle period doubles after each attempt (up to 10 s) so
//! that settled groups yield to the others.

use crate::bpf_intf;
use crate::bpf_skel::BpfSkel;
use crate::cpulist;
use crate::topology::Topology;
use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// The longest a settled group waits between two settle attempts.
const SETTLE_PERIOD_MAX: Duration = Duration::from_secs(10);
/// Predicted load halves every this long (the seed's DECAY_PERIOD, HZ).
const PREDICT_HALF_LIFE: Duration = Duration::from_secs(1);

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
}

impl GroupConfig {
    /// Validates the options against the machine; nothing is loaded yet.
    pub fn new(
        parent: &str,
        partitions: &str,
        period_ms: u64,
        enabled: bool,
        topo: &Topology,
    ) -> Result<Self> {
        Ok(GroupConfig {
            parent: cgroup_dir(parent)?,
            partitions: parse_partitions(partitions, topo)?,
            period: Duration::from_millis(period_ms),
            enabled,
        })
    }

    /// Partition of each CPU id below @nr_cpu_ids, -1 for none.
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

/// Parses --gb-partitions: llc, l2, node, or explicit CPU lists "0-3;4-7".
pub fn parse_partitions(spec: &str, topo: &Topology) -> Result<Vec<Vec<usize>>> {
    let quoted = cpulist::quote(spec);
    let parts: Vec<Vec<usize>> = match spec.trim() {
        "llc" => topo.llcs.clone(),
        "l2" => topo.l2s.clone(),
        "node" => topo
            .nodes
            .iter()
            .map(|&n| {
                topo.cpus
                    .iter()
                    .filter(|c| c.node == n)
                    .map(|c| c.id)
                    .collect()
            })
            .filter(|v: &Vec<usize>| !v.is_empty())
            .collect(),
        _ => {
            let mut lists: Vec<&str> = spec.split(';').collect();
            if lists.len() > 1 && lists.last().is_some_and(|l| l.trim().is_empty()) {
                lists.pop(); // a trailing ';' as in the seed's "0-15;16-31;"
            }
            let mut parts = Vec::new();
            for (i, text) in lists.into_iter().enumerate() {
                let cpus = cpulist::parse(text)
                    .with_context(|| format!("bad --gb-partitions {quoted}"))?;
                if cpus.is_empty() {
                    bail!("bad --gb-partitions {quoted}: partition {i} is empty");
                }
                if let Some(c) = cpus.iter().find(|&&c| topo.cpu(c).is_none()) {
                    bail!("bad --gb-partitions {quoted}: CPU {c} is not an online CPU");
                }
                parts.push(cpus);
            }
            parts
        }
    };
    let mut seen = std::collections::BTreeSet::new();
    for cpus in &parts {
        if let Some(c) = cpus.iter().find(|&&c| !seen.insert(c)) {
            bail!("bad --gb-partitions {quoted}: CPU {c} is in two partitions");
        }
    }
    if parts.is_empty() {
        bail!("bad --gb-partitions {quoted}: no partition");
    }
    if parts.len() > bpf_intf::mosaic_limits_MAX_PARTS as usize {
        bail!(
            "--gb-partitions {quoted}: {} partitions, at most {}",
            parts.len(),
            bpf_intf::mosaic_limits_MAX_PARTS
        );
    }
    Ok(parts)
}

/// What try_to_settle() decided for one group.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Nothing to do (no load, already best, or a move would unbalance).
    Stay,
    /// First settle into this partition.
    Settle(usize),
    /// Move from the current partition to this one.
    Resettle(usize),
}

/// The seed's try_to_settle() on loads in CPUs (1.0 = one CPU busy).
/// @part_load: all tasks per partition; @group_load: this group per
/// partition; @predict: predicted load per partition; @cap: capacity per
/// partition; @pref: the group's partition, if settled.
pub fn decide(
    part_load: &[f64],
    group_load: &[f64],
    predict: &[f64],
    cap: &[f64],
    pref: Option<usize>,
) -> Decision {
    let mut best: Option<(usize, f64)> = None;
    let (mut src_load, mut mgrt_load) = (0.0, 0.0);
    for i in 0..part_load.len() {
        let mgrt = group_load[i];
        // load of the partition without this group's own tasks
        let mut load = (part_load[i] - mgrt).max(0.0);
        if Some(i) == pref {
            src_load = load + mgrt;
            mgrt_load = mgrt;
        } else {
            load += predict[i];
        }
        if best.is_none_or(|(_, min)| load < min) {
            best = Some((i, load));
        }
    }
    let total: f64 = group_load.iter().sum();
    let Some((dst, dst_load)) = best else {
        return Decision::Stay;
    };
    if total <= 0.0 {
        return Decision::Stay;
    }
    let dst_load = dst_load + group_load[dst];
    match pref {
        None => Decision::Settle(dst),
        Some(src) if src == dst => Decision::Stay,
        Some(src) => {
            // src_load/src_cap vs dst_load/dst_cap must not get further apart
            let (src_cap, dst_cap) = (cap[src], cap[dst]);
            let before = (src_load * dst_cap - dst_load * src_cap).abs();
            let after = ((src_load - mgrt_load) * dst_cap - (dst_load + mgrt_load) * src_cap).abs();
            if after <= before {
                Decision::Resettle(dst)
            } else {
                Decision::Stay
            }
        }
    }
}

/// One balanced cgroup.
#[derive(Debug)]
struct Group {
    path: String,
    pref: Option<usize>,
    settles: u32,
    resettles: u32,
    settle_period: Duration,
    settle_next: Instant,
    /// Runtime per partition since it was first seen, ns.
    total: Vec<u64>,
    /// Runtime since it was first settled, and the part of it spent inside
    /// the partition it was settled into at the time, ns.
    settled_ns: u64,
    inside_ns: u64,
    /// Recent load per partition, CPUs (smoothed).
    load: Vec<f64>,
}

impl Group {
    /// Share of its runtime spent inside its partition since it was settled
    /// (never settled: in the partition where it ran most).
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

/// The balancer's state across periods.
pub struct Balancer {
    cfg: GroupConfig,
    groups: BTreeMap<u64, Group>,
    predict: Vec<f64>,
    cap: Vec<f64>,
    part_last: Vec<u64>,
    part_load: Vec<f64>,
    last_tick: Instant,
    next_tick: Instant,
    global_next: Instant,
    predict_stamp: Instant,
    /// cgid settled last: the next attempt starts after it (round robin).
    cursor: u64,
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
        let n = cfg.partitions.len();
        let cap = cfg
            .partitions
            .iter()
            .map(|cpus| {
                cpus.iter()
                    .filter_map(|&c| topo.cpus.iter().find(|x| x.id == c))
                    .map(|x| x.capacity as f64 / 1024.0)
                    .sum()
            })
            .collect();
        let now = Instant::now();
        Balancer {
            cfg,
            groups: BTreeMap::new(),
            predict: vec![0.0; n],
            cap,
            part_last: vec![0; n],
            part_load: vec![0.0; n],
            last_tick: now,
            next_tick: now,
            global_next: now,
            predict_stamp: now,
            cursor: 0,
        }
    }

    /// Descendant cgroups of the parent (not the parent): id -> path.
    fn scan_cgroups(&self) -> BTreeMap<u64, String> {
        let mut found = BTreeMap::new();
        let mut stack = vec![self.cfg.parent.clone()];
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
                    .strip_prefix(&self.cfg.parent)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned();
                found.insert(meta.ino(), rel);
                stack.push(path);
            }
        }
        found
    }

    /// Writes @cgid's partition (-1: registered, unsettled) for BPF.
    fn write_pref(skel: &BpfSkel, cgid: u64, part: Option<usize>) -> Result<()> {
        let mut value = [0u8; 8];
        value[..4].copy_from_slice(&part.map_or(-1, |p| p as i32).to_ne_bytes());
        skel.maps
            .group_prefs
            .update(&cgid.to_ne_bytes(), &value, MapFlags::ANY)
            .context("writing a group's partition")
    }

    /// One period, if due: track cgroups, read loads, maybe settle one group.
    pub fn tick(&mut self, skel: &BpfSkel) -> Result<()> {
        let now = Instant::now();
        if now < self.next_tick {
            return Ok(());
        }
        self.next_tick = now + self.cfg.period;
        let secs = now.duration_since(self.last_tick).as_secs_f64().max(1e-3);
        self.last_tick = now;
        let n = self.cfg.partitions.len();

        // cgroups come and go at any time
        let found = self.scan_cgroups();
        let gone: Vec<u64> = self
            .groups
            .keys()
            .filter(|id| !found.contains_key(id))
            .copied()
            .collect();
        for id in gone {
            self.groups.remove(&id);
            let _ = skel.maps.group_prefs.delete(&id.to_ne_bytes());
            let _ = skel.maps.group_runtime.delete(&id.to_ne_bytes());
        }
        for (id, path) in found {
            if self.groups.contains_key(&id) {
                continue;
            }
            Self::write_pref(skel, id, None)?;
            self.groups.insert(
                id,
                Group {
                    path,
                    pref: None,
                    settles: 0,
                    resettles: 0,
                    settle_period: self.cfg.period,
                    settle_next: now,
                    total: vec![0; n],
                    settled_ns: 0,
                    inside_ns: 0,
                    load: vec![0.0; n],
                },
            );
        }

        // partition loads, in CPUs, smoothed over two periods
        for p in 0..n {
            let ns = crate::stats::sum_percpu(&skel.maps.part_runtime, p as u32)?;
            let fresh = ns.saturating_sub(self.part_last[p]) as f64 / 1e9 / secs;
            self.part_load[p] = (self.part_load[p] + fresh) / 2.0;
            self.part_last[p] = ns;
        }
        // group loads
        for (id, g) in self.groups.iter_mut() {
            let per_cpu = skel
                .maps
                .group_runtime
                .lookup_percpu(&id.to_ne_bytes(), MapFlags::ANY)?
                .unwrap_or_default();
            let now_total = sum_percpu_u64s(&per_cpu, n);
            for (p, ((load, total), now)) in g
                .load
                .iter_mut()
                .zip(g.total.iter_mut())
                .zip(now_total)
                .enumerate()
            {
                let delta = now.saturating_sub(*total);
                if let Some(pref) = g.pref {
                    g.settled_ns += delta;
                    if pref == p {
                        g.inside_ns += delta;
                    }
                }
                let fresh = delta as f64 / 1e9 / secs;
                *load = (*load + fresh) / 2.0;
                *total = (*total).max(now);
            }
        }

        if self.cfg.enabled && now >= self.global_next {
            self.decay_predictions(now);
            if let Some(id) = self.next_candidate(now) {
                self.cursor = id;
                if self.try_to_settle(id, now) {
                    self.global_next = now + self.cfg.period;
                    let pref = self.groups[&id].pref;
                    Self::write_pref(skel, id, pref)?;
                }
            }
        }
        Ok(())
    }

    /// Predicted loads halve every second; gone after ten.
    fn decay_predictions(&mut self, now: Instant) {
        let halves =
            now.duration_since(self.predict_stamp).as_secs_f64() / PREDICT_HALF_LIFE.as_secs_f64();
        if halves < 1.0 {
            return;
        }
        self.predict_stamp = now;
        for p in self.predict.iter_mut() {
            *p = if halves > 10.0 {
                0.0
            } else {
                *p / 2f64.powi(halves as i32)
            };
        }
    }

    /// The next group due for a settle attempt, round robin after the last.
    fn next_candidate(&self, now: Instant) -> Option<u64> {
        let due = |(&id, g): (&u64, &Group)| (g.settle_next <= now).then_some(id);
        self.groups
            .range(self.cursor + 1..)
            .find_map(due)
            .or_else(|| self.groups.range(..=self.cursor).find_map(due))
    }

    /// Runs the seed's settle step for group @id; true if it moved.
    fn try_to_settle(&mut self, id: u64, now: Instant) -> bool {
        let g = self.groups.get_mut(&id).unwrap();
        let decision = decide(&self.part_load, &g.load, &self.predict, &self.cap, g.pref);
        let group_load: f64 = g.load.iter().sum();
        if group_load > 0.0 {
            g.settle_period = (g.settle_period * 2).min(SETTLE_PERIOD_MAX);
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
                g.settle_period = self.cfg.period * 2;
                true
            }
        };
        g.settle_next = now + g.settle_period;
        moved
    }

    /// One line: each group's partition and exclusivity.
    pub fn summary(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .values()
            .map(|g| {
                format!(
                    "{}->{} excl {:.2}",
                    g.path,
                    g.pref.map_or("-".into(), |p| format!("p{p}")),
                    g.exclusivity()
                )
            })
            .collect();
        format!(
            "groups: {}",
            if groups.is_empty() {
                "none".into()
            } else {
                groups.join(" | ")
            }
        )
    }

    /// The groups and partitions as JSON, for --stats-file.
    pub fn to_json(&self) -> Value {
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|(id, g)| {
                json!({"path": g.path, "cgroup_id": id, "partition": g.pref, "settles": g.settles,
                       "resettles": g.resettles, "exclusivity": g.exclusivity(),
                       "runtime_ns": g.total.iter().sum::<u64>(), "runtime_ns_per_partition": g.total})
            })
            .collect();
        json!({"enabled": self.cfg.enabled, "parent": self.cfg.parent, "partitions": self.cfg.partitions,
               "period_ms": self.cfg.period.as_millis() as u64, "groups": groups})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::tests::fake_sysfs;
    use proptest::prelude::*;

    fn topo() -> Topology {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 8, 4, true, 2);
        Topology::from_root(dir.path()).unwrap()
    }

    #[test]
    fn partitions_from_topology_or_lists() {
        let t = topo();
        assert_eq!(
            parse_partitions("llc", &t).unwrap(),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        assert_eq!(parse_partitions("node", &t).unwrap().len(), 2);
        assert_eq!(parse_partitions("l2", &t).unwrap().len(), 4);
        assert_eq!(
            parse_partitions("0-1;2-7", &t).unwrap(),
            vec![vec![0, 1], (2..8).collect()]
        );
        assert_eq!(parse_partitions("0-3;4-7;", &t).unwrap().len(), 2);
        assert_eq!(parse_partitions(" node ", &t).unwrap().len(), 2);
    }

    #[test]
    fn bad_partitions_are_refused() {
        let t = topo();
        for (bad, why) in [
            ("0-3;3-7", "in two partitions"),
            ("0-3;;4-7", "is empty"),
            ("0-3;4-9", "not an online CPU"),
            ("0-3;x", "bad --gb-partitions"),
            ("numa", "bad --gb-partitions"),
            (";", "is empty"),
            ("", "is empty"),
            ("0-3;4-7;;", "is empty"),
        ] {
            let err = format!("{:#}", parse_partitions(bad, &t).unwrap_err());
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    /// The 8-CPU topology of these tests, built once for the property tests.
    fn shared_topo() -> &'static Topology {
        static TOPO: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        TOPO.get_or_init(topo)
    }

    proptest! {
        #[test]
        fn partition_specs_never_panic_and_errors_are_one_line(
            spec in "\\PC{0,30}|[0-9;, -]{0,24}|(llc|l2|node)[ ;]{0,2}"
        ) {
            if let Err(e) = parse_partitions(&spec, shared_topo()) {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("--gb-partitions"), "{msg}");
                prop_assert!(!msg.contains('\n'), "{msg:?}");
            }
        }

        /// Disjoint CPU sets, formatted as lists: parsed back the same.
        #[test]
        fn partition_lists_round_trip(
            owner in prop::collection::vec(prop::option::of(0usize..4), 8),
            trailing in any::<bool>(),
        ) {
            let mut parts = vec![Vec::new(); 4];
            for (cpu, o) in owner.iter().enumerate() {
                if let Some(p) = o {
                    parts[*p].push(cpu);
                }
            }
            parts.retain(|p| !p.is_empty());
            prop_assume!(!parts.is_empty());
            let lists: Vec<String> = parts.iter().map(|p| cpulist::format(p)).collect();
            let spec = lists.join(";") + if trailing { ";" } else { "" };
            prop_assert_eq!(parse_partitions(&spec, shared_topo()).unwrap(), parts);
        }
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

    #[test]
    fn first_settle_takes_the_least_loaded_partition_without_its_own_load() {
        // the group itself makes p0 busy: excluded, p0 still looks free
        assert_eq!(
            decide(&[2.0, 1.0], &[2.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], None),
            Decision::Settle(0)
        );
        // predicted load steers a second group away from a just-settled partition
        assert_eq!(
            decide(&[0.5, 0.5], &[0.5, 0.5], &[3.0, 0.0], &[4.0, 4.0], None),
            Decision::Settle(1)
        );
        // no load: nothing to settle
        assert_eq!(
            decide(&[1.0, 1.0], &[0.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], None),
            Decision::Stay
        );
    }

    #[test]
    fn resettle_only_when_it_does_not_worsen_the_imbalance() {
        // settled on a crowded p0 (group 1 CPU, others 3), p1 idle: move
        assert_eq!(
            decide(&[4.0, 0.0], &[1.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], Some(0)),
            Decision::Resettle(1)
        );
        // p1 is lighter but has a quarter of p0's capacity: moving 1.5 CPUs of
        // load there would leave load/capacity far more uneven, so it stays
        assert_eq!(
            decide(&[2.1, 0.5], &[1.5, 0.0], &[0.0, 0.0], &[4.0, 1.0], Some(0)),
            Decision::Stay
        );
        // already in the best partition
        assert_eq!(
            decide(&[1.0, 3.0], &[1.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], Some(0)),
            Decision::Stay
        );
    }
}
