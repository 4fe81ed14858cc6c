//! `mosaic-bench waits`: a runnable-wait tracer that measures every scheduler the same way.
//!
//! The BPF side (src/bpf/waits.bpf.c, built into a skeleton by build.rs) hooks the scheduler
//! tracepoints `sched_wakeup`, `sched_wakeup_new` and `sched_switch`: a wait runs from when a
//! task becomes runnable (woken, new, or switched out still runnable) to when it is switched
//! in, and lands in a per-CPU histogram of microseconds with 8 buckets per power of two
//! (`bucket_of()`), with the count and the longest
//! wait's task. This side loads it, waits for SIGINT/SIGTERM (or `--secs`), sums the CPUs and
//! prints one line:
//!
//! `@@WAITS count=N p50_us=P p99_us=Q max_us=M max_task=comm[pid]@@`
//!
//! (percentiles as [`percentile_us`] computes them; empty values when nothing waited).

use anyhow::{bail, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{MapCore, MapFlags, PrintLevel};
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[allow(clippy::all, dead_code, non_camel_case_types, non_snake_case, unused)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}

/// Buckets of the BPF histogram (NR_WAIT_BUCKETS in waits.bpf.c).
pub const NR_BUCKETS: usize = 240;
/// log2 of the buckets per power of two (WAIT_SUB_BITS in waits.bpf.c).
const SUB_BITS: u32 = 3;
/// Buckets per power of two, as a run records its wait measure.
pub const BUCKETS_PER_OCTAVE: u32 = 1 << SUB_BITS;
/// Length of a task's comm (TASK_COMM_LEN).
const COMM_LEN: usize = 16;
/// Byte offsets in waits.bpf.c's `struct wait_stats`: hist[NR_BUCKETS] (u64), count, max_ns
/// (u64), max_pid (u32), max_comm[16].
const OFF_COUNT: usize = NR_BUCKETS * 8;
const OFF_MAX_NS: usize = OFF_COUNT + 8;
const OFF_MAX_PID: usize = OFF_MAX_NS + 8;
const OFF_COMM: usize = OFF_MAX_PID + 4;
const STATS_LEN: usize = OFF_COMM + COMM_LEN;

/// The bucket of a wait of `us` µs, as waits.bpf.c's wait_bucket() computes it: below 8 µs
/// one bucket per µs; from 8 µs each power of two [2^e, 2^(e+1)) cut into 8 equal buckets;
/// the last bucket open-ended. The tests hold the Rust side's bounds to it.
#[cfg(test)]
fn bucket_of(us: u64) -> usize {
    let sub = 1u64 << SUB_BITS;
    if us < sub {
        return us as usize;
    }
    let e = 63 - us.leading_zeros();
    let b = (((e - SUB_BITS + 1) as u64) << SUB_BITS) + ((us >> (e - SUB_BITS)) & (sub - 1));
    (b as usize).min(NR_BUCKETS - 1)
}

/// The upper bound of bucket `b`, µs (exclusive: every wait in it is shorter); the last,
/// open-ended bucket has none (u64::MAX). At most 1/8 above any wait in the bucket from 8 µs
/// on, 1 µs above it below.
pub fn bucket_upper_us(b: usize) -> u64 {
    let sub = 1usize << SUB_BITS;
    if b >= NR_BUCKETS - 1 {
        return u64::MAX;
    }
    if b < sub {
        return b as u64 + 1;
    }
    let e = (b >> SUB_BITS) as u32 + SUB_BITS - 1;
    let m = (b & (sub - 1)) as u64;
    (sub as u64 + m + 1) << (e - SUB_BITS)
}

/// The waits of all CPUs together.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Waits {
    /// Waits by bucket of microseconds (`bucket_of()`).
    pub hist: Vec<u64>,
    pub count: u64,
    /// The longest wait, ns, and its task.
    pub max_ns: u64,
    pub max_pid: u32,
    pub max_comm: String,
}

fn u64_at(v: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(v[off..off + 8].try_into().unwrap())
}

impl Waits {
    /// Add one CPU's `struct wait_stats`, as the per-CPU map returns it.
    pub fn add_cpu(&mut self, v: &[u8]) -> Result<()> {
        if v.len() < STATS_LEN {
            bail!(
                "wait_stats value of {} bytes, expected at least {STATS_LEN}",
                v.len()
            );
        }
        self.hist.resize(NR_BUCKETS, 0);
        for (b, n) in self.hist.iter_mut().enumerate() {
            *n += u64_at(v, b * 8);
        }
        self.count += u64_at(v, OFF_COUNT);
        let max_ns = u64_at(v, OFF_MAX_NS);
        if max_ns > self.max_ns {
            self.max_ns = max_ns;
            self.max_pid = u32::from_ne_bytes(v[OFF_MAX_PID..OFF_MAX_PID + 4].try_into().unwrap());
            let comm = &v[OFF_COMM..OFF_COMM + COMM_LEN];
            let end = comm.iter().position(|&c| c == 0).unwrap_or(COMM_LEN);
            self.max_comm = String::from_utf8_lossy(&comm[..end]).into_owned();
        }
        Ok(())
    }

    /// The longest wait, whole microseconds (rounded down).
    pub fn max_us(&self) -> u64 {
        self.max_ns / 1000
    }

    /// The `@@WAITS ...@@` line. The task's comm has its whitespace (and the marker's `@`, `=`)
    /// replaced by `_`, so the line stays one word per field.
    pub fn line(&self) -> String {
        if self.count == 0 {
            return "@@WAITS count=0 p50_us= p99_us= max_us= max_task=@@".into();
        }
        let pct = |q| {
            percentile_us(&self.hist, q, self.max_us())
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        let comm: String = self
            .max_comm
            .chars()
            .map(|c| {
                if c.is_whitespace() || c.is_control() || "@=".contains(c) {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        format!(
            "@@WAITS count={} p50_us={} p99_us={} max_us={} max_task={comm}[{}]@@",
            self.count,
            pct(0.50),
            pct(0.99),
            self.max_us(),
            self.max_pid
        )
    }
}

/// The `q` quantile (0 < q ≤ 1) of the waits in histogram `hist` (`bucket_of()`), µs, as the
/// **upper bound of the bucket** that holds the wait of rank ⌈q·total⌉ (at least 1)
/// ([`bucket_upper_us`]): it overstates the true value by at most 1/8 from 8 µs on, by under
/// 1 µs below. No interpolation inside the bucket. The bound is capped at `max_us`, the
/// longest wait seen (no wait was longer), which also bounds the last, open-ended bucket.
/// None for an empty histogram.
///
/// Scheduler-side, scx_mosaic's own wait_p99_us is the upper edge of a log2 bucket (a power
/// of two): the true p99 lies in [edge/2, edge), so this figure lies in (edge/2, 9/8 edge].
pub fn percentile_us(hist: &[u64], q: f64, max_us: u64) -> Option<u64> {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((total as f64 * q).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    let b = hist
        .iter()
        .position(|&n| {
            seen += n;
            seen >= rank
        })
        .unwrap_or(hist.len() - 1);
    Some(bucket_upper_us(b).min(max_us))
}

/// libbpf's warnings while loading, for the one-line error (libbpf prints nothing itself).
static LIBBPF_WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn keep_warning(_level: PrintLevel, msg: String) {
    if let Ok(mut w) = LIBBPF_WARNINGS.lock() {
        w.push(msg);
    }
}

/// The first line libbpf warned with, usually the cause, or "". Its RLIMIT_MEMLOCK warning is
/// passed over: it comes first whenever the bump is refused, even where the kernel charges BPF
/// memory to the cgroup and the limit does not matter.
fn first_warning() -> String {
    LIBBPF_WARNINGS
        .lock()
        .ok()
        .and_then(|w| {
            w.iter()
                .flat_map(|m| m.lines())
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.contains("RLIMIT_MEMLOCK"))
                .map(|l| format!(" [{}]", l.chars().take(200).collect::<String>()))
        })
        .unwrap_or_default()
}

/// One line saying why the tracer could not start at `stage`.
fn load_error(stage: &str, e: libbpf_rs::Error) -> anyhow::Error {
    let hint = match e.kind() {
        libbpf_rs::ErrorKind::PermissionDenied => {
            "; needs root (CAP_BPF and CAP_PERFMON)".to_string()
        }
        _ if unsafe { libc::geteuid() } != 0 => "; not root: needs CAP_BPF and CAP_PERFMON".into(),
        _ => String::new(),
    };
    let msg = format!("{e:#}").replace('\n', " ");
    anyhow::anyhow!(
        "cannot {stage} the wait tracer: {msg}{hint}{}",
        first_warning()
    )
}

/// SIGINT and SIGTERM, blocked in this thread so that sigtimedwait() takes them.
fn block_stop_signals() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// Wait for a signal of `set` or for `deadline`, whichever comes first.
fn wait_for_stop(set: &libc::sigset_t, deadline: Option<Instant>) {
    loop {
        let left = match deadline {
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(l) if !l.is_zero() => l,
                _ => return,
            },
            None => Duration::from_secs(3600),
        };
        let ts = libc::timespec {
            tv_sec: left.as_secs() as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        };
        let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
        if sig == libc::SIGINT || sig == libc::SIGTERM {
            return;
        }
    }
}

/// Load and attach the tracer, trace until SIGINT/SIGTERM or `secs`, print the `@@WAITS` line.
/// `verbose`: leave libbpf's own messages on stderr.
pub fn run(secs: Option<f64>, verbose: bool) -> Result<()> {
    if let Some(s) = secs {
        if !(s.is_finite() && s > 0.0) {
            bail!("--secs takes a positive number of seconds");
        }
    }
    // before loading: a stop asked for meanwhile waits, pending, for sigtimedwait()
    let set = block_stop_signals();
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        bail!(
            "cannot load the wait tracer: this kernel has no BTF (/sys/kernel/btf/vmlinux \
             missing; it needs CONFIG_DEBUG_INFO_BTF)"
        );
    }
    if !verbose {
        libbpf_rs::set_print(Some((PrintLevel::Warn, keep_warning)));
    }
    let mut object = MaybeUninit::uninit();
    let open = skel::BpfSkelBuilder::default()
        .open(&mut object)
        .map_err(|e| load_error("open", e))?;
    let mut skel = open.load().map_err(|e| load_error("load", e))?;
    skel.attach().map_err(|e| load_error("attach", e))?;
    // only now: a wakeup stamped before sched_switch was traced is never cleared (waits.bpf.c)
    match skel.maps.bss_data.as_deref_mut() {
        Some(bss) => bss.armed = true,
        None => bail!("cannot arm the wait tracer: its .bss is not mapped"),
    }
    eprintln!("mosaic-bench waits: tracing; SIGINT or SIGTERM stops");
    let t0 = Instant::now();
    wait_for_stop(&set, secs.map(|s| t0 + Duration::from_secs_f64(s)));
    let per_cpu = skel
        .maps
        .wait_stats
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?
        .unwrap_or_default();
    let mut waits = Waits::default();
    for v in &per_cpu {
        waits.add_cpu(v)?;
    }
    println!("{}", waits.line());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One CPU's `struct wait_stats` bytes.
    fn cpu_bytes(hist: &[(usize, u64)], max_ns: u64, pid: u32, comm: &str) -> Vec<u8> {
        let mut v = vec![0u8; STATS_LEN + 4];
        let mut count = 0;
        for &(b, n) in hist {
            v[b * 8..b * 8 + 8].copy_from_slice(&n.to_ne_bytes());
            count += n;
        }
        v[OFF_COUNT..OFF_COUNT + 8].copy_from_slice(&count.to_ne_bytes());
        v[OFF_MAX_NS..OFF_MAX_NS + 8].copy_from_slice(&max_ns.to_ne_bytes());
        v[OFF_MAX_PID..OFF_MAX_PID + 4].copy_from_slice(&pid.to_ne_bytes());
        v[OFF_COMM..OFF_COMM + comm.len()].copy_from_slice(comm.as_bytes());
        v
    }

    #[test]
    fn the_layout_matches_the_bpf_struct() {
        // 240 u64 buckets, count, max_ns, a u32 pid, then 16 bytes of comm
        assert_eq!(
            (OFF_COUNT, OFF_MAX_NS, OFF_MAX_PID, OFF_COMM, STATS_LEN),
            (1920, 1928, 1936, 1940, 1956)
        );
        let src = include_str!("bpf/waits.bpf.c");
        assert!(src.contains(&format!("#define NR_WAIT_BUCKETS {NR_BUCKETS}")));
        assert!(src.contains(&format!("#define WAIT_SUB_BITS {SUB_BITS}")));
        assert!(src.contains(&format!("#define COMM_LEN {COMM_LEN}")));
    }

    #[test]
    fn buckets_tile_the_microseconds_each_at_most_an_eighth_wide() {
        // one per µs below 8, then 8 per power of two
        let firsts = [
            (0, 0),
            (7, 7),
            (8, 8),
            (9, 9),
            (15, 15),
            (16, 16),
            (17, 16),
            (18, 17),
        ];
        for (us, b) in firsts {
            assert_eq!(bucket_of(us), b, "{us} µs");
        }
        assert_eq!(
            (bucket_of(1000), bucket_upper_us(bucket_of(1000))),
            (63, 1024)
        );
        assert_eq!(bucket_of(1 << 20), 144);
        // contiguous: every bucket starts where the one before ends, and the bound of the
        // bucket that holds a wait is above it by at most 1/8 of it (1 µs below 8 µs)
        let mut lower = 0u64;
        for b in 0..NR_BUCKETS - 1 {
            let upper = bucket_upper_us(b);
            assert_eq!(bucket_of(lower), b, "bucket {b} starts at {lower}");
            assert_eq!(bucket_of(upper - 1), b, "bucket {b} ends before {upper}");
            assert!(
                upper - lower <= (lower / 8).max(1),
                "bucket {b}: [{lower}, {upper})"
            );
            lower = upper;
        }
        // the last one starts at 15 x 2^28 µs (67 minutes) and is open-ended
        assert_eq!(lower, 15 << 28);
        assert_eq!(bucket_of(lower), NR_BUCKETS - 1);
        assert_eq!(bucket_of(u64::MAX), NR_BUCKETS - 1);
        assert_eq!(bucket_upper_us(NR_BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn percentiles_are_bucket_upper_bounds_capped_at_the_max() {
        // 100 waits: 50 of 1 µs, 45 of 10 µs, 5 of 1000 µs
        let mut h = vec![0u64; NR_BUCKETS];
        h[bucket_of(1)] = 50;
        h[bucket_of(10)] = 45;
        h[bucket_of(1000)] = 5;
        assert_eq!(percentile_us(&h, 0.50, 5000), Some(2));
        assert_eq!(percentile_us(&h, 0.51, 5000), Some(11));
        assert_eq!(percentile_us(&h, 0.95, 5000), Some(11));
        assert_eq!(percentile_us(&h, 0.96, 5000), Some(1024));
        assert_eq!(percentile_us(&h, 0.99, 5000), Some(1024));
        // the longest wait caps the bound
        assert_eq!(percentile_us(&h, 0.99, 1010), Some(1010));
        assert_eq!(percentile_us(&h, 0.50, 1010), Some(2));
        // one wait: every quantile is its bucket
        let mut one = vec![0u64; NR_BUCKETS];
        one[bucket_of(100)] = 1;
        assert_eq!(percentile_us(&one, 0.01, u64::MAX), Some(104));
        assert_eq!(percentile_us(&one, 1.0, u64::MAX), Some(104));
        // the last, open-ended bucket: only the max bounds it
        let mut last = vec![0u64; NR_BUCKETS];
        last[NR_BUCKETS - 1] = 3;
        assert_eq!(percentile_us(&last, 0.5, u64::MAX), Some(u64::MAX));
        assert_eq!(
            percentile_us(&last, 0.5, 5_000_000_000),
            Some(5_000_000_000)
        );
        assert_eq!(percentile_us(&[0; NR_BUCKETS], 0.5, 10), None);
        assert_eq!(percentile_us(&[], 0.5, 10), None);
    }

    #[test]
    fn cpus_are_summed_and_the_longest_wait_keeps_its_task() {
        let mut w = Waits::default();
        w.add_cpu(&cpu_bytes(&[(0, 10), (20, 2)], 20_500, 41, "hackbench"))
            .unwrap();
        w.add_cpu(&cpu_bytes(
            &[(0, 5), (bucket_of(3000), 1)],
            3_999_999,
            7,
            "kworker/0:1 x",
        ))
        .unwrap();
        w.add_cpu(&cpu_bytes(&[], 0, 0, "")).unwrap();
        assert_eq!(w.count, 18);
        assert_eq!((w.hist[0], w.hist[20], w.hist[bucket_of(3000)]), (15, 2, 1));
        assert_eq!((w.max_ns, w.max_pid), (3_999_999, 7));
        assert_eq!(w.max_comm, "kworker/0:1 x");
        assert_eq!(w.max_us(), 3999);
        // p50: rank 9 of 18, bucket 0 → 1 µs; p99: rank 18 → 3000 µs's bucket, [2816, 3072)
        assert_eq!(
            w.line(),
            "@@WAITS count=18 p50_us=1 p99_us=3072 max_us=3999 max_task=kworker/0:1_x[7]@@"
        );
        assert!(w.add_cpu(&[0u8; 100]).is_err());
        assert_eq!(
            Waits::default().line(),
            "@@WAITS count=0 p50_us= p99_us= max_us= max_task=@@"
        );
    }
}
