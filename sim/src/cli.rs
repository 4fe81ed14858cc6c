//! Command line (clap): one simulation per process (see engine/run.rs), the
//! machine and workload lists, and the `report` subcommand.
use crate::cost::Costs;
use crate::engine::{Config, Engine};
use crate::machine::{Machine, PRESETS};
use crate::sched;
use crate::trace::{TraceLimits, DEFAULT_MAX_EVENTS};
use crate::workload::{self, WORKLOADS};
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

const AFTER_HELP: &str = "--sched-arg passes one of the scheduler's own flags, parsed as scx_mosaic
parses them (scx_mosaic --help): --no-shared-runq, --shard-size N,
--slice-us N, --cpu-capacity SPEC, --overload-scan-us N, --timeout-ms N,
--gb-parent X [--gb-partitions SPEC] [--gb-period-ms N] [--no-group-balancer],
any --no-<mechanism>; the runtime-only ones (--stats, --stats-file,
--monitor, --help-stats, --bpf-stats) are refused. In the simulator
--gb-parent balances every cgroup of the workload (memgroups puts each
group in its own).
--cost overrides one cost-model parameter (src/cost.rs), e.g.
--cost ttwu_boundary=l2 models seed 001's kernel patch.
--trace writes Chrome trace-event JSON that Perfetto (ui.perfetto.dev) and
chrome://tracing open: a track per CPU with a slice per task run (its args
name the select_cpu/enqueue/dispatch path that placed it), a track per task
with its waits, wakeup and migration instants, and a run-queue counter.
Its size is bounded: at most --trace-max-events events, 200 to 300 bytes
of JSON each (the default, 400000, is about 100 MB; later events are dropped
and counted in otherData), and only those inside --trace-window. A 192-CPU
hackbench records about 6 events per simulated microsecond: use a window of
tens of ms.

Examples:
  mosaic-sim --machine 2llc-smt --workload hackbench:groups=2,loops=50
  mosaic-sim --machine epyc-9654x2 --workload hackbench --sched-arg=--no-shared-runq
  mosaic-sim --machine epyc-9654x2 --workload hackbench:loops=100 --trace t.json \\
             --trace-window 0:20
  mosaic-sim report --out docs/sim-report.md";

/// mosaic-sim: runs scx_mosaic's own BPF C on a modelled machine under a
/// deterministic discrete-event engine, and prints the run's JSON.
#[derive(Debug, Parser)]
#[command(
    name = "mosaic-sim",
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every seed claim as an A/B in the simulator, written as Markdown
    /// (make sim-report).
    Report(ReportArgs),
}

/// The report subcommand's options (report.rs runs it).
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Markdown report to write.
    #[arg(long, value_name = "PATH", default_value = "docs/sim-report.md")]
    pub out: PathBuf,
    /// The VM's counters (scripts/sim-vm-counters) to set beside the
    /// simulator's.
    #[arg(long, value_name = "PATH", default_value = "docs/sim-vm-counters.json")]
    pub vm_counters: PathBuf,
    /// Paired runs per claim and side (RNG seeds base..base+N-1); at least 7.
    #[arg(long, value_name = "N", default_value_t = crate::report::DEFAULT_RUNS)]
    pub runs: usize,
    /// RNG seed of each claim's first run.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub base_seed: u64,
    /// Simulations run at once.
    #[arg(long, value_name = "N", default_value_t = crate::report::DEFAULT_JOBS)]
    pub jobs: usize,
    /// Only the seed table (no BPF work table, no sim-vs-VM section).
    #[arg(long)]
    pub claims_only: bool,
    /// Also write each row's verdict, median and interval as JSON here.
    #[arg(long, value_name = "PATH")]
    pub verdicts_json: Option<PathBuf>,
}

/// One simulation's options.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Machine preset (--list-machines).
    #[arg(long, value_name = "M", required_unless_present_any = ["list_machines", "list_workloads"])]
    pub machine: Option<String>,
    /// Workload (--list-workloads), with its options after a colon.
    #[arg(long, value_name = "W[:k=v,...]", required_unless_present_any = ["list_machines", "list_workloads"])]
    pub workload: Option<String>,
    /// More workload options, added to --workload's (repeatable).
    #[arg(long = "wl", value_name = "k=v,...")]
    pub wl: Vec<String>,
    /// One of scx_mosaic's flags (repeatable; see below).
    #[arg(long = "sched-arg", value_name = "FLAG", allow_hyphen_values = true)]
    pub sched: Vec<String>,
    /// Write the run's JSON here instead of stdout.
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write a Perfetto trace of the run here (see below).
    #[arg(long, value_name = "OUT")]
    pub trace: Option<PathBuf>,
    /// Cap on the trace's events; past it they are dropped (and counted).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_EVENTS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub trace_max_events: u64,
    /// Record only simulated time FROM..TO, in ms (e.g. 0:20; TO may be
    /// empty: to the end).
    #[arg(long, value_name = "FROM:TO", value_parser = parse_window)]
    pub trace_window: Option<(u64, u64)>,
    /// Also write the scheduler's counters per this many ms of simulated
    /// time into the JSON (`timeline`: each counter's increase per period).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeline_ms: Option<u64>,
    /// Seed of the run's random choices.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Scheduler tick frequency.
    #[arg(long, value_name = "N", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(1..=10000))]
    pub hz: u64,
    /// Override one cost-model parameter, k=v (repeatable).
    #[arg(long = "cost", value_name = "k=v")]
    pub costs: Vec<String>,
    /// Stop the run at this much simulated time.
    #[arg(long, value_name = "SECS", default_value_t = 600.0)]
    pub max_time: f64,
    /// Scheduler label in the JSON (default: mosaic and the --sched-args).
    #[arg(long, value_name = "NAME")]
    pub label: Option<String>,
    /// List the machine presets and exit.
    #[arg(long)]
    pub list_machines: bool,
    /// List the workloads and exit.
    #[arg(long)]
    pub list_workloads: bool,
}

/// --trace-window FROM:TO (ms) as nanoseconds; an empty TO is the end.
fn parse_window(s: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not FROM:TO (ms)"))?;
    let ms = |x: &str| -> Result<u64, String> {
        let v: f64 = x
            .trim()
            .parse()
            .map_err(|_| format!("{x:?} is not a number of ms"))?;
        if !(v >= 0.0 && v.is_finite()) {
            return Err(format!("{x:?} is not a time >= 0"));
        }
        Ok((v * 1e6) as u64)
    };
    let from = ms(a)?;
    let to = if b.trim().is_empty() {
        u64::MAX
    } else {
        ms(b)?
    };
    if to <= from {
        return Err(format!("{s:?}: TO must be after FROM"));
    }
    Ok((from, to))
}

impl RunArgs {
    /// The workload's name and options: --workload's after the colon, then
    /// each --wl's.
    fn workload(&self) -> (String, String) {
        let w = self.workload.clone().unwrap_or_default();
        let (name, mut opts) = match w.split_once(':') {
            Some((n, o)) => (n.to_string(), o.to_string()),
            None => (w, String::new()),
        };
        for o in &self.wl {
            opts = format!("{opts},{o}");
        }
        (name, opts)
    }
}

/// Runs the simulation @a asks for; the exit code (1: the run failed).
fn run(a: &RunArgs) -> Result<i32> {
    let machine = a.machine.clone().unwrap_or_default();
    let (wl_name, wl_opts) = a.workload();
    let mut m = Machine::preset(&machine)?;
    let opts = sched::parse_sched_args(&a.sched)?;
    let loaded = sched::load(&mut m, &opts)?;
    let mut costs = Costs::default();
    for c in &a.costs {
        costs.set(c)?;
    }
    let wl = workload::make(&wl_name, &wl_opts, m.nr_cpus())?;
    let (from_ns, until_ns) = a.trace_window.unwrap_or((0, u64::MAX));
    let cfg = Config {
        seed: a.seed,
        hz: a.hz,
        costs,
        max_ns: (a.max_time * 1e9) as u64,
        trace: a.trace.as_ref().map(|_| TraceLimits {
            max_events: a.trace_max_events as usize,
            from_ns,
            until_ns,
        }),
        // the kernel's default, or --timeout-ms as the loader writes it
        // into the ops table (engine/run.rs prefers a timeout_ms compiled into
        // the ops table; scx_mosaic's has none)
        watchdog_ns: match loaded.timeout_ms {
            0 => u64::from(scx_mosaic::tunables::KERNEL_TIMEOUT_MS) * 1_000_000,
            ms => ms as u64 * 1_000_000,
        },
        idle_bound_ns: 20_000_000,
        ops_flags_or: loaded.ops_flags,
        group_balancer: loaded.gb,
        timeline_ns: a.timeline_ms.unwrap_or(0) * 1_000_000,
    };
    let label = a.label.clone().unwrap_or_else(|| {
        if a.sched.is_empty() {
            "mosaic".into()
        } else {
            format!("mosaic {}", a.sched.join(" "))
        }
    });
    let started = std::time::Instant::now();
    let mut engine = Engine::new(m, cfg, wl);
    let out = engine.run(&label);
    let wall = started.elapsed().as_secs_f64();
    let mut json = out.json;
    json["shards"] = serde_json::json!(loaded.layout.shards.len());
    json["workload_name"] = serde_json::json!(wl_name);
    json["workload_opts"] = serde_json::json!(wl_opts);
    // wall time is not deterministic: kept out of the JSON, printed instead
    let text = serde_json::to_string_pretty(&json)? + "\n";
    match &a.json {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{text}"),
    }
    if let (Some(p), Some(tr)) = (&a.trace, engine.take_trace()) {
        let names: Vec<String> = engine.tasks.iter().map(|t| t.spec.name.clone()).collect();
        let mut shard_of = vec![None; engine.m.nr_cpus()];
        for (s, cpus) in loaded.layout.shards.iter().enumerate() {
            for &c in cpus {
                shard_of[c] = Some(s);
            }
        }
        let meta = serde_json::json!({
            "machine": machine, "workload": wl_name, "workload_opts": wl_opts,
            "scheduler": label, "seed": a.seed, "completion_time_s": json["completion_time_s"],
        });
        tr.write(p, &engine.m, &names, &shard_of, meta)?;
    }
    eprintln!(
        "mosaic-sim: {} {} on {}: {:.4} s simulated in {:.2} s wall; {}",
        label,
        wl_name,
        machine,
        json["completion_time_s"].as_f64().unwrap_or(0.0),
        wall,
        if out.ok {
            "ok".to_string()
        } else {
            format!("FAILED: exit {} {}", json["exit"], json["invariants"])
        }
    );
    Ok(if out.ok { 0 } else { 1 })
}

/// mosaic-sim's entry: the exit code (0 ok, 1 a failed run, 2 bad input or
/// an error).
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            print!("{e}");
            return 0;
        }
        Err(e) => {
            eprintln!(
                "mosaic-sim: {} (mosaic-sim --help)",
                sched::clap_error_line(&e)
            );
            return 2;
        }
    };
    if let Some(Command::Report(r)) = &cli.command {
        return match crate::report::main(r) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("mosaic-sim report: {e:#}");
                1
            }
        };
    }
    let a = &cli.run;
    if a.list_machines {
        for (n, d) in PRESETS {
            println!("{n:<16} {d}");
        }
        return 0;
    }
    if a.list_workloads {
        for (n, d) in WORKLOADS {
            println!("{n:<10} {d}");
        }
        return 0;
    }
    match run(a) {
        Ok(rc) => rc,
        Err(e) => {
            eprintln!("mosaic-sim: {e:#}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parsed command line @argv (after the program name).
    fn parse(argv: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mosaic-sim").chain(argv.iter().copied()))
    }

    #[test]
    fn every_form_of_the_options_parses_as_before() {
        let c = parse(&[
            "--machine=1llc",
            "--workload",
            "pipe:loops=5",
            "--wl",
            "pairs=2",
            "--sched-arg=--gb-parent=sim",
            "--sched-arg",
            "--no-shared-runq",
            "--seed",
            "7",
            "--cost",
            "ttwu_boundary=l2",
            "--machine",
            "2llc-smt",
        ])
        .unwrap();
        let a = &c.run;
        assert_eq!(a.machine.as_deref(), Some("2llc-smt"), "the last one wins");
        assert_eq!(a.workload(), ("pipe".into(), "loops=5,pairs=2".into()));
        assert_eq!(a.sched, ["--gb-parent=sim", "--no-shared-runq"]);
        assert_eq!((a.seed, a.hz, a.max_time), (7, 250, 600.0));
        assert_eq!(a.costs, ["ttwu_boundary=l2"]);
    }

    #[test]
    fn lists_and_report_need_no_machine() {
        assert!(parse(&["--list-machines"]).unwrap().run.list_machines);
        let c = parse(&["report", "--out", "x.md"]).unwrap();
        let Some(Command::Report(r)) = c.command else {
            panic!("not the report subcommand");
        };
        assert_eq!(r.out, PathBuf::from("x.md"));
        assert_eq!(r.vm_counters, PathBuf::from("docs/sim-vm-counters.json"));
    }

    #[test]
    fn bad_input_is_refused() {
        for argv in [
            &["--workload", "pipe"][..],
            &["--machine", "1llc", "--workload", "pipe", "--hz", "0"],
            &["--machine", "1llc", "--workload", "pipe", "--seed", "x"],
            &["--machine", "1llc", "--workload", "pipe", "--bogus"],
            &["--machine", "1llc", "--workload", "pipe", "stray"],
            &[
                "--machine",
                "1llc",
                "--workload",
                "pipe",
                "--trace-window",
                "5:2",
            ],
            &["report", "--machine", "1llc"],
        ] {
            assert!(parse(argv).is_err(), "{argv:?} accepted");
        }
    }

    #[test]
    fn trace_windows_parse_in_ms() {
        assert_eq!(parse_window("0:20"), Ok((0, 20_000_000)));
        assert_eq!(parse_window("1.5:"), Ok((1_500_000, u64::MAX)));
        assert!(parse_window("20").is_err());
        assert!(parse_window("a:2").is_err());
    }
}
