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
use crate::tunables::GroupPlan;
use crate::warn::RateLimited;
use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use policy::Policy;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// At most this many partitions (intf.h), for policy::parse_partitions.
const MAX_PARTS: usize = bpf_intf::mosaic_limits_MAX_PARTS as usize;

/// The group balancer's settings (tunables::LoadPlan), its cgroup found.
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// The cgroup whose descendants are balanced (not itself).
    pub parent: PathBuf,
    /// The partitions, the period, whether it settles (the plan's).
    pub plan: GroupPlan,
    /// Print each settle and move (with --stats: beside the live lines; a
    /// service without them stays quiet).
    pub log_moves: bool,
}

impl GroupConfig {
    /// Checks the cgroup of @plan's --gb-parent; the rest comes checked
    /// (tunables::LoadPlan). Nothing is loaded yet.
    pub fn new(plan: GroupPlan, log_moves: bool) -> Result<Self> {
        Ok(GroupConfig {
            parent: cgroup_dir(&plan.parent)?,
            plan,
            log_moves,
        })
    }

    /// How often userspace looks and may settle one group.
    fn period(&self) -> Duration {
        Duration::from_millis(self.plan.period_ms)
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
            // the entry's type and inode come with the directory listing
            // (kernfs fills both): no stat per file of every cgroup
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = e.path();
            let rel = path
                .strip_prefix(parent)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            found.insert(e.ino(), rel);
            stack.push(path);
        }
    }
    found
}

/// At most this many cgroups are tracked: the size of group_prefs and
/// group_runtime (intf.h's MAX_GROUPS).
pub const MAX_GROUPS: usize = bpf_intf::mosaic_limits_MAX_GROUPS as usize;
/// With more cgroups than that, they are ranked by CPU time at most this
/// often.
const RANK_INTERVAL: Duration = Duration::from_secs(2);
/// The cgroup tree is scanned (and ranked) at most every this many times
/// the last scan (ranking) took: with thousands of cgroups a scan is not
/// free, and the balancer keeps to about a tenth of a CPU for them.
/// (cgroupfs cpu.stat is no way to rank thousands: each read flushes the
/// kernel's per-CPU stats, 7 ms a read on the TCG guest, 40 s for 5,500.)
const SCAN_COST_FACTOR: u32 = 10;
/// Rankings are at most this far apart, whatever they cost.
const RANK_INTERVAL_MAX: Duration = Duration::from_secs(10);
/// The tree is scanned when the parent's count of descendants changed, and
/// at least this often (one cgroup gone and one made keep the count).
const RESCAN_INTERVAL: Duration = Duration::from_secs(5);

/// One scan of the tree below the parent.
struct Scan {
    at: Instant,
    took: Duration,
    /// The parent's nr_descendants (cgroup.stat) before it.
    count: Option<u64>,
    found: BTreeMap<u64, String>,
}

/// nr_descendants of the cgroup at @dir: a cheap test of whether the tree
/// below changed.
fn nr_descendants(dir: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join("cgroup.stat")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("nr_descendants "))
        .and_then(|v| v.trim().parse().ok())
}
/// A repeated warning is printed at most this often.
const WARN_INTERVAL: Duration = Duration::from_secs(60);
/// The skipped cgroups the warning and the report name.
const SKIPPED_NAMED: usize = 5;

/// The balancer's BPF maps (group.bpf.c), behind a trait so that its
/// handling of their failures is tested without BPF.
pub trait GroupMaps {
    /// Writes @cgid's partition (None: registered, unsettled).
    fn write_pref(&mut self, cgid: u64, part: Option<usize>) -> Result<()>;
    /// Drops @cgid from the maps (absent: nothing to do).
    fn forget(&mut self, cgid: u64);
    /// All tasks' runnable demand in each of @n partitions, ns.
    fn part_demand(&mut self, n: usize) -> Result<Vec<u64>>;
    /// Per group BPF accounted (an entry is made when a registered group
    /// first runs: a few of thousands, often), its runtime in each of @n
    /// partitions, then its demand in each.
    fn group_totals(&mut self, n: usize) -> Result<BTreeMap<u64, Vec<u64>>>;
    /// Runtime (ns) of the cgroups not registered that ran lately.
    fn unregistered_runtime(&mut self) -> Result<BTreeMap<u64, u64>>;
}

/// The loaded scheduler's maps.
pub struct SkelMaps<'a, 'b>(pub &'a BpfSkel<'b>);

impl GroupMaps for SkelMaps<'_, '_> {
    fn write_pref(&mut self, cgid: u64, part: Option<usize>) -> Result<()> {
        self.0
            .maps
            .group_prefs
            .update(
                &cgid.to_ne_bytes(),
                &policy::pref_value(part),
                MapFlags::ANY,
            )
            .context("writing a group's partition")
    }

    fn forget(&mut self, cgid: u64) {
        let _ = self.0.maps.group_prefs.delete(&cgid.to_ne_bytes());
        let _ = self.0.maps.group_runtime.delete(&cgid.to_ne_bytes());
    }

    fn part_demand(&mut self, n: usize) -> Result<Vec<u64>> {
        (0..n)
            .map(|p| crate::stats::sum_percpu(&self.0.maps.part_demand, p as u32))
            .collect::<Result<Vec<u64>>>()
            .context("reading the partitions' demand")
    }

    fn group_totals(&mut self, n: usize) -> Result<BTreeMap<u64, Vec<u64>>> {
        let map = &self.0.maps.group_runtime;
        let mut out = BTreeMap::new();
        for key in map.keys() {
            let Ok(bytes) = <[u8; 8]>::try_from(&key[..]) else {
                continue;
            };
            // gone since the key was listed: nothing to read
            let Some(per_cpu) = map
                .lookup_percpu(&key, MapFlags::ANY)
                .context("reading a group's runtime")?
            else {
                continue;
            };
            // struct group_runtime: ns[MAX_PARTS], then demand_ns[MAX_PARTS]
            let words = sum_percpu_u64s(&per_cpu, 2 * MAX_PARTS);
            let mut totals = words[..n].to_vec();
            totals.extend_from_slice(&words[MAX_PARTS..MAX_PARTS + n]);
            out.insert(u64::from_ne_bytes(bytes), totals);
        }
        Ok(out)
    }

    fn unregistered_runtime(&mut self) -> Result<BTreeMap<u64, u64>> {
        let map = &self.0.maps.group_unregistered;
        let mut out = BTreeMap::new();
        for key in map.keys() {
            let (Ok(id), Some(value)) = (
                <[u8; 8]>::try_from(&key[..]),
                map.lookup(&key, MapFlags::ANY)
                    .context("reading an unregistered group's runtime")?,
            ) else {
                continue;
            };
            if let Ok(ns) = <[u8; 8]>::try_from(&value[..]) {
                out.insert(u64::from_ne_bytes(id), u64::from_ne_bytes(ns));
            }
        }
        Ok(out)
    }
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
    /// At most this many cgroups tracked (MAX_GROUPS; smaller in tests).
    limit: usize,
    /// Past the limit: when the cgroups were last ranked, how long that
    /// took, and each one's runtime then (ns).
    ranked: Option<Instant>,
    rank_cost: Duration,
    runtime: BTreeMap<u64, u64>,
    /// The last scan of the tree.
    scanned: Option<Scan>,
    /// A registration failed: the selection is synced again next period.
    resync: bool,
    /// The cgroups not tracked now (past the limit), busiest first at the
    /// last ranking, and their paths (the first SKIPPED_NAMED).
    skipped: Vec<u64>,
    skipped_named: Vec<String>,
    /// Partitions decided but not written yet (the write failed): written
    /// again each period until it succeeds.
    pending: BTreeMap<u64, Option<usize>>,
    /// Map reads and writes that failed.
    map_errors: u64,
    warn_skipped: RateLimited,
    warn_maps: RateLimited,
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
        let cap = policy::capacities(&cfg.plan.partitions, topo);
        let policy = Policy::new(cap, cfg.plan.period_ns(), cfg.plan.enabled);
        let now = Instant::now();
        Balancer {
            cfg,
            policy,
            paths: BTreeMap::new(),
            start: now,
            next_tick: now,
            limit: MAX_GROUPS,
            ranked: None,
            rank_cost: Duration::ZERO,
            runtime: BTreeMap::new(),
            scanned: None,
            resync: false,
            skipped: Vec::new(),
            skipped_named: Vec::new(),
            pending: BTreeMap::new(),
            map_errors: 0,
            warn_skipped: RateLimited::new(WARN_INTERVAL),
            warn_maps: RateLimited::new(WARN_INTERVAL),
        }
    }

    /// One period, if due: track cgroups, read loads, maybe settle one
    /// group. Never fails: a map read or write that fails is reported
    /// (rate-limited) and retried the next period.
    pub fn tick(&mut self, skel: &BpfSkel) {
        let now = Instant::now();
        if now < self.next_tick {
            return;
        }
        self.next_tick = now + self.cfg.period();
        // the tree again only if it may have changed, and not more often
        // than ten times what a scan takes
        let count = nr_descendants(&self.cfg.parent);
        let fresh = self.scanned.as_ref().is_none_or(|s| {
            now >= s.at + SCAN_COST_FACTOR * s.took
                && (count.is_none() || count != s.count || now >= s.at + RESCAN_INTERVAL)
        });
        if fresh {
            let found = scan_cgroups(&self.cfg.parent);
            self.scanned = Some(Scan {
                at: now,
                took: now.elapsed(),
                count,
                found,
            });
        }
        let Some(scan) = self.scanned.take() else {
            return;
        };
        self.period(now, &scan.found, fresh, &mut SkelMaps(skel));
        self.scanned = Some(scan);
    }

    /// Counts a failed map access and says so (rate-limited).
    fn map_error(&mut self, now: Instant, err: &anyhow::Error) {
        self.map_errors += 1;
        let total = self.map_errors;
        self.warn_maps.warn(now, || {
            format!("group balancer: {err:#}; retried next period ({total} map errors so far)")
        });
    }

    /// Whether the cgroups are due to be ranked again (past the limit):
    /// every RANK_INTERVAL, or ten times what a ranking takes, up to
    /// RANK_INTERVAL_MAX.
    fn rank_due(&self, now: Instant) -> bool {
        let every = (SCAN_COST_FACTOR * self.rank_cost).clamp(RANK_INTERVAL, RANK_INTERVAL_MAX);
        self.ranked.is_none_or(|t| now >= t + every)
    }

    /// Which of the cgroups @found (id -> path) to track: all of them up
    /// to the limit; past it the busiest, by their runtime since the last
    /// ranking (the tracked groups' from the policy, the others' from
    /// @maps), ranked every RANK_INTERVAL or more.
    fn select(
        &mut self,
        now: Instant,
        found: &BTreeMap<u64, String>,
        maps: &mut impl GroupMaps,
    ) -> BTreeSet<u64> {
        let live: BTreeSet<u64> = found.keys().copied().collect();
        let tracked: BTreeSet<u64> = self.policy.groups().keys().copied().collect();
        let sel = if live.len() <= self.limit {
            self.ranked = None;
            self.runtime.clear();
            policy::Selection {
                tracked: live,
                skipped: Vec::new(),
            }
        } else if self.rank_due(now) {
            self.ranked = Some(now);
            let took = Instant::now();
            match maps.unregistered_runtime() {
                Ok(others) => {
                    let cum: BTreeMap<u64, u64> = found
                        .keys()
                        .map(|id| {
                            let ns = match self.policy.groups().get(id) {
                                Some(g) => g.total().iter().sum(),
                                None => others.get(id).copied().unwrap_or(0),
                            };
                            (*id, ns)
                        })
                        .collect();
                    self.rank_cost = took.elapsed();
                    let loads = policy::growth(&cum, &self.runtime);
                    self.runtime = cum;
                    policy::select_largest(&loads, &tracked, self.limit)
                }
                Err(e) => {
                    self.map_error(now, &e);
                    policy::keep_and_fill(&live, &tracked, self.limit)
                }
            }
        } else {
            policy::keep_and_fill(&live, &tracked, self.limit)
        };
        self.skipped = sel.skipped;
        self.skipped_named = self
            .skipped
            .iter()
            .take(SKIPPED_NAMED)
            .map(|id| found.get(id).cloned().unwrap_or_default())
            .collect();
        if !self.skipped.is_empty() {
            let (n, limit, named) = (found.len(), self.limit, self.skipped_named.join(", "));
            let parent = self.cfg.parent.display().to_string();
            let skipped = self.skipped.len();
            self.warn_skipped.warn(now, || {
                format!(
                    "group balancer: {n} cgroups under {}, more than the {limit} it \
                     tracks: the busiest are balanced, {skipped} skipped (e.g. {})",
                    crate::output::escape(&parent),
                    crate::output::escape(&named)
                )
            });
        }
        sel.tracked
    }

    /// One period at @now with the cgroups @found under the parent (id ->
    /// path below it; @fresh: scanned for this period, else as the last
    /// period saw them) and @maps.
    fn period(
        &mut self,
        now: Instant,
        found: &BTreeMap<u64, String>,
        fresh: bool,
        maps: &mut impl GroupMaps,
    ) {
        let now_ns = now.duration_since(self.start).as_nanos() as u64;
        let n = self.cfg.plan.partitions.len();

        // cgroups come and go at any time; past the maps' size, the
        // busiest are tracked. Nothing to do if nothing changed.
        let resync = std::mem::take(&mut self.resync);
        let changed = fresh || resync || (found.len() > self.limit && self.rank_due(now));
        let selected = if changed {
            self.select(now, found, maps)
        } else {
            self.policy.groups().keys().copied().collect()
        };
        let (added, gone) = if changed {
            self.policy.sync(&selected, now_ns)
        } else {
            Default::default()
        };
        for id in gone {
            self.paths.remove(&id);
            self.pending.remove(&id);
            maps.forget(id);
        }
        for id in added {
            if let Err(e) = maps.write_pref(id, None) {
                // not registered: tracked afresh at a later period
                self.policy.remove(id);
                self.resync = true;
                self.map_error(now, &e);
                continue;
            }
            self.paths
                .insert(id, found.get(&id).cloned().unwrap_or_default());
        }
        // decisions whose write failed, again
        for (id, part) in std::mem::take(&mut self.pending) {
            if let Err(e) = maps.write_pref(id, part) {
                self.pending.insert(id, part);
                self.map_error(now, &e);
            }
        }

        // a failed read skips the period: the policy would take the groups
        // missing as idle
        let part = match maps.part_demand(n) {
            Ok(p) => p,
            Err(e) => return self.map_error(now, &e),
        };
        let mut groups = match maps.group_totals(n) {
            Ok(g) => g,
            Err(e) => return self.map_error(now, &e),
        };
        // an entry of a group no longer tracked (BPF made it as the group
        // was dropped): freed, or the map fills up
        groups.retain(|id, _| {
            let tracked = self.policy.groups().contains_key(id);
            if !tracked {
                maps.forget(*id);
            }
            tracked
        });

        // the seed settles a group only where its effective cpuset reaches;
        // only a group that ran is decided on, so only its cpuset is read
        // (not thousands of idle groups' every period)
        for (&id, totals) in &groups {
            let ran = self.policy.groups()[&id]
                .total()
                .iter()
                .zip(totals)
                .any(|(before, now)| now > before);
            if ran {
                let allowed = self.allowed_partitions(self.path(id));
                self.policy.set_allowed(id, allowed);
            }
        }
        for (id, p) in self.policy.tick(now_ns, &part, &groups) {
            if let Err(e) = maps.write_pref(id, Some(p)) {
                self.pending.insert(id, Some(p));
                self.map_error(now, &e);
            }
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
            crate::errln!(
                "scx_mosaic: group {} {verb} {}",
                crate::output::escape(self.path(id)),
                g.last_move()
            );
        }
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
            .plan
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
            enabled: Flag(self.cfg.plan.enabled),
            parent: self.cfg.parent.to_string_lossy().into_owned(),
            partitions: (self.cfg.plan.partitions.iter().cloned())
                .map(CpuIds)
                .collect(),
            period_ms: self.cfg.plan.period_ms,
            groups,
            max_groups: self.limit as u64,
            skipped: self.skipped.len() as u64,
            skipped_groups: self.skipped_named.join(", "),
            map_errors: self.map_errors,
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
            plan: GroupPlan {
                parent: "/sys/fs/cgroup/gb".into(),
                partitions: t.llcs.clone(),
                period_ms: 100,
                enabled: true,
            },
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

    /// group.bpf.c's maps as the balancer sees them, with room for @cap
    /// groups and failures on demand.
    #[derive(Default)]
    struct FakeMaps {
        prefs: BTreeMap<u64, Option<usize>>,
        cap: usize,
        /// the next this many writes fail, and reads
        fail_writes: u32,
        fail_reads: u32,
        /// ms of runtime (and demand) in p0 per group
        ran: BTreeMap<u64, u64>,
    }

    impl GroupMaps for FakeMaps {
        fn write_pref(&mut self, cgid: u64, part: Option<usize>) -> Result<()> {
            if self.fail_writes > 0 {
                self.fail_writes -= 1;
                bail!("writing a group's partition: injected");
            }
            if !self.prefs.contains_key(&cgid) && self.prefs.len() >= self.cap {
                bail!("writing a group's partition: Argument list too long (os error 7)");
            }
            self.prefs.insert(cgid, part);
            Ok(())
        }
        fn forget(&mut self, cgid: u64) {
            self.prefs.remove(&cgid);
        }
        fn part_demand(&mut self, n: usize) -> Result<Vec<u64>> {
            if self.fail_reads > 0 {
                self.fail_reads -= 1;
                bail!("reading the partitions' demand: injected");
            }
            let mut v = vec![0; n];
            v[0] = self.ran.values().sum::<u64>() * 1_000_000;
            Ok(v)
        }
        fn group_totals(&mut self, n: usize) -> Result<BTreeMap<u64, Vec<u64>>> {
            // as BPF: entries only for registered groups that ran
            let mut out = BTreeMap::new();
            for (&id, &ms) in &self.ran {
                if self.prefs.contains_key(&id) {
                    let mut v = vec![0; 2 * n];
                    (v[0], v[n]) = (ms * 1_000_000, ms * 1_000_000);
                    out.insert(id, v);
                }
            }
            Ok(out)
        }
        fn unregistered_runtime(&mut self) -> Result<BTreeMap<u64, u64>> {
            let ran = self
                .ran
                .iter()
                .filter(|(id, _)| !self.prefs.contains_key(id));
            Ok(ran.map(|(&id, &ms)| (id, ms * 1_000_000)).collect())
        }
    }

    fn balancer(limit: usize) -> Balancer {
        let t = topo();
        let cfg = GroupConfig {
            parent: "/nonexistent/gb".into(),
            plan: GroupPlan {
                parent: "/nonexistent/gb".into(),
                partitions: t.llcs.clone(),
                period_ms: 50,
                enabled: true,
            },
            log_moves: false,
        };
        let mut b = Balancer::new(cfg, &t);
        b.limit = limit;
        b
    }

    fn cgroups(ids: &[u64]) -> BTreeMap<u64, String> {
        ids.iter().map(|&id| (id, format!("g{id}"))).collect()
    }

    #[test]
    fn past_the_map_size_the_busiest_groups_are_balanced_and_the_rest_reported() {
        let mut b = balancer(3);
        let mut maps = FakeMaps {
            cap: 3,
            ..Default::default()
        };
        // 6 cgroups, room for 3: g4 and g6 ran (BPF's note of the groups it
        // does not account in full, ms here)
        maps.ran = BTreeMap::from([(4, 5), (6, 5)]);
        b.period(b.start, &cgroups(&[1, 2, 3, 4, 5, 6]), true, &mut maps);
        let tracked: Vec<u64> = b.policy.groups().keys().copied().collect();
        assert_eq!(tracked, [1, 4, 6]);
        assert_eq!(maps.prefs.keys().copied().collect::<Vec<_>>(), [1, 4, 6]);
        let m = b.metrics();
        assert_eq!((m.max_groups, m.skipped, m.map_errors), (3, 3, 0));
        assert_eq!(m.skipped_groups, "g2, g3, g5");
        assert_eq!(m.groups.len(), 3);
        // before the next ranking a new cgroup waits; a gone one frees a place
        let t1 = b.start + Duration::from_millis(100);
        b.period(t1, &cgroups(&[2, 3, 4, 5, 6, 7]), true, &mut maps);
        assert_eq!(maps.prefs.keys().copied().collect::<Vec<_>>(), [2, 4, 6]);
        // g2 (tracked: the policy's account) runs 5 ms, g3 (not: BPF's
        // note) 3 ms, g7 90 ms; g4 and g6 nothing more
        maps.ran.extend([(2, 5), (3, 3), (7, 90)]);
        b.period(
            t1 + Duration::from_millis(100),
            &cgroups(&[2, 3, 4, 5, 6, 7]),
            false,
            &mut maps,
        );
        // at the next ranking the load is what ran since the last: g7, g2
        // and g3 are tracked; g4 and g6 (tracked, first) and g5 skipped
        let t2 = b.start + RANK_INTERVAL;
        b.period(t2, &cgroups(&[2, 3, 4, 5, 6, 7]), false, &mut maps);
        assert_eq!(maps.prefs.keys().copied().collect::<Vec<_>>(), [2, 3, 7]);
        assert_eq!(b.metrics().skipped_groups, "g4, g6, g5");
        assert_eq!(b.metrics().map_errors, 0);
    }

    #[test]
    fn a_failed_map_write_or_read_is_retried_the_next_period() {
        let mut b = balancer(MAX_GROUPS);
        let mut maps = FakeMaps {
            cap: 100,
            fail_writes: 1,
            ..Default::default()
        };
        let start = b.start;
        let at = |ms: u64| start + Duration::from_millis(ms);
        let (t0, t50, t100, t150, t200) = (at(0), at(50), at(100), at(150), at(200));
        // the first registration fails: not tracked this period, no error
        // out of the period, and registered the next
        b.period(t0, &cgroups(&[1, 2]), true, &mut maps);
        assert_eq!(b.policy.groups().keys().copied().collect::<Vec<_>>(), [2]);
        assert_eq!(b.metrics().map_errors, 1);
        // (also when no new scan came: the failure asks for a new sync)
        maps.ran.insert(1, 50);
        b.period(t50, &cgroups(&[1, 2]), false, &mut maps);
        assert_eq!(maps.prefs, BTreeMap::from([(1, None), (2, None)]));
        // a failed read skips a period: no settle on missing loads
        maps.fail_reads = 1;
        maps.ran.insert(1, 100);
        b.period(t100, &cgroups(&[1, 2]), true, &mut maps);
        assert_eq!(b.metrics().map_errors, 2);
        assert_eq!(b.policy.groups()[&1].pref(), None);
        // group 1 ran two periods in a row: it settles, but the write fails;
        // BPF does not know yet
        maps.ran.insert(1, 150);
        maps.fail_writes = 1;
        b.period(t150, &cgroups(&[1, 2]), true, &mut maps);
        assert_eq!(b.policy.groups()[&1].pref(), Some(0));
        assert_eq!(maps.prefs[&1], None);
        assert_eq!(b.metrics().map_errors, 3);
        // ... it is written the next period
        maps.ran.insert(1, 200);
        b.period(t200, &cgroups(&[1, 2]), true, &mut maps);
        assert_eq!(maps.prefs[&1], Some(0));
        assert!(b.pending.is_empty());
        // group 2 goes: its entries are freed; one BPF made again as it was
        // dropped (a task of it running then) is freed at the next read
        b.period(at(250), &cgroups(&[1]), true, &mut maps);
        assert!(!maps.prefs.contains_key(&2));
        maps.prefs.insert(2, None);
        maps.ran.insert(2, 10);
        b.period(at(300), &cgroups(&[1]), true, &mut maps);
        assert!(!maps.prefs.contains_key(&2));
        assert_eq!(b.policy.groups().len(), 1);
    }

    /// 5,500 cgroups, 4,096 tracked: the busy one made last is tracked; what a
    /// period costs is printed (--nocapture; the policy and selection only, no
    /// I/O), not asserted: timings belong in benchmarks.
    #[test]
    fn a_busy_group_among_thousands_is_tracked() {
        let mut b = balancer(MAX_GROUPS);
        let mut maps = FakeMaps {
            cap: MAX_GROUPS,
            ..Default::default()
        };
        let ids: Vec<u64> = (1..=5500).collect();
        let found = cgroups(&ids);
        maps.ran.insert(5500, 0);
        let t = Instant::now();
        for i in 0..50u64 {
            maps.ran.insert(5500, i * 100);
            let now = b.start + Duration::from_millis(200 * i);
            b.period(now, &found, i % 25 == 0, &mut maps);
        }
        eprintln!("{:?} per period", t.elapsed() / 50);
        // the policy's share
        let totals = maps.group_totals(2).unwrap();
        let t = Instant::now();
        for i in 50..100u64 {
            b.policy.tick(i * 200_000_000, &[0, 0], &totals);
        }
        eprintln!("{:?} per policy tick", t.elapsed() / 50);
        assert!(b.policy.groups().contains_key(&5500));
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
