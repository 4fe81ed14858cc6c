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
    /// VM boots pooled into this run (Suite::pooled()); 1 for one boot as measured.
    #[serde(default = "one")]
    pub boots: u32,
    /// Buckets per power of two of the shared wait measure's histogram
    /// (waits::BUCKETS_PER_OCTAVE); 1 in runs from before it was recorded (log2 buckets).
    #[serde(default = "one")]
    pub wait_buckets: u32,
}

fn one() -> u32 {
    1
}

impl ScenarioRun {
    /// The sha256 prefix of the measured scx_mosaic in `mosaic_build`, if recorded.
    pub fn mosaic_sha(&self) -> Option<&str> {
        let at = self.mosaic_build.find("sha256 ")? + "sha256 ".len();
        self.mosaic_build.get(at..at + 12)
    }

    /// Whether `other` is another boot of the same measurement, whose rounds may be pooled
    /// with this one's: same scenario, topology, size, kernel, accelerator, watchdog, wait
    /// measure, the same schedulers at the same versions and the same scx_mosaic binary, and
    /// neither boot failed as a whole.
    pub fn same_cell(&self, other: &ScenarioRun) -> bool {
        self.kernel == other.kernel && self.same_setup(other)
    }

    /// same_cell() but for the kernel, which a run learns only from its boot.
    pub fn same_setup(&self, other: &ScenarioRun) -> bool {
        self.error.is_none()
            && other.error.is_none()
            && self.mosaic_sha().is_some()
            && self.mosaic_sha() == other.mosaic_sha()
            && (&self.scenario, &self.topo, &self.size, &self.accel)
                == (&other.scenario, &other.topo, &other.size, &other.accel)
            && self.host == other.host
            && self.watchdog_ms == other.watchdog_ms
            && self.wait_buckets == other.wait_buckets
            && self.scheds == other.scheds
            && self.sched_builds() == other.sched_builds()
    }

    /// Each scheduler's label, command and version, but the kernel default's version (its
    /// kernel's release, which a run learns from its boot).
    fn sched_builds(&self) -> Vec<(&str, &str, &str)> {
        self.sched_info
            .iter()
            .map(|i| {
                let version = if i.command.is_empty() { "" } else { &i.version };
                (i.label.as_str(), i.command.as_str(), version)
            })
            .collect()
    }
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
    /// Add the runs of `newer`. A run replaces the runs of the same scenario and topology,
    /// unless they are boots of the same measurement (ScenarioRun::same_cell): those stay,
    /// to be pooled.
    pub fn merge(&mut self, newer: Suite) {
        for r in newer.runs {
            self.runs
                .retain(|o| !(o.scenario == r.scenario && o.topo == r.topo) || o.same_cell(&r));
            self.runs.push(r);
        }
        for s in newer.skipped {
            self.skipped.retain(|o| o.what != s.what);
            self.skipped.push(s);
        }
    }
}

impl Suite {
    /// Boots of `run`'s measurement already in this suite (`run` not yet made: any kernel).
    pub fn boots_of(&self, run: &ScenarioRun) -> u32 {
        self.runs.iter().filter(|o| o.same_setup(run)).count() as u32
    }

    /// The suite with each measurement's boots pooled into one run: the later boots' rounds
    /// are renumbered after the earlier ones' (a round's runs still come from one boot, so
    /// round-by-round ratios stay within a boot), durations add up, the first boot's date
    /// stands for the run.
    pub fn pooled(&self) -> Suite {
        let mut runs: Vec<ScenarioRun> = Vec::new();
        for r in &self.runs {
            match runs.iter_mut().find(|p| p.same_cell(r)) {
                Some(p) => {
                    let offset = p.samples.iter().map(|s| s.round).max().unwrap_or(0);
                    p.samples.extend(r.samples.iter().cloned().map(|mut s| {
                        s.round += offset;
                        s
                    }));
                    p.rounds += r.rounds;
                    p.boots = p.boots.max(1) + r.boots.max(1);
                    p.duration_s += r.duration_s;
                    if r.date < p.date {
                        p.date = r.date.clone();
                    }
                }
                None => runs.push(r.clone()),
            }
        }
        Suite {
            runs,
            skipped: self.skipped.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(build: &str, kernel: &str, times: &[f64]) -> ScenarioRun {
        ScenarioRun {
            scenario: "hackbench".into(),
            topo: "4llc".into(),
            kernel: kernel.into(),
            mosaic_build: format!("scx_mosaic (sha256 {build}), git x"),
            scheds: vec!["eevdf".into(), "mosaic".into()],
            // the kernel default's version is its kernel: a run not yet made has none
            sched_info: vec![
                SchedInfo {
                    label: "eevdf".into(),
                    command: String::new(),
                    version: kernel.into(),
                },
                SchedInfo {
                    label: "mosaic".into(),
                    command: "scx_mosaic".into(),
                    version: "0.1.0-g0123456".into(),
                },
            ],
            rounds: times.len() as u32,
            duration_s: 100.0,
            boots: 1,
            samples: times
                .iter()
                .enumerate()
                .map(|(i, t)| Sample {
                    sched: "mosaic".into(),
                    round: i as u32 + 1,
                    wall_s: Some(*t),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn boots_of_one_binary_pool_and_another_binary_replaces_them() {
        let mut s = Suite::default();
        s.merge(Suite {
            runs: vec![boot("aaaaaaaaaaaa", "7.3", &[1.0, 2.0])],
            skipped: vec![],
        });
        s.merge(Suite {
            runs: vec![boot("aaaaaaaaaaaa", "7.3", &[3.0])],
            skipped: vec![],
        });
        assert_eq!(s.runs.len(), 2);
        assert_eq!(s.boots_of(&boot("aaaaaaaaaaaa", "", &[])), 2);
        assert_eq!(s.boots_of(&boot("bbbbbbbbbbbb", "", &[])), 0);
        let p = s.pooled();
        assert_eq!(p.runs.len(), 1);
        let r = &p.runs[0];
        assert_eq!((r.boots, r.rounds, r.duration_s), (2, 3, 200.0));
        let rounds: Vec<(u32, f64)> = r
            .samples
            .iter()
            .map(|s| (s.round, s.wall_s.unwrap()))
            .collect();
        assert_eq!(rounds, vec![(1, 1.0), (2, 2.0), (3, 3.0)]);
        // Another kernel is another measurement: not pooled.
        s.merge(Suite {
            runs: vec![boot("aaaaaaaaaaaa", "7.4", &[4.0])],
            skipped: vec![],
        });
        assert_eq!(s.runs.len(), 1);
        // A failed boot is never pooled, and another binary replaces the cell.
        let mut failed = boot("aaaaaaaaaaaa", "7.4", &[5.0]);
        failed.error = Some("timeout".into());
        s.merge(Suite {
            runs: vec![failed],
            skipped: vec![],
        });
        assert_eq!(s.runs.len(), 1);
        assert_eq!(s.boots_of(&boot("aaaaaaaaaaaa", "", &[])), 0);
        s.merge(Suite {
            runs: vec![boot("bbbbbbbbbbbb", "7.4", &[6.0])],
            skipped: vec![],
        });
        assert_eq!(s.runs.len(), 1);
        assert_eq!(s.pooled().runs[0].boots, 1);
        // A cell whose waits were kept in another histogram is another measurement: a
        // resumed run does not keep it, and a new boot replaces it
        let mut log2 = boot("bbbbbbbbbbbb", "7.4", &[7.0]);
        log2.wait_buckets = 1;
        assert_eq!(s.boots_of(&log2), 0);
        s.merge(Suite {
            runs: vec![log2],
            skipped: vec![],
        });
        assert_eq!((s.runs.len(), s.runs[0].wait_buckets), (1, 1));
    }

    #[test]
    fn runs_from_before_the_wait_histogram_was_recorded_read_as_log2() {
        let old: ScenarioRun =
            serde_json::from_str(r#"{"scenario":"pipe","topo":"4llc","size":"default","command":"c","date":"d","kernel":"7.3","nproc":8,"host":false,"rounds":5,"scheds":[],"samples":[],"error":null,"duration_s":1.0}"#)
                .unwrap();
        assert_eq!((old.wait_buckets, old.boots), (1, 1));
    }
}
