//! Running one scenario on one topology: build the guest command, boot the VM (vm/run) or run
//! on this host (--host), stream and parse the guest's output into a `ScenarioRun`.

use crate::model::{Sample, ScenarioRun, SchedInfo};
use crate::progress::Progress;
use crate::suite::{Kind, Scenario, Sched, Size};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Where and how the runs happen.
pub struct Env {
    pub repo: PathBuf,
    /// Run on this host (a real sched_ext machine) instead of the VM.
    pub host: bool,
    /// `--add HOST:GUEST` pairs for vm/run (the same for every boot: one initramfs).
    pub adds: Vec<(PathBuf, String)>,
    /// Directories put in front of PATH in --host mode.
    pub host_path: Vec<PathBuf>,
    pub log_dir: PathBuf,
    /// Which scx_mosaic is measured (recorded in every run).
    pub mosaic_build: String,
    /// How the guest runs: `kvm` or `tcg` (vm/run's choice), `host` with --host.
    pub accel: String,
    /// Version of each scheduler by label (all but the kernel's default).
    pub versions: BTreeMap<String, String>,
    /// The kernel's watchdog timeout for the sched_ext schedulers (SCX_TIMEOUT_MS), if not
    /// the kernel's default.
    pub watchdog_ms: Option<u32>,
}

/// Quote `s` for a POSIX shell.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The guest's shell command for `args` (run.sh and its arguments), with the watchdog timeout
/// `watchdog_ms` (SCX_TIMEOUT_MS, which every scheduler run by run.sh inherits) if given.
fn guest_command(args: &[String], watchdog_ms: Option<u32>) -> String {
    let watchdog = watchdog_ms
        .map(|ms| format!("SCX_TIMEOUT_MS={ms} "))
        .unwrap_or_default();
    format!(
        "{watchdog}BENCH_DIR=/mosaic/guest/bench {}",
        args.iter()
            .map(|a| sh_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    )
}

/// Rough seconds to load and unload a scheduler under TCG (for the VM timeout).
fn load_secs(s: &Sched) -> f64 {
    match s.kind {
        Kind::Kernel => 0.0,
        Kind::Mosaic(_) | Kind::MosaicBase => 4.0,
        Kind::Peer("scx_lavd") => 25.0,
        Kind::Peer(_) => 8.0,
    }
}

/// Nominal seconds of a VM boot, for the progress estimate (whose measured pace corrects it).
const BOOT_SECS: f64 = 15.0;

/// Nominal seconds of one run of `sc` under `s`: the workload, a second around it, the load.
fn run_secs(sc: &Scenario, s: &Sched, size: Size) -> f64 {
    sc.secs * if size == Size::Smoke { 0.5 } else { 1.0 } + 1.0 + load_secs(s)
}

/// Nominal seconds of `sc` under `scheds` for `rounds` rounds, with a boot unless on the host.
pub fn nominal_secs(sc: &Scenario, scheds: &[&Sched], rounds: u32, size: Size, host: bool) -> f64 {
    let per_round: f64 = scheds.iter().map(|s| run_secs(sc, s, size)).sum();
    per_round * rounds as f64 + if host { 0.0 } else { BOOT_SECS }
}

/// The current UTC time, e.g. 2026-11-22 14:05 UTC.
pub fn now_utc() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The accelerator a VM run used: what vm/run wrote to its --accel-file
/// (@written; it falls back from KVM to TCG when KVM fails to boot the
/// guest), else @recorded (vm/run --print-accel before the run; the run on the
/// host, or a VM that never booted).
fn accel_used(recorded: &str, written: Option<&str>) -> String {
    match written.map(str::trim) {
        Some(a) if !a.is_empty() => a.into(),
        _ => recorded.into(),
    }
}

/// One boot's worth of measuring: a scenario on a topology under schedulers, interleaved rounds.
#[derive(Clone, Copy)]
pub struct Job<'a> {
    pub sc: &'a Scenario,
    pub topo: &'a str,
    pub scheds: &'a [&'a Sched],
    pub rounds: u32,
    pub size: Size,
}

/// The record of `job` before it runs: what is measured, how and by which builds (the
/// samples, the kernel and the duration come from the boot).
pub fn new_run(env: &Env, job: Job) -> ScenarioRun {
    let Job { sc, scheds, .. } = job;
    ScenarioRun {
        scenario: sc.name.into(),
        topo: if env.host {
            "host".into()
        } else {
            job.topo.into()
        },
        size: format!("{:?}", job.size).to_lowercase(),
        command: sc.command(job.size).into(),
        date: now_utc(),
        host: env.host,
        rounds: job.rounds,
        mosaic_build: env.mosaic_build.clone(),
        accel: env.accel.clone(),
        watchdog_ms: env.watchdog_ms,
        scheds: scheds.iter().map(|s| s.label.to_string()).collect(),
        sched_info: scheds
            .iter()
            .map(|s| SchedInfo {
                label: s.label.into(),
                command: s.command(),
                version: env.versions.get(s.label).cloned().unwrap_or_default(),
            })
            .collect(),
        boots: 1,
        wait_buckets: crate::waits::BUCKETS_PER_OCTAVE,
        ..Default::default()
    }
}

/// Run `job` (one VM boot, or one session on this host); `progress` counts each run as it
/// reports, and each run's line says where the whole invocation is.
pub fn run_scenario(env: &Env, job: Job, progress: &mut Progress) -> Result<ScenarioRun> {
    let Job {
        sc,
        topo,
        scheds,
        rounds,
        size,
    } = job;
    let workload = sc.command(size);
    let mut args = vec![
        "sh".to_string(),
        String::new(),
        rounds.to_string(),
        workload.to_string(),
    ];
    args.extend(
        scheds
            .iter()
            .map(|s| format!("{}={}", s.label, s.command())),
    );
    let mut run = new_run(env, job);
    let per_round: f64 = scheds.iter().map(|s| run_secs(sc, s, size)).sum();
    let timeout = (60.0 + 3.0 * per_round * rounds as f64) as u64;
    let accel_path = env.log_dir.join(format!("{}-{}.accel", sc.name, run.topo));
    let mut cmd = if env.host {
        let dir = env.repo.join("tests/guest/bench");
        args[1] = dir.join("run.sh").display().to_string();
        let mut path = std::env::join_paths(&env.host_path)?
            .into_string()
            .unwrap_or_default();
        path.push(':');
        path.push_str(&std::env::var("PATH").unwrap_or_default());
        let mut c = Command::new("timeout");
        c.arg(timeout.to_string())
            .args(&args)
            .env("PATH", path)
            .env("BENCH_DIR", dir);
        if let Some(ms) = env.watchdog_ms {
            c.env("SCX_TIMEOUT_MS", ms.to_string());
        }
        c
    } else {
        args[1] = "/mosaic/guest/bench/run.sh".into();
        let guest = guest_command(&args, env.watchdog_ms);
        let mut c = Command::new(env.repo.join("vm/run"));
        c.args(["--topo", topo, "--timeout", &timeout.to_string()]);
        c.arg("--accel-file").arg(&accel_path);
        for (h, g) in &env.adds {
            c.arg("--add").arg(format!("{}:{g}", h.display()));
        }
        c.arg("--").arg(guest);
        c
    };
    let log_path = env.log_dir.join(format!("{}-{}.log", sc.name, run.topo));
    let mut log =
        File::create(&log_path).with_context(|| format!("create {}", log_path.display()))?;
    let nth = progress.next_run();
    eprintln!(
        "== [{nth}] {} on {} ({} schedulers x {} rounds; limit {} s; log {}); {}",
        sc.name,
        run.topo,
        scheds.len(),
        rounds,
        timeout,
        log_path.display(),
        progress.status()
    );
    let t0 = Instant::now();
    let mut child = cmd
        .current_dir(&env.repo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("start the VM harness")?;
    let stderr = child.stderr.take().unwrap();
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            s.push_str(&l);
            s.push('\n');
        }
        s
    });
    let mut cur: Option<(Sample, String)> = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = String::from_utf8_lossy(line.unwrap_or_default().as_bytes()).to_string();
        writeln!(log, "{line}")?;
        if let Some(info) = marker(&line, "@@BENCH-INFO ") {
            for (k, v) in info.split_whitespace().filter_map(|w| w.split_once('=')) {
                match k {
                    "kernel" => run.kernel = v.into(),
                    "nproc" => run.nproc = v.parse().unwrap_or(0),
                    _ => {}
                }
            }
        } else if let Some(head) = marker(&line, "@@RUN ") {
            let mut w = head.split_whitespace();
            let sample = Sample {
                sched: w.next().unwrap_or("?").into(),
                round: w.next().and_then(|r| r.parse().ok()).unwrap_or(0),
                ..Default::default()
            };
            cur = Some((sample, String::new()));
        } else if let Some(meta) = marker(&line, "@@META ") {
            if let Some((s, _)) = cur.as_mut() {
                apply_meta(s, meta);
            }
        } else if line == "@@ENDRUN@@" {
            if let Some((mut s, out)) = cur.take() {
                match (sc.parse)(&out) {
                    Some(m) => s.metrics = m,
                    None if s.fail.is_none() => {
                        s.fail = Some("no result in the workload's output".into());
                    }
                    None => {}
                }
                if run.samples.is_empty() && !env.host {
                    progress.advance(BOOT_SECS);
                }
                if let Some(sched) = scheds.iter().find(|x| x.label == s.sched) {
                    progress.advance(run_secs(sc, sched, size));
                }
                let at = format!(
                    "[{nth}] {} {} round {}/{rounds}",
                    sc.name, run.topo, s.round
                );
                report_run(&at, sc, &s, &out, &progress.status());
                run.samples.push(s);
            }
        } else if let Some((_, out)) = cur.as_mut() {
            out.push_str(&line);
            out.push('\n');
        }
    }
    let status = child.wait()?;
    progress.finish_run(nominal_secs(sc, scheds, rounds, size, env.host));
    // The kernel's default is the guest kernel: its version is the release the guest reported.
    for (i, s) in run.sched_info.iter_mut().zip(scheds) {
        if s.kind == Kind::Kernel {
            i.version = run.kernel.clone();
        }
    }
    let err = err_thread.join().unwrap_or_default();
    write!(log, "{err}")?;
    run.duration_s = t0.elapsed().as_secs_f64();
    let written = (!env.host)
        .then(|| std::fs::read_to_string(&accel_path).ok())
        .flatten();
    run.accel = accel_used(&run.accel, written.as_deref());
    if !status.success() {
        let last = err
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_string();
        let why = match status.code() {
            Some(122) => "VM stopped without reporting",
            Some(124) => "timed out",
            Some(125) => "guest did not boot",
            Some(126) => "guest kernel Oops/panic",
            Some(143) | None => "killed from outside (SIGTERM/signal)",
            _ => "failed",
        };
        run.error = Some(format!(
            "{} {why} ({status}): {last}",
            if env.host { "run.sh" } else { "vm/run" }
        ));
        eprintln!(
            "ERROR: {} on {}: {}",
            sc.name,
            run.topo,
            run.error.as_ref().unwrap()
        );
    }
    let expected = rounds as usize * scheds.len();
    if run.error.is_none() && run.samples.len() != expected {
        run.error = Some(format!("{} of {expected} runs reported", run.samples.len()));
    }
    Ok(run)
}

/// The text between `prefix` and a closing "@@" of a marker line.
fn marker<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix).and_then(|r| r.strip_suffix("@@"))
}

/// Fill `s` from a "@@META k=v ...@@" line of run.sh.
fn apply_meta(s: &mut Sample, meta: &str) {
    let kv: BTreeMap<&str, String> = meta
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k, v.replace('_', " ")))
        .collect();
    let get = |k: &str| kv.get(k).filter(|v| !v.is_empty()).cloned();
    s.wall_s = get("wall").and_then(|v| v.parse().ok());
    s.ops = get("ops").map(|v| v.replace(' ', "_"));
    s.exit = get("exit");
    s.fail = get("fail");
    s.wait_max_us = get("wait_max_us").and_then(|v| v.parse().ok());
    s.wait_p99_us = get("wait_p99_us").and_then(|v| v.parse().ok());
    s.shared_wait_count = get("shared_wait_count").and_then(|v| v.parse().ok());
    s.shared_wait_p50_us = get("shared_wait_p50_us").and_then(|v| v.parse().ok());
    s.shared_wait_p99_us = get("shared_wait_p99_us").and_then(|v| v.parse().ok());
    s.shared_wait_max_us = get("shared_wait_max_us").and_then(|v| v.parse().ok());
    // a comm's own '_' stays: the task is taken as written (run.sh turns its spaces into '_')
    s.shared_wait_max_task = meta
        .split_whitespace()
        .find_map(|w| w.strip_prefix("shared_wait_max_task="))
        .filter(|v| !v.is_empty())
        .map(String::from);
    let snap = |k: &str| -> Option<(f64, f64)> {
        let v: Vec<f64> = get(k)?.split(',').filter_map(|x| x.parse().ok()).collect();
        (v.len() == 3 && v[2] > 0.0).then(|| (v[0], v[1]))
    };
    if let (Some((ns0, c0)), Some((ns1, c1))) = (snap("bpf0"), snap("bpf1")) {
        if c1 > c0 {
            s.bpf_ns_per_call = Some((ns1 - ns0) / (c1 - c0));
            s.bpf_calls = Some(c1 - c0);
            s.bpf_ms = Some((ns1 - ns0) / 1e6);
        }
    }
    if s.fail.is_none() && s.ops.is_some() && s.bpf_ns_per_call.is_none() {
        s.fail = Some("no BPF statistics (struct_ops programs not found)".into());
    }
}

/// One line per run on stderr (@at: which scenario run and round, @status: the time spent
/// and left); failures loudly, with the workload's output.
fn report_run(at: &str, sc: &Scenario, s: &Sample, out: &str, status: &str) {
    let (m, unit, _) = sc.headline();
    let v = s
        .metrics
        .get(m)
        .map(|v| format!("{v:.3} {unit}"))
        .unwrap_or_else(|| "-".into());
    let bpf = s
        .bpf_ns_per_call
        .map(|b| format!(", BPF {b:.0} ns/call"))
        .unwrap_or_default();
    let wait = match (s.shared_wait_p99_us, s.shared_wait_max_us) {
        (Some(p), Some(m)) => format!(", wait p99 {p:.0} max {m:.0} µs"),
        _ => String::new(),
    };
    match &s.fail {
        None => eprintln!("   {at}: {:<24} {v}{bpf}{wait}; {status}", s.sched),
        Some(f) => {
            eprintln!("!! FAILED {at}: {}: {f}; {status}", s.sched);
            for l in out
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                eprintln!("!!   {l}");
            }
        }
    }
}

/// Check that --host can work here: root and a kernel with sched_ext.
pub fn check_host() -> Result<()> {
    if !Path::new("/sys/kernel/sched_ext").exists() {
        bail!("--host: this kernel has no sched_ext (/sys/kernel/sched_ext missing)");
    }
    if unsafe { libc::geteuid() } != 0 {
        bail!("--host: loading schedulers needs root");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_fell_back_from_kvm_is_recorded_as_tcg() {
        // vm/run fell back from KVM to TCG: it says what the guest ran under
        assert_eq!(accel_used("kvm", Some("tcg\n")), "tcg");
        assert_eq!(accel_used("kvm", Some("kvm\n")), "kvm");
        // no file, or empty (the VM never booted): what was read before
        assert_eq!(accel_used("kvm", None), "kvm");
        assert_eq!(accel_used("tcg", Some("")), "tcg");
    }

    #[test]
    fn a_watchdog_timeout_reaches_the_guests_schedulers() {
        let args = [
            "sh",
            "/mosaic/guest/bench/run.sh",
            "3",
            "hackbench -l 1",
            "p2dq=scx_p2dq",
        ]
        .map(String::from);
        let plain = guest_command(&args, None);
        assert_eq!(
            plain,
            "BENCH_DIR=/mosaic/guest/bench sh /mosaic/guest/bench/run.sh 3 'hackbench -l 1' \
             p2dq=scx_p2dq"
        );
        assert_eq!(
            guest_command(&args, Some(2000)),
            format!("SCX_TIMEOUT_MS=2000 {plain}")
        );
    }

    #[test]
    fn meta_lines_become_samples() {
        let mut s = Sample::default();
        apply_meta(
            &mut s,
            "wall=1.24 wrc=0 sched_rc=0 ops=mosaic_0.1.0_x86 bpf0=100,10,9 bpf1=1100,30,9 \
             exit=unregistered_from_user_space fail= wait_max_us=2300 wait_p99_us=512",
        );
        assert_eq!((s.wait_max_us, s.wait_p99_us), (Some(2300.0), Some(512.0)));
        assert_eq!(s.bpf_ns_per_call, Some(50.0));
        assert_eq!(s.bpf_ms, Some(0.001));
        assert_eq!(s.exit.as_deref(), Some("unregistered from user space"));
        assert_eq!(s.ops.as_deref(), Some("mosaic_0.1.0_x86"));
        assert!(s.fail.is_none());
        let mut e = Sample::default();
        apply_meta(&mut e, "wall= wrc= sched_rc=1 ops=x bpf0= bpf1= exit=runtime_error fail=ejected:_runtime_error");
        assert_eq!(e.fail.as_deref(), Some("ejected: runtime error"));
        assert_eq!(e.wait_max_us, None);
        assert_eq!(sh_quote("a b'c"), r"'a b'\''c'");
        assert_eq!(sh_quote("eevdf="), "eevdf=");
    }

    #[test]
    fn shared_wait_figures_in_meta_lines() {
        let mut s = Sample::default();
        apply_meta(
            &mut s,
            "wall=2.00 wrc=0 sched_rc= ops= bpf0= bpf1= wait_max_us= wait_p99_us= \
             shared_wait_count=18234 shared_wait_p50_us=4 shared_wait_p99_us=1024 \
             shared_wait_max_us=2301 shared_wait_max_task=rcu_preempt[15] exit= fail=",
        );
        assert_eq!(s.shared_wait_count, Some(18234.0));
        assert_eq!(s.shared_wait_p50_us, Some(4.0));
        assert_eq!(s.shared_wait_p99_us, Some(1024.0));
        assert_eq!(s.shared_wait_max_us, Some(2301.0));
        // the comm keeps its underscore (other values turn '_' into ' ')
        assert_eq!(s.shared_wait_max_task.as_deref(), Some("rcu_preempt[15]"));
        // the kernel's default: no own counters, the shared ones still there
        assert_eq!((s.wait_max_us, s.wait_p99_us), (None, None));
        assert!(s.fail.is_none());

        // the tracer could not load (empty fields), or a run.sh from before it (none at all)
        for meta in [
            "wall=2.00 wrc=0 shared_wait_count= shared_wait_p50_us= shared_wait_p99_us= \
             shared_wait_max_us= shared_wait_max_task= fail=",
            "wall=2.00 wrc=0 wait_max_us=77 wait_p99_us=64 fail=",
            "wall=2.00 shared_wait_p99_us=abc shared_wait_max_us=-",
        ] {
            let mut e = Sample::default();
            apply_meta(&mut e, meta);
            assert_eq!(
                (
                    e.shared_wait_count,
                    e.shared_wait_p50_us,
                    e.shared_wait_p99_us,
                    e.shared_wait_max_us
                ),
                (None, None, None, None),
                "{meta}"
            );
            assert_eq!(e.shared_wait_max_task, None, "{meta}");
            assert_eq!(e.wall_s, Some(2.0));
        }
    }
}
