//! The seed report's evidence for scx_mosaic's shared-runqueue default: on
//! every machine of the simulator, seed 000's two designs (the seed's own,
//! and Mosaic's shard queues) against per-CPU queues with the kernel-like
//! newidle balance, as paired runs with an interval. The text that states the
//! rule is built from the same numbers.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::stats::{self, Side, Spread};

/// Machines of the comparison: the VM presets the bench runs, the seed's
/// three, and the large ones.
pub const MACHINES: [&str; 11] = [
    "1llc",
    "2llc-smt",
    "2node",
    "16cpu",
    "ryzen-7950x",
    "skylake-18c",
    "milan-72",
    "epyc-9654x2",
    "epyc-9654x2-smt",
    "xeon-4s",
    "arm64-128",
];
/// The seed's two workloads (its hackbench and its netperf UDP_RR), scaled
/// as the seed rows scale them.
pub const WORKLOADS: [&str; 2] = ["hackbench:loops=100", "rr:clients=128,loops=150"];
/// The sides: the baseline, then each design.
pub const SIDES: [(&str, &str); 3] = [
    ("per-CPU queues", "--shared-runq=off"),
    ("seed's design", "--shared-runq=seed"),
    ("shard design", "--shared-runq=shard"),
];
/// Paired runs per side and cell.
pub const RUNS: usize = 16;

/// One cell's result: the change of each design against the baseline, in %
/// (positive: the design is faster).
pub struct Cell {
    pub machine: &'static str,
    pub workload: &'static str,
    pub llc_cpus: usize,
    pub seed: Spread,
    pub shard: Spread,
}

/// The metric of @workload's runs, larger-is-better made into a change.
fn change(workload: &str, base: &Value, design: &Value) -> f64 {
    if workload.starts_with("rr:") {
        let t = |v: &Value| v["workload"]["tps"].as_f64().unwrap_or(f64::NAN);
        (t(design) - t(base)) / t(base) * 100.0
    } else {
        let t = |v: &Value| v["completion_time_s"].as_f64().unwrap_or(f64::NAN);
        (t(base) - t(design)) / t(base) * 100.0
    }
}

/// Runs every cell (@jobs simulations at once, RNG seeds @base_seed on).
pub fn run(exe: &Path, dir: &Path, jobs: usize, base_seed: u64) -> Result<Vec<Cell>> {
    let mut list = Vec::new();
    for m in MACHINES {
        for w in WORKLOADS {
            for r in 0..RUNS {
                for (side, _) in SIDES.iter().enumerate() {
                    list.push((m, w, r, side));
                }
            }
        }
    }
    let runs: Vec<(Vec<String>, PathBuf)> = list
        .iter()
        .enumerate()
        .map(|(i, &(m, w, r, side))| {
            let json = dir.join(format!("design-{i}.json"));
            let args = [
                "--machine",
                m,
                "--workload",
                w,
                "--seed",
                &(base_seed + r as u64).to_string(),
                "--json",
                &json.display().to_string(),
                &format!("--sched-arg={}", SIDES[side].1),
                "--cost",
                &format!("step_jitter={}", crate::report::STEP_JITTER),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            (args, json)
        })
        .collect();
    let mut results = crate::report::run_many(exe, jobs, &runs).into_iter();
    let mut cells = Vec::new();
    for m in MACHINES {
        let machine = crate::machine::Machine::preset(m)?;
        let llc_cpus = machine.nr_cpus() / machine.topo.llcs.len().max(1);
        for w in WORKLOADS {
            let mut runs: Vec<[Value; 3]> = Vec::new();
            for _ in 0..RUNS {
                let mut one = [Value::Null, Value::Null, Value::Null];
                for v in one.iter_mut() {
                    *v = results
                        .next()
                        .context("one result per run")?
                        .with_context(|| format!("{m} {w}"))?;
                }
                runs.push(one);
            }
            let spread_of = |d: usize| {
                stats::spread(
                    &runs
                        .iter()
                        .map(|r| change(w, &r[0], &r[d]))
                        .collect::<Vec<_>>(),
                )
            };
            cells.push(Cell {
                machine: m,
                workload: w,
                llc_cpus,
                seed: spread_of(1),
                shard: spread_of(2),
            });
        }
    }
    Ok(cells)
}

/// What each design costs beyond speed: its BPF work per callback on the
/// largest machine over the 8-CPU one (the simulator's bound: 2x), and the
/// two-cgroup weight splits across LLCs and within one (1.0: exact).
pub struct Costs {
    pub work_ratio: [f64; 3],
    /// Per machine of MACHINES: its CPU count and each side's BPF work per
    /// callback under WORK_LOAD (bare-metal flags).
    pub work: Vec<(&'static str, usize, [f64; 3])>,
    pub weight_share: [f64; 3],
    pub weight_share_llc: [f64; 3],
}

/// The machines and workloads of the work ratio, and the weight workload.
const WORK_SMALL: &str = "2llc-smt";
const WORK_LARGE: &str = "epyc-9654x2";
const WORK_LOAD: &str = "hackbench:loops=50";
const WEIGHT_LOAD: &str = "hogs:counts=8:8,weights=100:100,late_ms=1000,ms=5000";
/// Within one LLC: tests/test_weight.py's flat case (8 tasks at cpu.weight
/// 100 against 4 at 300).
const WEIGHT_LLC: &str = "1llc";
const WEIGHT_LOAD_LLC: &str = "hogs:counts=8:4,weights=100:300,ms=8000";
/// A split at least this close to exact counts as kept.
const WEIGHT_KEPT: f64 = 0.9;

/// Runs the cost measures of every side (RNG seed @seed).
pub fn costs(exe: &Path, dir: &Path, seed: u64) -> Result<Costs> {
    let one = |i: usize, m: &str, w: &str, side: usize, bare: bool| -> Result<Value> {
        let json = dir.join(format!("design-cost-{i}-{side}.json"));
        let mut args: Vec<String> = [
            "--machine",
            m,
            "--workload",
            w,
            "--seed",
            &seed.to_string(),
            "--json",
            &json.display().to_string(),
            &format!("--sched-arg={}", SIDES[side].1),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if bare {
            args.push(crate::machine::BARE_METAL_SCHED_ARG.to_string());
        }
        crate::report::run_sim(exe, &args, &json).with_context(|| format!("{m} {w}"))
    };
    let mut c = Costs {
        work_ratio: [0.0; 3],
        work: Vec::new(),
        weight_share: [0.0; 3],
        weight_share_llc: [0.0; 3],
    };
    for (i, m) in MACHINES.iter().enumerate() {
        let mut per = [0.0; 3];
        for (side, w) in per.iter_mut().enumerate() {
            let tag = format!("design-cost-{}-{side}", 4 + i);
            let sched = [SIDES[side].1];
            let (runs, _) =
                crate::report::bpf_work_runs(exe, dir, &tag, m, WORK_LOAD, &sched, seed)?;
            *w = stats::median(&runs);
        }
        let cpus = crate::machine::Machine::preset(m)?.nr_cpus();
        c.work.push((m, cpus, per));
    }
    let per_of = |m: &str| c.work.iter().find(|w| w.0 == m).map(|w| w.2);
    let (small, large) = (
        per_of(WORK_SMALL).context("WORK_SMALL is one of MACHINES")?,
        per_of(WORK_LARGE).context("WORK_LARGE is one of MACHINES")?,
    );
    for side in 0..SIDES.len() {
        c.work_ratio[side] = large[side] / small[side];
        let hogs = one(2, WORK_SMALL, WEIGHT_LOAD, side, false)?;
        c.weight_share[side] = hogs["workload"]["share_min_over_max"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let hogs = one(3, WEIGHT_LLC, WEIGHT_LOAD_LLC, side, false)?;
        c.weight_share_llc[side] = hogs["workload"]["share_min_over_max"]
            .as_f64()
            .unwrap_or(f64::NAN);
    }
    Ok(c)
}

/// "+1.2 % [+0.3, +2.0]"
fn cell_text(s: &Spread) -> String {
    format!("{:+.1} % [{:+.1}, {:+.1}]", s.median, s.lo, s.hi)
}

/// Counts of (faster, tie, slower) cells of one design.
pub fn tally(cells: &[Cell], pick: fn(&Cell) -> &Spread) -> (usize, usize, usize) {
    let n = |want: Side| {
        cells
            .iter()
            .filter(|c| stats::side(pick(c)) == want)
            .count()
    };
    (n(Side::Above), n(Side::Within), n(Side::Below))
}

/// The section of the report.
pub fn section(md: &mut String, cells: &[Cell], costs: &Costs) -> Result<()> {
    writeln!(
        md,
        "\n## Which design the default picks\n\nSeed 000's two designs against per-CPU queues with the \
         kernel-like newidle balance (`{}`), on every machine of the simulator, under the seed's two \
         workloads scaled as its rows are: {RUNS} paired runs per side (RNG seeds as the rows', step \
         jitter as theirs), the median change and its 95 % interval; positive: the design is faster \
         (hackbench time, UDP_RR transactions/s); an interval that does not clear ±{} % around zero counts \
         as no difference shown.\n\n| machine | CPUs per LLC | workload | {} | {} |\n|---|---|---|---|---|",
        SIDES[0].1,
        stats::EQUIVALENCE,
        SIDES[1].0,
        SIDES[2].0
    )?;
    for c in cells {
        writeln!(
            md,
            "| `{}` | {} | `{}` | {} | {} |",
            c.machine,
            c.llc_cpus,
            c.workload,
            cell_text(&c.seed),
            cell_text(&c.shard)
        )?;
    }
    let (sf, st, ss) = tally(cells, |c| &c.seed);
    let (hf, ht, hs) = tally(cells, |c| &c.shard);
    let wins: Vec<String> = cells
        .iter()
        .filter(|c| stats::side(&c.shard) == Side::Above)
        .map(|c| {
            format!(
                "`{}` {}",
                c.machine,
                c.workload.split(':').next().unwrap_or("")
            )
        })
        .collect();
    writeln!(
        md,
        "\nOf {} cells, the seed's design is faster in {sf}, no different in {st} and slower in {ss}; \
         the shard design faster in {hf} ({}), no different in {ht} and slower in {hs}.\n",
        cells.len(),
        if wins.is_empty() {
            "none".to_string()
        } else {
            wins.join(", ")
        },
    )?;
    let list = |vals: &[f64; 3], unit: &str| {
        SIDES
            .iter()
            .zip(vals)
            .map(|((name, _), v)| format!("{name} {v:.2}{unit}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    // the designs that keep both splits within WEIGHT_KEPT of exact
    let kept: Vec<&str> = SIDES
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            costs.weight_share[*i] >= WEIGHT_KEPT && costs.weight_share_llc[*i] >= WEIGHT_KEPT
        })
        .map(|(_, (name, _))| *name)
        .collect();
    writeln!(
        md,
        "Beyond speed: BPF work per callback on `{WORK_LARGE}` ({} CPUs) over `{WORK_SMALL}`'s \
         under `{WORK_LOAD}` (bare-metal flags; the bound `sim/tests/sim.rs` holds the default to is \
         2x): {}; the CPU split of two equal cgroups of 8 busy loops on `{WORK_SMALL}`'s two LLCs, \
         the second started on one LLC (`{WEIGHT_LOAD}`; 1.00: equal): {}; within `{WEIGHT_LLC}`'s \
         one LLC, cpu.weight 100:300 on 8 and 4 busy loops (`{WEIGHT_LOAD_LLC}`): {}. The newidle \
         balance of per-CPU queues reads every CPU's queue length, as the kernel's walks its \
         domains. Both splits within {:.0} % of exact: {}.\n",
        crate::machine::Machine::preset(WORK_LARGE)?.nr_cpus(),
        list(&costs.work_ratio, "x"),
        list(&costs.weight_share, ""),
        list(&costs.weight_share_llc, ""),
        (1.0 - WEIGHT_KEPT) * 100.0,
        if kept.is_empty() {
            "none".to_string()
        } else {
            kept.join(", ")
        },
    )?;
    work_by_machine(md, &costs.work)?;
    auto_rule(
        md,
        cells,
        &costs.work,
        scx_mosaic::tunables::AUTO_PER_CPU_MAX_CPUS,
    )
}

/// Per-CPU queues' BPF work per callback may grow to at most this many
/// times the 8-CPU machine's (WORK_SMALL) where the default runs them: the
/// bound sim/tests/sim.rs holds the default to.
const AUTO_WORK_BOUND: f64 = 2.0;

/// What the tables say of scx_mosaic's `--shared-runq auto` rule (per-CPU
/// queues on machines of up to @limit CPUs, the shard design above): on the
/// machines up to @limit, where the shard design is faster and whether it is
/// the better design of any of them, and how far per-CPU queues' work grows
/// over WORK_SMALL's; above, how far it would. A default is chosen per
/// machine, so the shard design argues against the rule on a machine only
/// where it is faster in one workload and slower in none.
fn auto_rule(
    md: &mut String,
    cells: &[Cell],
    work: &[(&'static str, usize, [f64; 3])],
    limit: usize,
) -> Result<()> {
    let cpus_of = |m: &str| work.iter().find(|w| w.0 == m).map(|w| w.1);
    let small = work
        .iter()
        .find(|w| w.0 == WORK_SMALL)
        .map(|w| w.2[0])
        .context("WORK_SMALL is one of MACHINES")?;
    let below: Vec<&Cell> = cells
        .iter()
        .filter(|c| cpus_of(c.machine).is_some_and(|n| n <= limit))
        .collect();
    let wins: Vec<&&Cell> = below
        .iter()
        .filter(|c| stats::side(&c.shard) == Side::Above)
        .collect();
    // per machine with a shard win: its cells where the shard design is slower
    let mut losses: Vec<(&str, Vec<&&Cell>)> = Vec::new();
    for c in &wins {
        if !losses.iter().any(|(m, _)| *m == c.machine) {
            let slower = below
                .iter()
                .filter(|l| l.machine == c.machine && stats::side(&l.shard) == Side::Below)
                .collect();
            losses.push((c.machine, slower));
        }
    }
    let better_on: Vec<&str> = losses
        .iter()
        .filter(|(_, slower)| slower.is_empty())
        .map(|(m, _)| *m)
        .collect();
    let cell_name = |c: &Cell| {
        format!(
            "`{}` {} {:+.1} %",
            c.machine,
            c.workload.split(':').next().unwrap_or(c.workload),
            c.shard.median
        )
    };
    // the largest growth of per-CPU queues' work over WORK_SMALL's, and where
    let most = |keep: &dyn Fn(usize) -> bool, side: usize| {
        work.iter()
            .filter(|w| keep(w.1))
            .map(|w| (w.2[side] / small, w.0))
            .fold(None, |best: Option<(f64, &str)>, x| match best {
                Some(b) if b.0 >= x.0 => Some(b),
                _ => Some(x),
            })
    };
    let (in_ratio, in_m) = most(&|n| n <= limit, 0).context("no machine up to the limit")?;
    let above = most(&|n| n > limit, 0);
    write!(
        md,
        "scx_mosaic's default, `--shared-runq auto`, runs per-CPU queues on machines of up to \
         {limit} CPUs and the shard design on larger ones (`AUTO_PER_CPU_MAX_CPUS`). On the \
         machines here of up to {limit} CPUs the shard design is faster in {} of {} cells",
        wins.len(),
        below.len()
    )?;
    if !wins.is_empty() {
        let named: Vec<String> = wins.iter().map(|c| cell_name(c)).collect();
        let mixed: Vec<String> = losses
            .iter()
            .flat_map(|(_, slower)| slower)
            .map(|c| cell_name(c))
            .collect();
        write!(md, " ({})", named.join(", "))?;
        if !mixed.is_empty() {
            write!(
                md,
                ", and slower in another workload on the same machine ({})",
                mixed.join(", ")
            )?;
        }
    }
    write!(
        md,
        "; per-CPU queues' BPF work per callback is at most {in_ratio:.2}x `{WORK_SMALL}`'s \
         (`{in_m}`)"
    )?;
    if let Some((r, m)) = above {
        write!(
            md,
            "; above, it reaches {r:.2}x (`{m}`), against the shard design's {:.2}x at most",
            most(&|n| n > limit, 2).map_or(f64::NAN, |x| x.0)
        )?;
    }
    let holds = better_on.is_empty()
        && in_ratio <= AUTO_WORK_BOUND
        && above.is_none_or(|(r, _)| r > AUTO_WORK_BOUND);
    writeln!(
        md,
        ". {}\n",
        if holds {
            format!(
                "The rule follows these tables: on no machine up to {limit} CPUs is the shard \
                 design faster in one workload and slower in none, and per-CPU queues' work \
                 stays within {AUTO_WORK_BOUND}x there and not beyond."
            )
        } else {
            let on = if better_on.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", better_on.join("`, `"))
            };
            format!(
                "These tables do not support the rule as it stands (a machine up to {limit} \
                 CPUs where the shard design is faster in one workload and slower in none{on}, \
                 per-CPU work past {AUTO_WORK_BOUND}x there, or within it above): revisit \
                 `AUTO_PER_CPU_MAX_CPUS`."
            )
        }
    )?;
    Ok(())
}

/// The BPF work per callback of every side on every machine, and up to how
/// many CPUs per-CPU queues do no more of it than the shard design.
fn work_by_machine(md: &mut String, work: &[(&'static str, usize, [f64; 3])]) -> Result<()> {
    let mut rows = work.to_vec();
    rows.sort_by_key(|w| w.1);
    writeln!(
        md,
        "BPF work per callback by machine (`{WORK_LOAD}`, bare-metal flags; the median over {} RNG seeds with the seed rows' step jitter):\n\n\
         | machine | CPUs | {} | {} | {} |\n|---|---|---|---|---|",
        crate::report::WORK_SEEDS,
        SIDES[0].0,
        SIDES[1].0,
        SIDES[2].0
    )?;
    for (m, cpus, per) in &rows {
        writeln!(
            md,
            "| `{m}` | {cpus} | {:.2} | {:.2} | {:.2} |",
            per[0], per[1], per[2]
        )?;
    }
    let first_over = rows.iter().find(|w| w.2[0] > w.2[2]);
    let cheaper_upto = rows
        .iter()
        .filter(|w| first_over.is_none_or(|f| w.1 < f.1))
        .map(|w| w.1)
        .max();
    let most = rows
        .iter()
        .map(|w| w.2[0] / w.2[2])
        .fold(f64::NAN, f64::max);
    match (cheaper_upto, first_over) {
        (Some(n), Some((m, cpus, per))) => writeln!(
            md,
            "\nPer-CPU queues do no more BPF work per callback than the shard design on every \
             machine of up to {n} CPUs; from `{m}` ({cpus} CPUs) on they do more ({:.2}x the \
             shard design's there, {most:.2}x at most).\n",
            per[0] / per[2]
        )?,
        (None, Some((m, cpus, _))) => writeln!(
            md,
            "\nPer-CPU queues do more BPF work per callback than the shard design from the \
             smallest machine on (`{m}`, {cpus} CPUs; {most:.2}x at most).\n"
        )?,
        (_, None) => writeln!(
            md,
            "\nPer-CPU queues do no more BPF work per callback than the shard design on any \
             machine.\n"
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_by_machine_names_the_last_size_where_per_cpu_queues_cost_no_more() {
        let mut md = String::new();
        let rows = [
            ("big", 192, [30.0, 20.0, 8.0]),
            ("small", 8, [4.0, 5.0, 6.0]),
            ("mid", 36, [6.0, 5.5, 7.0]),
            ("edge", 72, [9.0, 7.5, 8.0]),
        ];
        work_by_machine(&mut md, &rows).unwrap();
        // rows come out by CPU count, and the threshold is the last size before the first
        // machine where per-CPU queues do more
        let small = md.find("| `small` |").unwrap();
        assert!(small < md.find("| `mid` |").unwrap());
        assert!(md.find("| `edge` |").unwrap() < md.find("| `big` |").unwrap());
        assert!(
            md.contains("up to 36 CPUs; from `edge` (72 CPUs) on"),
            "{md}"
        );
        assert!(
            md.contains("1.12x the shard design's there, 3.75x at most"),
            "{md}"
        );

        let mut md = String::new();
        work_by_machine(&mut md, &[("a", 8, [5.0, 5.0, 4.0])]).unwrap();
        assert!(
            md.contains("from the smallest machine on (`a`, 8 CPUs; 1.25x"),
            "{md}"
        );
    }

    #[test]
    fn auto_rule_says_whether_the_tables_support_the_size_limit() {
        let spread = |median: f64| Spread {
            n: 16,
            median,
            lo: median - 0.5,
            hi: median + 0.5,
        };
        let cell = |machine: &'static str, shard: f64| Cell {
            machine,
            workload: "hackbench:loops=100",
            llc_cpus: 4,
            seed: spread(0.0),
            shard: spread(shard),
        };
        let work = [
            (WORK_SMALL, 8, [4.0, 5.0, 6.0]),
            ("mid", 72, [7.6, 6.0, 7.0]),
            ("big", 192, [32.0, 24.0, 8.0]),
        ];
        let cells = [cell(WORK_SMALL, -3.0), cell("mid", 0.0), cell("big", 20.0)];
        let mut md = String::new();
        auto_rule(&mut md, &cells, &work, 72).unwrap();
        assert!(md.contains("faster in 0 of 2 cells"), "{md}");
        assert!(md.contains("at most 1.90x `2llc-smt`'s (`mid`)"), "{md}");
        assert!(
            md.contains("reaches 8.00x (`big`), against the shard design's 2.00x"),
            "{md}"
        );
        assert!(md.contains("The rule follows these tables"), "{md}");
        // a machine up to the limit where the shard design wins one
        // workload and loses none, or a limit past the bound, is said
        let cells = [cell(WORK_SMALL, 3.0), cell("mid", 0.0), cell("big", 20.0)];
        let mut md = String::new();
        auto_rule(&mut md, &cells, &work, 72).unwrap();
        assert!(
            md.contains("faster in 1 of 2 cells (`2llc-smt` hackbench +3.0 %)"),
            "{md}"
        );
        assert!(
            md.contains("do not support the rule") && md.contains("in none (`2llc-smt`)"),
            "{md}"
        );
        // a win in one workload beside a loss in another on the same
        // machine leaves the rule standing, and the page names both
        let mut rr = cell(WORK_SMALL, -5.0);
        rr.workload = "rr:clients=128";
        let cells = [
            cell(WORK_SMALL, 3.0),
            rr,
            cell("mid", 0.0),
            cell("big", 20.0),
        ];
        let mut md = String::new();
        auto_rule(&mut md, &cells, &work, 72).unwrap();
        assert!(
            md.contains("(`2llc-smt` hackbench +3.0 %), and slower in another workload on the same machine (`2llc-smt` rr -5.0 %)"),
            "{md}"
        );
        assert!(md.contains("The rule follows these tables"), "{md}");
        let mut md = String::new();
        auto_rule(&mut md, &cells[1..], &work, 192).unwrap();
        assert!(
            md.contains("at most 8.00x") && md.contains("do not support"),
            "{md}"
        );
    }
}
