//! The simulator against the VM: for each VM preset the simulator models, the
//! bench workloads' counter ratios as scx_mosaic counted them in the guest
//! over each workload's window (docs/sim-vm-counters.json, written by
//! scripts/sim-vm-counters) next to the same ratios from the simulator
//! running the same BPF on the same preset, the workload alone.
//! A section of docs/sim-report.md.
//!
//! Ratios, not counts: the simulator's hackbench and pipe are behavioural
//! models whose message batching differs from the real programs', so absolute
//! counts differ by design; what each decision's share of the events is
//! should not.
use anyhow::{Context, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A cell within this relative distance of the VM's median agrees.
const TOLERANCE: f64 = 0.20;
/// RNG seeds per simulated cell (seed, seed+1, ...): with 5 the TCG count moved 2 cells between base seeds 1 and 6, with 15 none (1, 16); ~20 ms a run.
const SEEDS: u64 = 15;
/// A VM share under this is too small for a relative comparison: such a
/// cell is trivial (Class::UnderFloor).
const ABS_FLOOR: f64 = 0.01;

/// Where a task placed by the scheduler came from: every queue pull, every
/// steal and every insert at wakeup. The denominator of the per-placement rows.
const PLACEMENTS: &[&str] = &[
    "direct_dispatches",
    "insert_queued",
    "shard_pulls_local",
    "shard_pulls_sibling",
    "shard_pulls_older",
    "cpu_pulls",
    "steal_pulls_node",
    "steal_pulls_remote",
];
/// select_cpu outcomes that placed the task on a CPU at once.
const WAKE_PLACED: &[&str] = &[
    "prev_kept",
    "wake_sync",
    "wake_l2_idle",
    "wake_llc_idle",
    "wake_remote_idle",
    "wake_capacity",
    "wake_group_part",
];
const SHARD_PULLS: &[&str] = &[
    "shard_pulls_local",
    "shard_pulls_sibling",
    "shard_pulls_older",
    "cpu_pulls",
];
const STEALS: &[&str] = &["steal_pulls_node", "steal_pulls_remote"];
/// The workload whose own wakeups all go to the waker's CPU by the pair rule
/// (perf bench sched pipe: wake_sync): what else the scheduler counts in its
/// window is the guest's own tasks', not the workload's.
const BACKGROUND_PROBE: &str = "pipe";
/// The harness alone (scripts/sim-vm-counters' null workload, `true`): its
/// window holds what every window holds besides its workload, the stats
/// clients that open and close it.
const HARNESS_PROBE: &str = "null";
/// The preset whose BACKGROUND_PROBE windows give the background's rates
/// (its pipe cells are trivial but for the time overloaded, whose spells
/// the fitted rates do not target); every other cell tests them.
const BACKGROUND_PRESET: &str = "2node";

/// One row: numerator counters over denominator counters ("@wall_ns": the
/// workload's duration). `why` explains cells off by more than the tolerance.
struct Ratio {
    name: &'static str,
    num: &'static [&'static str],
    den: &'static [&'static [&'static str]],
    why: &'static str,
}

const RATIOS: &[Ratio] = &[
    Ratio {
        name: "wakeups placed at once (idle CPU or sync) / wakeups",
        num: WAKE_PLACED,
        den: &[WAKE_PLACED, &["wake_busy"]],
        why: "the programs' start is modelled (startup=1: the main task forks each worker, which select_cpu places as the kernel's wake_up_new_task asks, SCX_WAKE_FORK from the parent's CPU); the VM's window also holds the guest's own tasks that wake during the workload, mostly onto an idle CPU, which the simulator runs only as a model fitted on one preset's pipe windows (see the window's paragraph), though a background that wakes several times as often moves this share little; and on the hardware model a start that takes longer under TCG than its fork (the host-thread model fits its forks on the VM's start-up). Where a model's receivers sleep more often than the VM's (the programs' own sleeps, above: the hardware model's), more of its wakeups are of tasks that every CPU is busy for, and the share falls",
    },
    Ratio {
        name: "handed over in enqueue / inserts at wakeup",
        num: &["insert_queued"],
        den: &[&["direct_dispatches", "insert_queued"]],
        why: "the share depends on whether the waker's CPU shares an L2 with the idle CPU found, so on which vCPU wakes whom; compare the TCG sim column, where one vCPU makes many wakeups in a turn while the others stand frozen. On the hardware model the seeds split in two: in some, the program's last tenth (its last senders feeding receivers whose CPUs have gone idle) makes most of the run's wakeups onto idle CPUs, in others none, and the median falls where the two meet",
    },
    Ratio {
        name: "sibling-shard pulls / pulls inside the LLC",
        num: &["shard_pulls_sibling", "shard_pulls_older"],
        den: &[SHARD_PULLS],
        why: "in hackbench and messaging the VM's share is mostly pulls of a sibling shard's head more than a slice older in vtime (shard_pulls_older), which needs the tasks' vtimes to spread by a slice: the hardware model runs the whole workload within a few slices and makes none, the TCG sim and the VM stretch it over the VM's time; pipe's few in the VM are the guest's own tasks' (see the window's paragraph)",
    },
    Ratio {
        name: "steals / placements",
        num: STEALS,
        den: &[PLACEMENTS],
        why: "not explained yet",
    },
    Ratio {
        name: "steal hits / steal scans",
        num: &["steal_hits"],
        den: &[&["steal_scans"]],
        why: "on the hardware model every CPU runs at once, so the other LLC's shard is usually drained by the time an idle CPU scans it; in the VM that LLC's vCPUs sit frozen with their queues full while another vCPU holds the host thread, which the TCG sim column models",
    },
    Ratio {
        name: "migrations / placements",
        num: &["migrations"],
        den: &[PLACEMENTS],
        why: "with --same-rq-pull off, the default on bare metal, the simulator's share moves most: the guest's pull of a task already on the CPU's runqueue shapes it; compare the TCG sim column, where the vCPU that holds the host thread takes what waits while the others stand frozen",
    },
    Ratio {
        name: "empty dispatches / placements",
        num: &["dispatch_empty"],
        den: &[PLACEMENTS],
        why: "the VM's window also holds the guest's own tasks that run during the workload: they wake on idle CPUs, which find nothing once they are done; the simulator runs them as a model fitted on one preset's pipe windows, and the host-thread model also the kernel threads that free the exited workers' stacks and the window's tail up to the counters' read (see the window's paragraph). Where a model is higher, its CPUs found nothing more often during the workload than the VM's; where it is lower, less often, or its programs' tasks slept and woke more often than the VM's (the programs' own sleeps, above), each wakeup a placement; pipe's own pair shares one CPU, which never dispatches empty",
    },
    Ratio {
        name: "slice refills of a lone task / placements",
        num: &["prev_refilled"],
        den: &[PLACEMENTS],
        why: "single-threaded TCG: a vCPU waiting for its turn of the host thread keeps its task running in guest time, so slices run out with nothing queued; the hardware model's tasks block long before a slice ends (compare the TCG sim column)",
    },
    Ratio {
        name: "time overloaded / workload time",
        num: &["overload_ns"],
        den: &[&["@wall_ns"]],
        why: "the programs' start and end (startup=1: the main task forks the workers one by one and reaps them) are the time nothing waits; pipe: the pair's sync wakeups raise no flag. A trace of the VM's pipe windows (ftrace's sched events beside the flag's rises and falls, printed by a diagnostic build of the same BPF) puts most of the spells' time at the window's two ends: a per-CPU kernel thread (ksoftirqd, a kworker) woken on the CPU of a task that runs on for milliseconds, perf's main thread as it starts the pair or the harness's stats client after it, waits there behind it, and the flag falls at the next balance after it ran. The simulator's pipe begins with the pair, without perf's start, and the host-thread model's reader of the counters after it is one short task, not a process that the harness starts, so its flag rises only when its background's per-CPU thread wakes beside the pair",
    },
];

/// Counter @k of @counters (a JSON object of numbers); @wall_ns is the run's time.
fn get(counters: &Value, k: &str, wall_ns: f64) -> f64 {
    if k == "@wall_ns" {
        return wall_ns;
    }
    counters[k].as_f64().unwrap_or(0.0)
}

/// Ratio @r of one run; None when its denominator is zero (nothing to share).
fn ratio(r: &Ratio, counters: &Value, wall_ns: f64) -> Option<f64> {
    let num: f64 = r.num.iter().map(|k| get(counters, k, wall_ns)).sum();
    let den: f64 = r
        .den
        .iter()
        .flat_map(|g| g.iter())
        .map(|k| get(counters, k, wall_ns))
        .sum();
    (den > 0.0).then(|| num / den)
}

/// The median of @v (stats::median), None for none.
fn median(v: Vec<f64>) -> Option<f64> {
    (!v.is_empty()).then(|| crate::stats::median(&v))
}

/// One compared cell: ratio, preset, workload, the VM's median, the
/// simulated median over the SEEDS seeds, its class, and the simulated
/// (min, max) over those seeds.
type Cell<'a> = (&'a str, String, String, f64, f64, Class, (f64, f64));
/// A non-trivial cell's VM medians per series: (ratio, preset, workload,
/// the VM's pooled median, the hardware model's, one median per series).
type SeriesCell<'a> = (&'a str, String, String, f64, f64, Vec<f64>);

/// One boot series of VM counters (scripts/sim-vm-counters): one boot per
/// preset, all on the same scheduler build.
struct Series {
    commit: String,
    date: String,
    /// the scheduler build (`scx_mosaic --version`'s commit)
    scheduler: String,
    accelerator: String,
    rounds: u64,
}

/// The series of the VM counters file @vm and their runs pooled per preset,
/// each run marked with its series' index ("series").
fn pool_series(vm: &Value) -> Result<(Vec<Series>, serde_json::Map<String, Value>)> {
    let listed = vm["series"].as_array().context("no series")?;
    let mut series = Vec::new();
    let mut presets = serde_json::Map::new();
    for (at, x) in listed.iter().enumerate() {
        let text = |k: &str| x[k].as_str().unwrap_or("?").to_string();
        series.push(Series {
            commit: text("commit"),
            date: text("date"),
            scheduler: text("scheduler"),
            accelerator: text("accelerator"),
            rounds: x["rounds"].as_u64().unwrap_or(0),
        });
        for (preset, runs) in x["presets"].as_object().context("no presets")? {
            let pooled = presets
                .entry(preset.clone())
                .or_insert_with(|| Value::Array(Vec::new()));
            for run in runs.as_array().context("runs")? {
                let mut run = run.clone();
                run["series"] = Value::from(at);
                pooled.as_array_mut().context("runs")?.push(run);
            }
        }
    }
    if series.is_empty() {
        anyhow::bail!("no series of VM counters");
    }
    Ok((series, presets))
}

/// The series as the section's first paragraph names them.
fn series_list(series: &[Series]) -> String {
    let each: Vec<String> = series
        .iter()
        .map(|x| format!("commit {}, {}, {} rounds", x.commit, x.date, x.rounds))
        .collect();
    let builds: std::collections::BTreeSet<&str> =
        series.iter().map(|x| x.scheduler.as_str()).collect();
    format!(
        "{} series, one boot per preset each, pooled ({}), scheduler build {}",
        series.len(),
        each.join("; "),
        builds.into_iter().collect::<Vec<_>>().join(", ")
    )
}

/// The paragraph that holds the VM's series against each other: each
/// series' speed (its median wall time of the first workload over the
/// presets) and, on @cells (non-trivial ones), how many keep every series'
/// median within TOLERANCE of the median of the other series' medians, and
/// how many of the simulator's cells off lie within TOLERANCE of some
/// series' median. None with one series.
fn between_series(
    series: &[Series],
    presets: &serde_json::Map<String, Value>,
    workloads: &serde_json::Map<String, Value>,
    cells: &[SeriesCell],
) -> Option<String> {
    if series.len() < 2 || cells.is_empty() {
        return None;
    }
    let first = workloads.keys().next()?;
    let speeds: Vec<String> = (0..series.len())
        .map(|at| {
            let walls: Vec<f64> = presets
                .values()
                .filter_map(Value::as_array)
                .flatten()
                .filter(|x| x["workload"] == first.as_str() && x["series"] == at)
                .filter_map(|x| x["wall_s"].as_f64())
                .collect();
            match median(walls) {
                Some(w) => format!("{w:.2} s ({})", series[at].commit),
                None => format!("– ({})", series[at].commit),
            }
        })
        .collect();
    let others = |meds: &[f64], i: usize| {
        median(
            meds.iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, &v)| v)
                .collect(),
        )
    };
    let steady = |meds: &[f64]| {
        (0..meds.len()).all(|i| others(meds, i).is_some_and(|o| agrees_relative(o, meds[i])))
    };
    let kept = cells.iter().filter(|c| steady(&c.5)).count();
    let mut moved: Vec<(f64, String)> = cells
        .iter()
        .filter(|c| !steady(&c.5))
        .map(|c| {
            let (lo, hi) = span(&c.5);
            (
                hi / lo.max(1e-12),
                format!("{} {} {}: {lo:.3}–{hi:.3}", c.1, c.2, c.0),
            )
        })
        .collect();
    moved.sort_by(|a, b| b.0.total_cmp(&a.0));
    let off: Vec<&SeriesCell> = cells
        .iter()
        .filter(|c| !agrees_relative(c.3, c.4))
        .collect();
    let near_one = off
        .iter()
        .filter(|c| c.5.iter().any(|&m| agrees_relative(m, c.4)))
        .count();
    Some(format!(
        "**The VM between its boots.** The {n} series ran the same scheduler build at their own \
         TCG speed ({first}'s median wall time over the presets: {}). Each series' median \
         against the median of the other series', by the same ±{:.0} % rule: on {kept} of the \
         {} non-trivial cells every series agrees ({:.0} %); the widest moves between series \
         (min–max of the series' medians): {}. Of the {} cells the hardware model has off the \
         pooled median, {near_one} are within ±{:.0} % of one series' median.",
        speeds.join(", "),
        TOLERANCE * 100.0,
        cells.len(),
        kept as f64 * 100.0 / cells.len() as f64,
        if moved.is_empty() {
            "none".to_string()
        } else {
            moved
                .iter()
                .take(4)
                .map(|m| m.1.clone())
                .collect::<Vec<_>>()
                .join("; ")
        },
        off.len(),
        TOLERANCE * 100.0,
        n = series.len(),
    ))
}

/// Values this close to 0 or 1 count as exactly that for the classes.
const EXACT: f64 = 0.0005;

/// What kind of comparison a cell (VM median @vm, simulated @sim) is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// both 0: nothing happened on either side
    Zeros,
    /// both 1: the only possible outcome on either side
    Ones,
    /// the VM's share is under ABS_FLOOR: agreement there is the floor's
    UnderFloor,
    /// a comparison that can fail on its own numbers
    NonTrivial,
}

impl Class {
    /// The class's name in the report.
    fn name(self) -> &'static str {
        match self {
            Class::Zeros => "0/0",
            Class::Ones => "1/1",
            Class::UnderFloor => "VM share under the floor",
            Class::NonTrivial => "non-trivial",
        }
    }
}

/// The class of the cell VM @vm, simulated @sim.
fn classify(vm: f64, sim: f64) -> Class {
    if vm.abs() <= EXACT && sim.abs() <= EXACT {
        Class::Zeros
    } else if (vm - 1.0).abs() <= EXACT && (sim - 1.0).abs() <= EXACT {
        Class::Ones
    } else if vm < ABS_FLOOR {
        Class::UnderFloor
    } else {
        Class::NonTrivial
    }
}

/// Whether a non-trivial cell agrees: within TOLERANCE of the VM, no floor.
fn agrees_relative(vm: f64, sim: f64) -> bool {
    (sim - vm).abs() <= TOLERANCE * vm
}

/// Run the simulator on @machine with @workload (and cost overrides
/// @costs, k=v); its JSON. Every run has the report's step jitter
/// (report::STEP_JITTER), as the seed rows do: without it the seed reaches
/// only bpf_get_prandom_u32() and the seeds run much the same trajectory.
fn simulate(
    exe: &Path,
    dir: &Path,
    machine: &str,
    workload: &str,
    seed: u64,
    costs: &[String],
) -> Result<Value> {
    let out = dir.join(format!(
        "fidelity-{machine}-s{seed}-{}{}.json",
        workload.replace([':', ',', '='], "_"),
        costs.join("_").replace(['=', '.'], "_")
    ));
    // the VM presets are guests to the simulator too: the VM's configuration
    let st = Command::new(exe)
        .args([
            "--machine",
            machine,
            "--workload",
            workload,
            "--seed",
            &seed.to_string(),
        ])
        .args([
            "--cost",
            &format!("step_jitter={}", crate::report::STEP_JITTER),
        ])
        .args(costs.iter().flat_map(|c| ["--cost", c.as_str()]))
        .arg("--json")
        .arg(&out)
        .output()
        .context("running mosaic-sim")?;
    if !st.status.success() {
        anyhow::bail!(
            "{machine} {workload}: {}",
            String::from_utf8_lossy(&st.stderr).trim()
        );
    }
    Ok(serde_json::from_str(&std::fs::read_to_string(&out)?)?)
}

/// simulate() once per seed of @seed..@seed+SEEDS; the runs in seed order.
fn simulate_seeds(
    exe: &Path,
    dir: &Path,
    machine: &str,
    workload: &str,
    seed: u64,
    costs: &[String],
) -> Result<Vec<Value>> {
    (seed..seed + SEEDS)
        .map(|s| simulate(exe, dir, machine, workload, s, costs))
        .collect()
}

/// The median workload time (s) of the simulated runs @sims.
fn median_workload_time(sims: &[Value]) -> Option<f64> {
    median(sims.iter().filter_map(workload_time).collect())
}

/// Ratio @r over the simulated runs @sims (those with a denominator): the
/// median and the (min, max); None when no run has one.
fn sim_ratio(r: &Ratio, sims: &[Value]) -> Option<(f64, (f64, f64))> {
    let v: Vec<f64> = sims
        .iter()
        .filter_map(|s| ratio(r, &s["counters"], workload_time(s).unwrap_or(0.0) * 1e9))
        .collect();
    let range = span(&v);
    median(v).map(|m| (m, range))
}

/// The "Simulator against the VM" section, from the VM counters at @path.
pub fn section(md: &mut String, exe: &Path, dir: &Path, path: &PathBuf, seed: u64) -> Result<()> {
    writeln!(md, "\n## Simulator against the VM\n")?;
    let Ok(text) = std::fs::read_to_string(path) else {
        writeln!(
            md,
            "No VM counters at `{}`: run `scripts/sim-vm-counters` (boots the VM presets), then \
             `make sim-report`.",
            path.display()
        )?;
        return Ok(());
    };
    let vm: Value = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
    let workloads = vm["workloads"].as_object().context("no workloads")?;
    let (series, mut presets) = pool_series(&vm)?;
    let harness = subtract_harness(&mut presets);
    let presets = &presets;
    let j = crate::report::STEP_JITTER;
    writeln!(
        md,
        "scx_mosaic's counters over each bench workload in the VM, its window alone (the stats just \
         after the workload less just before; below) (`{}`: {}; {}: TCG models no caches and \
         runs the vCPUs in turn on one host thread, so the VM side is noisy) against the simulator running the same BPF on the same preset, a guest \
         there too (`--same-rq-pull`'s auto is on), {SEEDS} times per cell (RNG seeds \
         {seed}–{}, each step's CPU time scaled by a factor drawn in [1 − {j}, 1 + {j}] as in \
         the seed rows). Each cell is \
         a ratio of counters: VM median over every series' rounds (min–max over them) | simulated on the hardware model | \
         simulated on the model of the VM's host thread (TCG sim, below); a simulated cell is the \
         median over the seeds (min–max over them). A cell is trivial \
         when both sides are 0 (0/0) or both 1 (1/1), or when the VM's share is under {ABS_FLOOR} \
         (agreement there says little); trivial cells are marked (t). A non-trivial simulated cell \
         marked ✗ has its median more than {:.0} % from the VM's median. Ratios, not \
         counts: the simulator's programs are behavioural models, so their event counts differ by \
         design. Workloads (VM → simulator): {}.\n",
        path.display(),
        series_list(&series),
        series
            .iter()
            .map(|x| x.accelerator.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", "),
        seed + SEEDS - 1,
        TOLERANCE * 100.0,
        workloads
            .iter()
            .map(|(n, w)| format!(
                "{n}: `{}` → `{}`",
                w["vm"].as_str().unwrap_or("?"),
                w["sim"].as_str().unwrap_or("?")
            ))
            .collect::<Vec<_>>()
            .join("; ")
    )?;
    let bg = background_fit(presets);
    let bg_opts = bg
        .as_ref()
        .map(|b| format!(",{}", b.opts()))
        .unwrap_or_default();
    // the guest's own times, for the model of its host thread only
    let guest_opts = if bg.is_some() {
        format!(",bg_rcu_gp_us={RCU_GP_US},bg_tail_us={READ_TAIL_US}")
    } else {
        String::new()
    };
    let fits = tcg_calibration(
        exe,
        dir,
        presets,
        workloads,
        seed,
        &format!("{bg_opts}{guest_opts}"),
    )?;
    // every compared cell, on the hardware model and on the model of the
    // VM's host thread
    let mut compared: Vec<Cell> = Vec::new();
    let mut compared_tcg: Vec<Cell> = Vec::new();
    // wall times: (workload, preset, VM median, hardware model, host-thread model)
    let mut walls: Vec<(String, String, f64, f64, f64)> = Vec::new();
    // the host-thread model's BACKGROUND_PROBE runs, every preset's
    let mut probe_tcg: Vec<Value> = Vec::new();
    // the VM against itself, per cell the hardware model found non-trivial:
    // the median of its odd rounds and that of its even rounds
    let mut halves: Vec<(f64, f64)> = Vec::new();
    // the same cells' medians per series, beside the pooled VM median and the
    // hardware model's: (ratio, preset, workload, VM, simulated, per series)
    let mut per_series: Vec<SeriesCell> = Vec::new();
    // every simulated run per preset and workload: (preset, workload, hardware, host-thread)
    let mut program_sims: Vec<(String, String, Vec<Value>, Vec<Value>)> = Vec::new();
    for (preset, runs) in presets {
        let runs = runs.as_array().context("runs")?;
        write!(md, "### `{preset}`\n\n| ratio |")?;
        for n in workloads.keys() {
            write!(md, " {n}: VM | sim | TCG sim |")?;
        }
        write!(md, "\n|---|")?;
        for _ in workloads {
            write!(md, "---|---|---|")?;
        }
        writeln!(md)?;
        let mut sims = Vec::new();
        for (name, w) in workloads {
            let workload = format!("{}{bg_opts}", w["sim"].as_str().unwrap_or(""));
            let workload = workload.as_str();
            let hw = simulate_seeds(exe, dir, preset, workload, seed, &[])?;
            let fit = &fits[name];
            let cost = host_thread_costs(fit.slowdown);
            let tcg_workload = with_fork(&format!("{workload}{guest_opts}"), fit.fork_ns);
            let tcg = simulate_seeds(exe, dir, preset, &tcg_workload, seed, &cost)?;
            let vm_wall = median(vm_walls(runs, name));
            if let (Some(v), Some(h), Some(t)) = (
                vm_wall,
                median_workload_time(&hw),
                median_workload_time(&tcg),
            ) {
                walls.push((name.clone(), preset.clone(), v, h, t));
            }
            if name == BACKGROUND_PROBE {
                probe_tcg.extend(tcg.iter().cloned());
            }
            program_sims.push((preset.clone(), name.clone(), hw.clone(), tcg.clone()));
            sims.push((hw, tcg));
        }
        for r in RATIOS {
            write!(md, "| {} |", r.name)?;
            for ((name, _), (hw, tcg)) in workloads.iter().zip(&sims) {
                // the VM's ratio per round: (series, round, ratio)
                let vm_rounds: Vec<(usize, u64, f64)> = runs
                    .iter()
                    .filter(|x| x["workload"] == name.as_str())
                    .filter_map(|x| {
                        let wall_ns = x["wall_s"].as_f64().unwrap_or(0.0) * 1e9;
                        let round = x["round"].as_u64().unwrap_or(0);
                        let at = x["series"].as_u64().unwrap_or(0) as usize;
                        ratio(r, vm_counters(x), wall_ns).map(|v| (at, round, v))
                    })
                    .collect();
                let vm_vals: Vec<f64> = vm_rounds.iter().map(|&(_, _, v)| v).collect();
                let (lo, hi) = span(&vm_vals);
                let vm_med = median(vm_vals);
                let vm_cell = match vm_med {
                    Some(m) => format!("{m:.3} ({lo:.3}–{hi:.3})"),
                    None => "–".into(),
                };
                write!(md, " {vm_cell} |")?;
                let hw_val = sim_ratio(r, hw);
                if let (Some(v), Some((s, _))) = (vm_med, hw_val) {
                    let half = |odd: bool| {
                        median(
                            vm_rounds
                                .iter()
                                .filter(|&&(_, n, _)| (n % 2 == 1) == odd)
                                .map(|&(_, _, v)| v)
                                .collect(),
                        )
                    };
                    if classify(v, s) == Class::NonTrivial {
                        if let (Some(a), Some(b)) = (half(true), half(false)) {
                            halves.push((a, b));
                        }
                        let of = |at: usize| {
                            median(
                                vm_rounds
                                    .iter()
                                    .filter(|&&(k, _, _)| k == at)
                                    .map(|&(_, _, v)| v)
                                    .collect(),
                            )
                        };
                        let meds: Vec<f64> = (0..series.len()).filter_map(of).collect();
                        if meds.len() >= 2 {
                            per_series.push((r.name, preset.clone(), name.clone(), v, s, meds));
                        }
                    }
                }
                let models = [
                    (hw_val, &mut compared),
                    (sim_ratio(r, tcg), &mut compared_tcg),
                ];
                for (sim_val, cells) in models {
                    if let (Some(v), Some((s, range))) = (vm_med, sim_val) {
                        let class = classify(v, s);
                        cells.push((r.name, preset.clone(), name.clone(), v, s, class, range));
                    }
                    write!(md, " {} |", sim_cell(vm_med, sim_val))?;
                }
            }
            writeln!(md)?;
        }
        writeln!(md)?;
    }
    writeln!(
        md,
        "{} {}\n",
        cell_summary(&compared),
        vm_self_agreement(&halves)
    )?;
    if let Some(note) = between_series(&series, presets, workloads, &per_series) {
        writeln!(md, "{note}\n")?;
    }
    writeln!(
        md,
        "{}\n",
        tcg_summary(&compared, &compared_tcg, &fits, &walls)
    )?;
    if let Some(note) = programs_note(&vm, &program_sims) {
        writeln!(md, "{note}\n")?;
    }
    if let Some(note) = window_note(presets, workloads, bg.as_ref()) {
        writeln!(md, "{note}\n")?;
    }
    if let Some(note) = harness_note(&harness) {
        writeln!(md, "{note}\n")?;
    }
    let vm_commit = series.last().map(|x| x.commit.as_str()).unwrap_or("");
    let since = scheduler_commits_since(vm_commit);
    if !since.is_empty() {
        writeln!(
            md,
            "The VM counters were recorded at {vm_commit}; the scheduler changed since ({}: \
             `git log {vm_commit}..HEAD -- scheduler/src`), and the simulator runs the current BPF, \
             so a ratio those commits moved compares two schedulers until `make sim-vm-counters` is \
             re-run.\n",
            since.join(", ")
        )?;
    }
    for r in RATIOS {
        let off: Vec<String> = compared
            .iter()
            .filter(|c| c.0 == r.name && c.5 == Class::NonTrivial && !agrees_relative(c.3, c.4))
            .map(|c| format!("{} {} {:.3} against {:.3}", c.1, c.2, c.4, c.3))
            .collect();
        if off.is_empty() {
            continue;
        }
        let lower = compared
            .iter()
            .filter(|c| c.0 == r.name && c.5 == Class::NonTrivial && !agrees_relative(c.3, c.4))
            .filter(|c| c.4 < c.3)
            .count();
        let mut why = if r.why.is_empty() {
            "not explained yet".to_string()
        } else {
            r.why.to_string()
        };
        if r.num == ["overload_ns"] {
            if let Some(note) = spell_note(presets, &probe_tcg) {
                why += &format!(". {note}");
            }
        }
        writeln!(
            md,
            "- **{}**: {} non-trivial cell(s) off on the hardware model, the simulator lower in \
             {lower} (preset workload simulated against VM: {}). {why}",
            r.name,
            off.len(),
            off.join(", ")
        )?;
    }
    Ok(())
}

/// How the overload flag's spells end in BACKGROUND_PROBE's windows: in the
/// VM (@presets' runs) and on the host-thread model (@tcg, its runs of every
/// preset); None without VM windows of it.
fn spell_note(presets: &serde_json::Map<String, Value>, tcg: &[Value]) -> Option<String> {
    // the VM's runs of it that have a window
    let runs: Vec<&Value> = presets
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter(|x| x["workload"] == BACKGROUND_PROBE && x["window"].is_object())
        .collect();
    let wins: Vec<&Value> = runs.iter().map(|x| raw_window(x)).collect();
    // per window with a rise: (rises, mean spell ns, all lowered by a newidle balance)
    let spells = |cs: &[&Value]| -> Vec<(f64, f64, bool)> {
        cs.iter()
            .map(|c| {
                let sets = get(c, "overload_sets", 0.0);
                let clears = get(c, "overload_newidle_clears", 0.0);
                (
                    sets,
                    get(c, "overload_ns", 0.0) / sets.max(1.0),
                    clears >= sets,
                )
            })
            .filter(|s| s.0 > 0.0)
            .collect()
    };
    let vm = spells(&wins);
    let empties: Vec<f64> = runs
        .iter()
        .filter_map(|x| {
            let wall = x["wall_s"].as_f64().filter(|w| *w > 0.0)?;
            Some(get(raw_window(x), "dispatch_empty", 0.0) / wall)
        })
        .collect();
    let tcg_counters: Vec<&Value> = tcg.iter().map(|r| &r["counters"]).collect();
    let sim = spells(&tcg_counters);
    let vm_spell = median(vm.iter().map(|s| s.1).collect())?;
    let by_newidle = vm.iter().filter(|s| s.2).count();
    let rate = median(empties)?;
    let sim_part = match median(sim.iter().map(|s| s.1).collect()) {
        Some(t) => format!(
            "On the host-thread model the flag rose in {} of its {} runs and a spell lasted \
             {:.0} µs: the first balance after the queued task ran lowers it",
            sim.len(),
            tcg.len(),
            t / 1e3
        ),
        None => format!(
            "On the host-thread model the flag never rose in its {} runs",
            tcg.len()
        ),
    };
    Some(format!(
        "In the VM's {BACKGROUND_PROBE} windows the flag rose in {} of {} and a spell lasted \
         {:.1} ms (overload_ns / overload_sets, median); in {} of those {} every spell was \
         lowered by a newidle balance, which a CPU makes when it finds nothing to run, \
         {:.0} times a second there (empty dispatches, median); a spell that waited for the \
         next one would last {:.1}–{:.1} ms (half their mean gap if evenly spaced, the whole \
         gap if at random). {sim_part}",
        vm.len(),
        wins.len(),
        vm_spell / 1e6,
        by_newidle,
        vm.len(),
        rate,
        500.0 / rate.max(1e-9),
        1000.0 / rate.max(1e-9),
    ))
}

/// The guest's own tasks during the workload as the simulator runs them
/// (workload.rs, Background, bg_during=1), fitted on BACKGROUND_PRESET's
/// BACKGROUND_PROBE windows.
struct BackgroundFit {
    /// the period of the unbound kernel thread and of each CPU's, us
    unbound_us: u64,
    percpu_us: u64,
    /// what it reproduces there per window: wakeups that select_cpu placed
    /// other than by the pair rule or found no CPU for, pulls from a CPU's
    /// own queue; the window's wall time, s
    wakeups: f64,
    pinned: f64,
    wall_s: f64,
}

/// RCU's grace period in the guest under the message programs, us: the
/// median of a worker's exit to the deferred free of its stack over 1.5
/// (`scripts/exit-frees --boots 3 8` on CALIBRATION_PRESET: 59.7 ms over
/// 1,750 exits; single boots gave 30.6-42.5 ms). The host-thread model's
/// background (workload.rs, Background, bg_rcu_gp_us).
const RCU_GP_US: u64 = 39_800;
/// The workload's end to the harness's read of the counters after it, us:
/// the rest of the VM's window (same runs: 24 rounds, 28-80 ms; single boots'
/// medians 41.5-64.0 ms). The host-thread model's bg_tail_us.
const READ_TAIL_US: u64 = 48_100;

impl BackgroundFit {
    /// The workload options that run it.
    fn opts(&self) -> String {
        format!(
            "bg_during=1,bg_unbound_us={},bg_percpu_us={}",
            self.unbound_us, self.percpu_us
        )
    }
}

/// The background that makes the probe's windows on BACKGROUND_PRESET count
/// what their VM windows count besides the workload's pair wakeups: over the
/// window's wall time, the agent's wakeups (one per AGENT_PERIOD_NS), an
/// unbound kernel thread's for the rest of those wakeups, a thread on each
/// CPU for the pulls from CPUs' own queues. None without windows.
fn background_fit(presets: &serde_json::Map<String, Value>) -> Option<BackgroundFit> {
    let runs: Vec<&Value> = presets
        .get(BACKGROUND_PRESET)?
        .as_array()?
        .iter()
        .filter(|x| x["workload"] == BACKGROUND_PROBE && x["window"].is_object())
        .collect();
    let med = |f: &dyn Fn(&Value) -> f64| median(runs.iter().map(|x| f(x)).collect());
    let wakeups = med(&|x| placed_aside_sync(&x["window"]) + get(&x["window"], "wake_busy", 0.0))?;
    let pinned = med(&|x| get(&x["window"], "cpu_pulls", 0.0))?;
    let wall_s = med(&|x| x["wall_s"].as_f64().unwrap_or(0.0))?;
    if wall_s <= 0.0 {
        return None;
    }
    let agent = wall_s * 1e9 / crate::workload::AGENT_PERIOD_NS as f64;
    let nr_cpus = crate::machine::Machine::preset(BACKGROUND_PRESET)
        .ok()?
        .nr_cpus() as f64;
    Some(BackgroundFit {
        unbound_us: (wall_s * 1e6 / (wakeups - agent).max(1.0)).round() as u64,
        percpu_us: if pinned > 0.0 {
            (wall_s * 1e6 * nr_cpus / pinned).round() as u64
        } else {
            0
        },
        wakeups,
        pinned,
        wall_s,
    })
}

/// Wakeups of @c that select_cpu placed at once, the pair rule's aside.
fn placed_aside_sync(c: &Value) -> f64 {
    sum(c, WAKE_PLACED) - get(c, "wake_sync", 0.0)
}

/// The workload's own time of simulated run @sim, s: the run's, less a
/// background's time before it (workload.rs, Background; none here).
fn workload_time(sim: &Value) -> Option<f64> {
    sim["workload"]["workload_time_s"]
        .as_f64()
        .or_else(|| sim["completion_time_s"].as_f64())
}

/// The sum of counters @keys of @c.
fn sum(c: &Value, keys: &[&str]) -> f64 {
    keys.iter().map(|k| get(c, k, 0.0)).sum()
}

/// VM run @x's window as the VM counted it, before subtract_harness().
fn raw_window(x: &Value) -> &Value {
    match &x["window_raw"] {
        w @ Value::Object(_) => w,
        _ => &x["window"],
    }
}

/// What the harness's windows counted on one preset: its runs, and the
/// median of each counter over them.
struct Harness {
    preset: String,
    runs: usize,
    median: serde_json::Map<String, Value>,
}

/// Takes the harness out of every window of @presets: per preset, the median
/// of each counter over its HARNESS_PROBE windows is subtracted from every
/// other run's window (floored at 0; the VM's count kept as `window_raw`),
/// and the probe's runs leave the list. The harness's medians, per preset
/// that ran it.
fn subtract_harness(presets: &mut serde_json::Map<String, Value>) -> Vec<Harness> {
    let mut out = Vec::new();
    for (preset, runs) in presets.iter_mut() {
        let Some(runs) = runs.as_array_mut() else {
            continue;
        };
        let (probe, rest): (Vec<Value>, Vec<Value>) = std::mem::take(runs)
            .into_iter()
            .partition(|x| x["workload"] == HARNESS_PROBE);
        *runs = rest;
        let wins: Vec<&serde_json::Map<String, Value>> = probe
            .iter()
            .filter_map(|x| x["window"].as_object())
            .collect();
        if wins.is_empty() {
            continue;
        }
        let keys: std::collections::BTreeSet<&String> =
            wins.iter().flat_map(|w| w.keys()).collect();
        let med: serde_json::Map<String, Value> = keys
            .into_iter()
            .filter_map(|k| {
                let v: Vec<f64> = wins
                    .iter()
                    .map(|w| w.get(k).and_then(Value::as_f64).unwrap_or(0.0))
                    .collect();
                median(v).map(|m| (k.clone(), Value::from(m)))
            })
            .collect();
        for x in runs.iter_mut() {
            let Some(w) = x["window"].as_object().cloned() else {
                continue;
            };
            let net: serde_json::Map<String, Value> = w
                .iter()
                .map(|(k, v)| {
                    let less = med.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                    (
                        k.clone(),
                        Value::from((v.as_f64().unwrap_or(0.0) - less).max(0.0)),
                    )
                })
                .collect();
            x["window_raw"] = Value::Object(w);
            x["window"] = Value::Object(net);
        }
        out.push(Harness {
            preset: preset.clone(),
            runs: wins.len(),
            median: med,
        });
    }
    out
}

/// The paragraph that says what the harness's own windows counted and that
/// the cells count without it; None if no preset ran the probe.
fn harness_note(harness: &[Harness]) -> Option<String> {
    if harness.is_empty() {
        return None;
    }
    let kinds: [(&str, &[&str]); 4] = [
        ("wakeups placed at once", WAKE_PLACED),
        ("other wakeups", &["wake_busy"]),
        ("empty dispatches", &["dispatch_empty"]),
        ("placements", PLACEMENTS),
    ];
    let each: Vec<String> = harness
        .iter()
        .map(|h| {
            let m = Value::Object(h.median.clone());
            let parts: Vec<String> = kinds
                .iter()
                .map(|(label, keys)| format!("{:.0} {label}", sum(&m, keys)))
                .collect();
            format!("`{}` ({} runs): {}", h.preset, h.runs, parts.join(", "))
        })
        .collect();
    Some(format!(
        "**The harness, taken out.** Each window also holds the stats clients that open and \
         close it (`scx_mosaic --stats-json`, a process each, and the agent's answers). Rounds \
         of the series that carry it run the harness alone too (workload \
         `{HARNESS_PROBE}`: `true`), and the median of its window's counters on each preset \
         is subtracted from every other \
         window's there, counter by counter (floored at 0), before the ratios above; the \
         paragraphs above on what falls outside the window and on the spells read the VM's \
         own counts. The harness's window, median: {}.",
        each.join("; ")
    ))
}

/// The counters of VM run @x over its workload alone (`window`: the stats
/// just after the workload less just before), else over the scheduler's
/// whole load (files recorded before windows).
fn vm_counters(x: &Value) -> &Value {
    match &x["window"] {
        w @ Value::Object(_) => w,
        _ => &x["counters"],
    }
}

/// What the VM runs count outside their workload's window (@presets' runs
/// of @workloads): per workload, the median share of the whole load's
/// wakeups placed at once, empty dispatches and migrations that fell
/// outside the window, with its min–max over the runs; None for runs
/// without windows.
fn window_note(
    presets: &serde_json::Map<String, Value>,
    workloads: &serde_json::Map<String, Value>,
    fit: Option<&BackgroundFit>,
) -> Option<String> {
    let kinds: [(&str, &[&str]); 3] = [
        ("wakeups placed at once", WAKE_PLACED),
        ("empty dispatches", &["dispatch_empty"]),
        ("migrations", &["migrations"]),
    ];
    let runs: Vec<&Value> = presets
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .filter(|x| x["window"].is_object())
        .collect();
    if runs.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for name in workloads.keys() {
        let shares: Vec<String> = kinds
            .iter()
            .map(|(label, keys)| {
                let v: Vec<f64> = runs
                    .iter()
                    .filter(|x| x["workload"] == name.as_str())
                    .filter_map(|x| {
                        let whole = sum(&x["counters"], keys);
                        (whole > 0.0).then(|| (1.0 - sum(raw_window(x), keys) / whole) * 100.0)
                    })
                    .collect();
                let (lo, hi) = span(&v);
                match median(v) {
                    Some(m) => format!("{m:.0} % ({lo:.0}–{hi:.0} %) of its {label}"),
                    None => format!("no {label}"),
                }
            })
            .collect();
        parts.push(format!("{name}: {}", shares.join(", ")));
    }
    let model = match fit {
        Some(f) => format!(
            "The simulator runs the workload from its first fork to its last reap, and beside \
             it, in both models, the guest's own tasks that stay in the VM's window: \
             scx_mosaic's agent wakes every {} ms (scheduler/src/main.rs), an unbound kernel \
             thread every {:.1} ms, woken by each CPU in turn, and a kernel thread on each CPU \
             every {:.0} ms: periods that spread over the window's {:.2} s the {:.0} other \
             wakeups and {:.0} pulls from CPUs' own queues of `{BACKGROUND_PRESET}`'s VM \
             {BACKGROUND_PROBE} windows (medians; a fit on that preset, whose pipe cells are \
             trivial but for the time overloaded, which the fitted counts do not include; every \
             other cell tests it). The host-thread model adds two times of the guest's, measured \
             by ftrace on `{CALIBRATION_PRESET}` (`scripts/exit-frees --boots 3 8`, TCG): a \
             worker's exit past its CPU's two cached stacks frees the stack through RCU, and at \
             the end of the next grace period ({:.1} ms: the median exit to the free's queueing \
             over 1.5, a callback waiting out the current period and the next) that CPU's \
             softirq thread runs the callbacks and wakes its kworker for the vfree, two threads \
             on one CPU; and the run goes on {:.1} ms after the workload, the program's end to \
             the harness's read of the counters, which closes the VM's window.",
            crate::workload::AGENT_PERIOD_NS / 1_000_000,
            f.unbound_us as f64 / 1e3,
            f.percpu_us as f64 / 1e3,
            f.wall_s,
            f.wakeups,
            f.pinned,
            RCU_GP_US as f64 / 1e3,
            READ_TAIL_US as f64 / 1e3,
        ),
        None => "The simulator runs the workload alone, from its first fork to its last reap."
            .to_string(),
    };
    Some(format!(
        "**The window.** Each VM cell counts the workload alone: the scheduler's stats \
         (`scx_mosaic --stats-json`) just after it less just before it. What falls outside \
         that window (the scheduler's start, and the guest's own tasks before and after the \
         workload: its agent, kernel threads, the harness's shell), as a share of the whole \
         load's count, median over the {} runs with windows (min–max): {}. {model}",
        runs.len(),
        parts.join("; ")
    ))
}

/// Whether the simulated (min, max) @range over the seeds reaches across an
/// edge of the ±TOLERANCE band around the VM's @vm: some seeds inside it,
/// some outside, so one seed alone could have given the other verdict.
fn crosses_band(vm: f64, range: (f64, f64)) -> bool {
    let (lo, hi) = range;
    let inside = agrees_relative(vm, lo) && agrees_relative(vm, hi);
    let outside = hi < vm * (1.0 - TOLERANCE) || lo > vm * (1.0 + TOLERANCE);
    !inside && !outside
}

/// The sentence that counts the compared cells by class, the share of
/// non-trivial ones whose median is within TOLERANCE, and how many of those
/// a single seed could have decided otherwise.
fn cell_summary(compared: &[Cell]) -> String {
    let count = |k: Class| compared.iter().filter(|c| c.5 == k).count();
    let nontrivial = count(Class::NonTrivial);
    let within = compared
        .iter()
        .filter(|c| c.5 == Class::NonTrivial && agrees_relative(c.3, c.4))
        .count();
    let crossing = compared
        .iter()
        .filter(|c| c.5 == Class::NonTrivial && crosses_band(c.3, c.6))
        .count();
    let trivial: Vec<String> = [Class::Zeros, Class::Ones, Class::UnderFloor]
        .iter()
        .map(|&k| format!("{} {}", count(k), k.name()))
        .collect();
    format!(
        "{} cells compared (– : the ratio's denominator was zero, nothing to compare): {} trivial \
         ({}) and {nontrivial} {}; of these, {within} are within ±{:.0} % of the VM's median ({:.0} %), \
         by the median over the {SEEDS} seeds; on {crossing} of the {nontrivial} the seeds' \
         min–max reaches across an edge of that band (one seed alone could have given the other \
         verdict).",
        compared.len(),
        compared.len() - nontrivial,
        trivial.join(", "),
        Class::NonTrivial.name(),
        TOLERANCE * 100.0,
        within as f64 * 100.0 / nontrivial.max(1) as f64,
    )
}

/// The sentence that measures the VM against itself on the same cells: of
/// @halves (per non-trivial cell, the median of the VM's odd rounds and of its
/// even rounds, every series'), how many agree within TOLERANCE of the odd
/// half's. Halves hold about half the rounds, so this is noisier than the
/// whole median a model is held to: a floor under what noise allows.
fn vm_self_agreement(halves: &[(f64, f64)]) -> String {
    let agree = halves
        .iter()
        .filter(|&&(odd, even)| agrees_relative(odd, even))
        .count();
    format!(
        "The VM against itself within its boots, by the same rule: on {agree} of these {} cells \
         the median of its odd rounds and that of its even rounds are within ±{:.0} % ({:.0} %).",
        halves.len(),
        TOLERANCE * 100.0,
        agree as f64 * 100.0 / halves.len().max(1) as f64,
    )
}

/// The preset whose wall times give the host-thread model its slowdowns;
/// its cells are left out of that model's count.
const CALIBRATION_PRESET: &str = "1llc";

/// The smallest and largest of @v.
fn span(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The VM's wall times (s) of workload @name in @runs.
fn vm_walls(runs: &[Value], name: &str) -> Vec<f64> {
    runs.iter()
        .filter(|x| x["workload"] == name)
        .filter_map(|x| x["wall_s"].as_f64())
        .collect()
}

/// A simulated cell of the table, @sim: the median over the seeds and
/// their (min, max); ✗ when non-trivial and the median is off the VM's
/// median @vm by more than TOLERANCE, (t) when trivial.
fn sim_cell(vm: Option<f64>, sim: Option<(f64, (f64, f64))>) -> String {
    let Some((s, (lo, hi))) = sim else {
        return "–".into();
    };
    let val = format!("{s:.3} ({lo:.3}–{hi:.3})");
    match vm.map(|v| (v, classify(v, s))) {
        Some((v, Class::NonTrivial)) if !agrees_relative(v, s) => format!("{val} ✗"),
        Some((_, Class::NonTrivial)) | None => val,
        Some(_) => format!("{val} (t)"),
    }
}

/// The VM's own times (s) of workload @name in @runs: the time the program
/// itself reports (its start barrier to its last worker reaped).
fn vm_owns(runs: &[Value], name: &str) -> Vec<f64> {
    runs.iter()
        .filter(|x| x["workload"] == name)
        .filter_map(|x| x["own_s"].as_f64())
        .collect()
}

/// The host-thread model's fit of one workload on CALIBRATION_PRESET.
#[derive(Debug)]
struct HostThreadFit {
    /// S: how many times its hardware time the guest's work takes
    slowdown: f64,
    /// a fork's cost, ns of hardware time, for a program with a start-up
    /// (None: the workload model's own)
    fork_ns: Option<u64>,
    /// whether S was fitted on the own time (else on the wall time, from VM
    /// counters recorded without it)
    on_own: bool,
}

/// Fit S and the fork's cost from the VM's medians on CALIBRATION_PRESET,
/// wall time @wall and own time @own, and the model's at S = 1, the
/// workload's time @t1, its start-up @p1 and its workers' exits @e1 (s; 0:
/// none). With the own time and a start-up, the fork's cost is scaled so
/// that the start-up at S takes the VM's wall time less its own (the
/// model's start-up is nearly all forks, in the main task, one after the
/// other), and a worker's exit costs as much as its fork (EXIT_LIKE_FORK):
/// S is the VM's own time less that much for the exits over the model's
/// time less its start-up and exits. Without a start-up, S is the own time
/// over the model's; without the own time, the wall time over the model's,
/// and the fork and exit keep their costs.
fn host_thread_fit(wall: f64, own: Option<f64>, t1: f64, p1: f64, e1: f64) -> HostThreadFit {
    let startup = own.map_or(0.0, |own| wall - own);
    match own {
        Some(own) if p1 > 0.0 && startup >= 0.0 && own > startup && t1 > p1 + e1 => {
            let slowdown = ((own - startup) / (t1 - p1 - e1)).max(1.0);
            let fork_ns =
                (crate::workload::FORK_NS as f64 * startup / (slowdown * p1)).round() as u64;
            HostThreadFit {
                slowdown,
                fork_ns: Some(fork_ns),
                on_own: true,
            }
        }
        Some(own) if p1 == 0.0 && t1 > 0.0 && startup >= 0.0 => HostThreadFit {
            slowdown: (own / t1).max(1.0),
            fork_ns: None,
            on_own: true,
        },
        _ => HostThreadFit {
            slowdown: if t1 > 0.0 { (wall / t1).max(1.0) } else { 1.0 },
            fork_ns: None,
            on_own: false,
        },
    }
}

/// What loading another process's address space costs the guest under
/// TCG, ns of guest time (the host-thread model's `tcg_mm_switch_ns`):
/// scripts/switch-cost on `1llc`, perf bench sched pipe on one vCPU, a round
/// trip of two processes 101.6 us against 28.7 us as two threads (medians
/// of 5 runs, one boot, TCG, noisy), so 36.5 us at each of its two switches
/// (an earlier boot, 3 runs: 100.1 against 26.8 us).
const TCG_MM_SWITCH_NS: u64 = 36_500;

/// The host-thread model's cost options at slowdown @slowdown.
fn host_thread_costs(slowdown: f64) -> Vec<String> {
    vec![
        format!("tcg_slowdown={slowdown:.3}"),
        format!("tcg_mm_switch_ns={TCG_MM_SWITCH_NS}"),
    ]
}

/// @workload with a fork (and a worker's exit) costing @fork_ns, if given.
fn with_fork(workload: &str, fork_ns: Option<u64>) -> String {
    match fork_ns {
        Some(f) => format!("{workload},fork_ns={f},exit_ns={f}"),
        None => workload.to_string(),
    }
}

/// Rounds of refine_fit(): each moves S by about the address-space loads'
/// share of the time (under a tenth), so three leave it within 0.1 %.
const REFINE_ROUNDS: usize = 3;

/// Refine @fit, fitted at S = 1 without the guest-time costs
/// (host_thread_fit()), on the host-thread model itself: run it at the fit
/// and scale S by the time it was fitted on over the model's - for a
/// program with a start-up, the VM's own time @own less its start-up
/// (@startup: its wall time less its own) over the model's time less its
/// start-up and exits; else the own time over the model's - and the fork's
/// cost by the VM's start-up over the model's. A cost in guest
/// time, which S does not stretch (the address-space loads), makes the
/// model's time S times its work plus a constant: a fit at S = 1 scaled
/// that constant too.
fn refine_fit(
    fit: &mut HostThreadFit,
    exe: &Path,
    dir: &Path,
    workload: &str,
    seed: u64,
    startup: f64,
    own: f64,
) -> Result<()> {
    for _ in 0..REFINE_ROUNDS {
        let w = with_fork(workload, fit.fork_ns);
        let sims = simulate_seeds(
            exe,
            dir,
            CALIBRATION_PRESET,
            &w,
            seed,
            &host_thread_costs(fit.slowdown),
        )?;
        let at = |k: &str| {
            median(
                sims.iter()
                    .filter_map(|s| s["workload"][k].as_f64())
                    .collect(),
            )
            .unwrap_or(0.0)
        };
        let Some(t) = median_workload_time(&sims) else {
            break;
        };
        if !refit_step(fit, own, startup, t, at("startup_s"), at("exits_s")) {
            break;
        }
    }
    Ok(())
}

/// One step of refine_fit(): @fit's S and fork cost scaled by the VM's
/// times (@own, @startup) over the model's at the fit (@t, its start-up @p,
/// its exits @exits_hw in hardware time, which S stretches); false when a
/// time to scale by is missing.
fn refit_step(
    fit: &mut HostThreadFit,
    own: f64,
    startup: f64,
    t: f64,
    p: f64,
    exits_hw: f64,
) -> bool {
    let (vm, model) = match fit.fork_ns {
        Some(_) => (own - startup, t - p - exits_hw * fit.slowdown),
        None => (own, t),
    };
    if vm <= 0.0 || model <= 0.0 {
        return false;
    }
    fit.slowdown = (fit.slowdown * vm / model).max(1.0);
    if let (Some(f), true) = (fit.fork_ns, p > 0.0) {
        fit.fork_ns = Some((f as f64 * startup / p).round() as u64);
    }
    true
}

/// Why the host-thread model's exit costs as much as its fork: both walk
/// the process's page tables (copy_page_range() at fork, the unmap at exit),
/// which TCG runs slowly for a program of many mappings. The VM's own time
/// at one loop (`-l 1`, nearly all exits and reaps; `1llc`, one boot of 5
/// rounds, TCG, noisy) against its start-up: hackbench 0.28 s against
/// 0.33 s, perf bench messaging 0.52 s against 0.39 s.
const EXIT_LIKE_FORK: &str = "a worker's exit costs as much as its fork (both walk the \
     process's page tables; docs/testing.md gives the VM's measure at one loop, `-l 1`)";

/// The host-thread model's fit per workload (host_thread_fit) from the VM's
/// runs on CALIBRATION_PRESET and the model's at slowdown 1 there, medians
/// over the SEEDS seeds (S = 1 without VM runs on that preset).
fn tcg_calibration(
    exe: &Path,
    dir: &Path,
    presets: &serde_json::Map<String, Value>,
    workloads: &serde_json::Map<String, Value>,
    seed: u64,
    bg_opts: &str,
) -> Result<std::collections::BTreeMap<String, HostThreadFit>> {
    let mut out = std::collections::BTreeMap::new();
    let runs = presets
        .get(CALIBRATION_PRESET)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for (name, w) in workloads {
        let mut fit = HostThreadFit {
            slowdown: 1.0,
            fork_ns: None,
            on_own: false,
        };
        if let Some(vm) = median(vm_walls(runs, name)) {
            let workload = format!("{}{bg_opts}", w["sim"].as_str().unwrap_or(""));
            let one = ["tcg_slowdown=1".to_string()];
            let sims = simulate_seeds(exe, dir, CALIBRATION_PRESET, &workload, seed, &one)?;
            let startup = median(
                sims.iter()
                    .filter_map(|s| s["workload"]["startup_s"].as_f64())
                    .collect(),
            )
            .unwrap_or(0.0);
            let exits = median(
                sims.iter()
                    .filter_map(|s| s["workload"]["exits_s"].as_f64())
                    .collect(),
            )
            .unwrap_or(0.0);
            let own = median(vm_owns(runs, name));
            if let Some(t) = median_workload_time(&sims).filter(|t| *t > 0.0) {
                fit = host_thread_fit(vm, own, t, startup, exits);
            }
            if let (true, Some(own)) = (fit.on_own, own) {
                refine_fit(&mut fit, exe, dir, &workload, seed, vm - own, own)?;
            }
        }
        out.insert(name.clone(), fit);
    }
    Ok(out)
}

/// The paragraph that holds the host-thread model (@tcg: its cells) against
/// the hardware model (@base) on the presets it was not calibrated on, with
/// the slowdowns and the wall times (@walls) of both models beside the VM's.
fn tcg_summary(
    base: &[Cell],
    tcg: &[Cell],
    fits: &std::collections::BTreeMap<String, HostThreadFit>,
    walls: &[(String, String, f64, f64, f64)],
) -> String {
    // (ratio, agrees on the hardware model, agrees on the host-thread model)
    let mut cells: Vec<(&str, bool, bool)> = Vec::new();
    for t in tcg.iter().filter(|t| t.1 != CALIBRATION_PRESET) {
        let same = |b: &&Cell| b.0 == t.0 && b.1 == t.1 && b.2 == t.2;
        if let Some(b) = base.iter().find(same) {
            if b.5 == Class::NonTrivial || t.5 == Class::NonTrivial {
                cells.push((t.0, agrees_relative(b.3, b.4), agrees_relative(t.3, t.4)));
            }
        }
    }
    let n = cells.len();
    let on_base = cells.iter().filter(|c| c.1).count();
    let on_tcg = cells.iter().filter(|c| c.2).count();
    let mut by_row = Vec::new();
    for r in RATIOS {
        let row: Vec<_> = cells.iter().filter(|c| c.0 == r.name).collect();
        let b = row.iter().filter(|c| c.1).count();
        let t = row.iter().filter(|c| c.2).count();
        if b != t {
            by_row.push(format!("{}: {t} of {} (hardware {b})", r.name, row.len()));
        }
    }
    let range = |v: Vec<f64>| {
        let (lo, hi) = span(&v);
        format!("{lo:.3}–{hi:.3} s")
    };
    let mut times = Vec::new();
    for name in fits.keys() {
        let w: Vec<_> = walls.iter().filter(|w| &w.0 == name).collect();
        if w.is_empty() {
            continue;
        }
        times.push(format!(
            "{name} VM {}, host-thread model {}, hardware model {}",
            range(w.iter().map(|w| w.2).collect()),
            range(w.iter().map(|w| w.4).collect()),
            range(w.iter().map(|w| w.3).collect()),
        ));
    }
    let s: Vec<String> = fits
        .iter()
        .map(|(k, v)| format!("{k} {:.1}", v.slowdown))
        .collect();
    let forks: Vec<String> = fits
        .iter()
        .filter_map(|(k, v)| v.fork_ns.map(|f| format!("{k} {:.0} µs", f as f64 / 1e3)))
        .collect();
    let fit = if fits.values().all(|f| f.on_own) {
        format!(
            "S is fitted per workload on `{CALIBRATION_PRESET}`'s own time (the time the \
             program reports, from its start barrier to its last worker reaped: the VM's median \
             less its exits over the model's less its start-up and exits, its median over the \
             {SEEDS} seeds, first at S = 1, then {REFINE_ROUNDS} times at the fit, since the \
             address-space loads do not stretch: {}), and a fork's cost on the start-up (the VM's wall time \
             less its own time: the program's exec and its forks, all charged to the forks, in \
             hardware time: {}; the hardware model's fork costs {} µs); {EXIT_LIKE_FORK}",
            s.join(", "),
            if forks.is_empty() {
                "none".to_string()
            } else {
                forks.join(", ")
            },
            crate::workload::FORK_NS / 1000
        )
    } else {
        format!(
            "S is fitted per workload on `{CALIBRATION_PRESET}`'s wall time (the VM's median \
             over the model's at S = 1, its median over the {SEEDS} seeds: {}; these VM \
             counters hold no own time to fit the start-up on)",
            s.join(", ")
        )
    };
    format!(
        "**TCG sim: the VM's host thread, modelled.** `--cost tcg_slowdown=S` \
         (sim/src/engine/tcg.rs) runs one vCPU at a time, as QEMU's single-threaded TCG does: a \
         turn ends when its vCPU idles, when a host timer (a tick) kicks it off the thread, or \
         when it spins on the runqueue lock of a vCPU kicked off the thread in its scheduling \
         code (QEMU's PAUSE helper yields the thread; docs/testing.md), and the guest's work and \
         overheads take S times their hardware time, but for the load of another process's \
         address space at a switch, which costs {:.1} µs of guest time (QEMU keeps no TLB tags, \
         so a CR3 load empties its software TLB; measured by scripts/switch-cost). {fit}; \
         the model is tested on the other presets' cells, which no fit saw. There, on the {n} \
         cells non-trivial in either model, the host-thread model agrees on {on_tcg} ({:.0} %), \
         the hardware model on {on_base} ({:.0} %), each by its median over the seeds; rows where \
         the two differ: {}. Wall time across the presets (a simulated one: the median over the \
         seeds): {}.",
        TCG_MM_SWITCH_NS as f64 / 1e3,
        on_tcg as f64 * 100.0 / n.max(1) as f64,
        on_base as f64 * 100.0 / n.max(1) as f64,
        if by_row.is_empty() {
            "none".into()
        } else {
            by_row.join("; ")
        },
        times.join("; "),
    )
}

/// The message programs' roles, as the VM's program pass (scripts/sim-vm-counters) names them
/// and as the simulator's hackbench model counts their blocks.
const PROGRAM_ROLES: [(&str, &str); 2] =
    [("receiver", "receiver_blocks"), ("sender", "sender_blocks")];

/// A program run's sleeps of @role per 1,000 messages in the VM (a run of a series'
/// "programs"): the role's sleeps less one per task (each worker sleeps once at the start
/// barrier, which the simulator's count leaves out), over the run's messages.
fn vm_sleeps_per_kmsg(run: &Value, role: &str) -> Option<f64> {
    let messages = run["messages"].as_f64().filter(|&m| m > 0.0)?;
    let r = &run[role];
    let sleeps = (r["sleeps"].as_f64()? - r["tasks"].as_f64()?).max(0.0);
    Some(sleeps * 1e3 / messages)
}

/// A simulated run's blocks of the role counted in @key per 1,000 messages.
fn sim_blocks_per_kmsg(sim: &Value, key: &str) -> Option<f64> {
    let w = &sim["workload"];
    let messages = w["messages"].as_f64().filter(|&m| m > 0.0)?;
    Some(w[key].as_f64()? * 1e3 / messages)
}

/// "median (min–max)" of @v, or "–" when empty.
fn median_span(v: &[f64]) -> String {
    let (lo, hi) = span(v);
    match median(v.to_vec()) {
        Some(m) => format!("{m:.1} ({lo:.1}–{hi:.1})"),
        None => "–".into(),
    }
}

/// The paragraph and table that hold the message programs' own sleeps in the VM (the series'
/// program pass: ftrace, apart from the counted windows) against the simulator's model of the
/// programs on both machine models (@sims: per preset and workload, every seed's run); None
/// when no series has a program pass.
fn programs_note(vm: &Value, sims: &[(String, String, Vec<Value>, Vec<Value>)]) -> Option<String> {
    // per (preset, workload): the VM's program runs over every series
    let mut vm_runs: std::collections::BTreeMap<(String, String), Vec<&Value>> = Default::default();
    let mut traced = 0;
    // the programs' own times (s) in those series: traced, and in the counted rounds
    let (mut own_traced, mut own_counted) = (Vec::new(), Vec::new());
    for x in vm["series"].as_array()? {
        let Some(programs) = x["programs"].as_object() else {
            continue;
        };
        traced += 1;
        let owns = |runs: &Value, into: &mut Vec<(String, f64)>| {
            for run in runs.as_array().into_iter().flatten() {
                if let (Some(w), Some(t)) = (run["workload"].as_str(), run["own_s"].as_f64()) {
                    into.push((w.to_string(), t));
                }
            }
        };
        for runs in programs.values() {
            owns(runs, &mut own_traced);
        }
        for runs in x["presets"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
        {
            owns(runs, &mut own_counted);
        }
        for (preset, runs) in programs {
            for run in runs.as_array()? {
                let w = run["workload"].as_str()?.to_string();
                vm_runs.entry((preset.clone(), w)).or_default().push(run);
            }
        }
    }
    if vm_runs.is_empty() {
        return None;
    }
    let mut table = String::from(
        "| preset | workload | receivers' sleeps: VM | sim | TCG sim | senders' sleeps: VM | sim | \
         TCG sim |\n|---|---|---|---|---|---|---|---|\n",
    );
    // per model and role: the simulated median over the VM's
    let mut ratios: [[Vec<(String, f64)>; 2]; 2] = Default::default();
    for ((preset, workload), runs) in &vm_runs {
        let Some((_, _, hw, tcg)) = sims.iter().find(|s| &s.0 == preset && &s.1 == workload) else {
            continue;
        };
        write!(table, "| `{preset}` | {workload} |").ok()?;
        for (k, (role, key)) in PROGRAM_ROLES.iter().enumerate() {
            let v: Vec<f64> = runs
                .iter()
                .filter_map(|r| vm_sleeps_per_kmsg(r, role))
                .collect();
            write!(table, " {} |", median_span(&v)).ok()?;
            for (m, model) in [hw, tcg].into_iter().enumerate() {
                let s: Vec<f64> = model
                    .iter()
                    .filter_map(|x| sim_blocks_per_kmsg(x, key))
                    .collect();
                if let (Some(a), Some(b)) = (median(v.clone()), median(s.clone())) {
                    if a > 0.0 {
                        ratios[m][k].push((format!("{preset} {workload}"), b / a));
                    }
                }
                write!(table, " {} |", median_span(&s)).ok()?;
            }
        }
        writeln!(table).ok()?;
    }
    let model_names = ["the hardware model", "the host-thread model"];
    let mut said = Vec::new();
    for (m, name) in model_names.iter().enumerate() {
        let roles: Vec<String> = PROGRAM_ROLES
            .iter()
            .enumerate()
            .map(|(k, (role, _))| {
                let r = &ratios[m][k];
                let within = r.iter().filter(|x| (x.1 - 1.0).abs() <= TOLERANCE).count();
                let (lo, hi) = span(&r.iter().map(|x| x.1).collect::<Vec<_>>());
                format!(
                    "its {role}s sleep ×{lo:.2}–{hi:.2} as often as the VM's ({within} of {} \
                     cells within ±{:.0} %)",
                    r.len(),
                    TOLERANCE * 100.0
                )
            })
            .collect();
        said.push(format!("on {name} {}", roles.join(", ")));
    }
    let runs: usize = vm_runs.values().map(|r| r.len()).sum();
    let workloads: std::collections::BTreeSet<&str> =
        vm_runs.keys().map(|k| k.1.as_str()).collect();
    let times: Vec<String> = workloads
        .iter()
        .filter_map(|w| {
            let of =
                |v: &[(String, f64)]| median(v.iter().filter(|x| x.0 == *w).map(|x| x.1).collect());
            Some(format!(
                "{w} {:.2} s traced, {:.2} s counted",
                of(&own_traced)?,
                of(&own_counted)?
            ))
        })
        .collect();
    let times = if times.is_empty() {
        String::new()
    } else {
        format!(
            " The tracing's cost, by the time each program reports (median over the \
             presets' runs of those series): {}.",
            times.join("; ")
        )
    };
    Some(format!(
        "**The programs' own sleeps.** Whether the simulator's model of the message programs \
         batches as the real ones do, apart from the scheduler: {traced} series also ran each \
         program under ftrace's hist triggers in the same boot, after the counted rounds \
         (tests/guest/program-blocks.sh; {runs} runs in all), counting per task the switches \
         out asleep; a worker's role follows from its pid, since both programs fork a group's \
         receivers before its senders.{times} Each cell is sleeps \
         per 1,000 messages, the VM's less one per worker (its sleep at the start barrier, \
         which the model does not count), median (min–max) over the VM's runs or the \
         {SEEDS} seeds. The simulator's cells are its workload's `receiver_blocks` and \
         `sender_blocks`: a receiver blocks on an empty socket, a sender on a full one. \
         Against the VM's medians, {}. A model whose tasks sleep more makes more wakeups, \
         each of a task the busy CPUs then queue: the denominator of the wakeup and placement \
         rows above grows, and the shares of wakeups placed at once and of empty dispatches \
         fall with it.\n\n{table}",
        said.join("; ")
    ))
}

/// Commits that changed scheduler/src since @commit (short hashes, newest
/// first); none if git or the commit is not at hand.
fn scheduler_commits_since(commit: &str) -> Vec<String> {
    if commit.is_empty() || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
        return Vec::new();
    }
    let out = std::process::Command::new("git")
        .args([
            "log",
            "--format=%h",
            &format!("{commit}..HEAD"),
            "--",
            "scheduler/src",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_ratio_sums_its_counters_and_skips_an_empty_denominator() {
        let c = json!({"prev_kept": 3, "wake_sync": 1, "wake_busy": 4, "overload_ns": 5e8});
        let placed = ratio(&RATIOS[0], &c, 0.0).unwrap();
        assert!((placed - 0.5).abs() < 1e-9, "{placed}");
        let overloaded = RATIOS.iter().find(|r| r.den[0] == ["@wall_ns"]).unwrap();
        assert_eq!(ratio(overloaded, &c, 1e9), Some(0.5));
        assert_eq!(ratio(overloaded, &c, 0.0), None);
    }

    #[test]
    fn agreement_is_relative_and_medians_are_medians() {
        assert!(agrees_relative(0.50, 0.59));
        assert!(!agrees_relative(0.50, 0.61));
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn the_host_thread_model_is_counted_off_its_calibration_preset_only() {
        let cell = |preset: &str, vm: f64, sim: f64| {
            (
                "r",
                preset.to_string(),
                "w".to_string(),
                vm,
                sim,
                classify(vm, sim),
                (sim, sim),
            )
        };
        let name = RATIOS[0].name;
        let named = |c: Cell| (name, c.1, c.2, c.3, c.4, c.5, c.6);
        // calibration preset: the host-thread model agrees, the hardware one
        // not; another preset: both agree; a third: only the host-thread model
        let base = [
            named(cell(CALIBRATION_PRESET, 0.5, 0.9)),
            named(cell("2node", 0.5, 0.52)),
            named(cell("l2-8", 0.5, 0.2)),
        ];
        let tcg = [
            named(cell(CALIBRATION_PRESET, 0.5, 0.5)),
            named(cell("2node", 0.5, 0.48)),
            named(cell("l2-8", 0.5, 0.55)),
        ];
        let fit = |slowdown, fork_ns, on_own| HostThreadFit {
            slowdown,
            fork_ns,
            on_own,
        };
        let wall_fits = [("w".to_string(), fit(8.0, None, false))]
            .into_iter()
            .collect();
        let walls = [
            ("w".to_string(), "2node".to_string(), 4.5, 0.1, 4.6),
            ("w".to_string(), "l2-8".to_string(), 5.0, 0.2, 4.7),
        ];
        let s = tcg_summary(&base, &tcg, &wall_fits, &walls);
        assert!(s.contains("on the 2 cells non-trivial"), "{s}");
        assert!(
            s.contains("agrees on 2 (100 %), the hardware model on 1 (50 %)"),
            "{s}"
        );
        assert!(s.contains(&format!("{name}: 2 of 2 (hardware 1)")), "{s}");
        assert!(s.contains("w 8.0"), "{s}");
        assert!(s.contains("wall time (the VM's median"), "{s}");
        assert!(
            s.contains(
                "w VM 4.500–5.000 s, host-thread model 4.600–4.700 s, hardware model 0.100–0.200 s"
            ),
            "{s}"
        );
        // with own times: S and the fork's cost, per workload
        let fits = [
            ("p".to_string(), fit(2.5, None, true)),
            ("w".to_string(), fit(6.0, Some(150_000), true)),
        ]
        .into_iter()
        .collect();
        let s = tcg_summary(&base, &tcg, &fits, &walls);
        assert!(s.contains("own time (the time the program reports"), "{s}");
        assert!(s.contains("p 2.5, w 6.0"), "{s}");
        assert!(
            s.contains("in hardware time: w 150 µs; the hardware model's fork costs 60 µs"),
            "{s}"
        );
    }

    #[test]
    fn refitting_at_the_fit_finds_s_when_guest_time_costs_do_not_stretch() {
        // a model whose message phase takes S x 0.5 s of work plus 0.3 s of address-space
        // loads (guest time), whose start-up is S times its forks' hardware time and whose
        // exits cost 0.02 s of hardware time: the VM's own time 4.4 s less its 0.3 s
        // start-up needs 0.5 S + 0.3 = 4.1, S = 7.6, and a start-up of 0.3 s forks of
        // 0.3 / 7.6 s
        let model = |s: f64, fork_ns: f64| {
            let p = s * fork_ns / 1e9;
            let e_hw = 0.02;
            (s * 0.5 + 0.3 + p + e_hw * s, p, e_hw)
        };
        let mut fit = HostThreadFit {
            slowdown: 8.2,
            fork_ns: Some(40_000_000),
            on_own: true,
        };
        for _ in 0..REFINE_ROUNDS {
            let (t, p, e) = model(fit.slowdown, fit.fork_ns.unwrap() as f64);
            assert!(refit_step(&mut fit, 4.4, 0.3, t, p, e));
        }
        assert!((fit.slowdown - 7.6).abs() < 0.0076, "{fit:?}");
        let (_, p, _) = model(fit.slowdown, fit.fork_ns.unwrap() as f64);
        assert!(
            (p - 0.3).abs() < 0.001,
            "start-up {p} against the VM's 0.3 s"
        );
        // nothing to scale by: the fit stays
        let before = fit.slowdown;
        assert!(!refit_step(&mut fit, 0.2, 0.3, 5.0, 0.3, 0.02));
        assert_eq!(fit.slowdown, before);
    }

    #[test]
    fn the_host_thread_model_fits_s_on_the_own_time_and_the_fork_on_the_start_up() {
        // the VM: 1.10 s in all, 0.90 s its own, so a 0.20 s start-up and
        // as much for the exits; the model at S = 1: 0.15 s, 0.005 s of it
        // the start-up and 0.002 s the exits. S = (0.90 - 0.20) / 0.143; the
        // start-up at S must take 0.20 s: the fork costs 0.20 / (S x 0.005)
        // times 60 us
        let f = host_thread_fit(1.10, Some(0.90), 0.15, 0.005, 0.002);
        assert!(f.on_own);
        let s = 0.70 / 0.143;
        assert!((f.slowdown - s).abs() < 1e-9, "{f:?}");
        let want = 60_000.0 * 0.20 / (s * 0.005);
        assert!((f.fork_ns.unwrap() as f64 - want).abs() <= 0.5, "{f:?}");
        // no start-up (pipe): S from the own time, the fork untouched
        let f = host_thread_fit(0.56, Some(0.50), 0.2, 0.0, 0.0);
        assert_eq!((f.slowdown, f.fork_ns, f.on_own), (2.5, None, true));
        // no own time recorded: S from the wall time
        let f = host_thread_fit(1.10, None, 0.11, 0.005, 0.0);
        assert!((f.slowdown - 10.0).abs() < 1e-9 && f.fork_ns.is_none() && !f.on_own);
        // a start-up longer than the own time leaves nothing for the work:
        // the wall time decides
        let f = host_thread_fit(1.10, Some(0.50), 0.11, 0.005, 0.0);
        assert!((f.slowdown - 10.0).abs() < 1e-9 && !f.on_own);
        // never below 1
        assert_eq!(
            host_thread_fit(0.1, Some(0.05), 0.2, 0.0, 0.0).slowdown,
            1.0
        );
    }

    #[test]
    fn vm_cells_count_the_window_and_the_note_what_it_leaves_out() {
        let run = |w: &str, whole: u64, window: u64| {
            json!({"workload": w, "wall_s": 0.5,
                   "counters": {"prev_kept": whole, "dispatch_empty": whole, "migrations": 0},
                   "window": {"prev_kept": window, "dispatch_empty": window, "migrations": 0}})
        };
        let x = run("pipe", 100, 60);
        assert_eq!(vm_counters(&x)["prev_kept"], 60);
        let old = json!({"counters": {"prev_kept": 100}});
        assert_eq!(vm_counters(&old)["prev_kept"], 100);
        let mut presets = serde_json::Map::new();
        let workloads: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"pipe": {}, "hackbench": {}})).unwrap();
        presets.insert("1llc".into(), json!([old]));
        assert_eq!(window_note(&presets, &workloads, None), None);
        presets.insert(
            "2node".into(),
            json!([
                run("pipe", 100, 60),
                run("pipe", 100, 80),
                run("hackbench", 1000, 990)
            ]),
        );
        let s = window_note(&presets, &workloads, None).unwrap();
        assert!(s.contains("median over the 3 runs"), "{s}");
        assert!(
            s.contains("pipe: 30 % (20–40 %) of its wakeups placed at once, 30 % (20–40 %) of its empty dispatches, no migrations"),
            "{s}"
        );
        assert!(s.contains("hackbench: 1 % (1–1 %) of its wakeups"), "{s}");
    }

    #[test]
    fn the_spell_note_says_how_the_vm_s_and_the_model_s_spells_end() {
        let win = |sets: u64, ns: u64, clears: u64| {
            json!({"workload": "pipe", "wall_s": 0.5,
                   "window": {"overload_sets": sets, "overload_ns": ns,
                              "overload_newidle_clears": clears, "dispatch_empty": 50}})
        };
        let mut presets = serde_json::Map::new();
        presets.insert(
            "2node".into(),
            json!([win(2, 10_000_000, 2), win(4, 8_000_000, 3), win(0, 0, 0)]),
        );
        let tcg = vec![
            json!({"counters": {"overload_sets": 2, "overload_ns": 160_000}}),
            json!({"counters": {"overload_sets": 0, "overload_ns": 0}}),
        ];
        let s = spell_note(&presets, &tcg).unwrap();
        // spells of 5 and 2 ms: median 3.5; the first window's lowered by newidle alone
        assert!(
            s.contains("rose in 2 of 3 and a spell lasted 3.5 ms"),
            "{s}"
        );
        assert!(s.contains("in 1 of those 2 every spell"), "{s}");
        assert!(s.contains("100 times a second"), "{s}");
        assert!(
            s.contains("rose in 1 of its 2 runs and a spell lasted 80 µs"),
            "{s}"
        );
        assert!(s.contains("would last 5.0–10.0 ms"), "{s}");
        assert_eq!(spell_note(&serde_json::Map::new(), &tcg), None);
    }

    #[test]
    fn the_background_is_fitted_on_its_preset_s_probe_windows() {
        let run = |prev: u64, pulls: u64, wall: f64| {
            json!({"workload": BACKGROUND_PROBE, "wall_s": wall,
                   "counters": {"wake_sync": 90000, "prev_kept": 900, "cpu_pulls": 900},
                   "window": {"wake_sync": 40000, "prev_kept": prev, "wake_llc_idle": 10,
                              "cpu_pulls": pulls}})
        };
        let mut presets = serde_json::Map::new();
        assert!(background_fit(&presets).is_none());
        presets.insert(
            BACKGROUND_PRESET.into(),
            json!([run(50, 20, 1.5), run(70, 24, 2.0), run(90, 40, 2.5)]),
        );
        let f = background_fit(&presets).unwrap();
        // a 2 s window; 80 wakeups, 40 of them the agent's (one per 50 ms),
        // 40 the unbound thread's: one per 50 ms too; 24 pulls from the 8
        // CPUs' own queues: one per 2 / 3 s on each
        assert_eq!((f.wall_s, f.wakeups, f.pinned), (2.0, 80.0, 24.0));
        assert_eq!((f.unbound_us, f.percpu_us), (50_000, 666_667));
        assert_eq!(
            f.opts(),
            "bg_during=1,bg_unbound_us=50000,bg_percpu_us=666667"
        );
    }

    #[test]
    fn the_vm_is_measured_against_itself_by_halves() {
        // 0.10 against 0.115 agrees (15 %), 0.10 against 0.13 does not; 0.2 against 0.17 does
        let s = vm_self_agreement(&[(0.10, 0.115), (0.10, 0.13), (0.2, 0.17)]);
        assert!(s.contains("on 2 of these 3 cells"), "{s}");
        assert!(s.contains("(67 %)"), "{s}");
    }

    #[test]
    fn the_harness_is_subtracted_from_every_window_of_its_preset() {
        let run = |w: &str, empty: u64, busy: u64| json!({"workload": w, "window": {"dispatch_empty": empty, "wake_busy": busy}});
        let mut presets = serde_json::Map::new();
        presets.insert(
            "1llc".into(),
            json!([
                run("null", 10, 2),
                run("null", 20, 4),
                run("null", 30, 9),
                run("pipe", 100, 3)
            ]),
        );
        presets.insert("2node".into(), json!([run("pipe", 50, 1)]));
        let h = subtract_harness(&mut presets);
        // the probe's runs leave; its medians (20, 4) come off 1llc's windows only
        assert_eq!(h.len(), 1);
        assert_eq!((h[0].preset.as_str(), h[0].runs), ("1llc", 3));
        let pipe = &presets["1llc"][0];
        assert_eq!(presets["1llc"].as_array().unwrap().len(), 1);
        assert_eq!(vm_counters(pipe)["dispatch_empty"], 80.0);
        // floored at 0
        assert_eq!(vm_counters(pipe)["wake_busy"], 0.0);
        assert_eq!(raw_window(pipe)["dispatch_empty"], 100);
        assert_eq!(vm_counters(&presets["2node"][0])["dispatch_empty"], 50);
        let s = harness_note(&h).unwrap();
        assert!(
            s.contains(
                "`1llc` (3 runs): 0 wakeups placed at once, 4 other wakeups, 20 empty dispatches"
            ),
            "{s}"
        );
        assert_eq!(harness_note(&[]), None);
    }

    #[test]
    fn series_are_pooled_and_held_against_each_other() {
        let run = |w: &str, wall: f64| json!({"workload": w, "round": 1, "wall_s": wall});
        let one = json!({"commit": "aaa", "date": "d1", "scheduler": "s", "accelerator": "tcg",
                         "rounds": 1, "presets": {"1llc": [run("hackbench", 4.0)]}});
        let two = json!({"commit": "bbb", "date": "d2", "scheduler": "s", "accelerator": "tcg",
                         "rounds": 1, "presets": {"1llc": [run("hackbench", 6.0)],
                                                  "2node": [run("hackbench", 6.2)]}});
        let (series, presets) = pool_series(&json!({"series": [one.clone(), two]})).unwrap();
        assert_eq!(series.len(), 2);
        assert_eq!(presets["1llc"].as_array().unwrap().len(), 2);
        assert_eq!(presets["2node"][0]["series"], 1);
        assert!(series_list(&series).starts_with("2 series"));
        assert!(pool_series(&one).is_err());
        let workloads: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"hackbench": {}})).unwrap();
        // cell a: series 0.10 and 0.11 agree; cell b: 0.10 and 0.20 do not, and the
        // model's 0.21 is off the pooled 0.15 but near the second series
        let cells: Vec<SeriesCell> = vec![
            (
                "a",
                "1llc".into(),
                "hackbench".into(),
                0.105,
                0.105,
                vec![0.10, 0.11],
            ),
            (
                "b",
                "1llc".into(),
                "hackbench".into(),
                0.15,
                0.21,
                vec![0.10, 0.20],
            ),
        ];
        let s = between_series(&series, &presets, &workloads, &cells).unwrap();
        assert!(s.contains("4.00 s (aaa), 6.10 s (bbb)"), "{s}");
        assert!(
            s.contains("on 1 of the 2 non-trivial cells every series agrees (50 %)"),
            "{s}"
        );
        assert!(s.contains("1llc hackbench b: 0.100–0.200"), "{s}");
        assert!(
            s.contains("Of the 1 cells the hardware model has off the pooled median, 1 are"),
            "{s}"
        );
        assert_eq!(
            between_series(&series[..1], &presets, &workloads, &cells),
            None
        );
    }

    #[test]
    fn the_programs_sleeps_are_per_kmsg_less_the_barrier_and_the_text_follows_the_table() {
        let role = |tasks, sleeps| json!({"tasks": tasks, "sleeps": sleeps});
        // 10 receivers, 1000 messages: 30 sleeps, 10 of them at the barrier
        let run = json!({"workload": "hackbench", "round": 1, "messages": 1000, "own_s": 3.5,
                         "receiver": role(10, 30), "sender": role(10, 15)});
        assert_eq!(vm_sleeps_per_kmsg(&run, "receiver"), Some(20.0));
        assert_eq!(vm_sleeps_per_kmsg(&run, "sender"), Some(5.0));
        let counted = json!({"1llc": [{"workload": "hackbench", "own_s": 3.0}]});
        let vm = json!({"series": [{"presets": counted, "programs": {"1llc": [run]}},
                                   {"presets": {}}]});
        let sim = |r: u64, s: u64| json!({"workload": {"messages": 1000, "receiver_blocks": r, "sender_blocks": s}});
        let sims = vec![(
            "1llc".to_string(),
            "hackbench".to_string(),
            vec![sim(30, 5), sim(26, 6), sim(28, 7)],
            vec![sim(21, 5), sim(22, 5), sim(23, 5)],
        )];
        let note = programs_note(&vm, &sims).unwrap();
        assert!(note.contains("1 series also ran"), "{note}");
        assert!(
            note.contains("hackbench 3.50 s traced, 3.00 s counted"),
            "{note}"
        );
        assert!(
            note.contains(
                "| `1llc` | hackbench | 20.0 (20.0–20.0) | 28.0 (26.0–30.0) | \
                           22.0 (21.0–23.0) | 5.0 (5.0–5.0) | 6.0 (5.0–7.0) | 5.0 (5.0–5.0) |"
            ),
            "{note}"
        );
        // hardware: receivers 28/20 = 1.40 (off), senders 6/5 = 1.20 (on the edge, within);
        // host-thread: 22/20 = 1.10, 5/5 = 1.00
        assert!(
            note.contains(
                "on the hardware model its receivers sleep ×1.40–1.40 as often as the \
                           VM's (0 of 1 cells within ±20 %), its senders sleep ×1.20–1.20"
            ),
            "{note}"
        );
        assert!(
            note.contains(
                "on the host-thread model its receivers sleep ×1.10–1.10 as often as \
                           the VM's (1 of 1 cells"
            ),
            "{note}"
        );
        assert!(programs_note(&json!({"series": [{"presets": {}}]}), &sims).is_none());
    }

    #[test]
    fn cells_are_classed_trivial_or_not() {
        assert_eq!(classify(0.0, 0.0), Class::Zeros);
        assert_eq!(classify(1.0, 1.0), Class::Ones);
        assert_eq!(classify(0.002, 0.011), Class::UnderFloor);
        assert_eq!(classify(0.0, 0.3), Class::UnderFloor);
        assert_eq!(classify(1.0, 0.9), Class::NonTrivial);
        assert_eq!(classify(0.031, 0.0), Class::NonTrivial);
        assert!(agrees_relative(0.5, 0.59) && !agrees_relative(0.5, 0.61));
        // (vm, simulated median, simulated min–max over the seeds)
        let table = [
            (0.0, 0.0, (0.0, 0.0)),
            (0.5, 0.55, (0.45, 0.58)),
            (0.5, 0.9, (0.5, 1.0)),
            (0.5, 0.7, (0.65, 0.75)),
        ];
        let cells: Vec<Cell> = table
            .iter()
            .map(|&(v, m, r)| ("r", "p".into(), "w".into(), v, m, classify(v, m), r))
            .collect();
        let s = cell_summary(&cells);
        assert!(s.starts_with("4 cells compared"), "{s}");
        assert!(
            s.contains("1 trivial (1 0/0, 0 1/1, 0 VM share under the floor) and 3 non-trivial"),
            "{s}"
        );
        assert!(
            s.contains("of these, 1 are within ±20 % of the VM's median (33 %)"),
            "{s}"
        );
        // 0.5 against 0.5–1.0 reaches across; 0.45–0.58 and 0.65–0.75 do not
        assert!(
            s.contains("on 1 of the 3 the seeds' min–max reaches"),
            "{s}"
        );
        // the table's cells say what the sentence counts: as many non-trivial
        // cells without ✗ as it calls within the band
        let rendered: Vec<String> = table
            .iter()
            .map(|&(v, m, r)| sim_cell(Some(v), Some((m, r))))
            .collect();
        assert_eq!(
            rendered,
            [
                "0.000 (0.000–0.000) (t)",
                "0.550 (0.450–0.580)",
                "0.900 (0.500–1.000) ✗",
                "0.700 (0.650–0.750) ✗"
            ]
        );
        let unmarked = rendered
            .iter()
            .filter(|c| !c.contains('✗') && !c.ends_with("(t)"));
        assert_eq!(unmarked.count(), 1);
        assert!(crosses_band(0.5, (0.35, 0.5)) && crosses_band(0.5, (0.3, 0.7)));
        assert!(!crosses_band(0.5, (0.41, 0.59)) && !crosses_band(0.5, (0.61, 0.9)));
        assert_eq!(sim_cell(Some(0.5), None), "–");
        assert_eq!(
            sim_cell(None, Some((0.2, (0.1, 0.3)))),
            "0.200 (0.100–0.300)"
        );
    }
}
