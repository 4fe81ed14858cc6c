//! Command line: one simulation per process (see engine/run.rs).
use crate::cost::Costs;
use crate::engine::{Config, Engine};
use crate::machine::{Machine, PRESETS};
use crate::sched;
use crate::workload::{self, WORKLOADS};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

const USAGE: &str = "usage: mosaic-sim --machine M --workload W[:k=v,...] [--sched-arg=FLAG ...]
                  [--json OUT] [--trace OUT] [--seed N] [--hz N] [--cost k=v ...]
                  [--max-time SECS] [--label NAME]
       mosaic-sim --list-machines | --list-workloads
       mosaic-sim report [--out docs/sim-report.md] [--vm-counters docs/sim-vm-counters.json]
                         [--runs 11] [--base-seed 1] [--jobs 2] [--claims-only]
                         [--verdicts-json OUT]

--sched-arg passes one of the scheduler's own flags, parsed as scx_mosaic
parses them (scx_mosaic --help): --no-shared-runq, --shard-size N,
--slice-us N, --cpu-capacity SPEC, --overload-scan-us N, --timeout-ms N,
--gb-parent X [--gb-partitions SPEC] [--gb-period-ms N] [--no-group-balancer],
any --no-<mechanism>; the runtime-only ones (--stats, --stats-file,
--monitor, --help-stats, --bpf-stats) are refused. In the simulator
--gb-parent balances every cgroup of the workload (memgroups puts each
group in its own).
--cost overrides one cost-model parameter (src/cost.rs), e.g.
--cost ttwu_boundary=l2 models seed 001's kernel patch.";

pub struct Args {
    pub machine: String,
    pub workload: String,
    pub wl_opts: String,
    pub sched: Vec<String>,
    pub json: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub seed: u64,
    pub hz: u64,
    pub costs: Vec<String>,
    pub max_time: f64,
    pub label: Option<String>,
}

fn parse(argv: &[String]) -> Result<Args> {
    let mut a = Args {
        machine: String::new(),
        workload: String::new(),
        wl_opts: String::new(),
        sched: Vec::new(),
        json: None,
        trace: None,
        seed: 1,
        hz: 250,
        costs: Vec::new(),
        max_time: 600.0,
        label: None,
    };
    let mut i = 0;
    while i < argv.len() {
        let (flag, inline) = match argv[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") && f != "--sched-arg" => {
                (f.to_string(), Some(v.to_string()))
            }
            _ => (argv[i].clone(), None),
        };
        if let Some(v) = argv[i].strip_prefix("--sched-arg=") {
            a.sched.push(v.to_string());
            i += 1;
            continue;
        }
        let mut val = || -> Result<String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            i += 1;
            argv.get(i)
                .cloned()
                .with_context(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--machine" => a.machine = val()?,
            "--workload" => {
                let w = val()?;
                match w.split_once(':') {
                    Some((n, o)) => {
                        a.workload = n.into();
                        a.wl_opts = o.into();
                    }
                    None => a.workload = w,
                }
            }
            "--wl" => a.wl_opts = format!("{},{}", a.wl_opts, val()?),
            "--sched-arg" => a.sched.push(val()?),
            "--json" => a.json = Some(val()?.into()),
            "--trace" => a.trace = Some(val()?.into()),
            "--seed" => a.seed = val()?.parse()?,
            "--hz" => a.hz = val()?.parse()?,
            "--cost" => a.costs.push(val()?),
            "--max-time" => a.max_time = val()?.parse()?,
            "--label" => a.label = Some(val()?),
            f => bail!("unknown option {f:?}\n{USAGE}"),
        }
        i += 1;
    }
    if a.machine.is_empty() || a.workload.is_empty() {
        bail!("--machine and --workload are required\n{USAGE}");
    }
    if a.hz == 0 || a.hz > 10000 {
        bail!("--hz must be 1..10000");
    }
    Ok(a)
}

fn run(a: &Args) -> Result<i32> {
    let mut m = Machine::preset(&a.machine)?;
    let opts = sched::parse_sched_args(&a.sched)?;
    let loaded = sched::load(&mut m, &opts)?;
    let mut costs = Costs::default();
    for c in &a.costs {
        costs.set(c)?;
    }
    let wl = workload::make(&a.workload, &a.wl_opts, m.nr_cpus())?;
    let cfg = Config {
        seed: a.seed,
        hz: a.hz,
        costs,
        max_ns: (a.max_time * 1e9) as u64,
        trace: a.trace.is_some(),
        trace_limit: 2_000_000,
        // the kernel's default, or --timeout-ms as the loader writes it
        // into the ops table (engine/run.rs prefers a timeout_ms compiled into
        // the ops table; scx_mosaic's has none)
        watchdog_ns: match loaded.timeout_ms {
            0 => 30_000_000_000,
            ms => ms as u64 * 1_000_000,
        },
        idle_bound_ns: 20_000_000,
        ops_flags_or: loaded.ops_flags,
        group_balancer: loaded.gb,
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
    json["workload_name"] = serde_json::json!(a.workload);
    json["workload_opts"] = serde_json::json!(a.wl_opts);
    // wall time is not deterministic: kept out of the JSON, printed instead
    let text = serde_json::to_string_pretty(&json)? + "\n";
    match &a.json {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => print!("{text}"),
    }
    if let Some(p) = &a.trace {
        let t = engine.trace_json();
        std::fs::write(p, serde_json::to_string(&t)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    eprintln!(
        "mosaic-sim: {} {} on {}: {:.4} s simulated in {:.2} s wall; {}",
        label,
        a.workload,
        a.machine,
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

pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().map(String::as_str) == Some("report") {
        return match crate::report::main(&argv[1..]) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("mosaic-sim report: {e:#}");
                1
            }
        };
    }
    if argv.iter().any(|a| a == "--list-machines") {
        for (n, d) in PRESETS {
            println!("{n:<16} {d}");
        }
        return 0;
    }
    if argv.iter().any(|a| a == "--list-workloads") {
        for (n, d) in WORKLOADS {
            println!("{n:<10} {d}");
        }
        return 0;
    }
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return 0;
    }
    match parse(&argv).and_then(|a| run(&a)) {
        Ok(rc) => rc,
        Err(e) => {
            eprintln!("mosaic-sim: {e:#}");
            2
        }
    }
}
