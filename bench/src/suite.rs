//! What the suite runs: the scenarios (workload command lines at three sizes, and how to read
//! their output) and the schedulers (the kernel's default, scx_mosaic and its ablations, peers).

use std::collections::BTreeMap;

/// How big a run is: `Smoke` checks the pipeline (seconds), `Default` is `make bench` and its
/// FULL=1 matrix (sized for 2 host cores under TCG), `Full` is `mosaic-bench run --large`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Size {
    Smoke,
    Default,
    Full,
}

/// One benchmark scenario.
pub struct Scenario {
    pub name: &'static str,
    /// What it is, in the seeds' terms (shown in the report).
    pub title: &'static str,
    /// Workload command lines (guest shell) for Smoke, Default, Full (--large).
    pub cmd: [&'static str; 3],
    /// Metrics it reports, the first being the headline: (name, unit, higher is better).
    pub metrics: &'static [(&'static str, &'static str, bool)],
    /// Reads the metrics from the workload's output.
    pub parse: fn(&str) -> Option<BTreeMap<String, f64>>,
    /// In the default suite (else only in the matrix or when named).
    pub default: bool,
    /// In the FULL=1 matrix (every topology, the default schedulers).
    pub matrix: bool,
    /// Rough seconds per workload run at Default size (for the VM timeout).
    pub secs: f64,
}

impl Scenario {
    pub fn command(&self, size: Size) -> &'static str {
        match size {
            Size::Smoke => self.cmd[0],
            Size::Default => self.cmd[1],
            Size::Full => self.cmd[2],
        }
    }
    pub fn headline(&self) -> (&'static str, &'static str, bool) {
        self.metrics[0]
    }
}

/// The number after `key` on the last line containing `key` (e.g. "Time:" → 1.25).
fn num_after(out: &str, key: &str) -> Option<f64> {
    out.lines()
        .rev()
        .filter_map(|l| l.find(key).map(|i| &l[i + key.len()..]))
        .find_map(first_number)
}

/// The first decimal number in `s`.
fn first_number(s: &str) -> Option<f64> {
    let start = s.find(|c: char| c.is_ascii_digit())?;
    let tail = &s[start..];
    let end = tail
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(tail.len());
    tail[..end].parse().ok()
}

/// `key=value` pairs of the line starting with `prefix`, as numbers.
fn kv_line(out: &str, prefix: &str) -> Option<BTreeMap<String, f64>> {
    let line = out.lines().rev().find(|l| l.starts_with(prefix))?;
    let m: BTreeMap<String, f64> = line
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| v.parse().ok().map(|v| (k.to_string(), v)))
        .collect();
    (!m.is_empty()).then_some(m)
}

fn one(name: &str, v: Option<f64>) -> Option<BTreeMap<String, f64>> {
    v.map(|v| BTreeMap::from([(name.to_string(), v)]))
}

fn parse_hackbench(out: &str) -> Option<BTreeMap<String, f64>> {
    one("time", num_after(out, "Time:"))
}

fn parse_perf_time(out: &str) -> Option<BTreeMap<String, f64>> {
    one("time", num_after(out, "Total time:"))
}

fn parse_perf_pipe(out: &str) -> Option<BTreeMap<String, f64>> {
    let ops = out
        .lines()
        .rev()
        .filter(|l| l.contains("ops/sec"))
        .find_map(first_number)?;
    let mut m = one("ops", Some(ops))?;
    if let Some(us) = out
        .lines()
        .rev()
        .filter(|l| l.contains("usecs/op"))
        .find_map(first_number)
    {
        m.insert("usecs_per_op".into(), us);
    }
    Some(m)
}

fn parse_rr(out: &str) -> Option<BTreeMap<String, f64>> {
    let m = kv_line(out, "rr:")?;
    let mut r = one("trans", m.get("trans/s").copied())?;
    for k in ["p50_us", "p99_us"] {
        if let Some(v) = m.get(k) {
            r.insert(k.into(), *v);
        }
    }
    Some(r)
}

fn parse_schbench(out: &str) -> Option<BTreeMap<String, f64>> {
    let m = kv_line(out, "schbench:")?;
    m.contains_key("wakeup_p99_us").then_some(m)
}

/// Sum of "Total operations: N (X per second)" over the groups, and the slowest group's share
/// of the fastest's rate (fairness between the groups).
fn parse_sysbench_cg(out: &str) -> Option<BTreeMap<String, f64>> {
    let rates: Vec<f64> = out
        .lines()
        .filter(|l| l.contains("Total operations:"))
        .filter_map(|l| l.split_once('(').and_then(|(_, r)| first_number(r)))
        .collect();
    if rates.is_empty() {
        return None;
    }
    let max = rates.iter().cloned().fold(0.0, f64::max);
    let min = rates.iter().cloned().fold(f64::INFINITY, f64::min);
    let mut m = one("ops", Some(rates.iter().sum()))?;
    m.insert("fairness".into(), if max > 0.0 { min / max } else { 0.0 });
    Some(m)
}

/// late-cgroup: how close the CPU time of the weight-300 cgroup to the weight-100 one came to
/// 3:1, as the smaller of (ratio / 3, 3 / ratio): 1 is exact.
fn parse_late_cgroup(out: &str) -> Option<BTreeMap<String, f64>> {
    let line = out.lines().rev().find(|l| l.starts_with("late-cgroup:"))?;
    let light = first_number(line.split_once("light_usec=")?.1)?;
    let heavy = first_number(line.split_once("heavy_usec=")?.1)?;
    if light <= 0.0 || heavy <= 0.0 {
        return None;
    }
    let ratio = heavy / light;
    let mut m = one("weight_fit", Some((ratio / 3.0).min(3.0 / ratio)))?;
    m.insert("ratio".into(), ratio);
    Some(m)
}

/// Sum of the requests/s of every CSV row ("SET","12345.68",...) over the groups.
fn parse_redis(out: &str) -> Option<BTreeMap<String, f64>> {
    let rps: Vec<f64> = out
        .split(['\n', '\r'])
        .filter(|l| l.starts_with("\"SET\"") || l.starts_with("\"GET\""))
        .filter_map(|l| l.split(',').nth(1))
        .filter_map(|v| v.trim_matches('"').parse().ok())
        .collect();
    (!rps.is_empty()).then(|| BTreeMap::from([("rps".to_string(), rps.iter().sum())]))
}

/// stress-ng's bogo ops/s (real time) of the switch stressor.
fn parse_stress_switch(out: &str) -> Option<BTreeMap<String, f64>> {
    let line = out.lines().filter(|l| l.contains("] switch ")).find(|l| {
        l.split("] switch")
            .nth(1)
            .is_some_and(|r| r.split_whitespace().count() >= 6)
    })?;
    let f: Vec<f64> = line
        .split("] switch")
        .nth(1)?
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    one("ops", f.get(4).copied())
}

pub static SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "hackbench",
        title: "hackbench, process/socket mode (`-g 4 -l 200`, the `--loops` form)",
        cmd: [
            "hackbench -g 2 -l 20",
            "hackbench -g 4 -l 200",
            "hackbench -g 8 -l 400",
        ],
        metrics: &[("time", "s", false)],
        parse: parse_hackbench,
        default: true,
        matrix: true,
        secs: 6.0,
    },
    Scenario {
        name: "hackbench-pipe",
        title: "hackbench `-g 4 -f 20 --threads --pipe -s 100 -l 100`",
        cmd: [
            "hackbench -g 2 -f 20 --threads --pipe -s 100 -l 10",
            "hackbench -g 4 -f 20 --threads --pipe -s 100 -l 100",
            "hackbench -g 8 -f 20 --threads --pipe -s 100 -l 200",
        ],
        metrics: &[("time", "s", false)],
        parse: parse_hackbench,
        default: false,
        matrix: false,
        secs: 4.0,
    },
    Scenario {
        name: "messaging",
        title: "perf bench sched messaging `-g 2 -l 100`",
        cmd: [
            "perf bench sched messaging -g 1 -l 10",
            "perf bench sched messaging -g 2 -l 100",
            "perf bench sched messaging -g 4 -p -t -l 200",
        ],
        metrics: &[("time", "s", false)],
        parse: parse_perf_time,
        default: true,
        matrix: true,
        secs: 2.5,
    },
    Scenario {
        name: "pipe",
        title: "perf bench sched pipe `-T -l 20000` (two threads ping-ponging)",
        cmd: [
            "perf bench sched pipe -T -l 1000",
            "perf bench sched pipe -T -l 20000",
            "perf bench sched pipe -T -l 50000",
        ],
        metrics: &[("ops", "ops/s", true), ("usecs_per_op", "µs/op", false)],
        parse: parse_perf_pipe,
        default: true,
        matrix: true,
        secs: 1.5,
    },
    Scenario {
        name: "tcp-rr",
        title: "TCP request/response, 4 pairs, 1-byte messages (netperf TCP_RR workalike)",
        cmd: [
            "mosaic-bench rr --proto tcp --pairs 2 --secs 0.5",
            "mosaic-bench rr --proto tcp --pairs 4 --secs 3",
            "mosaic-bench rr --proto tcp --pairs 8 --secs 5",
        ],
        metrics: &[
            ("trans", "trans/s", true),
            ("p50_us", "µs p50", false),
            ("p99_us", "µs p99", false),
        ],
        parse: parse_rr,
        default: true,
        matrix: true,
        secs: 3.2,
    },
    Scenario {
        name: "udp-rr",
        title: "UDP request/response, 4 pairs, 1-byte messages (netperf UDP_RR workalike)",
        cmd: [
            "mosaic-bench rr --proto udp --pairs 2 --secs 0.5",
            "mosaic-bench rr --proto udp --pairs 4 --secs 3",
            "mosaic-bench rr --proto udp --pairs 8 --secs 5",
        ],
        metrics: &[
            ("trans", "trans/s", true),
            ("p50_us", "µs p50", false),
            ("p99_us", "µs p99", false),
        ],
        parse: parse_rr,
        default: false,
        matrix: false,
        secs: 3.2,
    },
    Scenario {
        name: "sysbench-cg",
        title: "sysbench memory in 4 cgroups × 4 threads, 3 s (seeds: 8 × 16)",
        cmd: [
            "sh $BENCH_DIR/sysbench-cg.sh 2 2 1",
            "sh $BENCH_DIR/sysbench-cg.sh 4 4 3",
            "sh $BENCH_DIR/sysbench-cg.sh 8 16 5",
        ],
        metrics: &[("ops", "ops/s", true), ("fairness", "min/max group", true)],
        parse: parse_sysbench_cg,
        default: true,
        matrix: true,
        secs: 3.5,
    },
    Scenario {
        name: "late-cgroup",
        title: "cpu.weight 300 against 100, busy loops; the 300 cgroup forked on CPU 0 of a busy machine",
        cmd: [
            "sh $BENCH_DIR/late-cgroup.sh 4 1",
            "sh $BENCH_DIR/late-cgroup.sh 8 4",
            "sh $BENCH_DIR/late-cgroup.sh 16 8",
        ],
        metrics: &[("weight_fit", "of 1:3 (1 exact)", true), ("ratio", "300:100 CPU", true)],
        parse: parse_late_cgroup,
        default: false,
        matrix: false,
        secs: 8.0,
    },
    Scenario {
        name: "schbench",
        title: "schbench workalike: 2 message threads × 4 workers, 200 µs requests, 3 s",
        cmd: [
            "mosaic-bench schbench --messengers 1 --workers 2 --secs 0.5",
            "mosaic-bench schbench --messengers 2 --workers 4 --secs 3",
            "mosaic-bench schbench --messengers 4 --workers 4 --secs 5",
        ],
        metrics: &[
            ("wakeup_p99_us", "µs wakeup p99", false),
            ("wakeup_p50_us", "µs wakeup p50", false),
            ("request_p99_us", "µs request p99", false),
            ("rps", "requests/s", true),
        ],
        parse: parse_schbench,
        default: true,
        matrix: true,
        secs: 3.5,
    },
    Scenario {
        name: "redis-cg",
        title: "redis-server + redis-benchmark (SET/GET, 8 clients) in each of 2 cgroups",
        cmd: [
            "sh $BENCH_DIR/redis-cg.sh 1 500 2",
            "sh $BENCH_DIR/redis-cg.sh 2 5000 8",
            "sh $BENCH_DIR/redis-cg.sh 4 20000 16",
        ],
        metrics: &[("rps", "requests/s", true)],
        parse: parse_redis,
        default: false,
        matrix: true,
        secs: 5.0,
    },
    Scenario {
        name: "stress-switch",
        title: "stress-ng --switch 4 (context switching through pipes), 3 s",
        cmd: [
            "stress-ng --switch 2 --timeout 1 --metrics-brief",
            "stress-ng --switch 4 --timeout 3 --metrics-brief",
            "stress-ng --switch 8 --timeout 5 --metrics-brief",
        ],
        metrics: &[("ops", "bogo ops/s", true)],
        parse: parse_stress_switch,
        default: false,
        matrix: false,
        secs: 3.5,
    },
];

pub fn scenario(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Which scheduler a run uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// The kernel's default (EEVDF): no sched_ext scheduler loaded.
    Kernel,
    /// scx_mosaic with these extra flags.
    Mosaic(&'static str),
    /// The baseline binary of an A/B between two builds ($MOSAIC_BASE_BIN, installed in the
    /// guest as BASE_BIN), with scx_mosaic's default flags.
    MosaicBase,
    /// A peer scheduler built from its crate (binary name) at the version PEER_VERSIONS pins.
    Peer(&'static str),
}

pub struct Sched {
    pub label: &'static str,
    pub kind: Kind,
    pub default: bool,
}

/// The A/A control's label: the default Mosaic again, last in each round (SCHEDS).
pub const AA_CONTROL: &str = "mosaic-aa";

/// The guest's name of the A/B baseline binary (Kind::MosaicBase).
pub const BASE_BIN: &str = "scx_mosaic_base";

pub static SCHEDS: &[Sched] = &[
    Sched {
        label: "eevdf",
        kind: Kind::Kernel,
        default: true,
    },
    Sched {
        label: "mosaic",
        kind: Kind::Mosaic(""),
        default: true,
    },
    // Seed 000's A/B against the default (--shared-runq auto: on the VM's machines, of at
    // most 8 CPUs, per-CPU queues with the kernel-like newidle balance, the seed's
    // baseline): Mosaic's shard design (the shard is a waking task's queue; the default
    // above 72 CPUs), and the seed's own design (tasks on their CPU's queue, the shards
    // index the waiters).
    Sched {
        label: "mosaic-shard",
        kind: Kind::Mosaic("--shared-runq=shard"),
        default: true,
    },
    Sched {
        label: "mosaic-seed-srq",
        kind: Kind::Mosaic("--shared-runq=seed"),
        default: true,
    },
    // In a VM's guest (the bench's VM included) --same-rq-pull's auto is on: this is its A/B
    // (it acts with --shared-runq=shard only).
    Sched {
        label: "mosaic-same-rq-off",
        kind: Kind::Mosaic("--shared-runq=shard --same-rq-pull=off"),
        default: false,
    },
    // The shard design's shard size, given explicitly (the default follows the machine's L2s).
    Sched {
        label: "mosaic-shard-1",
        kind: Kind::Mosaic("--shared-runq=shard --shard-size 1"),
        default: false,
    },
    Sched {
        label: "mosaic-shard-2",
        kind: Kind::Mosaic("--shared-runq=shard --shard-size 2"),
        default: false,
    },
    // The slice (--slice-us, default 20 ms) against the waits it makes under a crowd.
    Sched {
        label: "mosaic-slice-10ms",
        kind: Kind::Mosaic("--slice-us 10000"),
        default: false,
    },
    Sched {
        label: "mosaic-slice-5ms",
        kind: Kind::Mosaic("--slice-us 5000"),
        default: false,
    },
    // The lead bound's wait target: an eighth of the watchdog timeout, at most 500 ms
    // (tunables::wait_target_ns): 250 ms with a 2 s watchdog.
    Sched {
        label: "mosaic-watchdog-2s",
        kind: Kind::Mosaic("--timeout-ms 2000"),
        default: false,
    },
    Sched {
        label: "mosaic-no-l2-locality",
        kind: Kind::Mosaic("--no-l2-locality"),
        default: false,
    },
    Sched {
        label: "mosaic-no-prev-first",
        kind: Kind::Mosaic("--no-prev-first"),
        default: false,
    },
    Sched {
        label: "mosaic-no-overload-gate",
        kind: Kind::Mosaic("--no-overload-gate"),
        default: false,
    },
    Sched {
        label: "mosaic-no-llc-balance",
        kind: Kind::Mosaic("--no-llc-balance"),
        default: false,
    },
    Sched {
        label: "mosaic-no-cgroup-weights",
        kind: Kind::Mosaic("--no-cgroup-weights"),
        default: false,
    },
    Sched {
        label: "mosaic-no-wake-preempt",
        kind: Kind::Mosaic("--no-wake-preempt"),
        default: false,
    },
    Sched {
        label: "mosaic-no-wake-pair",
        kind: Kind::Mosaic("--no-wake-pair"),
        default: false,
    },
    // The overload gate's periodic scan (10 ms by default, also the LLC and periodic
    // balances' weighing) ten times less often: its timer's cost under a CPU-bound load.
    Sched {
        label: "mosaic-scan-100ms",
        kind: Kind::Mosaic("--overload-scan-us 100000"),
        default: false,
    },
    // A/B of two builds in one boot: another scx_mosaic binary ($MOSAIC_BASE_BIN, e.g.
    // `scripts/bench-binary <commit>`) beside the one measured.
    Sched {
        label: "mosaic-base",
        kind: Kind::MosaicBase,
        default: false,
    },
    Sched {
        label: "p2dq",
        kind: Kind::Peer("scx_p2dq"),
        default: true,
    },
    // scx's own default (/etc/default/scx: SCX_SCHEDULER=scx_cosmos), run as that service runs
    // it: no flags. Its defaults need nothing the VM lacks (perf events and their polling off,
    // CPU utilisation threshold 0: pure deadline mode); it enables, runs and unregisters
    // cleanly in the VM as is.
    Sched {
        label: "cosmos",
        kind: Kind::Peer("scx_cosmos"),
        default: true,
    },
    // No flags either, as a user runs it: its defaults (`--primary-domain auto`,
    // `--idle-resume-us 32`) need no flag in the VM; it enables, runs and unregisters cleanly.
    Sched {
        label: "flash",
        kind: Kind::Peer("scx_flash"),
        default: true,
    },
    Sched {
        label: "bpfland",
        kind: Kind::Peer("scx_bpfland"),
        default: true,
    },
    Sched {
        label: "rusty",
        kind: Kind::Peer("scx_rusty"),
        default: true,
    },
    Sched {
        label: "lavd",
        kind: Kind::Peer("scx_lavd"),
        default: true,
    },
    // The default Mosaic again, last in each round: an A/A control. A verdict against the
    // best peer holds only if the control gets the same (report.rs, cell_verdict()): two runs
    // of one binary in one round differ by as much as Mosaic and a peer may (identical
    // binaries got "ahead" verdicts against each other on sysbench-cg).
    Sched {
        label: AA_CONTROL,
        kind: Kind::Mosaic(""),
        default: true,
    },
];

/// The crates.io version each peer is built at: pinned, so that a matrix spread over several
/// machines (a boot's results merge into the page only with the same schedulers' builds, and
/// the VM runs too long to redo the whole page at once) builds the same peers every time.
pub const PEER_VERSIONS: &[(&str, &str)] = &[
    ("scx_p2dq", "1.1.4"),
    ("scx_cosmos", "1.1.7"),
    ("scx_flash", "1.1.4"),
    ("scx_bpfland", "1.1.4"),
    ("scx_rusty", "1.1.4"),
    ("scx_lavd", "1.1.4"),
];

/// The version PEER_VERSIONS pins for peer crate @krate.
pub fn peer_pin(krate: &str) -> Option<&'static str> {
    PEER_VERSIONS
        .iter()
        .find(|(k, _)| *k == krate)
        .map(|(_, v)| *v)
}

pub fn sched(label: &str) -> Option<&'static Sched> {
    SCHEDS.iter().find(|s| s.label == label)
}

impl Sched {
    /// The command line the guest runs ("" for the kernel's default).
    pub fn command(&self) -> String {
        match self.kind {
            Kind::Kernel => String::new(),
            Kind::Mosaic(flags) => format!("scx_mosaic --stats 0 {flags}").trim().to_string(),
            Kind::MosaicBase => format!("{BASE_BIN} --stats 0"),
            Kind::Peer(bin) => bin.to_string(),
        }
    }
    /// Crate name of a peer (same as its binary).
    pub fn peer_crate(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Peer(b) => Some(b),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_has_a_pinned_version() {
        for s in SCHEDS {
            if let Some(k) = s.peer_crate() {
                assert!(peer_pin(k).is_some(), "{k} has no pinned version");
            }
        }
        assert_eq!(peer_pin("scx_cosmos"), Some("1.1.7"));
        assert_eq!(peer_pin("scx_nonesuch"), None);
    }

    #[test]
    fn the_ab_baseline_runs_its_own_binary_by_label_only() {
        let base = sched("mosaic-base").unwrap();
        assert_eq!(base.command(), format!("{BASE_BIN} --stats 0"));
        assert_ne!(BASE_BIN, "scx_mosaic");
        assert!(
            !base.default,
            "the baseline needs MOSAIC_BASE_BIN: never in the default set"
        );
        assert_eq!(base.peer_crate(), None);
    }

    #[test]
    fn parsers_read_the_tools_output() {
        let hb = "Running in process mode with 2 groups\nTime: 1.256\n";
        assert_eq!(parse_hackbench(hb).unwrap()["time"], 1.256);
        let msg = "# 20 sender and receiver processes per group\n\n     Total time: 0.532 [sec]\n";
        assert_eq!(parse_perf_time(msg).unwrap()["time"], 0.532);
        let pipe =
            " Total time: 0.912 [sec]\n\n      45.612000 usecs/op\n          21923 ops/sec\n";
        let p = parse_perf_pipe(pipe).unwrap();
        assert_eq!(p["ops"], 21923.0);
        assert_eq!(p["usecs_per_op"], 45.612);
        let rr = "rr: proto=tcp pairs=4 trans/s=1234.5 p50_us=10.0 p99_us=99.5\n";
        assert_eq!(parse_rr(rr).unwrap()["trans"], 1234.5);
        let sb = "== group 1 ==\nTotal operations: 81 (100.5 per second)\n== group 2 ==\n\
                  Total operations: 80 (50.25 per second)\n";
        let s = parse_sysbench_cg(sb).unwrap();
        assert_eq!(s["ops"], 150.75);
        assert_eq!(s["fairness"], 0.5);
        let redis =
            "\"test\",\"rps\",\"avg\"\r\"SET\",\"1000.00\",\"0.1\"\n\"GET\",\"500.50\",\"0.2\"\n";
        assert_eq!(parse_redis(redis).unwrap()["rps"], 1500.5);
        let sw =
            "stress-ng: metrc: [6214] switch           261096      1.00      0.12      1.48    \
                  260994.51      163243.67\nstress-ng: metrc: [6214] switch              7672.44 \
                  nanosecs per context switch\n";
        assert_eq!(parse_stress_switch(sw).unwrap()["ops"], 260994.51);
        let lc = parse_late_cgroup("late-cgroup: light_usec=1000 heavy_usec=2400\n").unwrap();
        assert!((lc["weight_fit"] - 0.8).abs() < 1e-9 && lc["ratio"] == 2.4);
        let lc = parse_late_cgroup("late-cgroup: light_usec=1000 heavy_usec=6000\n").unwrap();
        assert!((lc["weight_fit"] - 0.5).abs() < 1e-9);
        assert!(parse_late_cgroup("late-cgroup: light_usec=0 heavy_usec=6000").is_none());
        assert!(parse_hackbench("garbage").is_none());
    }

    #[test]
    fn the_aa_control_runs_the_default_mosaic_and_nothing_else_is_one() {
        let aa: Vec<&str> = SCHEDS
            .iter()
            .filter(|s| s.kind == Kind::Mosaic("") && s.label != "mosaic")
            .map(|s| s.label)
            .collect();
        assert_eq!(aa, [AA_CONTROL]);
        assert_eq!(
            sched(AA_CONTROL).unwrap().command(),
            sched("mosaic").unwrap().command()
        );
        assert!(sched(AA_CONTROL).unwrap().default);
    }
}
