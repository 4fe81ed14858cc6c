//! cpu.max limits that bandwidth.bpf.c could not enforce: found, named and
//! set again until they hold.
//!
//! A limit misses when the BPF side has no slot left for it (MAX_BW_CGROUPS
//! limited cgroups at once), when its cgroup got no park queue, or when the
//! cgroup did not fit the cgroup table. The BPF side counts those
//! (`bw_nr_missed`, `cgroups_untracked`); while any exist, the run loop
//! calls `MissedLimits::check` once a second: it walks the cgroup tree for
//! every cgroup with a cpu.max limit, hands each to the `bw_retry` program
//! (a no-op for a limit already enforced), warns once for every cgroup whose
//! limit still does not hold, and says when one holds again.

use crate::bpf_intf;
use crate::bpf_skel::BpfSkel;
use crate::group;
use crate::output::escape;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// How often the cgroup tree is walked while some limit is not enforced.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// A cgroup's cpu.max as the kernel has it: (quota, period, burst) in us;
/// None for "max" (no limit) or an unreadable file.
pub fn read_cpu_max(dir: &Path) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(dir.join("cpu.max")).ok()?;
    let (quota, period) = parse_cpu_max(&text)?;
    let burst = std::fs::read_to_string(dir.join("cpu.max.burst"))
        .ok()
        .and_then(|b| b.trim().parse().ok())
        .unwrap_or(0);
    Some((quota, period, burst))
}

/// "QUOTA PERIOD" of a cpu.max file; None for "max PERIOD" or garbage.
pub fn parse_cpu_max(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_whitespace();
    let quota = it.next()?.parse().ok()?;
    let period = it.next()?.parse().ok()?;
    Some((quota, period))
}

/// What `bw_retry` said of one limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Retry {
    Held,
    NoCgroup,
    NoSlot,
}

/// The state of the finder across checks: which cgroups it warned about.
#[derive(Default)]
pub struct MissedLimits {
    /// cgroup id -> path of the limits that did not hold at the last check
    missed: BTreeMap<u64, String>,
    last: Option<Instant>,
}

impl MissedLimits {
    /// Limits not enforced as of the last check.
    pub fn count(&self) -> usize {
        self.missed.len()
    }

    /// At most once per CHECK_EVERY, while the BPF side says some limit is
    /// not enforced (or was, at the last check): retry every limited cgroup.
    pub fn check(&mut self, skel: &BpfSkel, untracked_cgroups: impl Fn() -> u64) {
        if self.last.is_some_and(|t| t.elapsed() < CHECK_EVERY) {
            return;
        }
        let nr_missed = skel.maps.bss_data.as_ref().map_or(0, |b| b.bw_nr_missed);
        if nr_missed == 0 && self.missed.is_empty() && untracked_cgroups() == 0 {
            return;
        }
        self.last = Some(Instant::now());
        let root = Path::new(group::CGROUP_ROOT);
        let limited = group::scan_cgroups(root)
            .into_iter()
            .filter_map(|(id, rel)| read_cpu_max(&root.join(&rel)).map(|m| (id, rel, m)));
        let results = limited.map(|(id, rel, (quota, period, burst))| {
            (id, rel, retry(skel, id, quota, period, burst))
        });
        for line in self.update(results) {
            crate::errln!("{line}");
        }
    }

    /// Takes one check's results; returns the lines to print: a warning for
    /// each limit newly not enforced, a note for each that holds again.
    pub fn update(&mut self, results: impl Iterator<Item = (u64, String, Retry)>) -> Vec<String> {
        let mut lines = Vec::new();
        let mut now = BTreeMap::new();
        for (id, path, r) in results {
            match r {
                Retry::Held => {
                    if self.missed.contains_key(&id) {
                        lines.push(format!(
                            "scx_mosaic: cpu.max of cgroup {} is enforced now",
                            escape(&path)
                        ));
                    }
                }
                Retry::NoSlot | Retry::NoCgroup => {
                    if !self.missed.contains_key(&id) {
                        lines.push(format!(
                            "scx_mosaic: warning: cpu.max of cgroup {} is NOT enforced ({}); \
                             retrying every {} s",
                            escape(&path),
                            match r {
                                Retry::NoSlot => format!(
                                    "all {} cpu.max slots in use, or no park queue",
                                    bpf_intf::mosaic_limits_MAX_BW_CGROUPS
                                ),
                                _ => format!(
                                    "beyond the {} cgroups tracked",
                                    bpf_intf::mosaic_limits_MAX_CGROUPS
                                ),
                            },
                            CHECK_EVERY.as_secs()
                        ));
                    }
                    now.insert(id, path);
                }
            }
        }
        self.missed = now;
        lines
    }
}

/// Runs `bw_retry` for cgroup @cgid's limit.
fn retry(skel: &BpfSkel, cgid: u64, quota: u64, period: u64, burst: u64) -> Retry {
    let mut args = bpf_intf::bw_retry_args {
        cgid,
        period_us: period,
        quota_us: quota,
        burst_us: burst,
        ret: bpf_intf::bw_retry_ret_BW_RETRY_NO_CGROUP as i32,
    };
    // SAFETY: bw_retry_args is plain old data; the slice covers exactly it.
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(&mut args as *mut _ as *mut u8, std::mem::size_of_val(&args))
    };
    let input = libbpf_rs::ProgramInput {
        context_in: Some(bytes),
        ..Default::default()
    };
    if skel.progs.bw_retry.test_run(input).is_err() {
        return Retry::NoSlot;
    }
    match args.ret as u32 {
        bpf_intf::bw_retry_ret_BW_RETRY_HELD => Retry::Held,
        bpf_intf::bw_retry_ret_BW_RETRY_NO_CGROUP => Retry::NoCgroup,
        _ => Retry::NoSlot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_max_files_are_parsed() {
        assert_eq!(parse_cpu_max("20000 100000\n"), Some((20000, 100000)));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn a_missed_limit_is_named_once_and_its_recovery_said() {
        let mut m = MissedLimits::default();
        let run = |m: &mut MissedLimits, r: &[(u64, &str, Retry)]| {
            m.update(r.iter().map(|(id, p, r)| (*id, p.to_string(), *r)))
        };
        let l = run(
            &mut m,
            &[(1, "a", Retry::Held), (2, "b\x1b[2J", Retry::NoSlot)],
        );
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].contains("NOT enforced") && l[0].contains("b\\x1b[2J"),
            "{l:?}"
        );
        assert!(!l[0].contains('\x1b'));
        assert_eq!(m.count(), 1);
        // still missed: not said again
        assert!(run(&mut m, &[(2, "b", Retry::NoSlot)]).is_empty());
        // holds now: said once
        let l = run(&mut m, &[(2, "b", Retry::Held)]);
        assert_eq!(l.len(), 1);
        assert!(l[0].contains("enforced now"), "{l:?}");
        assert_eq!(m.count(), 0);
    }
}
