//! scx_mosaic: command line, load and attach, the run loop with live stats,
//! the exit report, and restart on CPU hotplug.

use anyhow::{bail, Context, Result};
use libbpf_rs::OpenObject;
use scx_mosaic::bpf_skel::{BpfSkel, BpfSkelBuilder};
use scx_mosaic::output::escape;
use scx_mosaic::stats::{self, BpfMetrics, Counters, ExitMetrics, Flag, Metrics};
use scx_mosaic::topology::Topology;
use scx_mosaic::tunables::{CopyToGlobal, LoadPlan, Tunables, AUTO_PER_CPU_MAX_CPUS};
use scx_mosaic::warn::RateLimited;
use scx_mosaic::{
    bpf_intf, bpf_skel, config, cpulist, errln, group, limits, outln, output, stats_server, Opts,
};
use scx_utils::scx_ops_attach;
use serde_json::Value;
use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why the scheduler stopped, as the kernel recorded it (struct scx_exit_info).
#[derive(Debug, Clone)]
struct ExitInfo {
    kind: i32,
    exit_code: i64,
    reason: String,
    msg: String,
}

impl ExitInfo {
    /// Name of the kernel's enum scx_exit_kind value.
    fn kind_name(&self) -> &'static str {
        match self.kind {
            0 => "none",
            1 => "done",
            64 => "unregistered",
            65 => "unregistered by BPF",
            66 => "unregistered by the kernel",
            67 => "sysrq",
            1024 => "error",
            1025 => "BPF error",
            1026 => "watchdog stall",
            _ => "unknown",
        }
    }

    /// Whether the kernel ejected the scheduler (an error, not a request).
    fn is_ejection(&self) -> bool {
        self.kind >= 1024
    }

    /// Whether the kernel asks for a restart (CPU hotplug).
    fn wants_restart(&self) -> bool {
        let restart = *scx_utils::SCX_ECODE_ACT_RESTART as i64;
        restart != 0 && self.exit_code & restart != 0
    }

    fn metrics(&self) -> ExitMetrics {
        ExitMetrics {
            kind: self.kind.into(),
            kind_name: self.kind_name().into(),
            code: self.exit_code,
            reason: self.reason.clone(),
            msg: self.msg.clone(),
        }
    }
}

/// A C string from a fixed-size BPF buffer.
fn c_str(buf: &[i8]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Copies @t into the skeleton's .rodata, each field into its global.
fn write_rodata(ro: &mut bpf_skel::types::rodata, t: &Tunables) {
    macro_rules! copy_each {
        ($($field:ident),*) => {{
            let Tunables { $($field),* } = t;
            $($field.copy_to_global(&mut ro.$field);)*
        }};
    }
    scx_mosaic::with_tunable_fields!(copy_each);
}

/// The skeleton's builder, libbpf's printer left as main set it (no
/// obj_builder.debug(): that replaces the printer, and debug(false) with none).
fn skel_builder() -> BpfSkelBuilder {
    BpfSkelBuilder::default()
}

/// One load of the BPF scheduler, from attach to exit.
struct Scheduler<'a> {
    skel: BpfSkel<'a>,
    link: Option<libbpf_rs::Link>,
    nr_shards: usize,
    /// cpu.max limits the BPF side could not enforce, retried
    missed_limits: limits::MissedLimits,
}

impl<'a> Scheduler<'a> {
    /// Opens the skeleton, writes @plan's tunables, loads, attaches.
    fn init(opts: &Opts, plan: &LoadPlan, object: &'a mut MaybeUninit<OpenObject>) -> Result<Self> {
        let builder = skel_builder();
        let mut open = scx_utils::scx_ops_open!(
            builder,
            object,
            mosaic_ops,
            None::<libbpf_rs::libbpf_sys::bpf_object_open_opts>
        )?;
        if plan.timeout_ms > 0 {
            open.struct_ops.mosaic_ops_mut().timeout_ms = plan.timeout_ms;
        }
        if opts.exit_dump_len > 0 {
            open.struct_ops.mosaic_ops_mut().exit_dump_len = opts.exit_dump_len;
        }
        // each flag the kernel knows
        for name in plan.ops_flags {
            if let Ok(flag) = scx_utils::compat::read_enum("scx_ops_flags", name) {
                open.struct_ops.mosaic_ops_mut().flags |= flag;
            }
        }
        write_rodata(open.maps.rodata_data.as_mut().unwrap(), &plan.tunables);

        let mut skel = scx_utils::scx_ops_load!(open, mosaic_ops, uei)?;
        let link = scx_ops_attach!(skel, mosaic_ops)?;
        Ok(Scheduler {
            skel,
            link: Some(link),
            nr_shards: plan.layout.shards.len(),
            missed_limits: limits::MissedLimits::default(),
        })
    }

    /// Whether the kernel has recorded an exit.
    fn exited(&self) -> bool {
        let uei = &self.skel.maps.data_data.as_ref().unwrap().uei;
        unsafe { std::ptr::read_volatile(&uei.kind) != 0 }
    }

    /// Detaches (if still attached) and returns the recorded exit.
    fn detach(&mut self) -> ExitInfo {
        drop(self.link.take());
        let uei = &self.skel.maps.data_data.as_ref().unwrap().uei;
        ExitInfo {
            kind: unsafe { std::ptr::read_volatile(&uei.kind) },
            exit_code: uei.exit_code,
            reason: c_str(&uei.reason),
            msg: c_str(&uei.msg),
        }
    }

    /// The kernel's debug dump of the exit, if it wrote one.
    fn dump(&self) -> String {
        let ptr = scx_utils::UEI_DUMP_PTR_MUTEX.lock().unwrap().ptr;
        if ptr.is_null() {
            return String::new();
        }
        unsafe { std::ffi::CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    }

    /// The report now: @totals of the earlier loads plus this one's.
    fn snapshot(&self, totals: &Totals, balancer: Option<&group::Balancer>) -> Result<Metrics> {
        let now = Counters::read(&self.skel, self.nr_shards)?;
        let mut m = totals.metrics(Some((&now, &stats::bpf_prog_costs(&self.skel))), balancer)?;
        m.cgroup_bandwidth = self.bandwidth();
        m.bw_limits_missed = self.missed_limits.count() as u64;
        Ok(m)
    }

    /// The cgroups with a cpu.max limit now, with their throttling.
    fn bandwidth(&self) -> Vec<stats::BandwidthMetrics> {
        stats::bandwidth_limits(&self.skel, || {
            group::scan_cgroups(Path::new(group::CGROUP_ROOT))
        })
    }

    /// Runs until a signal or an exit, answering the stats server (and so
    /// --stats and --monitor); returns what the load leaves (LoadEnd).
    fn run(
        &mut self,
        shutdown: &AtomicBool,
        totals: &Totals,
        server: Option<&stats_server::Server>,
        mut balancer: Option<&mut group::Balancer>,
    ) -> Result<LoadEnd> {
        // nothing read or written while loaded unloads it: a stats snapshot
        // that fails is said (rate-limited) and skipped, the asker gets no
        // answer; the balancer says and retries its own
        let mut snapshot_errors = RateLimited::new(Duration::from_secs(60));
        while !shutdown.load(Ordering::Relaxed) && !self.exited() {
            let tick = Duration::from_millis(50);
            match server {
                Some(server) => {
                    if let Err(e) =
                        server.serve(tick, || self.snapshot(totals, balancer.as_deref()))
                    {
                        snapshot_errors
                            .warn(Instant::now(), || format!("stats snapshot skipped: {e:#}"));
                    }
                }
                None => std::thread::sleep(tick),
            }
            if let Some(b) = balancer.as_deref_mut() {
                b.tick(&self.skel);
            }
            let skel = &self.skel;
            self.missed_limits.check(skel, || {
                stats::sum_percpu(
                    &skel.maps.stats,
                    bpf_intf::mosaic_stat_STAT_CGROUPS_UNTRACKED,
                )
                .unwrap_or(0)
            });
        }
        // Detach first: read while the programs still run, the counters are
        // a torn snapshot (one read per counter), e.g. a handoff's
        // insert_queued without its wake_* (seen in test_foundation).
        // The limits before: the kernel takes every cgroup from the
        // scheduler (ops.cgroup_exit) as it detaches.
        let bandwidth = self.bandwidth();
        let exit = self.detach();
        let counters = Counters::read(&self.skel, self.nr_shards).unwrap_or_else(|e| {
            log::warn!("this load's counters are lost: {e:#}");
            Counters::default()
        });
        let costs = stats::bpf_prog_costs(&self.skel);
        Ok(LoadEnd {
            exit,
            counters,
            costs,
            bandwidth,
        })
    }
}

/// What one load leaves when it ends: the exit, its counters, the BPF
/// programs' costs and the cpu.max limits it enforced.
struct LoadEnd {
    exit: ExitInfo,
    counters: Counters,
    costs: stats::ProgCosts,
    bandwidth: Vec<stats::BandwidthMetrics>,
}

/// What every report adds the current load's counters to: the totals of
/// the loads before it (restarts), and the layout of the current one.
struct Totals {
    started: Instant,
    restarts: u32,
    counters: Counters,
    costs: stats::ProgCosts,
    plan: LoadPlan,
    /// the last load's cpu.max limits, for the final report
    bandwidth: Vec<stats::BandwidthMetrics>,
}

impl Totals {
    /// The report: these totals plus @now (a load's counters and BPF costs).
    fn metrics(
        &self,
        now: Option<(&Counters, &stats::ProgCosts)>,
        balancer: Option<&group::Balancer>,
    ) -> Result<Metrics> {
        let mut counters = self.counters.clone();
        let mut costs = self.costs.clone();
        if let Some((c, p)) = now {
            counters.add(c);
            stats::add_costs(&mut costs, p);
        }
        let mut m = Metrics::new(&counters, &self.plan.topo, &self.plan.layout);
        m.runtime_s = self.started.elapsed().as_secs_f64();
        m.restarts = self.restarts.into();
        m.no_shared_runq = Flag(self.plan.tunables.no_shared_runq);
        m.bpf = BpfMetrics::from(&costs[..]);
        if let Some(b) = balancer {
            m.group_balancer = b.metrics();
        }
        Ok(m)
    }
}

/// Refuses to start where the scheduler cannot load, before anything loads.
fn preflight(sysfs: &Path, euid: u32) -> Result<()> {
    let scx = sysfs.join("kernel/sched_ext");
    if !scx.exists() {
        bail!(
            "this kernel has no sched_ext ({} is missing; needs CONFIG_SCHED_CLASS_EXT=y, \
             Linux >= 6.12); `make run` boots a VM kernel that has it",
            scx.display()
        );
    }
    if euid != 0 {
        bail!("must run as root: loading a BPF scheduler needs CAP_SYS_ADMIN and CAP_BPF");
    }
    let state = std::fs::read_to_string(scx.join("state")).unwrap_or_default();
    if state.trim() != "disabled" {
        let ops = std::fs::read_to_string(scx.join("root/ops")).unwrap_or_default();
        bail!(
            "another sched_ext scheduler is loaded (state {}, ops {})",
            state.trim(),
            ops.trim()
        );
    }
    Ok(())
}

/// BPF run-time stats on (BPF_ENABLE_STATS) for as long as this process
/// holds the returned descriptor: the kernel counts the holders and turns
/// the stats off as the last goes, however the process ends (even SIGKILL),
/// and kernel.bpf_stats_enabled is never written.
fn enable_bpf_stats() -> Result<std::os::fd::OwnedFd> {
    use libbpf_rs::libbpf_sys;
    use std::os::fd::FromRawFd;
    let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        bail!(
            "--bpf-stats: enabling BPF run-time stats: {}",
            std::io::Error::from_raw_os_error(-fd)
        );
    }
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Writes the final report as one JSON object (output::write_file_atomic:
/// never through a symlink, never half-written).
fn write_stats_file(path: &Path, report: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(report)? + "\n";
    output::write_file_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// Parses the command line and the config file (config.rs); a bad flag or
/// config key is one line on stderr and exit 2.
fn parse_opts() -> Opts {
    match config::parse::<Opts>() {
        Ok(mut o) => {
            // the watchdog timeout scx_ops_open! takes from the environment,
            // known before the plan (tunables::wait_target_ns)
            if o.timeout_ms == 0 {
                if let Some(ms) = std::env::var("SCX_TIMEOUT_MS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                {
                    o.timeout_ms = ms;
                }
            }
            o
        }
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("bad arguments");
            errln!(
                "scx_mosaic: {} (see --help)",
                first.trim_start_matches("error: ")
            );
            std::process::exit(2);
        }
    }
}

/// Why --shared-runq auto chose per-CPU queues (@per_cpu) or the shard design
/// (the choice itself is tunables::shared_runq_design()'s).
fn auto_reason(per_cpu: bool) -> String {
    let side = if per_cpu { "at most" } else { "more than" };
    format!("auto: {side} {AUTO_PER_CPU_MAX_CPUS} CPUs")
}

/// Prints what the scheduler is about to run on.
fn print_banner(plan: &LoadPlan) {
    let (topo, layout) = (&plan.topo, &plan.layout);
    let lists = |sets: &[Vec<usize>]| {
        let v: Vec<String> = sets.iter().map(|s| cpulist::format(s)).collect();
        format!("[{}]", v.join("] ["))
    };
    outln!(
        "scx_mosaic {}: {} CPUs, {} cores{}, {} LLCs, {} NUMA nodes; {}{}",
        env!("CARGO_PKG_VERSION"),
        topo.cpus.len(),
        topo.cores.len(),
        if topo.smt() { " (SMT)" } else { "" },
        topo.llcs.len(),
        topo.nodes.len(),
        if plan.tunables.no_shared_runq {
            format!(
                "per-CPU queues, the kernel's newidle balance (--shared-runq {})",
                if plan.design_by_size {
                    auto_reason(true)
                } else {
                    "off".to_string()
                }
            )
        } else if plan.tunables.seed_runq {
            format!(
                "per-CPU queues, shards {} index their waiters (--shared-runq seed)",
                lists(&layout.shards)
            )
        } else {
            format!(
                "shard queues {} (--shared-runq {}){}",
                lists(&layout.shards),
                if plan.design_by_size {
                    auto_reason(false)
                } else {
                    "shard".to_string()
                },
                if plan.tunables.same_rq_pull {
                    " (a task on the CPU's runqueue first)"
                } else {
                    ""
                }
            )
        },
        plan.group
            .as_ref()
            .map(|g| format!("; partitions {}", lists(&g.partitions)))
            .unwrap_or_default()
    );
}

/// Which cgroup v2 CPU controls this load honours, as one banner line: the
/// kernel lacks ops.cgroup_set_bandwidth before 6.17 and ops.cgroup_set_idle
/// before 6.19 (scx_ops_open! then drops the op, and the control is ignored);
/// @has_op tells whether the kernel's sched_ext_ops has a member.
fn cgroup_controls_line(opts: &Opts, has_op: impl Fn(&str) -> bool) -> String {
    let mut honoured = Vec::new();
    let mut ignored = Vec::new();
    if opts.no_cgroup_weights {
        ignored.push("cpu.weight (--no-cgroup-weights)".to_string());
    } else {
        honoured.push("cpu.weight");
    }
    for (control, op) in [
        ("cpu.max", "cgroup_set_bandwidth"),
        ("cpu.idle", "cgroup_set_idle"),
    ] {
        if has_op(op) {
            honoured.push(control);
        } else {
            ignored.push(format!("{control} (this kernel has no ops.{op})"));
        }
    }
    let mut line = format!(
        "scx_mosaic: cgroup controls: {}",
        if honoured.is_empty() {
            "none".to_string()
        } else {
            honoured.join(", ")
        }
    );
    if !ignored.is_empty() {
        line += &format!("; ignored: {}", ignored.join(", "));
    }
    line
}

/// The group balancer's configuration, its cgroup checked, if --gb-parent
/// is given (@plan has checked the rest).
fn group_config(opts: &Opts, plan: &LoadPlan) -> Result<Option<group::GroupConfig>> {
    plan.group
        .as_ref()
        .map(|g| group::GroupConfig::new(g.clone(), opts.stats > 0.0))
        .transpose()
}

/// Reads the topology and derives the load's settings from it (tunables.rs).
/// At the first load a CPU list naming an offline CPU is an error (bad
/// input); at a @restart after hotplug its offline CPUs are left out of this
/// load, in one line that says which.
fn load_plan(opts: &Opts, restart: bool) -> Result<LoadPlan> {
    let topo = Topology::from_sysfs().context("reading the CPU topology")?;
    if !restart {
        return LoadPlan::new(opts, topo);
    }
    let (plan, cut) = LoadPlan::restart(opts, topo)?;
    if let Some(line) = cut {
        log::warn!("{line}");
    }
    Ok(plan)
}

fn run(opts: &Opts) -> Result<i32> {
    preflight(Path::new("/sys"), unsafe { libc::geteuid() })?;
    let shutdown = Arc::new(AtomicBool::new(false));
    let flag = shutdown.clone();
    ctrlc::set_handler(move || flag.store(true, Ordering::Relaxed))
        .context("installing the signal handler")?;

    let _bpf_stats = if opts.bpf_stats {
        Some(enable_bpf_stats()?)
    } else {
        None
    };
    let socket = Path::new(stats_server::SOCKET);
    let server = stats_server::Server::launch(socket)
        .map_err(|e| log::warn!("no stats for --stats and --monitor: {e:#}"))
        .ok();
    // --stats, once attached: printed as --monitor prints them, by a client
    let mut printer = (server.is_some() && opts.stats > 0.0).then_some(socket);
    let mut totals = Totals {
        started: Instant::now(),
        restarts: 0,
        counters: Counters::default(),
        costs: Vec::new(),
        plan: load_plan(opts, false)?,
        bandwidth: Vec::new(),
    };
    let (exit, balancer) = loop {
        let plan = &totals.plan;
        let gb = match group_config(opts, plan) {
            Ok(gb) => gb,
            // after a restart (the --gb-parent cgroup removed meanwhile):
            // loaded without the balancer rather than not at all
            Err(e) if totals.restarts > 0 => {
                log::warn!("no group balancer for this load: {e:#}");
                None
            }
            Err(e) => return Err(e),
        };
        print_banner(plan);
        log::debug!("load plan: {:?}", plan.tunables);
        outln!(
            "{}",
            cgroup_controls_line(opts, |op| {
                scx_utils::compat::struct_has_field("sched_ext_ops", op).unwrap_or(false)
            })
        );
        let mut balancer = gb.map(|cfg| group::Balancer::new(cfg, &plan.topo));
        let mut object = MaybeUninit::uninit();
        let mut sched =
            Scheduler::init(opts, plan, &mut object).context("loading the BPF scheduler")?;
        outln!("scx_mosaic: attached; Ctrl-C to detach");
        if let Some(socket) = printer.take() {
            stats_server::spawn_printer(socket.into(), opts.stats, shutdown.clone());
        }
        let LoadEnd {
            exit,
            counters,
            costs,
            bandwidth,
        } = sched.run(&shutdown, &totals, server.as_ref(), balancer.as_mut())?;
        totals.bandwidth = bandwidth;
        totals.counters.add(&counters);
        stats::add_costs(&mut totals.costs, &costs);
        if exit.is_ejection() {
            let dump = sched.dump();
            if !dump.is_empty() {
                let lines: Vec<_> = dump.lines().map(escape).collect();
                errln!("{}", lines.join("\n"));
            }
        }
        if exit.wants_restart() && !shutdown.load(Ordering::Relaxed) {
            totals.restarts += 1;
            errln!(
                "scx_mosaic: restarting: {} ({})",
                escape(&exit.reason),
                escape(&exit.msg)
            );
            // after hotplug the CPU set differs
            totals.plan = load_plan(opts, true)?;
            continue;
        }
        break (exit, balancer);
    };
    drop(server);

    let line = format!(
        "scx_mosaic: exit: {} (kind {}){}{}",
        exit.kind_name(),
        exit.kind,
        if exit.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", escape(&exit.reason))
        },
        if exit.msg.is_empty() {
            String::new()
        } else {
            format!(" ({})", escape(&exit.msg))
        },
    );
    errln!("{line}");

    let mut report = totals.metrics(None, balancer.as_ref())?;
    report.exit = exit.metrics();
    report.cgroup_bandwidth = std::mem::take(&mut totals.bandwidth);
    if opts.bpf_stats {
        errln!(
            "scx_mosaic: BPF cost: {:.0} ns per call over {} calls",
            report.bpf.ns_per_call,
            report.bpf.calls
        );
    }
    if let Some(path) = &opts.stats_file {
        write_stats_file(path, &serde_json::to_value(&report)?)?;
    }
    if exit.is_ejection() {
        errln!("scx_mosaic: ejected by the kernel: {}", exit.kind_name());
        return Ok(1);
    }
    Ok(0)
}

/// libbpf messages, less two that every load on a newer or older kernel than
/// the headers prints and that mean nothing is wrong.
fn libbpf_print(_level: libbpf_rs::PrintLevel, msg: String) {
    use std::io::Write;
    const BENIGN: [&str; 2] = [
        "not found in kernel, skipping it as it's set to zero",
        "BPF map skeleton link is uninitialized",
    ];
    if !BENIGN.iter().any(|b| msg.contains(b)) {
        let _ = std::io::stderr().write_all(msg.as_bytes());
    }
}

/// libbpf's warnings (a verifier's rejection with its log) always, its
/// debug output too with -v.
fn set_libbpf_print(verbose: bool) {
    let level = if verbose {
        libbpf_rs::PrintLevel::Debug
    } else {
        libbpf_rs::PrintLevel::Warn
    };
    libbpf_rs::set_print(Some((level, libbpf_print)));
}

/// Installs the logger at -v's level and RUST_LOG's; a bad RUST_LOG is one
/// line on stderr and exit 2, as a bad flag is.
fn init_logging(verbose: u8) {
    let directives = std::env::var("RUST_LOG").ok();
    match output::LogFilter::new(verbose, directives.as_deref()) {
        Ok(filter) => {
            output::init_logger(filter).expect("the logger is installed once");
        }
        Err(e) => {
            errln!("scx_mosaic: {e}");
            std::process::exit(2);
        }
    }
}

fn main() {
    let opts = parse_opts();
    init_logging(opts.verbose);
    set_libbpf_print(opts.verbose > 0);
    if opts.help_stats {
        stats_server::print_help();
        return;
    }
    let socket = Path::new(stats_server::SOCKET);
    let result = match opts.monitor {
        _ if opts.stats_json => stats_server::print_json(socket).map(|_| 0),
        Some(secs) => stats_server::monitor(socket, secs, None, None).map(|_| 0),
        None => run(&opts),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            errln!("scx_mosaic: {}", escape(&format!("{e:#}")));
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_banner_names_the_cgroup_controls_a_kernel_lacks() {
        let opts = Opts::try_parse_from(["scx_mosaic"]).unwrap();
        assert_eq!(
            cgroup_controls_line(&opts, |_| true),
            "scx_mosaic: cgroup controls: cpu.weight, cpu.max, cpu.idle"
        );
        // a 6.17/6.18 kernel: no ops.cgroup_set_idle
        assert_eq!(
            cgroup_controls_line(&opts, |op| op != "cgroup_set_idle"),
            "scx_mosaic: cgroup controls: cpu.weight, cpu.max; ignored: cpu.idle (this kernel \
             has no ops.cgroup_set_idle)"
        );
        let opts = Opts::try_parse_from(["scx_mosaic", "--no-cgroup-weights"]).unwrap();
        assert_eq!(
            cgroup_controls_line(&opts, |_| false),
            "scx_mosaic: cgroup controls: none; ignored: cpu.weight (--no-cgroup-weights), cpu.max \
             (this kernel has no ops.cgroup_set_bandwidth), cpu.idle (this kernel has no \
             ops.cgroup_set_idle)"
        );
    }

    /// A fake sysfs with a sched_ext directory in state @state, if any.
    fn sysfs(state: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(state) = state {
            let scx = dir.path().join("kernel/sched_ext");
            std::fs::create_dir_all(scx.join("root")).unwrap();
            std::fs::write(scx.join("state"), format!("{state}\n")).unwrap();
            std::fs::write(scx.join("root/ops"), "rusty\n").unwrap();
        }
        dir
    }

    #[test]
    fn preflight_refuses_kernels_without_sched_ext() {
        let err = preflight(sysfs(None).path(), 0).unwrap_err().to_string();
        assert!(err.contains("no sched_ext"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn preflight_refuses_non_root() {
        let err = preflight(sysfs(Some("disabled")).path(), 1000)
            .unwrap_err()
            .to_string();
        assert!(err.contains("must run as root"), "{err}");
    }

    #[test]
    fn preflight_refuses_a_second_scheduler() {
        let err = preflight(sysfs(Some("enabled")).path(), 0)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("another sched_ext scheduler") && err.contains("rusty"),
            "{err}"
        );
        preflight(sysfs(Some("disabled")).path(), 0).unwrap();
    }

    #[test]
    fn libbpf_warnings_are_printed_without_v_and_debug_output_with_it() {
        for (verbose, level) in [
            (false, libbpf_rs::PrintLevel::Warn),
            (true, libbpf_rs::PrintLevel::Debug),
        ] {
            set_libbpf_print(verbose);
            let _builder = skel_builder();
            let printer = libbpf_rs::get_print().map(|(l, _)| l);
            assert_eq!(printer, Some(level), "verbose {verbose}");
        }
    }

    #[test]
    fn exit_kinds_are_classified() {
        let exit = |kind, exit_code| ExitInfo {
            kind,
            exit_code,
            reason: String::new(),
            msg: String::new(),
        };
        assert!(!exit(64, 0).is_ejection());
        assert_eq!(exit(64, 0).kind_name(), "unregistered");
        assert!(exit(1026, 0).is_ejection());
        assert_eq!(exit(1026, 0).kind_name(), "watchdog stall");
        assert!(exit(1025, 0).is_ejection());
    }
}
