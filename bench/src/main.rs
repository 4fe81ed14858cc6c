//! mosaic-bench: the seeds' experiments (hackbench, perf bench sched, request/response, grouped
//! sysbench, redis, schbench, stress-ng) under the kernel's default scheduler, scx_mosaic (and
//! each of its mechanisms switched off) and sched_ext peers, interleaved in one VM boot per
//! scenario × topology; medians, ratios to the kernel's default, BPF cost per call; JSON,
//! Markdown and SVG reports. Also the two workloads written for it, `rr` and `schbench`, and
//! `waits`, the runnable-wait tracer every scheduler is measured with.

mod model;
mod progress;
mod report;
mod rr;
mod runner;
mod schbench;
mod suite;
mod waits;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use model::{Skipped, Suite};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use suite::{Kind, Sched, Size, SCENARIOS, SCHEDS};

#[derive(Parser)]
#[command(
    version,
    about = "Mosaic's benchmark suite: interleaved, side by side with EEVDF and sched_ext peers"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run scenarios (default: the default suite) and write the reports
    Run(RunArgs),
    /// Rewrite the Markdown report and plots from a results JSON
    Report {
        /// Suite JSON (e.g. docs/bench/results.json)
        #[arg(long)]
        results: PathBuf,
        /// Markdown to write
        #[arg(long, default_value = "docs/benchmarks.md")]
        doc: PathBuf,
        /// The command named as the report's producer
        #[arg(long, default_value = "make bench")]
        generator: String,
        /// Also rewrite the summary between this README's bench-summary markers
        #[arg(long)]
        readme: Option<PathBuf>,
    },
    /// List scenarios and schedulers
    List,
    /// Build the peer schedulers into the cache (cargo install), if missing
    Peers,
    /// Request/response workload (netperf TCP_RR/UDP_RR workalike)
    Rr {
        #[arg(long, default_value = "tcp")]
        proto: String,
        /// Client/server pairs, one transaction in flight each
        #[arg(long, default_value_t = 4)]
        pairs: usize,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// Request and response size (bytes)
        #[arg(long, default_value_t = 1)]
        size: usize,
    },
    /// schbench workalike: wakeup and request latency percentiles, requests/s
    Schbench {
        #[arg(long, default_value_t = 2)]
        messengers: usize,
        /// Worker threads per message thread
        #[arg(long, default_value_t = 4)]
        workers: usize,
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// CPU work per request, microseconds (calibrated at start)
        #[arg(long, default_value_t = 200)]
        work_us: u64,
    },
    /// Trace runnable waits (BPF, scheduler tracepoints) until SIGINT/SIGTERM or --secs;
    /// prints `@@WAITS count=N p50_us=.. p99_us=.. max_us=.. max_task=comm[pid]@@`
    Waits {
        /// Stop after this many seconds (default: at SIGINT or SIGTERM)
        #[arg(long)]
        secs: Option<f64>,
        /// Leave libbpf's own messages on stderr
        #[arg(long)]
        verbose: bool,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario(s) to run (repeatable or comma-separated; default: the default suite, or the
    /// matrix's with --full)
    #[arg(long, value_delimiter = ',')]
    scenario: Vec<String>,
    /// VM topology preset(s) (default 1llc; with --full 1llc,2llc-smt,4llc,2node)
    #[arg(long, value_delimiter = ',')]
    topo: Vec<String>,
    /// Schedulers (labels; default: the default set)
    #[arg(long, value_delimiter = ',')]
    sched: Vec<String>,
    /// Interleaved rounds per scenario (at least 5 for reported numbers)
    #[arg(long)]
    rounds: Option<u32>,
    /// The matrix: the matrix's scenarios on four topologies (1llc, 2llc-smt, 4llc, 2node)
    #[arg(long)]
    full: bool,
    /// Larger workload sizes (for real machines: hours under TCG)
    #[arg(long)]
    large: bool,
    /// VM boots per scenario × topology, their rounds pooled in the report. With --doc, boots
    /// of the same scx_mosaic binary and schedulers already in the report count: a run cut
    /// short resumes where it stopped, and `--boots 2` adds a second boot to each cell.
    #[arg(long, default_value_t = 1)]
    boots: u32,
    /// Pipeline check: tiny sizes, 1 round, EEVDF + mosaic, one scenario (numbers meaningless)
    #[arg(long)]
    smoke: bool,
    /// Run on this host (a sched_ext machine, as root) instead of the VM
    #[arg(long)]
    host: bool,
    /// Directory for per-run JSON and logs (default target/bench/<time>)
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the Markdown report here (plots and merged results.json next to it, in bench/)
    #[arg(long)]
    doc: Option<PathBuf>,
    /// With --doc: start the report afresh instead of merging into its results.json
    #[arg(long)]
    fresh: bool,
    /// With --doc: also rewrite the summary between this README's bench-summary markers
    #[arg(long)]
    readme: Option<PathBuf>,
    /// Survival, not speed: the kernel's watchdog timeout for every sched_ext scheduler, ms
    /// (SCX_TIMEOUT_MS in their environment; default: the kernel's 30 s). An ejection fails
    /// its cell. Not with --doc: the report's numbers are taken with the default watchdog.
    #[arg(long)]
    watchdog_ms: Option<u32>,
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("mosaic-bench: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Run(a) => run(a),
        Cmd::Report {
            results,
            doc,
            generator,
            readme,
        } => {
            let suite: Suite = serde_json::from_str(&std::fs::read_to_string(&results)?)?;
            let svg = doc.parent().unwrap_or(Path::new(".")).join("bench");
            report::write_report(&suite, &doc, &svg, &generator)?;
            match readme {
                Some(r) => report::write_readme(&suite, &r),
                None => Ok(()),
            }
        }
        Cmd::List => {
            println!("scenarios (* = default suite):");
            for s in SCENARIOS {
                println!(
                    "  {}{:<16} {}",
                    if s.default { "*" } else { " " },
                    s.name,
                    s.cmd[1]
                );
            }
            println!("schedulers (* = default suite):");
            for s in SCHEDS {
                println!(
                    "  {}{:<24} {}",
                    if s.default { "*" } else { " " },
                    s.label,
                    s.command()
                );
            }
            Ok(())
        }
        Cmd::Peers => {
            let skipped = ensure_peers(&SCHEDS.iter().collect::<Vec<_>>())?;
            for s in &skipped {
                eprintln!("skipped {}: {}", s.what, s.why);
            }
            Ok(())
        }
        Cmd::Rr {
            proto,
            pairs,
            secs,
            size,
        } => rr::run(&proto, pairs, secs, size),
        Cmd::Schbench {
            messengers,
            workers,
            secs,
            work_us,
        } => schbench::run(messengers, workers, secs, work_us),
        Cmd::Waits { secs, verbose } => waits::run(secs, verbose),
    }
}

/// The repository root (where vm/run lives): the current directory or an ancestor.
fn repo_root() -> Result<PathBuf> {
    let mut d = std::env::current_dir()?;
    loop {
        if d.join("vm/run").exists() && d.join("tests/guest/bench/run.sh").exists() {
            return Ok(d);
        }
        if !d.pop() {
            bail!("run mosaic-bench inside the Mosaic repository (vm/run not found)");
        }
    }
}

fn cache_dir() -> PathBuf {
    PathBuf::from(std::env::var("MOSAIC_CACHE").unwrap_or_else(|_| "/var/cache/mosaic".into()))
}

fn peer_root() -> PathBuf {
    cache_dir().join("peers")
}

/// Build the peers among `scheds` that are missing from the cache, or there at another version
/// than suite::PEER_VERSIONS pins, with cargo install; return those that could not be built,
/// with the reason.
fn ensure_peers(scheds: &[&Sched]) -> Result<Vec<Skipped>> {
    let root = peer_root();
    let mut skipped = Vec::new();
    let toml = std::fs::read_to_string(root.join(".crates.toml")).unwrap_or_default();
    for s in scheds {
        let Some(krate) = s.peer_crate() else {
            continue;
        };
        let pin = suite::peer_pin(krate).with_context(|| format!("{krate}: no pinned version"))?;
        if root.join("bin").join(krate).exists()
            && installed_version(&toml, krate).as_deref() == Some(pin)
        {
            continue;
        }
        std::fs::create_dir_all(&root)?;
        let log = root.join(format!("install-{krate}.log"));
        eprintln!(
            "building peer {krate} (cargo install; log {})",
            log.display()
        );
        let f = std::fs::File::create(&log)?;
        let ok = Command::new("cargo")
            .args(["install", "--locked", "--force", "--root"])
            .arg(&root)
            .arg(format!("{krate}@{pin}"))
            .env(
                "BPF_CLANG",
                std::env::var("BPF_CLANG").unwrap_or_else(|_| "clang-19".into()),
            )
            .env("CARGO_TARGET_DIR", root.join("build"))
            .stdout(f.try_clone()?)
            .stderr(f)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok || !root.join("bin").join(krate).exists() {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let last = tail
                .lines()
                .rfind(|l| l.contains("error"))
                .unwrap_or("see the log")
                .trim()
                .to_string();
            skipped.push(Skipped {
                what: s.label.into(),
                why: format!(
                    "`cargo install {krate}` failed ({last}; log {})",
                    log.display()
                ),
            });
        }
    }
    Ok(skipped)
}

/// The version of a peer's crate as `cargo install` recorded it in the cache's `.crates.toml`
/// (`"scx_cosmos 1.1.7 (registry+...)" = [...]`), else the first version-like word of the
/// binary's `--version` ("scx_p2dq: 1.1.4 x86_64-..."), else "?".
fn peer_version(krate: &str) -> String {
    let root = peer_root();
    let toml = std::fs::read_to_string(root.join(".crates.toml")).unwrap_or_default();
    installed_version(&toml, krate)
        .or_else(|| {
            version_word(&output(
                Command::new(root.join("bin").join(krate)).arg("--version"),
            ))
        })
        .unwrap_or_else(|| "?".into())
}

/// The version of `krate` in cargo install's `.crates.toml`.
fn installed_version(toml: &str, krate: &str) -> Option<String> {
    toml.lines().find_map(|l| {
        let mut w = l.strip_prefix('"')?.split_whitespace();
        (w.next()? == krate).then(|| w.next().map(String::from))?
    })
}

/// The first word of a `--version` line that starts with a digit: "scx_mosaic 0.1.0-gabc
/// x86_64-unknown-linux-gnu" → "0.1.0-gabc".
fn version_word(line: &str) -> Option<String> {
    line.split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(String::from)
}

/// Each scheduler's version by label, known on the host before the boot (the kernel's
/// default gets the guest kernel's release from the run itself).
fn sched_versions(
    scheds: &[&Sched],
    mosaic_bin: &Path,
    base_bin: Option<&Path>,
) -> BTreeMap<String, String> {
    let version = |bin: &Path| {
        version_word(&output(Command::new(bin).arg("--version"))).unwrap_or_else(|| "?".into())
    };
    let mosaic = version(mosaic_bin);
    scheds
        .iter()
        .filter_map(|s| {
            let v = match s.kind {
                Kind::Kernel => return None,
                Kind::Mosaic(_) => mosaic.clone(),
                Kind::MosaicBase => base_bin
                    .map(|b| format!("{} (sha256 {})", version(b), sha12(b)))
                    .unwrap_or_default(),
                Kind::Peer(krate) => peer_version(krate),
            };
            Some((s.label.to_string(), v))
        })
        .collect()
}

/// Output of a command, trimmed ("" if it fails).
fn output(cmd: &mut Command) -> String {
    cmd.output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The first 12 hex digits of @bin's sha256 ("?" if it cannot be read).
fn sha12(bin: &Path) -> String {
    let sha = output(Command::new("sha256sum").arg(bin));
    sha.get(..12).unwrap_or("?").to_string()
}

/// "path (sha256 0123456789ab), repository at <git describe>" for the report. MOSAIC_BUILD,
/// if set, replaces the repository part (e.g. "built from commit X").
fn build_id(repo: &Path, bin: &Path) -> String {
    let git = std::env::var("MOSAIC_BUILD").unwrap_or_else(|_| {
        let d = output(
            Command::new("git")
                .args(["describe", "--always", "--dirty"])
                .current_dir(repo),
        );
        format!("built in the working tree at git {d}")
    });
    let shown = bin.strip_prefix(repo).unwrap_or(bin).display().to_string();
    format!("{shown} (sha256 {}), {git}", sha12(bin))
}

fn run(a: RunArgs) -> Result<()> {
    let repo = repo_root()?;
    if a.watchdog_ms.is_some() && a.doc.is_some() {
        bail!("--watchdog-ms measures survival: write its runs with --out, not into --doc");
    }
    if a.readme.is_some() && a.doc.is_none() {
        bail!("--readme summarises the report: it needs --doc");
    }
    if a.watchdog_ms == Some(0) {
        bail!("--watchdog-ms takes a timeout in ms above 0");
    }
    let size = if a.smoke {
        Size::Smoke
    } else if a.large {
        Size::Full
    } else {
        Size::Default
    };
    let mut skipped: Vec<Skipped> = Vec::new();
    // Scenarios.
    let scenarios: Vec<&suite::Scenario> = if !a.scenario.is_empty() {
        a.scenario
            .iter()
            .map(|n| {
                suite::scenario(n)
                    .with_context(|| format!("unknown scenario {n} (mosaic-bench list)"))
            })
            .collect::<Result<_>>()?
    } else if a.smoke {
        vec![suite::scenario("hackbench").unwrap()]
    } else {
        SCENARIOS
            .iter()
            .filter(|s| if a.full { s.matrix } else { s.default })
            .collect()
    };
    // Schedulers.
    let mut scheds: Vec<&Sched> = if !a.sched.is_empty() {
        a.sched
            .iter()
            .map(|n| {
                suite::sched(n)
                    .with_context(|| format!("unknown scheduler {n} (mosaic-bench list)"))
            })
            .collect::<Result<_>>()?
    } else if a.smoke {
        vec![
            suite::sched("eevdf").unwrap(),
            suite::sched("mosaic").unwrap(),
        ]
    } else {
        SCHEDS.iter().filter(|s| s.default).collect()
    };
    if a.sched.is_empty() && !a.smoke {
        for s in SCHEDS
            .iter()
            .filter(|s| !s.default && !matches!(s.kind, Kind::MosaicBase))
        {
            skipped.push(Skipped {
                what: s.label.into(),
                why: "an ablation, not in the default set (time budget on 2 TCG cores); `mosaic-bench run --sched` runs it".into(),
            });
        }
    }
    let bad = ensure_peers(&scheds)?;
    scheds.retain(|s| !bad.iter().any(|b| b.what == s.label));
    skipped.extend(bad);
    let topos: Vec<String> = if a.host {
        runner::check_host()?;
        vec!["host".into()]
    } else if !a.topo.is_empty() {
        a.topo.clone()
    } else if a.full {
        vec![
            "1llc".into(),
            "2llc-smt".into(),
            "4llc".into(),
            "2node".into(),
        ]
    } else {
        vec!["1llc".into()]
    };
    let rounds = a.rounds.unwrap_or(if a.smoke { 1 } else { 5 });
    // The harness installs $MOSAIC_BIN (default target/release/scx_mosaic) as scx_mosaic.
    let mosaic_bin = std::env::var_os("MOSAIC_BIN")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { repo.join(p) })
        .unwrap_or_else(|| repo.join("target/release/scx_mosaic"));
    if scheds.iter().any(|s| matches!(s.kind, Kind::Mosaic(_))) && !mosaic_bin.exists() {
        bail!("{} missing: run `make build` first", mosaic_bin.display());
    }
    // The A/B baseline (label mosaic-base): another build, installed as suite::BASE_BIN.
    let base_bin = if scheds.iter().any(|s| matches!(s.kind, Kind::MosaicBase)) {
        let p = std::env::var_os("MOSAIC_BASE_BIN").map(PathBuf::from).context(
            "mosaic-base needs MOSAIC_BASE_BIN=<an scx_mosaic binary> (scripts/bench-binary <commit>)",
        )?;
        if !p.is_file() {
            bail!("MOSAIC_BASE_BIN: {} is not a file", p.display());
        }
        Some(p)
    } else {
        None
    };

    // What goes into the guest (the same for every boot, so the initramfs is built once).
    let me = std::env::current_exe()?;
    let mut adds: Vec<(PathBuf, String)> = vec![(me.clone(), "/usr/bin/mosaic-bench".into())];
    if let Some(b) = &base_bin {
        adds.push((b.clone(), format!("/usr/bin/{}", suite::BASE_BIN)));
    }
    for s in &scheds {
        if let Some(b) = s.peer_crate() {
            adds.push((peer_root().join("bin").join(b), format!("/usr/bin/{b}")));
        }
    }
    let mut scenarios = scenarios;
    if scenarios.iter().any(|s| s.name == "redis-cg") {
        let tools = ["redis-server", "redis-benchmark", "redis-cli"];
        let missing: Vec<_> = tools
            .iter()
            .filter(|t| !Path::new("/usr/bin").join(t).exists())
            .collect();
        if missing.is_empty() {
            adds.extend(
                tools
                    .iter()
                    .map(|t| (Path::new("/usr/bin").join(t), format!("/usr/bin/{t}"))),
            );
        } else {
            skipped.push(Skipped {
                what: "redis-cg".into(),
                why: format!(
                    "{missing:?} not installed (apt-get install redis-server redis-tools)"
                ),
            });
            scenarios.retain(|s| s.name != "redis-cg");
        }
    }
    let stamp = runner::now_utc().replace([' ', ':'], "-");
    let out = a.out.clone().unwrap_or_else(|| {
        repo.join("target/bench")
            .join(stamp.trim_end_matches("-UTC"))
    });
    std::fs::create_dir_all(&out)?;
    let mut host_path = vec![
        mosaic_bin.parent().unwrap_or(Path::new(".")).to_path_buf(),
        peer_root().join("bin"),
    ];
    if let Some(d) = me.parent() {
        host_path.push(d.to_path_buf());
    }
    let mosaic_build = build_id(&repo, &mosaic_bin);
    eprintln!("scx_mosaic: {mosaic_build}");
    let versions = sched_versions(&scheds, &mosaic_bin, base_bin.as_deref());
    let env = runner::Env {
        repo: repo.clone(),
        host: a.host,
        adds,
        host_path,
        log_dir: out.clone(),
        mosaic_build,
        accel: if a.host {
            "host".into()
        } else {
            vm_accel(&repo)?
        },
        versions,
        watchdog_ms: a.watchdog_ms,
    };

    let mut suite = Suite {
        runs: Vec::new(),
        skipped,
    };
    for s in &suite.skipped {
        eprintln!("skipped {}: {}", s.what, s.why);
    }
    if a.boots == 0 {
        bail!("--boots takes at least 1");
    }
    // With --doc, the report's merged results: rewritten after every boot, so that a run cut
    // short keeps what it finished, and read first, so that boots already made by this
    // scx_mosaic and these schedulers count towards --boots.
    let doc = a.doc.as_ref().map(|d| {
        let dir = d.parent().unwrap_or(Path::new(".")).join("bench");
        (d.clone(), dir.join("results.json"), dir)
    });
    let mut merged: Suite = match &doc {
        Some((_, path, _)) if !a.fresh => std::fs::read_to_string(path)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        _ => Suite::default(),
    };
    merged.merge(Suite {
        runs: Vec::new(),
        skipped: suite.skipped.clone(),
    });
    let mut plan = Vec::new();
    for topo in &topos {
        for sc in &scenarios {
            let job = runner::Job {
                sc,
                topo,
                scheds: &scheds,
                rounds,
                size,
            };
            let probe = runner::new_run(&env, job);
            let have = merged.boots_of(&probe);
            if have >= a.boots {
                eprintln!(
                    "== {} on {}: kept ({have} boot(s) of this scx_mosaic and these schedulers in {}; --boots {} adds, --fresh redoes)",
                    sc.name,
                    probe.topo,
                    doc.as_ref().map(|d| d.1.display().to_string()).unwrap_or_default(),
                    have + 1
                );
            }
            plan.extend((have..a.boots).map(|boot| (job, boot)));
        }
    }
    let nominal: Vec<f64> = plan
        .iter()
        .map(|(job, _)| runner::nominal_secs(job.sc, &scheds, rounds, size, a.host))
        .collect();
    let mut progress = progress::Progress::new(&nominal);
    let cmd = if a.full {
        "make bench FULL=1"
    } else {
        "make bench"
    };
    for (job, boot) in plan {
        let sc = job.sc;
        let r = runner::run_scenario(&env, job, &mut progress)?;
        eprintln!(
            "== {} on {} (boot {}): {} in {}",
            sc.name,
            r.topo,
            boot + 1,
            if r.error.is_some() { "FAILED" } else { "done" },
            progress::duration(r.duration_s)
        );
        for line in report::cell_summaries(sc, &r) {
            eprintln!("   {line}");
        }
        // <scenario>-<topo>.json, and -boot<N> after it for a cell's later boots
        let later = if boot > 0 {
            format!("-boot{}", boot + 1)
        } else {
            String::new()
        };
        std::fs::write(
            out.join(format!("{}-{}{later}.json", sc.name, r.topo)),
            serde_json::to_string_pretty(&r)?,
        )?;
        if let Some((md, path, dir)) = &doc {
            merged.merge(Suite {
                runs: vec![r.clone()],
                skipped: Vec::new(),
            });
            std::fs::create_dir_all(dir)?;
            std::fs::write(path, serde_json::to_string_pretty(&merged)?)?;
            report::write_report(&merged, md, dir, cmd)?;
            if let Some(readme) = &a.readme {
                report::write_readme(&merged, readme)?;
            }
        }
        suite.runs.push(r);
    }
    std::fs::write(
        out.join("suite.json"),
        serde_json::to_string_pretty(&suite)?,
    )?;
    report::write_report(
        &suite,
        &out.join("report.md"),
        &out.join("bench"),
        "mosaic-bench run",
    )?;
    eprintln!("results: {}", out.display());
    if let Some((md, _, _)) = &doc {
        eprintln!("report: {}", md.display());
    }
    // Failures, loudly, after the reports are written.
    let mut failed = Vec::new();
    for r in &suite.runs {
        if let Some(e) = &r.error {
            failed.push(format!("{} on {}: {e}", r.scenario, r.topo));
        }
        for c in report::cells(r) {
            if let Some(f) = c.fail {
                failed.push(format!(
                    "{} on {} under {}: {f}",
                    r.scenario, r.topo, c.sched
                ));
            }
        }
    }
    if !failed.is_empty() {
        for f in &failed {
            eprintln!("FAILED: {f}");
        }
        bail!("{} failed cell(s) or run(s)", failed.len());
    }
    Ok(())
}

/// The accelerator vm/run will use for every boot (`kvm` or `tcg`): recorded in each run, and
/// part of what a stored cell must match to be kept. vm/run predicts KVM when QEMU accepts it,
/// yet some nested KVMs fail the guest's kernel, after which vm/run falls back to TCG (and
/// predicts TCG until the host reboots): so a KVM prediction is settled by one boot of
/// `true`, else the first run after a host reboot would not find the cells measured under TCG.
fn vm_accel(repo: &Path) -> Result<String> {
    let vm_run = repo.join("vm/run");
    let out = Command::new(&vm_run)
        .arg("--print-accel")
        .output()
        .context("running vm/run --print-accel")?;
    let accel = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !matches!(accel.as_str(), "kvm" | "tcg") {
        bail!("vm/run --print-accel printed {accel:?}");
    }
    if accel == "tcg" {
        return Ok(accel);
    }
    let file = std::env::temp_dir().join(format!("mosaic-bench-accel-{}", std::process::id()));
    let st = Command::new(&vm_run)
        .args(["--timeout", "600", "--accel-file"])
        .arg(&file)
        .args(["--", "true"])
        .stdout(Stdio::null())
        .status()
        .context("running vm/run -- true")?;
    let used = std::fs::read_to_string(&file).unwrap_or_default();
    let _ = std::fs::remove_file(&file);
    match used.trim() {
        a @ ("kvm" | "tcg") if st.success() => Ok(a.to_string()),
        _ => bail!("vm/run -- true (to settle KVM against TCG) failed: {st}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake vm/run in a fresh repository directory: --print-accel prints @predicted, a boot
    /// writes @used to its --accel-file and exits with @rc.
    fn fake_vm_run(predicted: &str, used: &str, rc: i32) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("vm")).unwrap();
        let script = dir.path().join("vm/run");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n[ \"$1\" = --print-accel ] && {{ echo {predicted}; exit 0; }}\n\
                 while [ $# -gt 0 ]; do [ \"$1\" = --accel-file ] && echo {used} > \"$2\"; shift; done\n\
                 exit {rc}\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn a_kvm_prediction_is_settled_by_a_boot() {
        // KVM accepted, then the guest fell back to TCG: the cells to keep are TCG's
        assert_eq!(
            vm_accel(fake_vm_run("kvm", "tcg", 0).path()).unwrap(),
            "tcg"
        );
        assert_eq!(
            vm_accel(fake_vm_run("kvm", "kvm", 0).path()).unwrap(),
            "kvm"
        );
        // a TCG prediction needs no boot (the fake's boot would say kvm)
        assert_eq!(
            vm_accel(fake_vm_run("tcg", "kvm", 0).path()).unwrap(),
            "tcg"
        );
        // a failed settling boot is an error, not a guess
        assert!(vm_accel(fake_vm_run("kvm", "kvm", 125).path()).is_err());
    }

    #[test]
    fn versions_of_peers_and_mosaic() {
        let toml =
            "[v1]\n\"scx_cosmos 1.1.7 (registry+https://github.com/rust-lang/crates.io-index)\" \
                    = [\"scx_cosmos\"]\n\"scx_p2dq 1.1.4 (registry+x)\" = [\"scx_p2dq\"]\n";
        assert_eq!(
            installed_version(toml, "scx_cosmos").as_deref(),
            Some("1.1.7")
        );
        assert_eq!(
            installed_version(toml, "scx_p2dq").as_deref(),
            Some("1.1.4")
        );
        assert_eq!(installed_version(toml, "scx_flash"), None);
        assert_eq!(
            version_word("scx_p2dq: 1.1.4 x86_64-unknown-linux-gnu").as_deref(),
            Some("1.1.4")
        );
        assert_eq!(
            version_word("scx_mosaic 0.1.0-g0123456789ab x86_64-unknown-linux-gnu").as_deref(),
            Some("0.1.0-g0123456789ab")
        );
        assert_eq!(version_word(""), None);
    }
}
