//! The results, as written to JSON (one file per scenario × topology run, and the suite).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One workload run under one scheduler.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Sample {
    pub sched: String,
    pub round: u32,
    /// The scenario's metrics, as parsed from the workload's output.
    pub metrics: BTreeMap<String, f64>,
    /// Wall time of the workload (s).
    pub wall_s: Option<f64>,
    /// Kernel-measured BPF cost: ns per call of the scheduler's struct_ops programs.
    pub bpf_ns_per_call: Option<f64>,
    /// struct_ops program calls during the workload.
    pub bpf_calls: Option<f64>,
    /// Kernel-measured BPF cost: run time of the scheduler's struct_ops programs summed over
    /// the workload, ms (ns/call times calls: what the scheduler's BPF cost this run).
    #[serde(default)]
    pub bpf_ms: Option<f64>,
    /// The sched_ext ops name the kernel reported.
    pub ops: Option<String>,
    /// The kernel's exit reason ("unregistered from user space" when stopped normally).
    pub exit: Option<String>,
    /// Why this run failed (ejection, error exit, no result), if it did.
    pub fail: Option<String>,
    /// scx_mosaic's own longest runnable wait over its run (its --stats-file), µs; None for
    /// the kernel's default and the peers, which keep no such counter.
    #[serde(default)]
    pub wait_max_us: Option<f64>,
    /// scx_mosaic's own 99th percentile runnable wait (log2 bucket's upper edge), µs.
    #[serde(default)]
    pub wait_p99_us: Option<f64>,
    /// The shared wait measure (`mosaic-bench waits`, the same BPF tracer for every scheduler,
    /// the kernel's default included, over the workload only): waits counted.
    #[serde(default)]
    pub shared_wait_count: Option<f64>,
    /// Its median wait (log2 bucket's upper bound, capped at the longest wait), µs.
    #[serde(default)]
    pub shared_wait_p50_us: Option<f64>,
    /// Its 99th percentile wait (the same bound), µs.
    #[serde(default)]
    pub shared_wait_p99_us: Option<f64>,
    /// Its longest wait, µs.
    #[serde(default)]
    pub shared_wait_max_us: Option<f64>,
    /// The task of its longest wait, `comm[pid]`.
    #[serde(default)]
    pub shared_wait_max_task: Option<String>,
}

/// One scheduler of a run: how it was started and which version it was.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SchedInfo {
    pub label: String,
    /// The guest's command line ("" for the kernel's default).
    pub command: String,
    /// Peers: the crate version `cargo install` recorded; scx_mosaic: its `--version`
    /// (crate version and git sha); the kernel's default: the guest kernel's release.
    pub version: String,
}

/// One VM boot (or host session): one scenario on one topology, schedulers interleaved.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct ScenarioRun {
    pub scenario: String,
    pub topo: String,
    pub size: String,
    pub command: String,
    pub date: String,
    pub kernel: String,
    pub nproc: u32,
    pub host: bool,
    pub rounds: u32,
    /// Which scx_mosaic was measured: binary, its sha256 prefix, the repository's git state.
    #[serde(default)]
    pub mosaic_build: String,
    /// `kvm` or `tcg` (QEMU's accelerator, as vm/run chose it) or `host`; empty in runs
    /// from before it was recorded.
    #[serde(default)]
    pub accel: String,
    /// The watchdog timeout the sched_ext schedulers ran with (`--watchdog-ms`), ms; none:
    /// the kernel's default (30 s).
    #[serde(default)]
    pub watchdog_ms: Option<u32>,
    pub scheds: Vec<String>,
    /// Command line and version of each scheduler in `scheds`.
    #[serde(default)]
    pub sched_info: Vec<SchedInfo>,
    pub samples: Vec<Sample>,
    /// The whole boot failed (VM error, timeout): nothing or only part was measured.
    pub error: Option<String>,
    pub duration_s: f64,
}

/// A scheduler that was asked for but could not run, and why.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Skipped {
    pub what: String,
    pub why: String,
}

/// Everything one `mosaic-bench run` (or several, merged into the report) measured.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Suite {
    pub runs: Vec<ScenarioRun>,
    pub skipped: Vec<Skipped>,
}

impl Suite {
    /// Add the runs of `newer`, replacing the runs of the same scenario and topology.
    pub fn merge(&mut self, newer: Suite) {
        for r in newer.runs {
            self.runs
                .retain(|o| !(o.scenario == r.scenario && o.topo == r.topo));
            self.runs.push(r);
        }
        for s in newer.skipped {
            self.skipped.retain(|o| o.what != s.what);
            self.skipped.push(s);
        }
    }
}
