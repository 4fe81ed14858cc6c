//! `mosaic-sim report`: every seed claim as a distribution of paired A/B
//! runs (mechanism off vs on) on the seed's machine, written as
//! docs/sim-report.md.
//!
//! One claim = one `Claim` entry below. Each run is a fresh process (the
//! scheduler's globals are process state), via this same executable; run i
//! of both sides uses RNG seed base + i (and, where the seed's experiment
//! varied it, the i-th workload size), so the runs pair up. The change of
//! each pair is one sample; the row shows their median, a bootstrap 95 %
//! interval (stats.rs) and the verdict the interval supports. Every number
//! in the text is computed from the runs or from the cost model.
use crate::stats::{self, Spread, Verdict};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The report's options (`mosaic-sim report ...`), with their defaults.
#[derive(Debug, Clone)]
pub struct ReportOptions {
    /// --out: the Markdown written
    pub out: PathBuf,
    /// --vm-counters: the VM's counters for the sim-vs-VM section
    pub vm_counters: PathBuf,
    /// --runs: paired runs per claim (each side)
    pub runs_per_side: usize,
    /// --base-seed: RNG seed of run 0 (run i uses base + i)
    pub base_seed: u64,
    /// --jobs: simulations run at once
    pub jobs: usize,
    /// --claims-only: only the seed table (no BPF work, no sim-vs-VM)
    pub claims_only: bool,
    /// --verdicts-json: also write each row's verdict and spread as JSON
    pub verdicts_json: Option<PathBuf>,
}

/// The fewest paired runs a row may rest on.
pub const MIN_RUNS: usize = 7;
/// Paired runs per row by default.
pub const DEFAULT_RUNS: usize = 96;
/// Simulations at once by default (the project's machines have 2 cores).
pub const DEFAULT_JOBS: usize = 2;
/// A row whose interval straddles a verdict's edge (stats::verdict()'s
/// Undetermined) runs --runs more pairs, and again, up to this many times
/// --runs in all.
pub const MAX_RUNS_FACTOR: usize = 4;

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            out: "docs/sim-report.md".into(),
            vm_counters: "docs/sim-vm-counters.json".into(),
            runs_per_side: DEFAULT_RUNS,
            base_seed: 1,
            jobs: DEFAULT_JOBS,
            claims_only: false,
            verdicts_json: None,
        }
    }
}

impl ReportOptions {
    /// The options of `mosaic-sim report` (cli.rs), checked.
    pub fn from_args(a: &crate::cli::ReportArgs) -> Result<ReportOptions> {
        if a.runs < MIN_RUNS {
            bail!("--runs must be at least {MIN_RUNS}");
        }
        if a.jobs == 0 {
            bail!("--jobs must be at least 1");
        }
        Ok(ReportOptions {
            out: a.out.clone(),
            vm_counters: a.vm_counters.clone(),
            runs_per_side: a.runs,
            base_seed: a.base_seed,
            jobs: a.jobs,
            claims_only: a.claims_only,
            verdicts_json: a.verdicts_json.clone(),
        })
    }
}

/// Which number of the run's JSON the claim is about.
#[derive(Clone, Copy, PartialEq)]
enum Metric {
    /// completion_time_s: lower is better
    Time,
    /// workload.tps (transactions/s): higher is better
    Tps,
    /// workload.ops_per_sec: higher is better
    Ops,
    /// share of steal scans skipped, %: the change is on - off, in points
    SkippedPct,
}

impl Metric {
    /// The change's unit as the table writes it.
    fn change_unit(self) -> &'static str {
        if self == Metric::SkippedPct {
            " pts"
        } else {
            " %"
        }
    }

    /// One run's value as the table writes it.
    fn fmt(self, x: f64) -> String {
        match self {
            Metric::Time => format!("{x:.4} s"),
            Metric::Tps => format!("{x:.0} tps"),
            Metric::Ops => format!("{x:.0} ops/s"),
            Metric::SkippedPct => format!("{x:.0} % skipped"),
        }
    }
}

/// What a row is for.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// a test of the seed's claim
    Test,
    /// a cost-model constant was fitted to this row's off runs: shown, not
    /// counted as a reproduction
    Calibration,
    /// Mosaic's own design of the mechanism against the same baseline: what
    /// the default rests on, not a test of the seed's claim (not counted)
    Variant,
}

struct Claim {
    seed: &'static str,
    claim: &'static str,
    machine: &'static str,
    workload: &'static str,
    /// workload options varied over the runs (run i gets entry i mod len),
    /// as the seed's experiment varied them; empty: one size
    sizes: &'static [&'static str],
    /// the scheduler flags of the baseline (mechanism off) and of the
    /// mechanism (on)
    off: &'static [&'static str],
    on: &'static [&'static str],
    /// scheduler flags both sides get
    common: &'static [&'static str],
    /// cost-model overrides (--cost) of both sides, and of each side
    costs: &'static [&'static str],
    off_costs: &'static [&'static str],
    on_costs: &'static [&'static str],
    metric: Metric,
    /// a second metric whose paired change the note reports with its spread
    also: Option<Metric>,
    /// the seed's numbers: (off, on)
    seed_numbers: (f64, f64),
    /// the seed reported no significant difference
    seed_null: bool,
    seed_text: &'static str,
    /// how the scenario is scaled down from the seed's
    scaling: &'static str,
    role: Role,
    /// the counters behind the row, from the run pair nearest the median
    note: fn(&Value, &Value) -> String,
    /// why the verdict is what it is: the mechanism, in words (the numbers
    /// come from the runs); empty: nothing to add
    why: &'static str,
}

/// A claim's fields that most rows leave alone.
const CLAIM: Claim = Claim {
    seed: "",
    claim: "",
    machine: "",
    workload: "",
    sizes: &[],
    off: &[],
    on: &[],
    common: &[],
    costs: &[],
    off_costs: &[],
    on_costs: &[],
    metric: Metric::Time,
    also: None,
    seed_numbers: (0.0, 0.0),
    seed_null: false,
    seed_text: "",
    scaling: "",
    role: Role::Test,
    note: note_000,
    why: "",
};

fn c(v: &Value, k: &str) -> u64 {
    v["counters"][k].as_u64().unwrap_or(0)
}

fn f(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[*k]).as_f64().unwrap_or(0.0)
}

fn lock_ms(v: &Value) -> f64 {
    (f(v, &["lock_wait", "dsq_wait_s"]) + f(v, &["lock_wait", "rq_wait_s"])) * 1e3
}

fn migrations(v: &Value) -> u64 {
    v["migrations"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum::<u64>())
}

/// CPU time per transaction (µs) of a request/response run: every CPU's
/// busy time over the transactions.
fn cpu_per_tx_us(v: &Value) -> Option<f64> {
    let tx = v["workload"]["transactions"].as_f64()?;
    let busy = v["nr_cpus"].as_f64()?
        * v["cpu_utilisation"].as_f64()?
        * v["completion_time_s"].as_f64()?;
    Some(busy / tx * 1e6)
}

fn note_000(a: &Value, b: &Value) -> String {
    let rq = |v: &Value| v["lock_wait"]["rq_acquisitions"].as_u64().unwrap_or(0);
    let tx = match (cpu_per_tx_us(a), cpu_per_tx_us(b)) {
        (Some(x), Some(y)) => {
            let n = |v: &Value| {
                v["workload"]["transactions"]
                    .as_f64()
                    .unwrap_or(1.0)
                    .max(1.0)
            };
            format!(
                "; per transaction: CPU {x:.1} µs → {y:.1} µs, migrations {:.2} → {:.2}, lock wait {:.2} µs → {:.2} µs, BPF work {:.1} → {:.1} units",
                migrations(a) as f64 / n(a), migrations(b) as f64 / n(b),
                lock_ms(a) * 1e3 / n(a), lock_ms(b) * 1e3 / n(b),
                f(a, &["bpf_work", "kfunc_calls"]) / n(a) + f(a, &["bpf_work", "loop_iterations"]) / n(a),
                f(b, &["bpf_work", "kfunc_calls"]) / n(b) + f(b, &["bpf_work", "loop_iterations"]) / n(b),
            )
        }
        _ => String::new(),
    };
    format!(
        "off: shard_enqueues {}, cpu_enqueues {}, newidle_pulls {}, lock wait {:.2} ms; on: shard_enqueues {}, sibling pulls {}, seed_index_sets {}, seed_pulls_own {}, seed_pulls_sibling {}, cpu_enqueues {}, lock wait {:.2} ms; idle-while-runnable {:.2} ms → {:.2} ms; migrations {} → {}, rq lock acquisitions {} → {}; BPF work per callback {:.2} → {:.2}{tx}",
        c(a, "shard_enqueues"), c(a, "cpu_enqueues"), c(a, "newidle_pulls"), lock_ms(a),
        c(b, "shard_enqueues"), c(b, "shard_pulls_sibling"), c(b, "seed_index_sets"),
        c(b, "seed_pulls_own"), c(b, "seed_pulls_sibling"), c(b, "cpu_enqueues"), lock_ms(b),
        f(a, &["idle_while_runnable_s"]) * 1e3, f(b, &["idle_while_runnable_s"]) * 1e3,
        migrations(a), migrations(b), rq(a), rq(b),
        f(a, &["bpf_work", "per_callback"]), f(b, &["bpf_work", "per_callback"]),
    )
}

fn note_001(a: &Value, b: &Value) -> String {
    format!(
        "off: insert_direct_l2 {}, insert_direct_wide {}, insert_queued {}, wake_l2_idle {}, wake_llc_idle {}, rq lock wait {:.2} ms; on: insert_direct_l2 {}, insert_direct_wide {}, insert_queued {}, wake_l2_idle {}, wake_llc_idle {}, rq lock wait {:.2} ms; kernel-side queued (IPI) wakeups {} → {}",
        c(a, "insert_direct_l2"), c(a, "insert_direct_wide"), c(a, "insert_queued"),
        c(a, "wake_l2_idle"), c(a, "wake_llc_idle"),
        f(a, &["lock_wait", "rq_wait_s"]) * 1e3,
        c(b, "insert_direct_l2"), c(b, "insert_direct_wide"), c(b, "insert_queued"),
        c(b, "wake_l2_idle"), c(b, "wake_llc_idle"),
        f(b, &["lock_wait", "rq_wait_s"]) * 1e3,
        a["wakeups"]["queued_ipi"], b["wakeups"]["queued_ipi"],
    )
}

fn note_002(a: &Value, b: &Value) -> String {
    format!(
        "which rule placed each wakeup: prev_kept (seed 002's rule) {} → {}, wake_capacity (the capacity search) {} → {}, wake_sync (the pair rule, off on both sides) {} → {}; migrations {} → {} (seed: 999,364 → 0)",
        c(a, "prev_kept"), c(b, "prev_kept"),
        c(a, "wake_capacity"), c(b, "wake_capacity"),
        c(a, "wake_sync"), c(b, "wake_sync"),
        c(a, "migrations"), c(b, "migrations"),
    )
}

fn note_003(a: &Value, b: &Value) -> String {
    let overloaded = |v: &Value| {
        f(v, &["counters", "overload_ns"]) / 1e9 / f(v, &["completion_time_s"]).max(1e-12) * 100.0
    };
    format!(
        "off: steal_scans {}, skipped {}, hits {}; on: steal_scans {}, skipped {}, hits {}; the flag went up {} times (so it was cleared at least {} times in between) and was up {:.0} % of the run (off side: {} times, {:.0} %); tps {:.0} → {:.0}",
        c(a, "steal_scans"), c(a, "steal_scans_skipped"), c(a, "steal_hits"),
        c(b, "steal_scans"), c(b, "steal_scans_skipped"), c(b, "steal_hits"),
        c(b, "overload_sets"), c(b, "overload_sets").saturating_sub(1), overloaded(b),
        c(a, "overload_sets"), overloaded(a),
        f(a, &["workload", "tps"]), f(b, &["workload", "tps"]),
    )
}

fn note_004(a: &Value, b: &Value) -> String {
    let parts = |v: &Value| {
        v["group_balancer"]["groups"]
            .as_array()
            .map(|g| {
                g.iter()
                    .map(|x| {
                        x["partition"]
                            .as_i64()
                            .map_or("-".into(), |p| p.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    };
    format!(
        "mean exclusivity (share of a group's runtime inside its partition; unsettled: inside the partition it ran most in) {:.2} → {:.2}; partitions settled: [{}] → [{}]; wake_group_part {}, group_moves {}, group_queued {}, migrations {} → {}",
        f(a, &["group_balancer", "mean_exclusivity"]), f(b, &["group_balancer", "mean_exclusivity"]),
        parts(a), parts(b),
        c(b, "wake_group_part"), c(b, "group_moves"), c(b, "group_queued"),
        c(a, "migrations"), c(b, "migrations"),
    )
}

/// Seed 000's A/B: the baseline's flags (the kernel-like newidle balance) and
/// the shared runqueue as the seed built it (tasks stay on their CPU's queue,
/// the shards index the waiters). The rows name no flag themselves.
const SHARED_RUNQ_OFF: &[&str] = &["--shared-runq=off"];
const SHARED_RUNQ_ON: &[&str] = &["--shared-runq=seed"];
/// Mosaic's own shard design (the shard is a waking task's queue), the
/// variant rows' "on" side.
const SHARD_DESIGN_ON: &[&str] = &["--shared-runq=shard"];

/// A seed-000 row: the shared runqueue off vs on, note_000's counters.
const fn shared_runq(
    claim: &'static str,
    machine: &'static str,
    workload: &'static str,
    metric: Metric,
    seed_numbers: (f64, f64),
    seed_text: &'static str,
    scaling: &'static str,
) -> Claim {
    Claim {
        seed: "000",
        claim,
        machine,
        workload,
        off: SHARED_RUNQ_OFF,
        on: SHARED_RUNQ_ON,
        metric,
        seed_numbers,
        seed_text,
        scaling,
        ..CLAIM
    }
}

/// A variant row: Mosaic's shard design against the same baseline, on the
/// seed's hackbench.
const fn shard_design(
    claim: &'static str,
    machine: &'static str,
    seed_numbers: (f64, f64),
    seed_text: &'static str,
    scaling: &'static str,
) -> Claim {
    Claim {
        on: SHARD_DESIGN_ON,
        role: Role::Variant,
        ..shared_runq(
            claim,
            machine,
            "hackbench:loops=100",
            Metric::Time,
            seed_numbers,
            seed_text,
            scaling,
        )
    }
}

/// The request/response rows' workload.
const UDP_RR: &str = "rr:clients=128,loops=150";
const UDP_RR_SCALING: &str =
    "128 request/response pairs, 150 transactions each (seed: 128 netperf for 60 s)";

/// Why seed 000's UDP_RR rows barely move in the model: the mechanism; the
/// sizes are in each row's counters.
const UDP_RR_WHY: &str = "in the seed's design a waking task stays on its CPU's own queue and the shard only indexes which CPUs have waiters (an atomic bit, no shard lock on the wakeup path), so a request/response pair keeps its CPUs and migrates about as rarely as with per-CPU queues; the seed put its loss on contention for the shard's lock, which its own patch took at every enqueue and which sched_ext's DSQs and this index do not reproduce";

const CLAIMS: &[Claim] = &[
    shared_runq(
        "shared runqueue: hackbench >10% faster on a 2-CCX 7950X",
        "ryzen-7950x",
        "hackbench:loops=100",
        Metric::Time,
        (2.2492, 2.0217),
        "NO_SHARED_RUNQ 2.2492 s, SHARED_RUNQ 2.0217 s",
        "--loops 100 instead of 10000 (10 groups x 20 fds, socket, processes)",
    ),
    shared_runq(
        "shared runqueue: hackbench +1.3% on Skylake 18c/36t",
        "skylake-18c",
        "hackbench:loops=100",
        Metric::Time,
        (5.3370, 5.2668),
        "NO_SHARED_RUNQ 5.3370 s, SHARED_RUNQ 5.2668 s",
        "--loops 100 instead of 10000",
    ),
    shared_runq(
        "shared runqueue: hackbench +2% on Milan 72",
        "milan-72",
        "hackbench:loops=100",
        Metric::Time,
        (5.2716, 5.1716),
        "NO_SHARED_RUNQ 5.2716 s, SHARED_RUNQ 5.1716 s",
        "--loops 100 instead of 10000",
    ),
    shard_design(
        "Mosaic's shard design: hackbench on a 2-CCX 7950X",
        "ryzen-7950x",
        (2.2492, 2.0217),
        "as the row of the seed's design",
        "--loops 100 instead of 10000 (10 groups x 20 fds, socket, processes)",
    ),
    shard_design(
        "Mosaic's shard design: hackbench on Skylake 18c/36t",
        "skylake-18c",
        (5.3370, 5.2668),
        "as the row of the seed's design",
        "--loops 100 instead of 10000",
    ),
    shard_design(
        "Mosaic's shard design: hackbench on Milan 72",
        "milan-72",
        (5.2716, 5.1716),
        "as the row of the seed's design",
        "--loops 100 instead of 10000",
    ),
    Claim {
        role: Role::Calibration,
        why: UDP_RR_WHY,
        ..shared_runq(
            "shared runqueue: netperf UDP_RR ~4.6% worse on Skylake (shard lock contention)",
            "skylake-18c",
            UDP_RR,
            Metric::Tps,
            (15699.32, 14966.42),
            "NO_SHARED_RUNQ 15699 tps, SHARED_RUNQ 14966 tps",
            UDP_RR_SCALING,
        )
    },
    Claim {
        why: UDP_RR_WHY,
        ..shared_runq(
            "shared runqueue: netperf UDP_RR ~4.5% worse on Milan",
            "milan-72",
            UDP_RR,
            Metric::Tps,
            (17482.03, 16697.25),
            "NO_SHARED_RUNQ 17482 tps, SHARED_RUNQ 16697 tps",
            UDP_RR_SCALING,
        )
    },
    Claim {
        seed_null: true,
        why: UDP_RR_WHY,
        ..shared_runq(
            "shared runqueue: netperf UDP_RR no difference on 7950X",
            "ryzen-7950x",
            UDP_RR,
            Metric::Tps,
            (25037.45, 24952.50),
            "NO_SHARED_RUNQ 25037 tps, SHARED_RUNQ 24952 tps (not significant)",
            UDP_RR_SCALING,
        )
    },
    Claim {
        seed: "001",
        claim: "L2-scoped wakeups: hackbench -g 32 -f 20 --threads --pipe 30% faster on 2x EPYC 9654 (what sched_ext can express: Mosaic's own direct insertion and idle search scoped to the L2)",
        machine: "epyc-9654x2-smt",
        workload: "hackbench:fds=20,threads=1,mode=pipe,loops=200",
        sizes: &["groups=16", "groups=24", "groups=32", "groups=40"],
        off: &["--no-l2-locality"],
        seed_numbers: (49.0, 34.0),
        seed_text: "49 s → 34 s (perf bench sched messaging -g 32 -p -t: 10.9 s → 7.4 s)",
        scaling: "-l 200 instead of 480000; the number of groups varied over the runs, as the seed says its effect depends on it",
        note: note_001,
        why: "the seed changed the kernel's ttwu_queue_cond (rq-lock wakeup vs queued wakeup), which no sched_ext scheduler can change; Mosaic scopes only its own direct insertion and idle search to the L2, and on Zen 4 an L2 is one core (2 SMT threads), so few wakeups change path",
        ..CLAIM
    },
    Claim {
        seed: "001",
        claim: "L2-scoped wakeups, the seed's kernel change itself (what sched_ext cannot express: the simulator's model of the kernel's ttwu_queue_cond, LLC vs L2 boundary, under Mosaic's default)",
        machine: "epyc-9654x2-smt",
        workload: "hackbench:fds=20,threads=1,mode=pipe,loops=200",
        sizes: &["groups=16", "groups=24", "groups=32", "groups=40"],
        off_costs: &["ttwu_boundary=llc"],
        on_costs: &["ttwu_boundary=l2"],
        seed_numbers: (49.0, 34.0),
        seed_text: "49 s → 34 s",
        scaling: "as the row above; --cost ttwu_boundary=llc vs l2 (the kernel's wakeup path, not the scheduler)",
        note: note_001,
        why: "the kernel model charges a queued wakeup its wake-list cost and the IPI's delay, and a direct wakeup its rq-lock acquisition (hold, queueing, one line transfer from the last holder); the seed's gain came from the runqueue lock and lines bouncing between CCXs under contention, which one transfer per acquisition may undercount (unverified)",
        ..CLAIM
    },
    Claim {
        seed: "002",
        claim: "prev first on big.LITTLE: perf bench sched pipe -T, migrations 999,364 → 0, +22% ops/s (pair started on the big cluster)",
        machine: "hikey960",
        workload: "pipe:loops=5000,start=4",
        off: &["--no-prev-first"],
        common: &["--no-wake-pair"],
        metric: Metric::Ops,
        seed_numbers: (149313.0, 182587.0),
        seed_text: "149,313 → 182,587 ops/s; migrations 999,364 → 0",
        scaling: "-l 5000 instead of 50000; the pair starts on CPUs 4-5 (A73); both sides --no-wake-pair (Mosaic's pair rule, checked before prev, would otherwise place the pair itself), so the A/B toggles the seed's prev check alone",
        note: note_002,
        ..CLAIM
    },
    Claim {
        seed: "002",
        claim: "prev first on big.LITTLE: same, pair started on the LITTLE cluster",
        machine: "hikey960",
        workload: "pipe:loops=5000",
        off: &["--no-prev-first"],
        common: &["--no-wake-pair"],
        metric: Metric::Ops,
        seed_numbers: (149313.0, 182587.0),
        seed_text: "149,313 → 182,587 ops/s; migrations 999,364 → 0",
        scaling: "-l 5000 instead of 50000; the pair starts on CPUs 0-1 (A53); both sides --no-wake-pair",
        note: note_002,
        why: "prev first keeps the pair on the A53s it started on, while without it the first-fit capacity search also lands on the A73s; the model charges a small cache refill per migration and no idle-state exit latency, so the faster cores win",
        ..CLAIM
    },
    Claim {
        seed: "003",
        claim: "overload gate: 75% of load-balance attempts before idling eliminated, request/response at half load",
        machine: "xeon-4s",
        workload: "rr:clients=96,loops=500,sync=0,server_ns=100000,hogs=128,hog_us=3000,hog_every_us=20000",
        off: &["--no-overload-gate"],
        common: &["--shared-runq=shard"],
        costs: &["balance_scan_ns=130000"],
        metric: Metric::SkippedPct,
        also: Some(Metric::Tps),
        seed_numbers: (0.0, 75.0),
        seed_text: "75% of idle balance attempts eliminated; a full balance cost 0.13 ms against 0.1 ms of work per request",
        scaling: "client/server pairs for half the CPUs (the seed's server busy on half of them), the seed's 0.1 ms of server work per request (server_ns), wakeups without WF_SYNC (the seed's clients send from the network); busy loops (hogs) wake together every hog_every_us for hog_us, so tasks wait now and then and the flag rises and falls, chosen before any run and not tuned to the result; every balance attempt not skipped costs the seed's measured 0.13 ms (--cost balance_scan_ns: an input from the seed, not fitted); both sides --shared-runq=shard, whose cross-LLC steal scans are the idle balance the gate skips and counts one by one (with the default per-CPU queues it skips the newidle balance: newidle_skips_overload)",
        note: note_003,
        why: "",
        ..CLAIM
    },
    Claim {
        seed: "004",
        claim: "group balancer: sysbench memory +25% on a 128-CPU ARM64, 8 partitions",
        machine: "arm64-128-cl",
        workload: "memgroups:groups=8,threads=16,work_ms=200,sleep_us=200,interleave=1,ws_kb=1,shared=1",
        off: &["--no-group-balancer"],
        common: &["--gb-parent=sim", "--gb-partitions=0-15;16-31;32-47;48-63;64-79;80-95;96-111;112-127", "--gb-period-ms=20"],
        seed_numbers: (1.25, 1.0),
        seed_text: "throughput +25% (as run time 1.25 → 1.0)",
        scaling: "8 cgroups x 16 threads as the seed's, 200 x 1 ms chunks of sysbench memory's default event (1 KiB written to the group's one buffer under its mutex) with 0.2 ms sleeps, threads of the groups interleaved over the CPUs at start; 8 partitions = the 8 clusters; settle period 20 ms",
        note: note_004,
        why: "sysbench's default global scope makes a group's threads write one mutex, its counters and one buffer; each line transfer costs the latency from where the group's other threads run, and settled groups write inside their cluster. The model charges each transfer's latency, not the queueing of 16 writers on one mutex, and its cross-cluster latency is the x86 cross-LLC figure, not measured on the seed's ARM part",
        ..CLAIM
    },
];

/// Every run of a row scales each workload step's CPU time by a factor
/// drawn from its RNG seed in [1 - this, 1 + this] (cost.rs step_jitter):
/// without it the seed reaches only bpf_get_prandom_u32() and most rows
/// would run the same trajectory for every seed.
pub const STEP_JITTER: f64 = 0.05;

/// RNG seeds per machine and workload of the BPF work table (and of its test in
/// sim/tests/sim.rs): one run's figure moves with the seed by a few percent.
pub const WORK_SEEDS: u64 = 7;

/// One simulation: claim @claim, run @run, side @on.
#[derive(Clone, Copy)]
struct Job {
    claim: usize,
    run: usize,
    on: bool,
}

/// The command line of @job.
fn job_args(o: &ReportOptions, job: Job, out: &Path) -> Vec<String> {
    let cl = &CLAIMS[job.claim];
    let mut workload = cl.workload.to_string();
    if !cl.sizes.is_empty() {
        workload = format!("{workload},{}", cl.sizes[job.run % cl.sizes.len()]);
    }
    let mut a: Vec<String> = vec![
        "--machine".into(),
        cl.machine.into(),
        "--workload".into(),
        workload,
        "--seed".into(),
        (o.base_seed + job.run as u64).to_string(),
        "--json".into(),
        out.display().to_string(),
    ];
    let (flags, costs) = if job.on {
        (cl.on, cl.on_costs)
    } else {
        (cl.off, cl.off_costs)
    };
    for fl in cl.common.iter().chain(flags) {
        a.push(format!("--sched-arg={fl}"));
    }
    a.push("--cost".into());
    a.push(format!("step_jitter={STEP_JITTER}"));
    for k in cl.costs.iter().chain(costs) {
        a.push("--cost".into());
        a.push(k.to_string());
    }
    a
}

/// Runs @exe with @args, writing @out; the JSON, or why not.
pub(crate) fn run_sim(exe: &Path, args: &[String], out: &Path) -> Result<Value> {
    let st = Command::new(exe)
        .args(args)
        .output()
        .context("running mosaic-sim")?;
    if !out.exists() {
        bail!("{}", String::from_utf8_lossy(&st.stderr).trim());
    }
    let v: Value = serde_json::from_str(&std::fs::read_to_string(out)?)?;
    if !st.status.success() {
        bail!(
            "run failed: exit {} invariants {}",
            v["exit"],
            v["invariants"]
        );
    }
    Ok(v)
}

/// BPF work per callback (`bpf_work`, kfunc calls + loop iterations) of @workload on
/// @machine, with the bare-metal flags and @sched_args: one run per RNG seed of
/// @seed..@seed+WORK_SEEDS, with the seed rows' step jitter, in seed order; and the last
/// run's JSON (the machine's facts). The runs' JSON goes to @dir, named after @tag.
pub fn bpf_work_runs(
    exe: &Path,
    dir: &Path,
    tag: &str,
    machine: &str,
    workload: &str,
    sched_args: &[&str],
    seed: u64,
) -> Result<(Vec<f64>, Value)> {
    let mut runs = Vec::new();
    let mut last = Value::Null;
    for s in seed..seed + WORK_SEEDS {
        let out = dir.join(format!("{tag}-s{s}.json"));
        let mut args: Vec<String> = ["--machine", machine, "--workload", workload, "--seed"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        args.push(s.to_string());
        args.push(format!("--cost=step_jitter={STEP_JITTER}"));
        args.push(crate::machine::BARE_METAL_SCHED_ARG.to_string());
        args.extend(sched_args.iter().map(|a| format!("--sched-arg={a}")));
        args.push("--json".to_string());
        args.push(out.display().to_string());
        last = run_sim(exe, &args, &out).with_context(|| format!("{machine} {workload}"))?;
        runs.push(
            last["bpf_work"]["per_callback"]
                .as_f64()
                .unwrap_or(f64::NAN),
        );
    }
    Ok((runs, last))
}

/// Runs every (command line, JSON path) of @runs, @jobs at once; the
/// results in their order.
pub(crate) fn run_many(
    exe: &Path,
    jobs: usize,
    runs: &[(Vec<String>, PathBuf)],
) -> Vec<Result<Value>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Value>>>> =
        Mutex::new((0..runs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, runs.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((args, out)) = runs.get(i) else {
                    break;
                };
                let r = run_sim(exe, args, out);
                results.lock().unwrap()[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(anyhow::anyhow!("not run"))))
        .collect()
}

/// Runs every job of the seed table, o.jobs at once; results in the order
/// of @list.
fn run_all(exe: &Path, dir: &Path, o: &ReportOptions, list: &[Job]) -> Vec<Result<Value>> {
    let runs: Vec<(Vec<String>, PathBuf)> = list
        .iter()
        .map(|&job| {
            let out = dir.join(format!(
                "claim{}-run{}-{}.json",
                job.claim,
                job.run,
                if job.on { "on" } else { "off" }
            ));
            (job_args(o, job, &out), out)
        })
        .collect();
    run_many(exe, o.jobs, &runs)
}

fn metric(v: &Value, m: Metric) -> f64 {
    match m {
        Metric::Time => v["completion_time_s"].as_f64().unwrap_or(f64::NAN),
        Metric::Tps => v["workload"]["tps"].as_f64().unwrap_or(f64::NAN),
        Metric::Ops => v["workload"]["ops_per_sec"].as_f64().unwrap_or(f64::NAN),
        Metric::SkippedPct => {
            let (done, skipped) = (c(v, "steal_scans"), c(v, "steal_scans_skipped"));
            skipped as f64 * 100.0 / (done + skipped).max(1) as f64
        }
    }
}

/// Relative gain of "on" over "off" (positive: the mechanism helps).
fn gain(m: Metric, off: f64, on: f64) -> f64 {
    match m {
        Metric::Time => (off - on) / off * 100.0,
        Metric::Tps | Metric::Ops => (on - off) / off * 100.0,
        Metric::SkippedPct => on - off,
    }
}

/// A row's result: the spread of its paired changes and what it says.
struct Outcome {
    spread: Spread,
    verdict: Verdict,
    /// the pair nearest the median change
    mid: (Value, Value),
    /// the off runs (for the fit in the text)
    offs: Vec<Value>,
    /// the median of the row's metric over each side's runs
    medians: (f64, f64),
    /// the second metric's spread
    also: Option<Spread>,
}

/// The paired changes in metric @m of runs @offs / @ons.
fn changes(m: Metric, offs: &[Value], ons: &[Value]) -> Vec<f64> {
    offs.iter()
        .zip(ons)
        .map(|(a, b)| gain(m, metric(a, m), metric(b, m)))
        .collect()
}

/// What the spread @s of claim @cl's changes says about the seed's claim.
fn claim_verdict(cl: &Claim, s: &Spread) -> Verdict {
    let seed_gain = gain(cl.metric, cl.seed_numbers.0, cl.seed_numbers.1);
    stats::verdict(seed_gain, cl.seed_null, s)
}

/// The paired changes of claim @cl from its runs @offs / @ons.
fn outcome(cl: &Claim, offs: Vec<Value>, ons: Vec<Value>) -> Outcome {
    let changes = changes(cl.metric, &offs, &ons);
    let spread = stats::spread(&changes);
    let mid = (0..changes.len())
        .min_by(|&i, &j| {
            (changes[i] - spread.median)
                .abs()
                .total_cmp(&(changes[j] - spread.median).abs())
        })
        .unwrap_or(0);
    let also = cl
        .also
        .map(|m| stats::spread(&self::changes(m, &offs, &ons)));
    let side_median = |runs: &[Value]| median_of(runs.iter().map(|v| metric(v, cl.metric)));
    Outcome {
        verdict: claim_verdict(cl, &spread),
        medians: (side_median(&offs), side_median(&ons)),
        mid: (offs[mid].clone(), ons[mid].clone()),
        spread,
        offs,
        also,
    }
}

/// The change cell: median [interval] (n), in the row's unit.
fn change_cell(s: &Spread, unit: &str) -> String {
    format!(
        "{:+.1}{unit} [{:+.1}, {:+.1}] (n = {})",
        s.median, s.lo, s.hi, s.n
    )
}

/// The verdict cell of a row.
fn verdict_cell(cl: &Claim, v: Verdict) -> String {
    match cl.role {
        Role::Test if v.reproduces() => v.label().to_string(),
        Role::Test => format!("**{}**", v.label()),
        Role::Calibration => format!("calibration (the interval alone: {})", v.label()),
        Role::Variant => VARIANT_CELL.to_string(),
    }
}

/// The verdict cell of a variant row; the text checker skips it.
const VARIANT_CELL: &str = "Mosaic's design: no verdict, not counted";

/// Tally line of the verdicts over the test rows; the text checker reads it.
const TALLY_PREFIX: &str = "Verdicts over the rows that test a claim:";

pub fn main(args: &crate::cli::ReportArgs) -> Result<()> {
    let o = ReportOptions::from_args(args)?;
    let exe = std::env::current_exe()?;
    let dir = tempfile_dir()?;
    let started = std::time::Instant::now();
    // each claim's runs so far: off side, on side, the first error
    let mut runs: Vec<(Vec<Value>, Vec<Value>, Option<anyhow::Error>)> = CLAIMS
        .iter()
        .map(|_| (Vec::new(), Vec::new(), None))
        .collect();
    let mut todo: Vec<usize> = (0..CLAIMS.len()).collect();
    let mut simulations = 0;
    for round in 0..MAX_RUNS_FACTOR {
        let first = round * o.runs_per_side;
        let mut jobs = Vec::new();
        for &claim in &todo {
            for run in first..first + o.runs_per_side {
                for on in [false, true] {
                    jobs.push(Job { claim, run, on });
                }
            }
        }
        simulations += jobs.len();
        let mut results = run_all(&exe, &dir, &o, &jobs).into_iter();
        for &claim in &todo {
            let (offs, ons, err) = &mut runs[claim];
            for _ in 0..o.runs_per_side {
                for on in [false, true] {
                    match results.next().expect("one result per job") {
                        Ok(v) if on => ons.push(v),
                        Ok(v) => offs.push(v),
                        Err(e) => *err = err.take().or(Some(e)),
                    }
                }
            }
        }
        // a row whose interval straddles a verdict's edge runs more pairs
        todo.retain(|&c| {
            let (cl, (offs, ons, err)) = (&CLAIMS[c], &runs[c]);
            cl.role != Role::Variant
                && err.is_none()
                && claim_verdict(cl, &stats::spread(&changes(cl.metric, offs, ons)))
                    == Verdict::Undetermined
        });
        if todo.is_empty() {
            break;
        }
    }
    let outcomes: Vec<Result<Outcome>> = CLAIMS
        .iter()
        .zip(runs)
        .map(|(cl, (offs, ons, err))| match err {
            Some(e) => Err(e),
            None => Ok(outcome(cl, offs, ons)),
        })
        .collect();
    let md = render(&o, &exe, &dir, &outcomes)?;
    check_text_against_tables(&md).context("the report's text disagrees with its tables")?;
    if let Some(p) = &o.verdicts_json {
        // the rows that test a claim (a variant row has no verdict)
        let rows: Vec<Value> = CLAIMS
            .iter()
            .zip(&outcomes)
            .filter(|(cl, _)| cl.role != Role::Variant)
            .map(|(cl, r)| match r {
                Ok(x) => serde_json::json!({"claim": cl.claim, "machine": cl.machine, "verdict": x.verdict,
                    "median": x.spread.median, "lo": x.spread.lo, "hi": x.spread.hi, "n": x.spread.n}),
                Err(e) => serde_json::json!({"claim": cl.claim, "machine": cl.machine, "error": e.to_string()}),
            })
            .collect();
        std::fs::write(p, serde_json::to_string_pretty(&rows)? + "\n")?;
    }
    if let Some(p) = o.out.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(&o.out, md)?;
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "mosaic-sim report: wrote {} ({} simulations, {:.0} s)",
        o.out.display(),
        simulations,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The whole Markdown report from the rows' @outcomes.
fn render(
    o: &ReportOptions,
    exe: &Path,
    dir: &Path,
    outcomes: &[Result<Outcome>],
) -> Result<String> {
    let mut md = String::new();
    writeln!(md, "# mosaic-sim: the seeds' claims, simulated\n")?;
    writeln!(
        md,
        "Generated by `make sim-report` (`mosaic-sim report`). Each claim runs as paired A/B runs on \
         the seed's machine: the scheduler's own BPF code with the mechanism off (its flag) and on, \
         {n} runs per side, and {n} more at a time, up to {most}, for a row whose interval straddles a \
         verdict's edge (its n says how many); run i of both sides uses RNG seed {b} + i (and, where the seed varied the \
         workload's size, the i-th size), so each pair gives one change; the seed scales each \
         workload step's CPU time by a factor drawn in [1 − {j}, 1 + {j}] (`--cost step_jitter={j}`), \
         as a step's time varies from call to call on a real machine. The table shows the median \
         change, a {lvl:.0} % percentile-bootstrap interval of the median ({rs} resamples, fixed \
         generator: `sim/src/stats.rs`) and n, and the median of each side's runs. Each verdict names \
         where the whole interval lies, against a band of ±{eq} around zero (% or points: under half the \
         smallest change a seed claims) and the seed's change S: **yes** when it lies beyond the band and \
         beyond S/{k:.0}, within {k:.0}S, in the seed's direction; **direction yes, over {k:.0}x the seed's \
         change** when it lies beyond {k:.0}S; **no (under a third of the seed's change)** when its upper \
         end (in the seed's direction) is under S/{k:.0}, or under the band's edge where S/{k:.0} is \
         smaller, and it does not reach past the band the other way, so that a change far below the \
         seed's gets this verdict whether or not it clears the band; **no (the other way)** when it lies beyond the band the other way; for a seed that \
         saw no difference, **yes** when the interval lies inside the band; **undetermined** when it \
         still straddles one of these edges at {most} runs. Scenarios are scaled down; compare the *relative* change, not absolute \
         times. Costs: `sim/src/cost.rs`.\n",
        n = o.runs_per_side,
        most = o.runs_per_side * MAX_RUNS_FACTOR,
        b = o.base_seed,
        lvl = stats::LEVEL * 100.0,
        rs = stats::BOOTSTRAP_RESAMPLES,
        k = stats::SIZE_FACTOR,
        j = STEP_JITTER,
        eq = stats::EQUIVALENCE,
    )?;
    writeln!(
        md,
        "| seed | claim | machine | seed's numbers (off → on) | seed's change | simulated, median of each side (off → on) | simulated change: median [95 % interval] (n) | reproduced? |"
    )?;
    writeln!(md, "|---|---|---|---|---|---|---|---|")?;
    let mut details = String::new();
    let mut tally: Vec<(Verdict, Vec<&str>)> = Vec::new();
    for (cl, r) in CLAIMS.iter().zip(outcomes) {
        let seed_gain = gain(cl.metric, cl.seed_numbers.0, cl.seed_numbers.1);
        let unit = cl.metric.change_unit();
        match r {
            Ok(x) => {
                let cell = change_cell(&x.spread, unit);
                writeln!(
                    md,
                    "| {} | {} | `{}` | {} | {:+.1}{unit} | {} → {} | {cell} | {} |",
                    cl.seed,
                    cl.claim,
                    cl.machine,
                    cl.seed_text,
                    seed_gain,
                    cl.metric.fmt(x.medians.0),
                    cl.metric.fmt(x.medians.1),
                    verdict_cell(cl, x.verdict),
                )?;
                if cl.role == Role::Test {
                    match tally.iter_mut().find(|(v, _)| *v == x.verdict) {
                        Some((_, names)) => names.push(cl.claim),
                        None => tally.push((x.verdict, vec![cl.claim])),
                    }
                }
                let also = match (cl.also, &x.also) {
                    (Some(m), Some(s)) => format!(
                        "; {} change: {}",
                        if m == Metric::Tps {
                            "tps"
                        } else {
                            "second metric"
                        },
                        change_cell(s, m.change_unit())
                    ),
                    _ => String::new(),
                };
                let why = if cl.why.is_empty() {
                    String::new()
                } else {
                    format!(" Why: {}.", cl.why)
                };
                let sizes = if cl.sizes.is_empty() {
                    String::new()
                } else {
                    format!(", sizes {} in turn", cl.sizes.join(" / "))
                };
                writeln!(
                    details,
                    "- **{}** (`{}`, `{}`; {}; RNG seeds {}–{}{sizes}): change {cell}{also}; the pair nearest the median: {}.{why}",
                    cl.claim,
                    cl.machine,
                    cl.workload,
                    cl.scaling,
                    o.base_seed,
                    o.base_seed + x.spread.n as u64 - 1,
                    (cl.note)(&x.mid.0, &x.mid.1),
                )?;
            }
            Err(e) => {
                writeln!(
                    md,
                    "| {} | {} | `{}` | {} | {:+.1}{unit} | — | — | **not run**: {} |",
                    cl.seed,
                    cl.claim,
                    cl.machine,
                    cl.seed_text,
                    seed_gain,
                    e.to_string().lines().next().unwrap_or("").replace('|', "/")
                )?;
            }
        }
    }
    tally.sort_by_key(|(v, _)| *v as u8);
    let total: usize = tally.iter().map(|(_, n)| n.len()).sum();
    writeln!(
        md,
        "\n{TALLY_PREFIX} {total} rows. {}.\n",
        tally
            .iter()
            .map(|(v, names)| format!("{}: {}", v.label(), names.len()))
            .collect::<Vec<_>>()
            .join(" — ")
    )?;
    let calib: Vec<&str> = CLAIMS
        .iter()
        .filter(|c| c.role == Role::Calibration)
        .map(|c| c.claim)
        .collect();
    if !calib.is_empty() {
        writeln!(
            md,
            "Not counted: {} (a constant of the cost model was fitted to its off runs, see below).\n",
            calib.iter().map(|c| format!("*{c}*")).collect::<Vec<_>>().join(", ")
        )?;
    }
    let variants = CLAIMS.iter().filter(|c| c.role == Role::Variant).count();
    if variants > 0 {
        writeln!(
            md,
            "Not counted either: the {variants} rows of Mosaic's own shard design (`{}`: the shard is \
             a waking task's queue, so the first CPU of the shard to free runs it), against the same \
             baseline as the seed's design; they show what the default rests on.\n",
            SHARD_DESIGN_ON.join(" ")
        )?;
    }
    writeln!(
        md,
        "Seed 003's row compares the share of idle-time steal scans skipped (points), seed 004's run \
         time at equal work (its seed number is the +25% throughput as a time ratio).\n"
    )?;
    writeln!(md, "## Counters behind each row\n\n{details}")?;
    if !o.claims_only {
        bpf_work_section(&mut md, exe, dir, o.base_seed)?;
        let cells = crate::design::run(exe, dir, o.jobs, o.base_seed)?;
        let costs = crate::design::costs(exe, dir, o.base_seed)?;
        crate::design::section(&mut md, &cells, &costs)?;
        let t = std::time::Instant::now();
        crate::fidelity::section(&mut md, exe, dir, &o.vm_counters, o.base_seed)?;
        eprintln!(
            "mosaic-sim report: simulator against the VM in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    why_section(&mut md, outcomes)?;
    Ok(md)
}

/// Median over @vals (NaN-free values only).
fn median_of(vals: impl Iterator<Item = f64>) -> f64 {
    stats::median(&vals.filter(|x| x.is_finite()).collect::<Vec<_>>())
}

/// The model's limits and the UDP_RR fit, every number from the cost model
/// or from the rows' runs.
fn why_section(md: &mut String, outcomes: &[Result<Outcome>]) -> Result<()> {
    let k = crate::cost::Costs::default();
    writeln!(md, "\n## Why a row may not reproduce\n")?;
    writeln!(
        md,
        "The simulator charges the costs in `sim/src/cost.rs` and nothing else: no frequency scaling, no \
         memory model beyond LLC over-subscription and shared written lines, no interrupts or \
         kernel threads, and hackbench/netperf/sysbench are behavioural models (message counts, pipe \
         capacity, per-syscall CPU cost, lines written), not the real programs. BPF work is charged per \
         kfunc call and loop iteration ({:.0} ns each) on top of {:.0} ns per callback; context \
         switches ({:.1} µs), wakeups and lock holds are fixed nanoseconds on every machine, not scaled \
         by its clock. The baseline is Mosaic with the mechanism off, not CFS. Seed 000's is Mosaic's \
         model of CFS's newidle and periodic balance (`{}`: per-CPU queues; a CPU about to idle \
         pulls from the busiest queue of its LLC, then of the machine, only while the overload flag \
         is up (a balance that found every queue empty lowers it), its average idle time is at \
         least the migration cost and a domain's last balance cost less than that idle time; a busy CPU balances its LLC periodically by weighted load \
         averaged over the periodic scans, and busy LLCs by weighted load): the kernel's gates and \
         its periodic balance's rules for overloaded groups, but a count of queued tasks for \
         newidle's busiest queue, a share average folded every scan for PELT, and no group \
         imbalance rules beyond the LLC's.\n",
        k.bpf_work_ns,
        k.bpf_call_ns,
        k.ctx_switch_ns / 1e3,
        SHARED_RUNQ_OFF.join(" "),
    )?;
    let hb: Vec<String> = CLAIMS
        .iter()
        .zip(outcomes)
        .filter(|(c, _)| c.seed == "000" && c.metric == Metric::Time)
        .filter_map(|(c, r)| {
            let x = r.as_ref().ok()?;
            let mig = median_of(x.offs.iter().map(migrations).map(|m| m as f64));
            Some(format!(
                "`{}` {} (migrations of the median pair {} → {}; median off run {mig:.0})",
                c.machine,
                change_cell(&x.spread, " %"),
                migrations(&x.mid.0),
                migrations(&x.mid.1)
            ))
        })
        .collect();
    if !hb.is_empty() {
        writeln!(
            md,
            "Seed 000's hackbench rows against that baseline: {}.\n",
            hb.join("; ")
        )?;
    }
    // the UDP_RR fit: on Skylake's row, tested on the others
    let side_ns = crate::cost::UDP_RR_SIDE_NS as f64;
    let implied: Vec<(&Claim, f64, f64, f64)> = CLAIMS
        .iter()
        .zip(outcomes)
        .filter(|(c, _)| c.seed == "000" && c.workload == UDP_RR)
        .filter_map(|(c, r)| {
            let x = r.as_ref().ok()?;
            let m = crate::machine::Machine::preset(c.machine).ok()?;
            let clients = 128.0;
            let seed_cpu_us = m.nr_cpus() as f64 / (clients * c.seed_numbers.0) * 1e6;
            let sim_cpu_us = median_of(x.offs.iter().filter_map(cpu_per_tx_us));
            let steps_us = 2.0 * side_ns / 1e3 / (m.speed * k.smt_rate);
            let sched_us = sim_cpu_us - steps_us;
            let side = (seed_cpu_us - sched_us) * m.speed * k.smt_rate / 2.0 * 1e3;
            Some((c, seed_cpu_us, sched_us, side))
        })
        .collect();
    if let Some((fit, seed_cpu, sched, side)) =
        implied.iter().find(|(c, ..)| c.role == Role::Calibration)
    {
        let others: Vec<String> = implied
            .iter()
            .filter(|(c, ..)| c.role != Role::Calibration)
            .map(|(c, _, _, s)| format!("`{}`'s {:.2} µs", c.machine, s / 1e3))
            .collect();
        writeln!(
            md,
            "UDP_RR rows: each side's step is one recvmsg plus one sendmsg, `UDP_RR_SIDE_NS` = {:.2} µs \
             on the reference core, **fitted on `{}`'s row** and tested on the others: that row's seed \
             numbers give {seed_cpu:.1} µs of CPU per transaction (its CPUs / (128 netperf x the off \
             tps)); less the model's own scheduling charges there ({sched:.1} µs in the median off \
             run, at the machine's speed and SMT rate {:.2}), half of it is {:.2} µs per side today. \
             That row is therefore a calibration, not a test. The same arithmetic on the rows it is \
             tested on gives {} (the fixed-ns charges do not scale with the clock). A message wakes \
             its reader when the sender's step ends; tps counts the window in which all 128 pairs \
             run, as netperf -l does. The shard lock is held {:.2} µs per acquisition plus the line \
             transfer from the last holder (the seed's lock_stat holdtime, the same whether 1 or 3 \
             shards share 36 CPUs); waiting is queued.\n",
            side_ns / 1e3,
            fit.machine,
            k.smt_rate,
            side / 1e3,
            others.join(", "),
            k.dsq_lock_hold_ns / 1e3,
        )?;
    }
    let mem = crate::workload::SYSBENCH_SHARED_LINES_PER_EVENT;
    writeln!(
        md,
        "Seed 004: memory-bound tasks slow down when the working sets running in an LLC exceed it (a \
         group's shared working set counted once), and a task whose group writes the same lines \
         (sysbench memory's default global scope: its mutex, counters and 1 KiB buffer, {mem:.0} line \
         transfers per {:.0} ns event) pays each transfer at the latency from where the group's other \
         running threads are. `arm64-128-cl` is the seed's machine as its text describes it: 128 CPUs, \
         8 clusters of 16 cores, each cluster's cache its LLC, a line {:.0} ns inside a cluster and \
         {:.0} ns across (the x86 cross-CCX figure: the seed does not name its ARM part, so nothing \
         is measured); a task's speed is set when it starts a 1 ms chunk, not updated as its \
         neighbours change; queueing of the 16 writers on one mutex is not modelled.",
        crate::workload::SYSBENCH_EVENT_NS,
        k.line_ns[crate::cost::Dist::Llc as usize],
        k.line_ns[crate::cost::Dist::Node as usize],
    )?;
    Ok(())
}

/// Checks that the report's prose agrees with its tables: the verdict
/// tally with the table's verdict column, each row's details with its
/// change cell, and that every row rests on at least MIN_RUNS pairs.
pub fn check_text_against_tables(md: &str) -> Result<()> {
    let mut rows = Vec::new();
    for line in md.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        if !line.starts_with("| 0") || cells.len() != 8 {
            continue;
        }
        rows.push((cells[1], cells[6], cells[7].trim_end_matches(" |")));
    }
    if rows.is_empty() {
        bail!("no seed rows in the table");
    }
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (claim, change, verdict) in &rows {
        if verdict.starts_with("**not run**") {
            continue;
        }
        let n: usize = change
            .rsplit_once("(n = ")
            .and_then(|(_, r)| r.trim_end_matches(')').parse().ok())
            .with_context(|| format!("{claim}: no n in {change:?}"))?;
        if n < MIN_RUNS {
            bail!("{claim}: {n} runs per side, fewer than {MIN_RUNS}");
        }
        let detail = md
            .lines()
            .find(|l| l.starts_with(&format!("- **{claim}**")))
            .with_context(|| format!("{claim}: no details"))?;
        if !detail.contains(&format!("change {change}")) {
            bail!("{claim}: the details do not give the table's change {change:?}");
        }
        if verdict.starts_with("calibration") || verdict.trim() == VARIANT_CELL {
            continue;
        }
        let label = verdict.trim_matches('*').to_string();
        match counts.iter_mut().find(|(l, _)| *l == label) {
            Some((_, k)) => *k += 1,
            None => counts.push((label, 1)),
        }
    }
    let tally = md
        .lines()
        .find_map(|l| l.strip_prefix(TALLY_PREFIX))
        .context("no verdict tally")?;
    let total: usize = counts.iter().map(|(_, k)| k).sum();
    let (said_total, parts) = tally
        .trim()
        .split_once(" rows. ")
        .with_context(|| format!("a tally without its row count: {tally:?}"))?;
    if said_total.parse::<usize>().ok() != Some(total) {
        bail!("the tally {tally:?} does not count the table's {total} test rows");
    }
    let mut said: Vec<(String, usize)> = Vec::new();
    for part in parts.trim_end_matches('.').split(" — ") {
        let (label, k) = part
            .rsplit_once(": ")
            .with_context(|| format!("a tally entry without a count: {part:?}"))?;
        said.push((label.to_string(), k.parse()?));
    }
    counts.sort();
    said.sort();
    if said != counts {
        bail!("the tally says {said:?}, the table {counts:?}");
    }
    Ok(())
}

/// Machines of growing size for the BPF work table, the first the baseline.
const WORK_MACHINES: [&str; 7] = [
    "2llc-smt",
    "16cpu",
    "skylake-18c",
    "milan-72",
    "epyc-9654x2",
    "xeon-4s",
    "epyc-9654x2-smt",
];

/// The work one scheduler callback does (kfunc calls + loop iterations of the
/// BPF C, `bpf_work` in a run's JSON) on machines from 8 to 384 CPUs.
fn bpf_work_section(md: &mut String, exe: &Path, dir: &Path, seed: u64) -> Result<()> {
    let workloads = ["hackbench:loops=50", "rr:clients=128,loops=100"];
    writeln!(
        md,
        "\n## BPF work per scheduling event\n\nKfunc calls plus loop iterations of the scheduler's C per \
         callback (select_cpu, enqueue, dispatch, running, ...), counted by the simulator (`bpf_work`): \
         the median (min–max) over {WORK_SEEDS} RNG seeds with the seed rows' step jitter, \
         default flags as on bare metal (`--same-rq-pull=off`: the guest-only walk stays off on the \
         vm/run presets, which the simulator runs as guests); in parentheses the ratio to \
         `2llc-smt` (8 CPUs), of the medians. A walk over every CPU or every shard would grow with the machine; \
         `sim/tests/sim.rs` fails if a 192-CPU machine's median needs more than 2x.\n\n| machine | CPUs | shards | {} | {} |\n|---|---|---|---|---|",
        workloads[0], workloads[1]
    )?;
    let mut base = [0.0; 2];
    for m in WORK_MACHINES {
        let mut cells = Vec::new();
        let (mut cpus, mut shards) = (Value::Null, Value::Null);
        for (i, w) in workloads.iter().enumerate() {
            let (runs, v) = bpf_work_runs(exe, dir, &format!("work-{m}-{i}"), m, w, &[], seed)?;
            cpus = v["nr_cpus"].clone();
            shards = v["shards"].clone();
            let lo = runs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let per = crate::stats::median(&runs);
            if base[i] == 0.0 {
                base[i] = per;
            }
            cells.push(format!(
                "{per:.2} ({lo:.2}–{hi:.2}; {:.2}x)",
                per / base[i].max(f64::MIN_POSITIVE)
            ));
        }
        writeln!(
            md,
            "| `{m}` | {cpus} | {shards} | {} | {} |",
            cells[0], cells[1]
        )?;
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf> {
    let d = std::env::temp_dir().join(format!("mosaic-sim-report-{}", std::process::id()));
    std::fs::create_dir_all(&d)?;
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed report, whose text must agree with its tables.
    const REPORT: &str = include_str!("../../docs/sim-report.md");

    #[test]
    fn the_committed_report_text_agrees_with_its_tables() {
        check_text_against_tables(REPORT).unwrap();
    }

    #[test]
    fn a_tally_or_detail_that_disagrees_with_the_table_is_caught() {
        let tally = REPORT
            .lines()
            .find(|l| l.starts_with(TALLY_PREFIX))
            .expect("a tally");
        // one more row claimed than the table has
        let (count, rest) = tally[TALLY_PREFIX.len()..]
            .trim()
            .split_once(" rows.")
            .unwrap();
        let more = format!(
            "{TALLY_PREFIX} {} rows.{rest}",
            count.parse::<usize>().unwrap() + 1
        );
        assert!(check_text_against_tables(&REPORT.replacen(tally, &more, 1)).is_err());
        // a row's change in the details that is not the table's
        let row = REPORT.lines().find(|l| l.starts_with("| 0")).unwrap();
        let cell = row.split(" | ").nth(6).unwrap();
        let altered = REPORT
            .lines()
            .map(|l| {
                if l.starts_with("- **") && l.contains(&format!("change {cell}")) {
                    l.replacen(
                        &format!("change {cell}"),
                        "change +99.9 % [+99.0, +99.9] (n = 48)",
                        1,
                    )
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert!(check_text_against_tables(&altered).is_err());
        // too few runs
        let few = REPORT.replace(&format!("(n = {DEFAULT_RUNS})"), "(n = 3)");
        assert!(check_text_against_tables(&few).is_err());
    }

    #[test]
    fn report_options_have_defaults_and_refuse_too_few_runs() {
        use clap::Parser;
        let parse = |v: &[&str]| {
            let mut argv = vec!["mosaic-sim", "report"];
            argv.extend_from_slice(v);
            let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
            match cli.command {
                Some(crate::cli::Command::Report(r)) => ReportOptions::from_args(&r),
                _ => panic!("not the report subcommand"),
            }
        };
        let o = parse(&[]).unwrap();
        let d = ReportOptions::default();
        assert_eq!(
            (o.runs_per_side, o.base_seed, o.jobs),
            (d.runs_per_side, d.base_seed, d.jobs)
        );
        assert!(o.runs_per_side >= MIN_RUNS && !o.claims_only);
        assert_eq!(
            parse(&["--runs", "9", "--base-seed", "7"])
                .unwrap()
                .base_seed,
            7
        );
        assert!(parse(&["--runs", "3"]).is_err());
        assert!(parse(&["--jobs", "0"]).is_err());
    }

    #[test]
    fn every_run_of_a_row_pairs_off_and_on_on_one_seed_and_size() {
        let o = ReportOptions::default();
        let i = CLAIMS.iter().position(|c| !c.sizes.is_empty()).unwrap();
        let off = job_args(
            &o,
            Job {
                claim: i,
                run: 5,
                on: false,
            },
            Path::new("x"),
        );
        let on = job_args(
            &o,
            Job {
                claim: i,
                run: 5,
                on: true,
            },
            Path::new("x"),
        );
        let at = |v: &[String], k: &str| v[v.iter().position(|x| x == k).unwrap() + 1].clone();
        assert_eq!(at(&off, "--seed"), "6");
        assert_eq!(at(&off, "--seed"), at(&on, "--seed"));
        assert_eq!(at(&off, "--workload"), at(&on, "--workload"));
        assert!(at(&off, "--workload").ends_with(CLAIMS[i].sizes[5 % CLAIMS[i].sizes.len()]));
    }
}
