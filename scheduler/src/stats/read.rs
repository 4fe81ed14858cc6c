//! Map reading: the BPF side's counters (the per-CPU `stats`,
//! `shard_enqueues`, `wait_hist` and `longest_waits` maps) into Counters,
//! the kernel's per-program cost of the BPF programs, and the cpu.max slots.

use super::{BandwidthMetrics, Counters, Flag, LongestWait, ProgCosts, NR_STATS};
use crate::bpf_intf;
use crate::bpf_skel::BpfSkel;
use anyhow::{Context, Result};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags};
use std::os::fd::{AsFd, AsRawFd};

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

impl Counters {
    /// Reads the live counters of a loaded scheduler with @nr_shards shards.
    pub fn read(skel: &BpfSkel, nr_shards: usize) -> Result<Self> {
        let per_cpu: Vec<Vec<u64>> = (0..NR_STATS as u32)
            .map(|i| percpu_values(&skel.maps.stats, i))
            .collect::<Result<_>>()?;
        let per_shard = (0..nr_shards as u32)
            .map(|i| sum_percpu(&skel.maps.shard_enqueues, i))
            .collect::<Result<_>>()?;
        let wait_hist = (0..bpf_intf::mosaic_limits_NR_WAIT_BUCKETS)
            .map(|i| sum_percpu(&skel.maps.wait_hist, i))
            .collect::<Result<_>>()?;
        let mut c = Counters::from_per_cpu(per_cpu, per_shard, wait_hist);
        c.longest_wait = longest_wait(&skel.maps.longest_waits)?;
        Ok(c)
    }
}

/// The longest of the per-CPU `longest_waits` (wait.bpf.c); None if no task
/// waited.
fn longest_wait(map: &dyn MapCore) -> Result<Option<LongestWait>> {
    let per_cpu = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .context("reading longest_waits")?
        .unwrap_or_default();
    Ok(per_cpu
        .iter()
        .filter_map(|v| parse_longest_wait(v))
        .fold(None, |a, b| LongestWait::longer(a, Some(b))))
}

/// One CPU's struct longest_wait from its bytes; None if it holds no wait.
fn parse_longest_wait(bytes: &[u8]) -> Option<LongestWait> {
    use bpf_intf::longest_wait as W;
    if bytes.len() < std::mem::size_of::<W>() {
        return None;
    }
    let at = |off: usize, n: usize| &bytes[off..off + n];
    let us = u64::from_ne_bytes(at(std::mem::offset_of!(W, us), 8).try_into().ok()?);
    let pid = i32::from_ne_bytes(at(std::mem::offset_of!(W, pid), 4).try_into().ok()?);
    let comm = at(
        std::mem::offset_of!(W, comm),
        bpf_intf::mosaic_limits_MAX_COMM as usize,
    );
    let len = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    (us > 0).then(|| LongestWait {
        us,
        pid,
        comm: String::from_utf8_lossy(&comm[..len]).into_owned(),
    })
}

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

/// One slot of bandwidth.bpf.c's `bw_cgroups` table, from its bytes (the
/// leading u64 fields of struct bw_cgroup, in order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BwSlot {
    pub cgid: u64,
    pub period_ns: u64,
    pub quota_ns: u64,
    pub throttled_at: u64,
    pub throttles: u64,
    pub throttled_ns: u64,
    pub burst_ns: u64,
}

impl BwSlot {
    /// The slot in @bytes; None if they are too short.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let word = |i: usize| {
            bytes
                .get(i * 8..i * 8 + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
        };
        Some(BwSlot {
            cgid: word(0)?,
            period_ns: word(1)?,
            quota_ns: word(2)?,
            throttled_at: word(7)?,
            throttles: word(8)?,
            throttled_ns: word(9)?,
            burst_ns: word(10)?,
        })
    }
}

/// The slots of `bw_cgroups` that hold an enforced limit now.
pub fn bw_slots(skel: &BpfSkel) -> Vec<BwSlot> {
    let Some(bss) = skel.maps.bss_data.as_ref() else {
        return Vec::new();
    };
    if bss.bw_nr_limited == 0 {
        return Vec::new();
    }
    (0..bss.bw_slots_seen)
        .filter_map(|i| {
            let bytes = skel
                .maps
                .bw_cgroups
                .lookup(&i.to_ne_bytes(), MapFlags::ANY)
                .ok()??;
            BwSlot::parse(&bytes)
        })
        .filter(|s| s.cgid != 0 && s.quota_ns != 0)
        .collect()
}

/// The cgroups bandwidth.bpf.c enforces a cpu.max limit on, with their
/// throttling; @paths names cgroup ids (group::scan_cgroups of the root).
pub fn bandwidth_limits(
    skel: &BpfSkel,
    paths: impl Fn() -> std::collections::BTreeMap<u64, String>,
) -> Vec<BandwidthMetrics> {
    let slots = bw_slots(skel);
    if slots.is_empty() {
        return Vec::new();
    }
    let names = paths();
    slots
        .into_iter()
        .map(|s| BandwidthMetrics {
            path: names.get(&s.cgid).cloned().unwrap_or_default(),
            cgroup_id: s.cgid,
            quota_us: s.quota_ns / 1000,
            period_us: s.period_ns / 1000,
            burst_us: s.burst_ns / 1000,
            throttles: s.throttles,
            throttled_ns: s.throttled_ns,
            throttled: Flag(s.throttled_at != 0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of a struct longest_wait, laid out as bindgen sees intf.h.
    fn longest_wait_bytes(us: u64, pid: i32, comm: &[u8]) -> Vec<u8> {
        let mut w: bpf_intf::longest_wait = unsafe { std::mem::zeroed() };
        w.us = us;
        w.pid = pid;
        for (d, s) in w.comm.iter_mut().zip(comm) {
            *d = *s as _;
        }
        let p = &w as *const _ as *const u8;
        unsafe { std::slice::from_raw_parts(p, std::mem::size_of_val(&w)) }.to_vec()
    }

    #[test]
    fn a_bw_slot_is_read_from_its_bytes() {
        let mut words = [0u64; 12];
        (words[0], words[1], words[2]) = (42, 100_000_000, 20_000_000);
        (words[7], words[8], words[9], words[10]) = (5, 3, 1_000, 7_000);
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let s = BwSlot::parse(&bytes).unwrap();
        assert_eq!(
            (s.cgid, s.period_ns, s.quota_ns, s.throttled_at),
            (42, 100_000_000, 20_000_000, 5)
        );
        assert_eq!((s.throttles, s.throttled_ns, s.burst_ns), (3, 1_000, 7_000));
        assert_eq!(BwSlot::parse(&bytes[..80]), None);
    }

    #[test]
    fn a_cpus_longest_wait_is_read_from_its_bytes() {
        let w = parse_longest_wait(&longest_wait_bytes(1_234, 77, b"kworker/u8:1")).unwrap();
        assert_eq!(
            (w.us, w.pid, w.task()),
            (1_234, 77, "kworker/u8:1[77]".into())
        );
        // a full 16-byte name has no NUL
        let w = parse_longest_wait(&longest_wait_bytes(5, 1, b"0123456789abcdef")).unwrap();
        assert_eq!(w.comm, "0123456789abcdef");
        // a CPU where nothing waited, and a short read
        assert_eq!(parse_longest_wait(&longest_wait_bytes(0, 0, b"")), None);
        assert_eq!(parse_longest_wait(&[1, 2, 3]), None);
    }
}
