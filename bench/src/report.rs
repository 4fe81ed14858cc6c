//! From results to the report: medians with min–max, ratios to the kernel's default, BPF cost
//! per call, the Markdown tables and the SVG plots (plotters, SVG backend).

use crate::model::{Sample, ScenarioRun, Suite};
use crate::suite::{scenario, Scenario, AA_CONTROL};
use anyhow::{Context, Result};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The median of `v` (NaN-free), or None if empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// One scheduler's results in one scenario run.
pub struct Cell {
    pub sched: String,
    /// Per metric: (median, min, max) over the successful runs.
    pub stats: BTreeMap<String, (f64, f64, f64)>,
    pub n: usize,
    /// Runs reported, successful or not.
    pub runs: usize,
    pub bpf: Option<f64>,
    /// BPF run time over the workload, ms, median over the successful runs.
    pub bpf_ms: Option<f64>,
    /// scx_mosaic's own runnable-wait max and p99 (µs), medians over the successful runs
    /// (None for schedulers that keep no such counters).
    pub wait_max: Option<f64>,
    pub wait_p99: Option<f64>,
    /// The shared wait measure (`mosaic-bench waits`, every scheduler alike), µs: p50 and p99
    /// are medians over the successful runs, max the largest of their maxima.
    pub shared_p50: Option<f64>,
    pub shared_p99: Option<f64>,
    pub shared_max: Option<f64>,
    /// Why the cell failed (an ejection or error in any of its runs).
    pub fail: Option<String>,
}

impl Cell {
    pub fn headline(&self, sc: &Scenario) -> Option<(f64, f64, f64)> {
        self.stats.get(sc.headline().0).copied()
    }
}

/// How many runs of each sched_ext scheduler in `cs` ended without an ejection or error under
/// a watchdog of `ms` (`mosaic-bench run --watchdog-ms`).
fn survival_line(ms: u32, cs: &[Cell]) -> String {
    let each: Vec<String> = cs
        .iter()
        .filter(|c| c.sched != "eevdf")
        .map(|c| format!("{} {} of {}", c.sched, c.n, c.runs))
        .collect();
    format!(
        "Runs that ended without an ejection or error under the {ms} ms watchdog: {}.",
        each.join(", ")
    )
}

/// Round by round, `ratio(a's run, b's run)` for schedulers `a` and `b` in the rounds of `run`
/// where both succeeded: (median, min, max, rounds). One round's runs follow each other in one
/// boot, so what slows a whole round (the host, the guest's state) cancels in the ratio, which
/// a ratio of medians over all rounds keeps.
fn paired(
    run: &ScenarioRun,
    a: &str,
    b: &str,
    ratio: impl Fn(&Sample, &Sample) -> Option<f64>,
) -> Option<(f64, f64, f64, usize)> {
    let ok = |sched: &str, round: u32| {
        run.samples
            .iter()
            .find(|s| s.sched == sched && s.round == round && s.fail.is_none())
    };
    let mut rounds: Vec<u32> = run.samples.iter().map(|s| s.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let v: Vec<f64> = rounds
        .into_iter()
        .filter_map(|r| ratio(ok(a, r)?, ok(b, r)?))
        .filter(|x| x.is_finite())
        .collect();
    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    median(&v).map(|m| (m, lo, hi, v.len()))
}

/// "round by round ×m (lo–hi, n rounds)" for a paired() result.
fn paired_note(p: Option<(f64, f64, f64, usize)>) -> String {
    match p {
        Some((m, lo, hi, n)) => format!("round by round ×{m:.2} ({lo:.2}–{hi:.2}, {n} rounds)"),
        None => "no round with both".into(),
    }
}

/// A margin that survives TCG's noise: Mosaic's score over the best peer (above 1: Mosaic ahead)
/// as a median of per-round ratios with their range. "ahead" when the median is at least
/// MARGIN or every round is above 1; "behind" in the mirror case; otherwise "not settled".
const MARGIN: f64 = 1.05;

/// The verdict on a paired() score: ahead, behind or not settled (see MARGIN).
fn margin_verdict(p: Option<(f64, f64, f64, usize)>) -> &'static str {
    match p {
        Some((m, lo, _, _)) if m >= MARGIN || lo > 1.0 => "ahead",
        Some((m, _, hi, _)) if m <= 1.0 / MARGIN || hi < 1.0 => "behind",
        Some(_) => "not settled (within noise)",
        None => "no round with both",
    }
}

/// Mosaic's cell of `cs`, if none of its runs failed.
fn mosaic_cell(cs: &[Cell]) -> Option<&Cell> {
    cs.iter().find(|c| c.sched == "mosaic" && c.fail.is_none())
}

/// The A/A control's cell of `cs` (AA_CONTROL), if the cell ran it and none of its runs failed.
fn control_cell(cs: &[Cell]) -> Option<&Cell> {
    cs.iter()
        .find(|c| c.sched == AA_CONTROL && c.fail.is_none())
}

/// The peers of `cs`: the sched_ext schedulers other than Mosaic's designs, without a failed
/// run.
fn peers(cs: &[Cell]) -> impl Iterator<Item = &Cell> {
    cs.iter()
        .filter(|c| c.sched != "eevdf" && !c.sched.starts_with("mosaic") && c.fail.is_none())
}

/// The peer of `cs` with the lowest value of `get`, and that value.
fn lowest_peer(cs: &[Cell], get: impl Fn(&Cell) -> Option<f64>) -> Option<(&Cell, f64)> {
    peers(cs)
        .filter_map(|c| get(c).map(|v| (c, v)))
        .min_by(|a, b| a.1.partial_cmp(&b.1).unwrap())
}

/// Mosaic's headline against the best peer's in one scenario run.
struct Versus<'a> {
    /// the peer with the best headline median
    peer: &'a Cell,
    /// the two medians
    mosaic: f64,
    best: f64,
    /// round by round, Mosaic's score over that peer's (paired(): above 1, Mosaic ahead)
    by_round: Option<(f64, f64, f64, usize)>,
    /// the same for the A/A control (AA_CONTROL), if the cell ran it
    control: Option<(f64, f64, f64, usize)>,
}

/// The verdict on a cell (margin_verdict() of Mosaic against the best peer), held only if the
/// A/A control, where the cell ran one, gets the same against that peer: two runs of one binary
/// in one round differ by as much as Mosaic and a peer may (docs/bench/analysis.md), and a
/// margin the control does not repeat is noise.
fn cell_verdict(v: &Versus) -> &'static str {
    let verdict = margin_verdict(v.by_round);
    match v.control {
        Some(c) if margin_verdict(Some(c)) != verdict => "not settled (within noise)",
        _ => verdict,
    }
}

/// Mosaic against the best peer in `run` (cells `cs`), or None without a successful Mosaic
/// cell with the headline or a successful peer with it.
fn versus_best<'a>(run: &ScenarioRun, sc: &Scenario, cs: &'a [Cell]) -> Option<Versus<'a>> {
    let (mosaic, _, _) = mosaic_cell(cs)?.headline(sc)?;
    let (peer, best) = peers(cs)
        .filter_map(|c| c.headline(sc).map(|h| (c, h.0)))
        .max_by(|a, b| {
            score(sc, a.1, 1.0)
                .partial_cmp(&score(sc, b.1, 1.0))
                .unwrap()
        })?;
    let metric = sc.headline().0;
    let against = |label: &str| {
        paired(run, label, &peer.sched, |m, p| {
            Some(score(sc, *m.metrics.get(metric)?, *p.metrics.get(metric)?))
        })
    };
    let control = control_cell(cs).and_then(|c| against(&c.sched));
    Some(Versus {
        peer,
        mosaic,
        best,
        by_round: against("mosaic"),
        control,
    })
}

/// Mosaic's BPF cost in one scenario against the cheapest peer's, per call and per run (None
/// without a successful Mosaic cell or peers with BPF statistics); per call also round by
/// round (paired()).
fn bpf_line(run: &ScenarioRun, sc: &Scenario, cs: &[Cell]) -> Option<String> {
    let mo = mosaic_cell(cs)?;
    // The peer with the lowest value of `get`, and "peer value (Mosaic value, ×ratio)".
    let cheapest = |get: fn(&Cell) -> Option<f64>| -> Option<(&Cell, String)> {
        let m = get(mo)?;
        let (c, v) = lowest_peer(cs, get)?;
        Some((
            c,
            format!("{} {v:.0} (Mosaic {m:.0}, ×{:.2})", c.sched, m / v),
        ))
    };
    let (per_call_peer, per_call) = cheapest(|c| c.bpf)?;
    let per_call_paired = paired(run, "mosaic", &per_call_peer.sched, |m, p| {
        Some(m.bpf_ns_per_call? / p.bpf_ns_per_call?)
    });
    let per_call = format!("{per_call}, {}", paired_note(per_call_paired));
    let per_run = cheapest(|c| c.bpf_ms).map_or_else(|| "not recorded".into(), |(_, s)| s);
    Some(format!(
        "- {}: cheapest peer by ns/call {per_call}; by ms/run {per_run}",
        sc.name
    ))
}

/// The longest wait (the shared measure) of Mosaic's cell, or of the A/A control's if that is
/// longer: the control runs the same binary, and a wait bound holds for every run of it.
fn mosaic_longest_wait(mo: &Cell, cs: &[Cell]) -> Option<f64> {
    let control = control_cell(cs).and_then(|c| c.shared_max);
    mo.shared_max.map(|m| control.map_or(m, |c| m.max(c)))
}

/// Mosaic's runnable waits (the shared measure) against the peers': its p99 beside the lowest
/// peer p99, and its longest wait (mosaic_longest_wait()) against WAIT_MAX_US, or None without
/// a successful Mosaic cell with the shared measure.
fn wait_line(sc: &Scenario, cs: &[Cell]) -> Option<String> {
    let mo = mosaic_cell(cs)?;
    let (p99, max) = (mo.shared_p99?, mosaic_longest_wait(mo, cs)?);
    let against = match lowest_peer(cs, |c| c.shared_p99) {
        Some((c, v)) => format!(
            "lowest peer p99 {} {v:.0} µs → {}",
            c.sched,
            if p99 <= v {
                "at most the best peer's"
            } else {
                "**above the best peer's**"
            }
        ),
        None => "no peer with the shared measure".into(),
    };
    Some(format!(
        "- {}: Mosaic p99 {p99:.0} µs, {against}; Mosaic max {:.2} s → {}",
        sc.name,
        max / 1e6,
        if max < WAIT_MAX_US {
            "under 2 s"
        } else {
            "**2 s or more**"
        }
    ))
}

/// The longest runnable wait the benchmarks accept of Mosaic in any cell, µs.
const WAIT_MAX_US: f64 = 2e6;

/// One entry of a standing table (None: not run, or nothing to compare).
type Entry = Option<String>;

/// Where Mosaic stands in every scenario × topology cell, against what the page measures it
/// by (standing()), with the counts each table ends with.
struct Standing {
    /// the topologies, in the page's order
    topos: Vec<String>,
    /// per scenario, per topology: its headline against the best peer's, its waits, its BPF
    /// cost, its headline against EEVDF's
    rows: Vec<(String, Vec<[Entry; 4]>)>,
    ahead: usize,
    level: usize,
    behind: usize,
    failed: usize,
    /// cells with the shared wait measure; of these, Mosaic's p99 at most the lowest peer's,
    /// and its longest wait under WAIT_MAX_US
    waits: usize,
    p99_ok: usize,
    max_ok: usize,
    /// cells with BPF statistics; of these, Mosaic's at most the cheapest peer's per call or
    /// per run
    costs: usize,
    cost_ok: usize,
    /// Mosaic's headline median over EEVDF's, as a score (above 1: Mosaic ahead), per cell
    /// with both
    eevdf: Vec<f64>,
}

/// Where Mosaic stands in every scenario × topology cell: its headline against the best peer's
/// (the round-by-round median score and the verdict of margin_verdict()), its shared-wait p99
/// against the lowest peer p99 and its longest wait against WAIT_MAX_US, its BPF cost against
/// the cheapest peer's per call and per run, and its headline median against EEVDF's; a cell
/// where a Mosaic run failed says so in all of them. None when no cell has Mosaic and a peer.
fn standing(suite: &Suite) -> Option<Standing> {
    let topos = by_topo(suite);
    let mut names: Vec<&str> = Vec::new();
    for (_, runs) in &topos {
        for r in runs {
            if !names.contains(&r.scenario.as_str()) {
                names.push(&r.scenario);
            }
        }
    }
    names.sort_by_key(|n| {
        crate::suite::SCENARIOS
            .iter()
            .position(|s| s.name == *n)
            .unwrap_or(usize::MAX)
    });
    let mut st = Standing {
        topos: topos.iter().map(|(t, _)| t.clone()).collect(),
        rows: Vec::new(),
        ahead: 0,
        level: 0,
        behind: 0,
        failed: 0,
        waits: 0,
        p99_ok: 0,
        max_ok: 0,
        costs: 0,
        cost_ok: 0,
        eevdf: Vec::new(),
    };
    for name in &names {
        let mut row = Vec::new();
        for (_, runs) in &topos {
            let mut e: [Entry; 4] = [None, None, None, None];
            let found = runs.iter().find(|r| r.scenario == *name);
            if let Some((run, sc)) = found.and_then(|r| scenario(&r.scenario).map(|s| (*r, s))) {
                let cs = cells(run);
                if cs.iter().any(|c| c.sched == "mosaic" && c.fail.is_some()) {
                    st.failed += 1;
                    e = std::array::from_fn(|_| Some("**Mosaic FAILED**".to_string()));
                    row.push(e);
                    continue;
                }
                if let Some(v) = versus_best(run, sc, &cs) {
                    let verdict = cell_verdict(&v);
                    match verdict {
                        "ahead" => st.ahead += 1,
                        "behind" => st.behind += 1,
                        _ => st.level += 1,
                    }
                    let m = v.by_round.map_or("–".into(), |b| fmt_ratio(b.0));
                    e[0] = Some(format!(
                        "{m}, {} ({})",
                        verdict.trim_end_matches(" (within noise)"),
                        v.peer.sched
                    ));
                }
                let mo = mosaic_cell(&cs);
                let lowest = |get: fn(&Cell) -> Option<f64>| lowest_peer(&cs, get);
                if let (Some(mo), Some((pc, pv))) = (mo, lowest(|c| c.shared_p99)) {
                    if let (Some(p99), Some(max)) = (mo.shared_p99, mosaic_longest_wait(mo, &cs)) {
                        st.waits += 1;
                        let at_most = p99 <= pv;
                        st.p99_ok += at_most as usize;
                        st.max_ok += (max < WAIT_MAX_US) as usize;
                        e[1] = Some(format!(
                            "{}{} / {} ({}){}; max {:.2} s",
                            if at_most { "" } else { "**" },
                            fmt_wait(p99),
                            fmt_wait(pv),
                            pc.sched,
                            if at_most { "" } else { "**" },
                            max / 1e6
                        ));
                    }
                }
                if let Some(mo) = mo {
                    let call = mo.bpf.zip(lowest(|c| c.bpf)).map(|(m, (_, v))| m / v);
                    let run_ms = mo.bpf_ms.zip(lowest(|c| c.bpf_ms)).map(|(m, (_, v))| m / v);
                    if call.is_some() || run_ms.is_some() {
                        st.costs += 1;
                        let ok = call.is_some_and(|x| x <= 1.0) || run_ms.is_some_and(|x| x <= 1.0);
                        st.cost_ok += ok as usize;
                        let r = |x: Option<f64>| x.map_or("–".into(), fmt_ratio);
                        e[2] = Some(format!(
                            "{}{} / {}{}",
                            if ok { "" } else { "**" },
                            r(call),
                            r(run_ms),
                            if ok { "" } else { "**" }
                        ));
                    }
                    let base = cs.iter().find(|c| c.sched == "eevdf" && c.fail.is_none());
                    if let (Some((m, _, _)), Some((b, _, _))) =
                        (mo.headline(sc), base.and_then(|c| c.headline(sc)))
                    {
                        let x = score(sc, m, b);
                        st.eevdf.push(x);
                        e[3] = Some(fmt_ratio(x));
                    }
                }
            }
            row.push(e);
        }
        st.rows.push((name.to_string(), row));
    }
    (st.ahead + st.behind + st.level + st.failed > 0).then_some(st)
}

impl Standing {
    /// Column `k` of every cell as a scenario × topology Markdown table.
    fn table(&self, k: usize) -> String {
        let head: Vec<String> = self.topos.iter().map(|t| format!("`{t}`")).collect();
        let mut o = String::new();
        let _ = writeln!(o, "| scenario | {} |", head.join(" | "));
        let _ = writeln!(o, "|---|{}", "---|".repeat(head.len()));
        for (name, row) in &self.rows {
            let cells: Vec<&str> = row.iter().map(|e| e[k].as_deref().unwrap_or("–")).collect();
            let _ = writeln!(o, "| {name} | {} |", cells.join(" | "));
        }
        o
    }

    /// "Ahead in a, not settled in l, behind in b of n cells" (with the failed ones).
    fn verdict_count(&self) -> String {
        format!(
            "ahead in {}, not settled in {}, behind in {} of {} cells{}",
            self.ahead,
            self.level,
            self.behind,
            self.ahead + self.level + self.behind + self.failed,
            if self.failed > 0 {
                format!("; Mosaic failed (an ejection or error) in {}", self.failed)
            } else {
                String::new()
            }
        )
    }

    /// The page's section: the three tables, each followed by its count.
    fn section(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "## Where Mosaic stands, cell by cell\n\nGenerated from the tables below. Headline \
             against the best peer: the median of the round-by-round ratios (above 1: Mosaic \
             ahead) and the verdict (ahead: that median at least ×{MARGIN:.2} or every round \
             ahead; behind: the mirror case; else not settled; in a cell with the A/A control \
             {AA_CONTROL}, not settled unless the control gets the same verdict), with the best \
             peer by median.\n"
        );
        let _ = writeln!(o, "{}", self.table(0));
        let mut count = self.verdict_count();
        count[..1].make_ascii_uppercase();
        let _ = writeln!(o, "{count}.\n");
        let _ = writeln!(
            o,
            "Runnable waits, the shared measure: Mosaic's p99 / the lowest peer p99 (that \
             peer), in bold where Mosaic's is above it; Mosaic's longest wait over the rounds.\n"
        );
        let _ = writeln!(o, "{}", self.table(1));
        let _ = writeln!(
            o,
            "Mosaic's p99 at most the best peer's in {} of {} cells; its longest wait under {:.0} \
             s in {} of {}.\n",
            self.p99_ok,
            self.waits,
            WAIT_MAX_US / 1e6,
            self.max_ok,
            self.waits
        );
        let _ = writeln!(
            o,
            "BPF cost as the guest measures it (its clock, TCG turn waits included: \"What a \
             BPF call costs the host\" below): Mosaic's over the cheapest peer's, per call / per \
             run (medians; each against the peer cheapest by that measure), in bold where both \
             are above 1.\n"
        );
        let _ = writeln!(o, "{}", self.table(2));
        let _ = writeln!(
            o,
            "At most the cheapest peer's per call or per run in {} of {} cells.",
            self.cost_ok, self.costs
        );
        o
    }

    /// The README's summary: the headline table, Mosaic against EEVDF, and the counts of the
    /// other two tables, for a reader who has not opened the page.
    fn readme(&self, builds: &[&str]) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "<!-- generated by mosaic-bench from docs/bench/results.json (make bench); do not \
             edit by hand -->"
        );
        let _ = writeln!(
            o,
            "Mosaic's headline (time, throughput or wakeup latency) against the best sched_ext \
             peer in each cell of [docs/benchmarks.md](docs/benchmarks.md): the median of the \
             round-by-round ratios (above 1: Mosaic ahead), the verdict and that peer. QEMU \
             **without KVM** (TCG) on a 2-core host: noisy, no caches modelled, ratios within \
             one VM boot only; 5 interleaved rounds per boot; {}.\n",
            match builds {
                [b] => format!("one scx_mosaic binary, {}", build_id(b)),
                _ => format!("{} scx_mosaic builds (the page names each)", builds.len()),
            }
        );
        let _ = writeln!(o, "{}", self.table(0));
        let (lo, hi) = self
            .eevdf
            .iter()
            .fold((f64::INFINITY, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let _ = writeln!(
            o,
            "Against the best peer: {}. Against the kernel's default (EEVDF) its median is \
             ahead in {} of {} cells ({} to {}). Its p99 runnable wait (one tracer for every \
             scheduler) is at most the best peer's in {} of {} cells, its longest wait under \
             {:.0} s in {} of {}; its BPF cost at most the cheapest peer's, per call or per run, \
             in {} of {}.",
            self.verdict_count(),
            self.eevdf.iter().filter(|&&x| x > 1.0).count(),
            self.eevdf.len(),
            fmt_ratio(lo),
            fmt_ratio(hi),
            self.p99_ok,
            self.waits,
            WAIT_MAX_US / 1e6,
            self.max_ok,
            self.waits,
            self.cost_ok,
            self.costs
        );
        o
    }
}

/// The scx_mosaic builds the runs of `suite` measured, sorted, each once.
fn mosaic_builds(suite: &Suite) -> Vec<&str> {
    let mut builds: Vec<&str> = suite
        .runs
        .iter()
        .map(|r| r.mosaic_build.as_str())
        .filter(|b| !b.is_empty())
        .collect();
    builds.sort();
    builds.dedup();
    builds
}

/// A build as the README names it: its hash and commit, without the path the bench ran it
/// from ("/tmp/x/scx_mosaic (sha256 1234), built at abc" -> "sha256 1234, built at abc").
fn build_id(b: &str) -> String {
    match b.split_once(" (sha256 ") {
        Some((_, rest)) => format!("sha256 {}", rest.replacen(')', "", 1)),
        None => b.to_string(),
    }
}

/// The README's markers around the generated summary (Standing::readme()).
const README_BEGIN: &str = "<!-- bench-summary:begin -->";
const README_END: &str = "<!-- bench-summary:end -->";

/// Rewrite the summary between README_BEGIN and README_END in `readme` from `suite`; an error
/// if the markers are missing, and nothing written when no cell has Mosaic and a peer.
pub fn write_readme(suite: &Suite, readme: &Path) -> Result<()> {
    let pooled = suite.pooled();
    let Some(st) = standing(&pooled) else {
        return Ok(());
    };
    let text =
        std::fs::read_to_string(readme).with_context(|| format!("reading {}", readme.display()))?;
    let (Some(a), Some(b)) = (text.find(README_BEGIN), text.find(README_END)) else {
        anyhow::bail!(
            "{}: no {README_BEGIN} ... {README_END} block to write the summary into",
            readme.display()
        );
    };
    anyhow::ensure!(
        a < b,
        "{}: the summary's markers are out of order",
        readme.display()
    );
    let builds = mosaic_builds(&pooled);
    let out = format!(
        "{}{README_BEGIN}\n{}{}",
        &text[..a],
        st.readme(&builds),
        &text[b..]
    );
    if out != text {
        std::fs::write(readme, out)?;
    }
    Ok(())
}

/// A wait for the standing tables, µs: whole ms from 10 ms on, ms with one decimal from 1 ms,
/// else whole µs.
fn fmt_wait(us: f64) -> String {
    let ms = us / 1000.0;
    if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{us:.0} µs")
    }
}

/// A ratio for the standing tables: two decimals, three when that would show ×1.00 for a
/// ratio that is not 1 (so that the bold "above 1" never marks a ×1.00).
fn fmt_ratio(x: f64) -> String {
    if (x - 1.0).abs() < 0.005 && x != 1.0 {
        format!("×{x:.3}")
    } else {
        format!("×{x:.2}")
    }
}

/// One line per cell of `run` for the terminal, as the report's table says it: the headline's
/// median, min–max, runs, ratio to EEVDF, BPF cost and scx_mosaic's own longest wait; or why
/// the cell failed.
pub fn cell_summaries(sc: &Scenario, run: &ScenarioRun) -> Vec<String> {
    let cs = cells(run);
    let (metric, unit, higher) = sc.headline();
    let base = cs
        .iter()
        .find(|c| c.sched == "eevdf")
        .and_then(|c| c.headline(sc));
    cs.iter()
        .map(|c| {
            if let Some(f) = &c.fail {
                return format!("{}: FAILED: {f}", c.sched);
            }
            let Some((m, lo, hi)) = c.headline(sc) else {
                return format!("{}: no {metric} in {} runs", c.sched, c.runs);
            };
            let mut line = format!(
                "{}: {metric} {} {} {unit} median ({}–{}, {} of {} runs",
                c.sched,
                if higher { "↑" } else { "↓" },
                fmt(m),
                fmt(lo),
                fmt(hi),
                c.n,
                c.runs
            );
            if let Some((b, _, _)) = base.filter(|_| c.sched != "eevdf") {
                let _ = write!(line, ", ×EEVDF {:.2}", m / b);
            }
            line.push(')');
            if let Some(b) = c.bpf {
                let _ = write!(line, ", BPF {b:.0} ns/call");
            }
            if let (Some(p), Some(w)) = (c.shared_p99, c.shared_max) {
                let _ = write!(line, ", wait p99 {p:.0} µs, max {w:.0} µs");
            }
            if let Some(w) = c.wait_max {
                let _ = write!(line, ", own wait max {w:.0} µs");
            }
            line
        })
        .collect()
}

/// The cells of `run`, in its scheduler order.
pub fn cells(run: &ScenarioRun) -> Vec<Cell> {
    run.scheds
        .iter()
        .map(|name| {
            let samples: Vec<_> = run.samples.iter().filter(|s| &s.sched == name).collect();
            let ok: Vec<_> = samples.iter().filter(|s| s.fail.is_none()).collect();
            let mut keys: Vec<&String> = ok.iter().flat_map(|s| s.metrics.keys()).collect();
            keys.sort();
            keys.dedup();
            let stats = keys
                .into_iter()
                .filter_map(|k| {
                    let v: Vec<f64> = ok
                        .iter()
                        .filter_map(|s| s.metrics.get(k).copied())
                        .collect();
                    let lo = v.iter().cloned().fold(f64::INFINITY, f64::min);
                    let hi = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    median(&v).map(|m| (k.clone(), (m, lo, hi)))
                })
                .collect();
            let bpf: Vec<f64> = ok.iter().filter_map(|s| s.bpf_ns_per_call).collect();
            let bpf_ms: Vec<f64> = ok.iter().filter_map(|s| s.bpf_ms).collect();
            let wmax: Vec<f64> = ok.iter().filter_map(|s| s.wait_max_us).collect();
            let wp99: Vec<f64> = ok.iter().filter_map(|s| s.wait_p99_us).collect();
            let sp50: Vec<f64> = ok.iter().filter_map(|s| s.shared_wait_p50_us).collect();
            let sp99: Vec<f64> = ok.iter().filter_map(|s| s.shared_wait_p99_us).collect();
            let smax = ok
                .iter()
                .filter_map(|s| s.shared_wait_max_us)
                .reduce(f64::max);
            let fail = samples
                .iter()
                .find_map(|s| s.fail.as_ref().map(|f| format!("round {}: {f}", s.round)))
                .or_else(|| samples.is_empty().then(|| "no runs reported".to_string()));
            Cell {
                sched: name.clone(),
                stats,
                n: ok.len(),
                runs: samples.len(),
                bpf: median(&bpf),
                bpf_ms: median(&bpf_ms),
                wait_max: median(&wmax),
                wait_p99: median(&wp99),
                shared_p50: median(&sp50),
                shared_p99: median(&sp99),
                shared_max: smax,
                fail,
            }
        })
        .collect()
}

/// The wait columns of a scenario table, the shared measure beside scx_mosaic's own.
const WAIT_HEADER: &str = "shared wait p50 µs ↓ | shared wait p99 µs ↓ | own wait p99 µs ↓ | \
                           shared wait max µs ↓ | own wait max µs ↓ |";
const WAIT_COLUMNS: usize = 5;

/// A cell's values for the WAIT_HEADER columns, in order.
fn wait_columns(c: &Cell) -> [Option<f64>; WAIT_COLUMNS] {
    [
        c.shared_p50,
        c.shared_p99,
        c.wait_p99,
        c.shared_max,
        c.wait_max,
    ]
}

/// Higher-is-better score of `v` relative to `base` (>1: better than base).
fn score(sc: &Scenario, v: f64, base: f64) -> f64 {
    if sc.headline().2 {
        v / base
    } else {
        base / v
    }
}

/// Format a number with a sensible number of digits.
fn fmt(v: f64) -> String {
    let a = v.abs();
    if a >= 10000.0 {
        format!("{:.0}", v)
    } else if a >= 100.0 {
        format!("{:.1}", v)
    } else if a >= 1.0 {
        format!("{:.3}", v)
    } else {
        format!("{:.4}", v)
    }
}

/// The schedulers of the suite, in first-seen order: (label, command, versions). Versions
/// differing between runs (merged reports) are all listed; runs from before versions were
/// recorded give the guest kernel for EEVDF and nothing for the others, and the suite's
/// command line for the label.
fn sched_table(suite: &Suite) -> Vec<(String, String, Vec<String>)> {
    let mut t: Vec<(String, String, Vec<String>)> = Vec::new();
    for r in &suite.runs {
        for label in &r.scheds {
            let info = r.sched_info.iter().find(|i| &i.label == label);
            let version = match info {
                Some(i) => i.version.clone(),
                None if label == "eevdf" => r.kernel.clone(),
                None => String::new(),
            };
            let k = match t.iter().position(|e| &e.0 == label) {
                Some(k) => k,
                None => {
                    t.push((label.clone(), String::new(), Vec::new()));
                    t.len() - 1
                }
            };
            if t[k].1.is_empty() {
                t[k].1 = match info {
                    Some(i) => i.command.clone(),
                    None => crate::suite::sched(label)
                        .map(|s| s.command())
                        .unwrap_or_default(),
                };
            }
            if !version.is_empty() && !t[k].2.contains(&version) {
                t[k].2.push(version);
            }
        }
    }
    t
}

/// Runs of the suite grouped by topology (in first-seen order), scenarios in suite order.
fn by_topo(suite: &Suite) -> Vec<(String, Vec<&ScenarioRun>)> {
    let mut topos: Vec<String> = Vec::new();
    for r in &suite.runs {
        if !topos.contains(&r.topo) {
            topos.push(r.topo.clone());
        }
    }
    let order = |r: &ScenarioRun| {
        crate::suite::SCENARIOS
            .iter()
            .position(|s| s.name == r.scenario)
            .unwrap_or(usize::MAX)
    };
    topos
        .into_iter()
        .map(|t| {
            let mut runs: Vec<&ScenarioRun> = suite.runs.iter().filter(|r| r.topo == t).collect();
            runs.sort_by_key(|r| order(r));
            (t, runs)
        })
        .collect()
}

/// What a VM topology preset (vm/run's TOPOS) is, for the report.
fn topo_desc(t: &str) -> &'static str {
    match t {
        "1llc" => "4 vCPUs, 1 socket, 1 LLC, no SMT",
        "2llc-smt" => "8 vCPUs, 2 LLCs, 2 cores × 2 SMT threads each",
        "2node" => "8 vCPUs, 2 NUMA nodes × 2 LLCs × 2 cores",
        "4llc" => "8 vCPUs, 4 sockets = 4 LLCs × 2 cores, one NUMA node",
        "l2-8" => "8 vCPUs, 1 LLC, 2 L2 clusters × 2 cores × 2 SMT",
        "1cpu" => "1 vCPU",
        "16cpu" => "16 vCPUs, 2 LLCs × 8 cores",
        "host" => "this host (real hardware)",
        _ => "",
    }
}

/// Write the Markdown report to `md` and its plots into `svg_dir` (linked relative to `md`).
pub fn write_report(suite: &Suite, md: &Path, svg_dir: &Path, command: &str) -> Result<()> {
    let pooled = suite.pooled();
    let suite = &pooled;
    std::fs::create_dir_all(svg_dir)?;
    let rel = svg_dir
        .strip_prefix(md.parent().unwrap_or(Path::new("")))
        .unwrap_or(svg_dir)
        .display()
        .to_string();
    let mut o = String::new();
    let dates: Vec<&str> = suite.runs.iter().map(|r| r.date.as_str()).collect();
    let (d0, d1) = (
        dates.iter().min().copied().unwrap_or(""),
        dates.iter().max().copied().unwrap_or(""),
    );
    let mut kernels: Vec<&str> = suite.runs.iter().map(|r| r.kernel.as_str()).collect();
    kernels.sort();
    kernels.dedup();
    let mut accels: Vec<&str> = suite
        .runs
        .iter()
        .map(|r| match r.accel.as_str() {
            _ if r.host => "host",
            "" => "tcg (runs from before the accelerator was recorded: no KVM then)",
            a => a,
        })
        .collect();
    accels.sort();
    accels.dedup();
    let tcg = accels.iter().any(|a| a.starts_with("tcg"));
    writeln!(o, "# Benchmarks\n")?;
    writeln!(
        o,
        "Generated by `{command}` ([`bench/`](../bench), crate `mosaic-bench`); do not edit by hand.\n"
    )?;
    writeln!(
        o,
        "- Date: {d0}{}",
        if d0 != d1 {
            format!(" – {d1}")
        } else {
            String::new()
        }
    )?;
    writeln!(o, "- Kernel: {}", kernels.join(", "))?;
    writeln!(o, "- Accelerator: {}", accels.join(", "))?;
    let builds = mosaic_builds(suite);
    if builds.len() > 1 {
        writeln!(
            o,
            "- scx_mosaic: {} builds (each scenario's section names the one it ran):",
            builds.len()
        )?;
        for b in builds {
            writeln!(o, "  - {b}")?;
        }
    } else {
        for b in builds {
            writeln!(o, "- scx_mosaic: {b}")?;
        }
    }
    for (t, runs) in by_topo(suite) {
        let n = runs.iter().map(|r| r.nproc).max().unwrap_or(0);
        writeln!(
            o,
            "- Topology `{t}`: {} ({n} CPUs seen by the guest)",
            topo_desc(&t)
        )?;
    }
    if tcg {
        writeln!(
            o,
            "\n> **Caveat: QEMU without KVM.** The numbers come from QEMU TCG (`thread=single`) on a \
             2-core host. TCG models no caches (no cache-affinity effects, no SMT contention), \
             guest time is emulated and noisy (run-to-run noise 2–13 %), and the guest competes \
             with whatever else the host runs. Compare schedulers only within one boot: every \
             scenario is one VM boot, schedulers interleaved A B C, A B C, … for each round, and \
             the table shows medians with min–max and ratios to the kernel's default (EEVDF). \
             Absolute times across boots, and against real hardware, mean nothing. BPF ns/call \
             is the guest's clock across each program: TCG time (tens of times native) that also \
             counts the host time a vCPU waited for its turn inside a program, which is not the \
             CPU the program cost (\"What a BPF call costs the host\" below measures that with \
             `vm/profile`)."
        )?;
    }
    writeln!(o, "\nHow to read: ↓ lower is better, ↑ higher is better; `(×r)` is the median divided by EEVDF's median. \
        BPF ns/call: kernel-measured (`kernel.bpf_stats_enabled=1`) run time per call summed over the \
        scheduler's struct_ops programs during the workload, median over the rounds; BPF ms/run (scenario \
        tables): the same run time summed over the workload, ms, median over the rounds - what the \
        scheduler's BPF cost the run, however many calls it made (a scheduler that makes more, \
        cheaper calls shows a lower ns/call for the same or more BPF time). \
        A cell that says FAILED had an ejection or an error in at least one run. \
        Shared wait p50 / p99 / max µs (scenario tables): runnable waits measured the same way for \
        every scheduler, EEVDF included, by `mosaic-bench waits` - a BPF tracer on the kernel's \
        `sched_wakeup`, `sched_wakeup_new` and `sched_switch` tracepoints, started before and stopped \
        after the workload (outside its timed wall time): a wait runs from when a task becomes runnable \
        (woken, new, or switched out still runnable: preempted or at its slice end) until it is \
        switched in; the idle task is left out. Its percentiles are the upper bound of their bucket \
        (8 per power of two: at most 1/8 above the true value from 8 µs on, under 1 µs above it \
        below; cells that say so were measured in log2 buckets), capped at the longest wait; \
        p50 and p99 are medians over the rounds, max the largest over the rounds. The tracer adds \
        the same small work to every wakeup and context switch under every scheduler (one that \
        switches more pays more of it in total). \
        Own wait p99 / max µs: scx_mosaic's own runnable-wait statistics from its `--stats-file` \
        (from wakeup or requeue until running, the 99th percentile as its log2 bucket's upper edge, \
        over the scheduler's whole run: load, workload, exit, so its max may exceed the shared one), \
        median over the rounds; EEVDF and the peers keep no such counters (–).\n")?;
    if let Some(text) = standing(suite).map(|st| st.section()) {
        writeln!(o, "{}\n", text.trim_end())?;
    }
    if let Some(text) = analysis(svg_dir) {
        writeln!(o, "{}\n", text.trim_end())?;
    }
    writeln!(o, "## Schedulers\n")?;
    writeln!(o, "| scheduler | command | version |")?;
    writeln!(o, "|---|---|---|")?;
    for (label, cmd, versions) in sched_table(suite) {
        let cmd = if cmd.is_empty() && label == "eevdf" {
            "– (the kernel's default: no sched_ext scheduler)".to_string()
        } else if cmd.is_empty() {
            "–".to_string()
        } else {
            format!("`{cmd}`")
        };
        let version = if versions.is_empty() {
            "not recorded".to_string()
        } else {
            versions.join(", ")
        };
        writeln!(o, "| {label} | {cmd} | {version} |")?;
    }
    writeln!(
        o,
        "\nVersions: peers, the crate version `cargo install` built; scx_mosaic, its `--version` \
         (crate version and git commit); EEVDF, the guest kernel's release. scx_mosaic runs also \
         get `--stats-file` (for the own wait columns).\n"
    )?;

    for (topo, runs) in by_topo(suite) {
        let scs: Vec<(&ScenarioRun, &Scenario, Vec<Cell>)> = runs
            .iter()
            .filter_map(|r| scenario(&r.scenario).map(|s| (*r, s, cells(r))))
            .collect();
        writeln!(o, "## Summary: `{topo}` ({})\n", topo_desc(&topo))?;
        let mut scheds: Vec<String> = Vec::new();
        for (r, _, _) in &scs {
            for s in &r.scheds {
                if !scheds.contains(s) {
                    scheds.push(s.clone());
                }
            }
        }
        write!(o, "| scheduler |")?;
        for (_, sc, _) in &scs {
            let (_, unit, hi) = sc.headline();
            write!(o, " {} {} {} |", sc.name, unit, if hi { "↑" } else { "↓" })?;
        }
        writeln!(o, " BPF ns/call |")?;
        writeln!(o, "|---|{}---|", "---|".repeat(scs.len()))?;
        for name in &scheds {
            write!(o, "| {name} |")?;
            let mut bpfs = Vec::new();
            for (_, sc, cs) in &scs {
                let base = cs
                    .iter()
                    .find(|c| c.sched == "eevdf")
                    .and_then(|c| c.headline(sc));
                match cs.iter().find(|c| &c.sched == name) {
                    None => write!(o, " – |")?,
                    Some(c) if c.fail.is_some() => write!(o, " **FAILED** |")?,
                    Some(c) => match (c.headline(sc), base) {
                        (Some((m, _, _)), Some((b, _, _))) => {
                            write!(o, " {} (×{:.2}) |", fmt(m), m / b)?
                        }
                        (Some((m, _, _)), None) => write!(o, " {} |", fmt(m))?,
                        _ => write!(o, " – |")?,
                    },
                }
                if let Some(b) = cs.iter().find(|c| &c.sched == name).and_then(|c| c.bpf) {
                    bpfs.push(b);
                }
            }
            match median(&bpfs) {
                Some(b) => writeln!(o, " {:.0} |", b)?,
                None => writeln!(o, " – |")?,
            }
        }
        writeln!(o)?;
        // Mosaic against the best peer, per scenario.
        let mut lines = Vec::new();
        for (run, sc, cs) in &scs {
            if let Some(v) = versus_best(run, sc, cs) {
                let s = score(sc, v.mosaic, v.best);
                lines.push(format!(
                    "- {}: Mosaic {} vs best peer {} {} → medians {} {:.1} %; {}, above 1: \
                     Mosaic ahead → **{}**",
                    sc.name,
                    fmt(v.mosaic),
                    v.peer.sched,
                    fmt(v.best),
                    if s >= 1.0 { "ahead by" } else { "behind by" },
                    (s - 1.0).abs() * 100.0,
                    paired_note(v.by_round),
                    cell_verdict(&v)
                ));
                if v.control.is_some() {
                    lines.push(format!(
                        "  - A/A control ({AA_CONTROL}, the same binary later in each round) \
                         against {}: {}, {}",
                        v.peer.sched,
                        paired_note(v.control),
                        margin_verdict(v.control)
                    ));
                }
            }
        }
        if !lines.is_empty() {
            writeln!(
                o,
                "Mosaic against the best peer (headline metric, medians; round by round: the \
                 median and range of each round's ratio, the two runs of a round being minutes \
                 apart in one boot; the verdict: ahead when that median is at least ×{MARGIN:.2} \
                 or every round is ahead, behind in the mirror case, else not settled; where \
                 the cell ran the A/A control, a verdict the control does not repeat is not \
                 settled):\n\n{}\n",
                lines.join("\n")
            )?;
        }
        let bpf_lines: Vec<String> = scs
            .iter()
            .filter_map(|(run, sc, cs)| bpf_line(run, sc, cs))
            .collect();
        if !bpf_lines.is_empty() {
            writeln!(
                o,
                "BPF cost against the cheapest peer (medians; ×: Mosaic over that peer, below 1 \
                 is cheaper; round by round: each round's ratio):\n\n{}\n",
                bpf_lines.join("\n")
            )?;
        }
        let wait_lines: Vec<String> = scs
            .iter()
            .filter_map(|(_, sc, cs)| wait_line(sc, cs))
            .collect();
        if !wait_lines.is_empty() {
            writeln!(
                o,
                "Runnable waits against the peers (the shared measure; p99 as its bucket's \
                 upper bound, at most 1/8 above the true value, so two p99s in one bucket are \
                 equal; max the longest over the rounds):\n\n{}\n",
                wait_lines.join("\n")
            )?;
        }
        let summary = svg_dir.join(format!("summary-{topo}.svg"));
        if plot_summary(
            &summary,
            &scs.iter().map(|(_, s, c)| (*s, c)).collect::<Vec<_>>(),
            &scheds,
            &topo,
        )
        .is_ok()
        {
            writeln!(
                o,
                "![relative performance on {topo}]({rel}/summary-{topo}.svg)\n"
            )?;
        }
        for (r, sc, cs) in &scs {
            writeln!(o, "### {} on `{topo}`: {}\n", sc.name, sc.title)?;
            writeln!(
                o,
                "`{}` — {} interleaved rounds{}, {}, kernel {}{}, {} of {:.0} s{}{}.{}\n",
                r.command,
                r.rounds,
                if r.boots > 1 {
                    format!(" in {} VM boots, pooled", r.boots)
                } else {
                    String::new()
                },
                r.date,
                r.kernel,
                r.watchdog_ms
                    .map(|ms| format!(", watchdog {ms} ms (SCX_TIMEOUT_MS)"))
                    .unwrap_or_default(),
                if r.boots > 1 { "boots" } else { "boot" },
                r.duration_s,
                if r.mosaic_build.is_empty() {
                    String::new()
                } else {
                    format!("; scx_mosaic: {}", r.mosaic_build)
                },
                if r.wait_buckets == 1 {
                    "; shared waits in log2 buckets (p99 up to 2x the true value)"
                } else {
                    ""
                },
                r.error
                    .as_ref()
                    .map(|e| format!(" **Run error: {e}**"))
                    .unwrap_or_default()
            )?;
            if let Some(ms) = r.watchdog_ms {
                writeln!(o, "{}\n", survival_line(ms, cs))?;
            }
            let (hm, hunit, hhi) = sc.headline();
            let others: Vec<_> = sc.metrics.iter().skip(1).collect();
            write!(
                o,
                "| scheduler | {hm} {hunit} {} median | min–max | n | ×EEVDF | BPF ns/call | BPF ms/run ↓ |",
                if hhi { "↑" } else { "↓" }
            )?;
            for (m, u, hi) in &others {
                write!(o, " {m} {u} {} |", if *hi { "↑" } else { "↓" })?;
            }
            writeln!(o, " {WAIT_HEADER}")?;
            writeln!(
                o,
                "|---|---|---|---|---|---|---|{}",
                "---|".repeat(others.len() + WAIT_COLUMNS)
            )?;
            let base = cs
                .iter()
                .find(|c| c.sched == "eevdf")
                .and_then(|c| c.headline(sc));
            for c in cs {
                if let Some(f) = &c.fail {
                    writeln!(
                        o,
                        "| {} | **FAILED**: {} |{}",
                        c.sched,
                        f.replace('|', "/"),
                        " |".repeat(5 + WAIT_COLUMNS + others.len())
                    )?;
                    continue;
                }
                let Some((m, lo, hi)) = c.headline(sc) else {
                    continue;
                };
                write!(
                    o,
                    "| {} | {} | {}–{} | {} | {} | {} | {} |",
                    c.sched,
                    fmt(m),
                    fmt(lo),
                    fmt(hi),
                    c.n,
                    base.map(|b| format!("{:.2}", m / b.0))
                        .unwrap_or("–".into()),
                    c.bpf.map(|b| format!("{b:.0}")).unwrap_or("–".into()),
                    c.bpf_ms.map(|b| format!("{b:.0}")).unwrap_or("–".into())
                )?;
                for (mname, _, _) in &others {
                    match c.stats.get(*mname) {
                        Some((v, _, _)) => write!(o, " {} |", fmt(*v))?,
                        None => write!(o, " – |")?,
                    }
                }
                for w in wait_columns(c) {
                    match w {
                        Some(v) => write!(o, " {v:.0} |")?,
                        None => write!(o, " – |")?,
                    }
                }
                writeln!(o)?;
            }
            let file = format!("{}-{topo}.svg", sc.name);
            if plot_scenario(&svg_dir.join(&file), sc, cs, &topo).is_ok() {
                writeln!(o, "\n![{} on {topo}]({rel}/{file})", sc.name)?;
            }
            writeln!(o)?;
        }
    }
    if !suite.skipped.is_empty() {
        writeln!(o, "## Skipped\n")?;
        for s in &suite.skipped {
            writeln!(o, "- {}: {}", s.what, s.why)?;
        }
        writeln!(o)?;
    }
    writeln!(o, "## Method\n")?;
    writeln!(
        o,
        "`make bench` builds everything, builds the peers into `/var/cache/mosaic/peers` with \
         `cargo install` (once), and runs `mosaic-bench run`: one VM boot (`vm/run`) per scenario × \
         topology, in which `tests/guest/bench/run.sh` runs the workload once per scheduler per \
         round, interleaved. Every sched_ext run is checked: the scheduler must enable, still be \
         enabled when the workload ends, exit 0 on SIGINT, and the kernel's `disabled (...)` line \
         must say it was unregistered — anything else (an ejection, a watchdog stall) fails the cell \
         and is printed loudly. Raw per-run JSON and guest logs go to `target/bench/<time>/`; the \
         merged results behind this page are in [`{rel}/results.json`]({rel}/results.json). \
         `make bench SCENARIO=name` runs one scenario and merges it here; `make bench FULL=1` \
         runs the matrix (the scenarios marked below on `1llc`, `2llc-smt`, `4llc` and `2node`, \
         the default schedulers) and resumes: a scenario × topology already measured by the same \
         scx_mosaic binary and schedulers is kept, so a run cut short goes on where it stopped. \
         `BOOTS=2` makes it two VM boots per cell, whose rounds the tables pool (the line above \
         each table says how many boots). The ablations (`mosaic-bench list`) run with \
         `mosaic-bench run --sched`; `mosaic-bench run --host` runs on a real sched_ext machine \
         (root).\n"
    )?;
    writeln!(
        o,
        "Scenarios (default-suite sizes; `mosaic-bench list` shows all):\n"
    )?;
    for sc in crate::suite::SCENARIOS {
        writeln!(
            o,
            "- `{}`{}: {} — `{}`",
            sc.name,
            match (sc.default, sc.matrix) {
                (true, true) => " (default, FULL=1)",
                (false, true) => " (FULL=1)",
                (true, false) => " (default)",
                (false, false) => " (by name)",
            },
            sc.title,
            sc.cmd[1]
        )?;
    }
    std::fs::write(md, o).with_context(|| format!("write {}", md.display()))?;
    Ok(())
}

/// The hand-written reading of the numbers kept beside results.json (`analysis.md`: where
/// Mosaic is behind and why, with the commands that measured it), if there is one. The report
/// includes it as it is, so that regenerating the page keeps it.
fn analysis(svg_dir: &Path) -> Option<String> {
    std::fs::read_to_string(svg_dir.join(ANALYSIS_FILE))
        .ok()
        .filter(|t| !t.trim().is_empty())
}

/// The file, beside results.json, that `analysis()` reads.
const ANALYSIS_FILE: &str = "analysis.md";

/// Plot colours, 0xRRGGBB, in SCHEDS order (the last also for unknown names).
const COLORS: [u32; 26] = [
    0x787878, 0xd62728, 0xff9896, 0xe377c2, 0xf7b6d2, 0xc49c94, 0xffbb78, 0xad494a, 0xe7969c,
    0x843c39, 0x7b4173, 0xb2182b, 0xf4a582, 0xd6604d, 0x67001f, 0xfddbc7, 0xa50f15, 0xef8a62,
    0x1f77b4, 0x2ca02c, 0x9467bd, 0x17becf, 0xbcbd22, 0x8c564b, 0xfb6a4a, 0x000000,
];

/// A scheduler's colour: grey for EEVDF, reds for Mosaic and its ablations, others for peers.
fn color(name: &str) -> RGBColor {
    let i = crate::suite::SCHEDS
        .iter()
        .position(|s| s.label == name)
        .unwrap_or(COLORS.len() - 1);
    let c = COLORS[i % COLORS.len()];
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

/// Horizontal bars of the headline medians with min–max whiskers, one per scheduler.
fn plot_scenario(path: &Path, sc: &Scenario, cs: &[Cell], topo: &str) -> Result<()> {
    let ok: Vec<(&Cell, (f64, f64, f64))> = cs
        .iter()
        .filter(|c| c.fail.is_none())
        .filter_map(|c| c.headline(sc).map(|h| (c, h)))
        .collect();
    if ok.is_empty() {
        anyhow::bail!("nothing to plot");
    }
    let (m, unit, hi) = sc.headline();
    let xmax = ok.iter().map(|(_, h)| h.2).fold(0.0, f64::max) * 1.1;
    let n = ok.len();
    let root = SVGBackend::new(path, (760, 90 + 34 * n as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    // Top to bottom in suite order: bar i sits at y = n - 1 - i.
    let labels: Vec<String> = ok.iter().rev().map(|(c, _)| c.sched.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} on {topo}: {m} ({unit}, {} is better); median, min–max",
                sc.name,
                if hi { "higher" } else { "lower" }
            ),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(170)
        .build_cartesian_2d(0f64..xmax, -0.5f64..(n as f64 - 0.5))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|y| {
            let i = y.round();
            if (y - i).abs() < 0.01 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", 13))
        .x_desc(unit)
        .draw()?;
    let y = |i: usize| (n - 1 - i) as f64;
    chart.draw_series(ok.iter().enumerate().map(|(i, (c, h))| {
        Rectangle::new(
            [(0.0, y(i) - 0.35), (h.0, y(i) + 0.35)],
            color(&c.sched).filled(),
        )
    }))?;
    chart.draw_series(ok.iter().enumerate().map(|(i, (_, h))| {
        ErrorBar::new_horizontal(y(i), h.1, h.0, h.2, BLACK.stroke_width(1), 10)
    }))?;
    root.present()?;
    Ok(())
}

/// Grouped bars: each scheduler's headline relative to EEVDF (higher is better), per scenario.
fn plot_summary(
    path: &Path,
    scs: &[(&Scenario, &Vec<Cell>)],
    scheds: &[String],
    topo: &str,
) -> Result<()> {
    let mut vals: Vec<(usize, usize, f64)> = Vec::new();
    for (i, (sc, cs)) in scs.iter().enumerate() {
        let Some((b, _, _)) = cs
            .iter()
            .find(|c| c.sched == "eevdf")
            .and_then(|c| c.headline(sc))
        else {
            continue;
        };
        for (j, name) in scheds.iter().enumerate() {
            if let Some((v, _, _)) = cs
                .iter()
                .find(|c| &c.sched == name && c.fail.is_none())
                .and_then(|c| c.headline(sc))
            {
                vals.push((i, j, score(sc, v, b)));
            }
        }
    }
    if vals.is_empty() {
        anyhow::bail!("nothing to plot");
    }
    let ymax = vals.iter().map(|v| v.2).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 440)).into_drawing_area();
    root.fill(&WHITE)?;
    let names: Vec<&str> = scs.iter().map(|(s, _)| s.name).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Performance relative to EEVDF on {topo} (higher is better)"),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..(scs.len() as f64 - 0.5), 0f64..ymax)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(scs.len())
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 0.01 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].to_string()
            } else {
                String::new()
            }
        })
        .y_desc("EEVDF = 1")
        .draw()?;
    let w = 0.8 / scheds.len() as f64;
    for (j, name) in scheds.iter().enumerate() {
        let col = color(name);
        chart
            .draw_series(vals.iter().filter(|v| v.1 == j).map(|&(i, j, v)| {
                let x0 = i as f64 - 0.4 + j as f64 * w;
                Rectangle::new([(x0, 0.0), (x0 + w * 0.9, v)], col.filled())
            }))?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], col.filled()));
    }
    chart.draw_series(LineSeries::new(
        vec![(-0.5, 1.0), (scs.len() as f64 - 0.5, 1.0)],
        BLACK.stroke_width(1),
    ))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Sample, SchedInfo};

    /// The Markdown report of a suite of one run, written by @command.
    fn render(run: ScenarioRun, command: &str) -> String {
        let suite = Suite {
            runs: vec![run],
            skipped: vec![],
        };
        let dir = tempfile::tempdir().unwrap();
        let md = dir.path().join("b.md");
        write_report(&suite, &md, &dir.path().join("bench"), command).unwrap();
        std::fs::read_to_string(&md).unwrap()
    }

    fn sample(sched: &str, round: u32, t: f64, fail: Option<&str>) -> Sample {
        Sample {
            sched: sched.into(),
            round,
            metrics: BTreeMap::from([("time".to_string(), t)]),
            bpf_ns_per_call: (sched != "eevdf").then_some(100.0),
            bpf_ms: (sched != "eevdf").then_some(2.0 * round as f64),
            wait_max_us: (sched == "mosaic").then_some(1000.0 + round as f64),
            wait_p99_us: (sched == "mosaic").then_some(256.0),
            fail: fail.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn bpf_cost_is_set_against_the_cheapest_peer_per_call_and_per_run() {
        let cell = |sched: &str, ns: f64, ms: Option<f64>, fail: Option<&str>| Cell {
            sched: sched.into(),
            stats: BTreeMap::new(),
            n: 5,
            runs: 5,
            bpf: Some(ns),
            bpf_ms: ms,
            wait_max: None,
            wait_p99: None,
            shared_p50: None,
            shared_p99: None,
            shared_max: None,
            fail: fail.map(String::from),
        };
        let sc = scenario("hackbench").unwrap();
        // Two rounds: Mosaic over rusty ×1.5 and ×3.0 per call (median ×2.25); p2dq's and
        // lavd's samples do not matter (rusty is the cheapest working peer).
        let mut run = ScenarioRun {
            scenario: "hackbench".into(),
            ..Default::default()
        };
        for (r, m, ru) in [(1, 150.0, 100.0), (2, 300.0, 100.0)] {
            for (sched, ns) in [("mosaic", m), ("rusty", ru)] {
                let mut s = sample(sched, r, 1.0, None);
                s.bpf_ns_per_call = Some(ns);
                run.samples.push(s);
            }
        }
        let run = run;
        let mut cs = vec![
            cell("mosaic", 200.0, Some(10.0), None),
            cell("p2dq", 300.0, Some(8.0), None),
            cell("rusty", 100.0, Some(12.0), None),
            cell("lavd", 50.0, Some(1.0), Some("ejected")),
            cell("mosaic-seed-srq", 10.0, Some(1.0), None),
        ];
        assert_eq!(
            bpf_line(&run, sc, &cs).unwrap(),
            "- hackbench: cheapest peer by ns/call rusty 100 (Mosaic 200, ×2.00), \
             round by round ×2.25 (1.50–3.00, 2 rounds); by ms/run p2dq 8 (Mosaic 10, ×1.25)"
        );
        for c in cs.iter_mut() {
            c.bpf_ms = None;
        }
        assert!(bpf_line(&run, sc, &cs)
            .unwrap()
            .ends_with("by ms/run not recorded"));
        cs[0].fail = Some("ejected".into());
        assert_eq!(bpf_line(&run, sc, &cs), None);
    }

    #[test]
    fn a_margin_is_ahead_only_past_five_percent_or_in_every_round() {
        assert_eq!(margin_verdict(Some((1.06, 0.90, 1.20, 5))), "ahead");
        assert_eq!(margin_verdict(Some((1.02, 1.01, 1.04, 5))), "ahead");
        assert_eq!(
            margin_verdict(Some((1.02, 0.97, 1.08, 5))),
            "not settled (within noise)"
        );
        assert_eq!(margin_verdict(Some((0.94, 0.80, 1.10, 5))), "behind");
        assert_eq!(margin_verdict(Some((0.99, 0.97, 0.995, 5))), "behind");
        assert_eq!(margin_verdict(None), "no round with both");
    }

    #[test]
    fn a_verdict_the_aa_control_does_not_repeat_is_not_settled() {
        // hackbench times: Mosaic 4 s in every round, p2dq 5 s; the control @aa s
        let run_with = |aa: Option<f64>| {
            let mut run = ScenarioRun {
                scheds: vec!["mosaic".into(), "p2dq".into()],
                ..Default::default()
            };
            for r in 1..=5 {
                run.samples.push(sample("mosaic", r, 4.0, None));
                run.samples.push(sample("p2dq", r, 5.0, None));
                if let Some(t) = aa {
                    run.samples.push(sample(AA_CONTROL, r, t, None));
                }
            }
            if aa.is_some() {
                run.scheds.push(AA_CONTROL.into());
            }
            run
        };
        let sc = scenario("hackbench").unwrap();
        let verdict = |run: &ScenarioRun| {
            let cs = cells(run);
            let v = versus_best(run, sc, &cs).unwrap();
            (cell_verdict(&v), v.control.is_some())
        };
        assert_eq!(verdict(&run_with(None)), ("ahead", false));
        assert_eq!(verdict(&run_with(Some(4.1))), ("ahead", true));
        assert_eq!(
            verdict(&run_with(Some(5.0))),
            ("not settled (within noise)", true)
        );
        // a failed control is no control
        let mut run = run_with(Some(5.0));
        run.samples
            .iter_mut()
            .filter(|s| s.sched == AA_CONTROL)
            .for_each(|s| s.fail = Some("ejected".into()));
        assert_eq!(verdict(&run), ("ahead", false));
    }

    /// A cell of 5 runs with only the shared wait measure's p99 and max.
    fn wait_cell(sched: &str, p99: Option<f64>, max: Option<f64>, fail: Option<&str>) -> Cell {
        Cell {
            sched: sched.into(),
            stats: BTreeMap::new(),
            n: 5,
            runs: 5,
            bpf: None,
            bpf_ms: None,
            wait_max: None,
            wait_p99: None,
            shared_p50: None,
            shared_p99: p99,
            shared_max: max,
            fail: fail.map(String::from),
        }
    }

    #[test]
    fn the_longest_wait_counts_the_aa_controls_runs() {
        let cell = |sched: &str, max: Option<f64>, fail: Option<&str>| {
            wait_cell(sched, Some(1e5), max, fail)
        };
        let longest = |control: Option<Cell>| {
            let mut cs = vec![cell("mosaic", Some(1.3e6), None)];
            cs.extend(control);
            mosaic_longest_wait(&cs[0], &cs)
        };
        assert_eq!(
            longest(Some(cell(AA_CONTROL, Some(2.1e6), None))),
            Some(2.1e6)
        );
        assert_eq!(
            longest(Some(cell(AA_CONTROL, Some(0.4e6), None))),
            Some(1.3e6)
        );
        assert_eq!(
            longest(Some(cell(AA_CONTROL, Some(2.1e6), Some("ejected")))),
            Some(1.3e6)
        );
        assert_eq!(longest(None), Some(1.3e6));
    }

    #[test]
    fn paired_ratios_use_only_rounds_where_both_succeeded() {
        let mut run = ScenarioRun::default();
        run.samples.push(sample("mosaic", 1, 4.0, None));
        run.samples.push(sample("p2dq", 1, 5.0, None));
        run.samples.push(sample("mosaic", 2, 9.0, None));
        run.samples.push(sample("p2dq", 2, 1.0, Some("ejected")));
        run.samples.push(sample("mosaic", 3, 6.0, None));
        run.samples.push(sample("p2dq", 3, 4.0, None));
        run.samples.push(sample("mosaic", 4, 1.0, None));
        let time = |a: &Sample, b: &Sample| Some(a.metrics["time"] / b.metrics["time"]);
        // rounds 1 and 3 only: 0.8 and 1.5
        assert_eq!(
            paired(&run, "mosaic", "p2dq", time),
            Some((1.15, 0.8, 1.5, 2))
        );
        assert_eq!(paired(&run, "mosaic", "rusty", time), None);
        assert_eq!(
            paired_note(Some((1.15, 0.8, 1.5, 2))),
            "round by round ×1.15 (0.80–1.50, 2 rounds)"
        );
    }

    #[test]
    fn medians_ratios_and_failed_cells() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        let mut run = ScenarioRun {
            scenario: "hackbench".into(),
            topo: "1llc".into(),
            kernel: "7.3.4".into(),
            accel: "tcg".into(),
            rounds: 3,
            mosaic_build: "scx_mosaic-0123456 (sha256 abc), built at git 0123456".into(),
            scheds: vec!["eevdf".into(), "mosaic".into(), "p2dq".into()],
            sched_info: [
                ("eevdf", "", "7.3.4"),
                ("mosaic", "scx_mosaic --stats 0", "0.1.0-g0123456789ab"),
                ("p2dq", "scx_p2dq", "1.1.4"),
            ]
            .map(|(l, c, v)| SchedInfo {
                label: l.into(),
                command: c.into(),
                version: v.into(),
            })
            .to_vec(),
            ..Default::default()
        };
        for r in 1..=3 {
            run.samples.push(sample("eevdf", r, 8.0 + r as f64, None));
            run.samples.push(sample("mosaic", r, 4.0 + r as f64, None));
            let fail = (r == 2).then_some("ejected: runnable task stall");
            run.samples.push(sample("p2dq", r, 5.0, fail));
        }
        let sc = scenario("hackbench").unwrap();
        assert_eq!(
            cell_summaries(sc, &run),
            [
                "eevdf: time ↓ 10.000 s median (9.000–11.000, 3 of 3 runs)",
                "mosaic: time ↓ 6.000 s median (5.000–7.000, 3 of 3 runs, ×EEVDF 0.60), BPF 100 \
                 ns/call, own wait max 1002 µs",
                "p2dq: FAILED: round 2: ejected: runnable task stall",
            ]
        );
        let cs = cells(&run);
        let sc = scenario("hackbench").unwrap();
        assert_eq!(cs[0].headline(sc), Some((10.0, 9.0, 11.0)));
        assert_eq!(cs[1].headline(sc), Some((6.0, 5.0, 7.0)));
        assert_eq!(cs[1].bpf, Some(100.0));
        assert_eq!((cs[1].bpf_ms, cs[0].bpf_ms), (Some(4.0), None));
        assert_eq!(
            (cs[1].wait_max, cs[1].wait_p99),
            (Some(1002.0), Some(256.0))
        );
        assert_eq!((cs[0].wait_max, cs[0].wait_p99), (None, None));
        assert!(cs[2]
            .fail
            .as_deref()
            .unwrap()
            .contains("runnable task stall"));
        let dir = tempfile::tempdir().unwrap();
        // A run from before versions were recorded: EEVDF still gets its kernel; its shared
        // waits were kept in log2 buckets, which its line says.
        let old = ScenarioRun {
            scenario: "messaging".into(),
            topo: "1llc".into(),
            kernel: "7.3.3".into(),
            scheds: vec!["eevdf".into(), "rusty".into()],
            wait_buckets: 1,
            ..Default::default()
        };
        let suite = Suite {
            runs: vec![run, old],
            skipped: vec![],
        };
        let md = dir.path().join("b.md");
        write_report(&suite, &md, &dir.path().join("bench"), "make bench").unwrap();
        let text = std::fs::read_to_string(&md).unwrap();
        assert!(text.contains("| mosaic | 6.000 (×0.60) |"), "{text}");
        assert!(text.contains("| p2dq | **FAILED** |"), "{text}");
        assert!(text.contains("Caveat"));
        assert!(
            text.contains("- Accelerator: tcg, tcg (runs from before the accelerator was recorded"),
            "{text}"
        );
        assert!(text.contains("| scheduler | command | version |"), "{text}");
        // One build: named once in the header and in its scenario's line; the run without
        // a recorded build names none.
        let build = "scx_mosaic-0123456 (sha256 abc), built at git 0123456";
        assert!(
            text.contains(&format!("\n- scx_mosaic: {build}\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!(" s; scx_mosaic: {build}.")),
            "{text}"
        );
        assert_eq!(text.matches("; scx_mosaic: ").count(), 1, "{text}");
        assert_eq!(
            text.matches("; shared waits in log2 buckets").count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(
                "| eevdf | – (the kernel's default: no sched_ext scheduler) | 7.3.4, 7.3.3 |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| mosaic | `scx_mosaic --stats 0` | 0.1.0-g0123456789ab |"),
            "{text}"
        );
        assert!(text.contains("| p2dq | `scx_p2dq` | 1.1.4 |"), "{text}");
        assert!(
            text.contains("| rusty | `scx_rusty` | not recorded |"),
            "{text}"
        );
        // The scenario table: BPF cost per call and per run, Mosaic's own wait columns, "–"
        // for the others.
        assert!(
            text.contains(
                "| ×EEVDF | BPF ns/call | BPF ms/run ↓ | shared wait p50 µs ↓ | shared wait p99 µs \
                 ↓ | own wait p99 µs ↓ | shared wait max µs ↓ | own wait max µs ↓ |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| mosaic | 6.000 | 5.000–7.000 | 3 | 0.60 | 100 | 4 | – | – | 256 | – | 1002 |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| eevdf | 10.000 | 9.000–11.000 | 3 | 1.00 | – | – | – | – | – | – | – |"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "| p2dq | **FAILED**: round 2: ejected: runnable task stall | | | | | | | | | | |\n"
            ),
            "{text}"
        );
        assert!(dir.path().join("bench/hackbench-1llc.svg").exists());
        // BPF cost against the cheapest peer: p2dq failed a round, so no peer is left.
        assert!(
            !text.contains("BPF cost against the cheapest peer"),
            "{text}"
        );
    }

    #[test]
    fn a_watchdog_run_counts_the_runs_each_scheduler_survived() {
        let mut run = ScenarioRun {
            scenario: "hackbench".into(),
            topo: "2llc-smt".into(),
            kernel: "7.3.4".into(),
            accel: "tcg".into(),
            watchdog_ms: Some(2000),
            rounds: 3,
            scheds: vec!["mosaic".into(), "p2dq".into()],
            ..Default::default()
        };
        for r in 1..=3 {
            let fail = (r == 3).then_some("ejected: runnable task stall");
            run.samples.push(sample("mosaic", r, 5.0, fail));
            run.samples.push(sample("p2dq", r, 6.0, None));
        }
        let text = render(run, "mosaic-bench run");
        assert!(
            text.contains(", watchdog 2000 ms (SCX_TIMEOUT_MS),"),
            "{text}"
        );
        assert!(
            text.contains("under the 2000 ms watchdog: mosaic 2 of 3, p2dq 3 of 3."),
            "{text}"
        );
    }

    #[test]
    fn a_kvm_report_names_its_accelerator_without_the_tcg_caveat() {
        let run = ScenarioRun {
            scenario: "pipe".into(),
            topo: "1llc".into(),
            kernel: "7.3.4".into(),
            accel: "kvm".into(),
            rounds: 1,
            scheds: vec!["eevdf".into()],
            ..Default::default()
        };
        let text = render(run, "make bench");
        assert!(text.contains("- Accelerator: kvm\n"), "{text}");
        assert!(!text.contains("Caveat"), "{text}");
    }

    #[test]
    fn every_scheduler_has_a_colour_of_its_own() {
        let mut seen: Vec<(u8, u8, u8)> = crate::suite::SCHEDS
            .iter()
            .map(|s| color(s.label).rgb())
            .collect();
        let n = seen.len();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), n);
    }

    #[test]
    fn the_hand_written_analysis_beside_the_results_is_kept_in_the_report() {
        let suite = Suite {
            runs: vec![ScenarioRun {
                scenario: "pipe".into(),
                topo: "1llc".into(),
                rounds: 1,
                scheds: vec!["eevdf".into()],
                ..Default::default()
            }],
            skipped: vec![],
        };
        let dir = tempfile::tempdir().unwrap();
        let (md, svg) = (dir.path().join("b.md"), dir.path().join("bench"));
        write_report(&suite, &md, &svg, "make bench").unwrap();
        assert!(!std::fs::read_to_string(&md).unwrap().contains("## Why"));
        std::fs::write(svg.join(ANALYSIS_FILE), "## Why\n\nBecause.\n\n").unwrap();
        write_report(&suite, &md, &svg, "make bench").unwrap();
        let text = std::fs::read_to_string(&md).unwrap();
        let (why, scheds) = (
            text.find("## Why\n\nBecause.\n\n"),
            text.find("## Schedulers"),
        );
        assert!(why.is_some() && why < scheds, "{text}");
    }

    #[test]
    fn every_vm_preset_has_a_description() {
        let run =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../vm/run")).unwrap();
        let presets: Vec<&str> = run
            .lines()
            .skip_while(|l| !l.starts_with("TOPOS=("))
            .skip(1)
            .take_while(|l| !l.starts_with(')'))
            .filter_map(|l| l.trim().trim_start_matches('"').split('|').next())
            .collect();
        assert!(presets.contains(&"4llc"), "{presets:?}");
        for p in presets {
            assert!(
                !topo_desc(p).is_empty(),
                "vm/run's preset {p} has no description"
            );
        }
    }

    #[test]
    fn where_mosaic_stands_is_generated_for_every_cell_with_its_counts() {
        // hackbench and messaging on 1llc, hackbench on 2llc-smt; times by round per scheduler
        let run = |scenario: &str, topo: &str, times: &[(&str, [f64; 3])]| {
            let mut r = ScenarioRun {
                scenario: scenario.into(),
                topo: topo.into(),
                accel: "tcg".into(),
                rounds: 3,
                scheds: times.iter().map(|(s, _)| s.to_string()).collect(),
                ..Default::default()
            };
            for round in 1..=3u32 {
                for (sched, t) in times {
                    r.samples
                        .push(sample(sched, round, t[round as usize - 1], None));
                }
            }
            r
        };
        let mut hb1 = run(
            "hackbench",
            "1llc",
            &[
                ("eevdf", [10.0; 3]),
                ("mosaic", [4.0; 3]),
                ("p2dq", [5.0; 3]),
                ("rusty", [6.0; 3]),
            ],
        );
        for s in hb1.samples.iter_mut() {
            let p99 = match s.sched.as_str() {
                "mosaic" => 300e3,
                "p2dq" => 100e3,
                "rusty" => 200e3,
                _ => 50e3,
            };
            s.shared_wait_p50_us = Some(1e3);
            s.shared_wait_p99_us = Some(p99);
            s.shared_wait_max_us = Some(1.5e6);
        }
        let mut msg1 = run(
            "messaging",
            "1llc",
            &[
                ("eevdf", [3.0; 3]),
                ("mosaic", [2.0; 3]),
                ("rusty", [1.5; 3]),
            ],
        );
        for s in msg1.samples.iter_mut().filter(|s| s.sched == "mosaic") {
            s.bpf_ns_per_call = Some(150.0);
        }
        let hb2 = run(
            "hackbench",
            "2llc-smt",
            &[
                ("eevdf", [9.0; 3]),
                ("mosaic", [5.0; 3]),
                ("p2dq", [5.1, 4.9, 5.0]),
                ("mosaic-shard", [3.0; 3]),
            ],
        );
        let mut msg2 = run(
            "messaging",
            "2llc-smt",
            &[
                ("eevdf", [3.0; 3]),
                ("mosaic", [2.0; 3]),
                ("rusty", [2.5; 3]),
            ],
        );
        msg2.samples[4].fail = Some("ejected: runnable task stall".into());
        let suite = Suite {
            runs: vec![hb2, msg1, hb1, msg2],
            skipped: vec![],
        };
        let st = standing(&suite).unwrap();
        let text = st.section();
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
        assert_eq!(
            rows,
            [
                "| scenario | `2llc-smt` | `1llc` |",
                "| hackbench | ×1.00, not settled (p2dq) | ×1.25, ahead (p2dq) |",
                "| messaging | **Mosaic FAILED** | ×0.75, behind (rusty) |",
                "| scenario | `2llc-smt` | `1llc` |",
                "| hackbench | – | **300 ms / 100 ms (p2dq)**; max 1.50 s |",
                "| messaging | **Mosaic FAILED** | – |",
                "| scenario | `2llc-smt` | `1llc` |",
                "| hackbench | ×1.00 / ×1.00 | ×1.00 / ×1.00 |",
                "| messaging | **Mosaic FAILED** | ×1.50 / ×1.00 |",
            ]
        );
        assert!(text.contains(
            "Ahead in 1, not settled in 1, behind in 1 of 4 cells; Mosaic failed (an ejection \
             or error) in 1."
        ));
        assert!(text.contains(
            "Mosaic's p99 at most the best peer's in 0 of 1 cells; its longest wait under 2 s \
             in 1 of 1."
        ));
        assert!(text.contains("At most the cheapest peer's per call or per run in 3 of 3 cells."));
        // the README's summary: the same headline table, EEVDF, the same counts
        let readme = st.readme(&["b (sha256 0123), built at abc"]);
        assert!(readme.contains("| hackbench | ×1.00, not settled (p2dq) | ×1.25, ahead (p2dq) |"));
        assert!(readme.contains("ahead in 1, not settled in 1, behind in 1 of 4 cells"));
        assert!(readme.contains("ahead in 3 of 3 cells (×1.50 to ×2.50)"));
        assert!(readme.contains("one scx_mosaic binary, sha256 0123, built at abc."));
        assert!(readme.contains("at most the best peer's in 0 of 1 cells"));
        // the README keeps what is outside its markers; without them, an error
        let dir = std::env::temp_dir().join(format!("mosaic-readme-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("README.md");
        std::fs::write(
            &path,
            format!("# title\n\n{README_BEGIN}\nold\n{README_END}\n\ntail\n"),
        )
        .unwrap();
        write_readme(&suite, &path).unwrap();
        let out = std::fs::read_to_string(&path).unwrap();
        assert!(out.starts_with(&format!("# title\n\n{README_BEGIN}\n<!-- generated")));
        assert!(out.ends_with(&format!("{README_END}\n\ntail\n")));
        assert!(!out.contains("old") && out.contains("ahead in 1, not settled in 1"));
        std::fs::write(&path, "# no markers\n").unwrap();
        assert!(write_readme(&suite, &path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        // the variants are not peers, and a run without peers (a smoke run) has no section
        let smoke = run(
            "hackbench",
            "1llc",
            &[("eevdf", [9.0; 3]), ("mosaic", [5.0; 3])],
        );
        let suite = Suite {
            runs: vec![smoke],
            skipped: vec![],
        };
        assert!(standing(&suite).is_none());
        assert!(!render(suite.runs[0].clone(), "x").contains("cell by cell"));
        assert_eq!(fmt_ratio(1.003), "×1.003");
        assert_eq!(fmt_ratio(1.0), "×1.00");
        assert_eq!(fmt_wait(88.0), "88 µs");
        assert_eq!(fmt_wait(2_800.0), "2.8 ms");
    }

    #[test]
    fn wait_line_compares_mosaic_p99_with_the_lowest_peer_and_its_max_with_two_seconds() {
        let cell =
            |sched: &str, p99: Option<f64>, max: Option<f64>| wait_cell(sched, p99, max, None);
        let sc = scenario("hackbench").unwrap();
        let mut cs = vec![
            cell("eevdf", Some(64.0), Some(9e6)),
            cell("mosaic", Some(1024.0), Some(1.5e6)),
            cell("mosaic-seed-srq", Some(16.0), Some(1e3)),
            cell("p2dq", Some(2048.0), Some(1e6)),
            cell("rusty", Some(1024.0), Some(1e6)),
            cell("lavd", None, None),
        ];
        assert_eq!(
            wait_line(sc, &cs).unwrap(),
            "- hackbench: Mosaic p99 1024 µs, lowest peer p99 rusty 1024 µs → at most the \
             best peer's; Mosaic max 1.50 s → under 2 s"
        );
        cs[4].shared_p99 = Some(512.0);
        cs[1].shared_max = Some(2e6);
        assert_eq!(
            wait_line(sc, &cs).unwrap(),
            "- hackbench: Mosaic p99 1024 µs, lowest peer p99 rusty 512 µs → **above the best \
             peer's**; Mosaic max 2.00 s → **2 s or more**"
        );
        cs[1].fail = Some("ejected".into());
        assert_eq!(wait_line(sc, &cs), None);
    }

    #[test]
    fn shared_wait_columns_take_medians_and_the_largest_max_and_dash_what_is_missing() {
        let mut run = ScenarioRun {
            scenario: "hackbench".into(),
            topo: "1llc".into(),
            kernel: "7.3.4".into(),
            accel: "tcg".into(),
            rounds: 3,
            scheds: vec!["eevdf".into(), "mosaic".into(), "rusty".into()],
            ..Default::default()
        };
        let shared = |s: &mut Sample, p50: f64, p99: f64, max: f64| {
            s.shared_wait_p50_us = Some(p50);
            s.shared_wait_p99_us = Some(p99);
            s.shared_wait_max_us = Some(max);
            s.shared_wait_count = Some(1000.0);
        };
        for (r, (p50, p99, max)) in [
            (4.0, 512.0, 900.0),
            (8.0, 1024.0, 3000.0),
            (2.0, 256.0, 1200.0),
        ]
        .into_iter()
        .enumerate()
        {
            let r = r as u32 + 1;
            let mut e = sample("eevdf", r, 8.0 + r as f64, None);
            shared(&mut e, p50, p99, max);
            run.samples.push(e);
            // Mosaic's tracer failed to load in round 3: no shared figures that round
            let mut m = sample("mosaic", r, 4.0 + r as f64, None);
            if r < 3 {
                shared(
                    &mut m,
                    r as f64 * 2.0,
                    256.0 * r as f64,
                    750.0 - 50.0 * r as f64,
                );
            }
            run.samples.push(m);
            // rusty's results are from before the tracer: nothing shared at all
            run.samples.push(sample("rusty", r, 5.0, None));
        }
        let cs = cells(&run);
        assert_eq!(
            (cs[0].shared_p50, cs[0].shared_p99, cs[0].shared_max),
            (Some(4.0), Some(512.0), Some(3000.0))
        );
        assert_eq!(
            (cs[1].shared_p50, cs[1].shared_p99, cs[1].shared_max),
            (Some(3.0), Some(384.0), Some(700.0))
        );
        assert_eq!(
            (cs[2].shared_p50, cs[2].shared_p99, cs[2].shared_max),
            (None, None, None)
        );
        let sc = scenario("hackbench").unwrap();
        let lines = cell_summaries(sc, &run);
        assert!(
            lines[0].ends_with("3 of 3 runs), wait p99 512 µs, max 3000 µs"),
            "{lines:?}"
        );
        assert!(!lines[2].contains("wait p99"), "{lines:?}");
        let text = render(run, "make bench");
        for row in [
            "| eevdf | 10.000 | 9.000–11.000 | 3 | 1.00 | – | – | 4 | 512 | – | 3000 | – |\n",
            "| mosaic | 6.000 | 5.000–7.000 | 3 | 0.60 | 100 | 4 | 3 | 384 | 256 | 700 | 1002 |\n",
            "| rusty | 5.000 | 5.000–5.000 | 3 | 0.50 | 100 | 4 | – | – | – | – | – |\n",
        ] {
            assert!(text.contains(row), "{row}\n{text}");
        }
        // each row of the scenario table has as many cells as its header
        let mut table = text
            .lines()
            .skip_while(|l| !l.starts_with("| scheduler | time s"))
            .take_while(|l| !l.is_empty());
        let ncols = table.next().unwrap().matches('|').count();
        assert_eq!(ncols, 13);
        for l in table.skip(1) {
            assert_eq!(l.matches('|').count(), ncols, "{l}");
        }
        assert!(
            text.contains("The tracer adds the same small work"),
            "{text}"
        );
    }

    #[test]
    fn results_from_before_the_shared_measure_still_load() {
        let old = r#"{"sched":"eevdf","round":1,"metrics":{"time":1.5},"wall_s":1.6,
            "bpf_ns_per_call":null,"bpf_calls":null,"ops":null,"exit":null,"fail":null}"#;
        let s: Sample = serde_json::from_str(old).unwrap();
        assert_eq!(s.metrics["time"], 1.5);
        assert_eq!(
            (
                s.shared_wait_p99_us,
                s.shared_wait_max_us,
                s.shared_wait_count
            ),
            (None, None, None)
        );
        assert_eq!(s.shared_wait_max_task, None);
    }
}
