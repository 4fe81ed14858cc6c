//! The command line: scx_mosaic's options, shared with the simulator
//! (mosaic-sim parses its --sched-arg flags with this same struct).

use clap::{Parser, ValueEnum};
use std::path::PathBuf;

const EXAMPLES: &str = "Examples:
  scx_mosaic                        run with defaults, quietly
  scx_mosaic --stats 1              live stats every second
  scx_mosaic --shard-size 2         smaller shards (less lock contention)
  scx_mosaic --no-shared-runq       seed 000's NO_SHARED_RUNQ baseline
  scx_mosaic --stats-file /run/scx_mosaic/stats.json
                                    final counters as JSON on exit
  scx_mosaic --config ./mosaic.toml --stats 5
                                    options from a TOML file (shard-size = 2,
                                    no-shared-runq = true, ...); flags win
  scx_mosaic --gb-parent workloads --gb-partitions \"0-3;4-7\"
                                    group balancer: settle each cgroup below
                                    /sys/fs/cgroup/workloads into a partition
  scx_mosaic --cpu-capacity 0-3:1024,4-7:446
                                    declare big (0-3) and little (4-7) CPUs
                                    where firmware reports no capacities

Without --config, /etc/scx_mosaic/config.toml is read if it exists (`make
install` puts an example there and a systemd unit, scx_mosaic.service).";

/// When a CPU pulling from its own shard prefers a task already on its
/// runqueue (--same-rq-pull).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SameRqPull {
    /// In a virtual machine's guest only.
    Auto,
    /// Always.
    On,
    /// Never: always the shard's head.
    Off,
}

/// Seed 000's shared runqueue (--shared-runq).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SharedRunq {
    /// By machine size: off on machines of at most AUTO_PER_CPU_MAX_CPUS
    /// CPU ids (tunables.rs), shard on larger ones.
    Auto,
    /// None: every task waits on its CPU's own queue; a CPU about to idle
    /// pulls as the kernel's newidle balance does (seed 000's baseline,
    /// NO_SHARED_RUNQ).
    Off,
    /// Each shard is a queue: a task that finds no idle CPU waits on its
    /// LLC's shard, and the first CPU of the shard to free runs it.
    Shard,
    /// As the seed built it: tasks wait on their CPU's own queue, which
    /// that CPU runs first; each shard indexes which of its CPUs have
    /// waiters, and a CPU about to idle pulls the longest waiter of a busy
    /// CPU of its LLC. Shards of at most 64 CPUs.
    Seed,
}

/// Mosaic: a sched_ext CPU scheduler built from five kernel scheduler proposals.
#[derive(Debug, Clone, Parser)]
#[command(name = "scx_mosaic", version = crate::VERSION.as_str(), after_help = EXAMPLES)]
pub struct Opts {
    /// CPUs per shard of each LLC's shared runqueue (SMT cores are never
    /// split). Default: the CPUs sharing an L2, clamped to 2..=8.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=512))]
    pub shard_size: Option<u32>,

    /// Seed 000's shared runqueue: off (per-CPU queues; a CPU about to idle
    /// pulls from the busiest queue of its LLC, then of the machine, when a
    /// queue holds a waiter (the overload flag), its average idle time
    /// exceeds the migration cost and a domain's last balance cost less than
    /// that idle time; a busy CPU balances its LLC periodically: the
    /// kernel's newidle and periodic balance, by weighted load), shard (each
    /// shard of an LLC is a queue), seed (the seed's design: per-CPU queues
    /// whose shards index the CPUs with waiters) or auto (default): off on
    /// machines of up to 72 CPUs, where it is as fast or faster and its work
    /// per event stays small, shard on larger ones, where only shard keeps
    /// its work per event flat (docs/design.md, "Which design the default
    /// picks" in docs/sim-report.md).
    #[arg(long, value_enum, default_value_t = SharedRunq::Auto, value_name = "DESIGN")]
    pub shared_runq: SharedRunq,

    /// The same as --shared-runq=off (kept for configuration files that
    /// name it).
    #[arg(long)]
    pub no_shared_runq: bool,

    /// From its own shard, a CPU takes a task already on its runqueue (of the
    /// first few within a slice of the head's vtime) before the head: auto
    /// (default) does so in a virtual machine's guest, where another CPU's
    /// runqueue lock may be held by a vCPU the host preempted; on bare metal
    /// the extra shard walk costs more than the lock.
    #[arg(long, value_enum, default_value_t = SameRqPull::Auto, value_name = "WHEN")]
    pub same_rq_pull: SameRqPull,

    /// Disable seed 001's L2 scoping: the whole LLC is the first idle-search
    /// domain and the domain a waker inserts into directly.
    #[arg(long)]
    pub no_l2_locality: bool,

    /// Disable seed 002's prev-first check on asymmetric machines: wakeups
    /// go straight to the capacity search, starting at the waker's CPU.
    #[arg(long)]
    pub no_prev_first: bool,

    /// Disable Mosaic's pair rule (beyond the seeds): a sync wakeup within a
    /// pair of tasks that wake each other no longer runs the wakee on the
    /// waker's CPU, so seed 002's prev check decides alone (an A/B of that
    /// check alone: --no-wake-pair with and without --no-prev-first).
    #[arg(long)]
    pub no_wake_pair: bool,

    /// Disable wakeup preemption (beyond the seeds): a woken task that finds
    /// no idle CPU always queues, even when the task running on its CPU ran
    /// far past its vtime (a tiny cgroup share, nice 19).
    #[arg(long)]
    pub no_wake_preempt: bool,

    /// Disable seed 003's overload gate: a CPU going idle always scans other
    /// LLCs for work to steal, even when nothing waits anywhere.
    #[arg(long)]
    pub no_overload_gate: bool,

    /// Do not even out busy LLCs: a task moves to another LLC only when a
    /// CPU there would otherwise idle, however many more wait in its own.
    #[arg(long)]
    pub no_llc_balance: bool,

    /// Ignore cgroup cpu.weight: charge every task by its nice weight alone,
    /// so a cgroup gets CPU time in proportion to its number of tasks.
    #[arg(long)]
    pub no_cgroup_weights: bool,

    /// Period of the scan that clears the overload flag, in microseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    pub overload_scan_us: u64,

    /// Group balancer (seed 004): balance the cgroups below this cgroup v2
    /// directory (absolute, or relative to /sys/fs/cgroup) into CPU partitions.
    #[arg(long, value_name = "CGROUP")]
    pub gb_parent: Option<String>,

    /// Group balancer partitions: llc (default), l2, node, or CPU lists
    /// "0-3;4-7".
    #[arg(long, value_name = "SPEC")]
    pub gb_partitions: Option<String>,

    /// Group balancer period in milliseconds.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub gb_period_ms: u64,

    /// With --gb-parent: account the cgroups (exclusivity stats) but never
    /// settle or bind them (the A/B baseline).
    #[arg(long)]
    pub no_group_balancer: bool,

    /// Declare CPU capacities (1..=1024), e.g. "0-3:1024,4-7:446", on
    /// machines and VMs that report none; CPUs not named keep theirs.
    #[arg(long, value_name = "LIST")]
    pub cpu_capacity: Option<String>,

    // The default is sched_ext's own (SCX_SLICE_DFL): against 5 ms, hackbench and perf
    // messaging ran ~18 % faster on 2llc-smt and schbench's wakeup p99 ~7 % slower (TCG).
    /// Time slice in microseconds.
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..=1_000_000))]
    pub slice_us: u64,

    /// Print live stats every this many seconds (default 0: never, as scx
    /// schedulers print nothing periodic unless asked): the lines --monitor
    /// prints, read the same way, from this instance's stats server.
    #[arg(long, default_value_t = 0.0, value_parser = parse_interval)]
    pub stats: f64,

    /// Load nothing: print the stats of the scx_mosaic already running
    /// (read from its scx_stats socket) every this many seconds.
    #[arg(long, value_name = "SECS", value_parser = parse_period)]
    pub monitor: Option<f64>,

    /// Load nothing: print the stats of the scx_mosaic already running once,
    /// as one JSON object (the --stats-file fields but the exit's), and exit:
    /// for scripts that read the counters before and after a workload.
    #[arg(long, conflicts_with = "monitor")]
    pub stats_json: bool,

    /// Describe every stats field (--stats-file, scx_stats, --monitor) and exit.
    #[arg(long)]
    pub help_stats: bool,

    /// On exit, write the final counters as one JSON object to this file,
    /// e.g. /run/scx_mosaic/stats.json (a root-owned directory, not /tmp):
    /// replaced whole by a rename, never written through a symlink.
    #[arg(long, value_name = "PATH")]
    pub stats_file: Option<PathBuf>,

    /// Watchdog timeout in milliseconds: the kernel ejects the scheduler if
    /// a runnable task waits this long (0: the kernel's default).
    #[arg(long, default_value_t = 0)]
    pub timeout_ms: u32,

    /// Have the kernel time every BPF program while running (BPF_ENABLE_STATS:
    /// off again when the process ends, however it ends; the
    /// kernel.bpf_stats_enabled sysctl is not written); the cost per call
    /// goes into the exit line and --stats-file.
    #[arg(long)]
    pub bpf_stats: bool,

    /// Bytes of the kernel's debug dump kept when the scheduler is ejected
    /// (0: the kernel's default).
    #[arg(long, default_value_t = 0)]
    pub exit_dump_len: u32,

    /// More messages on stderr: -v info and libbpf's debug output while
    /// loading, -vv debug, -vvv trace (warnings and errors always). RUST_LOG
    /// may raise the level, or set one per module: RUST_LOG=scx_stats=debug.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Test switch: lose every task with this command name, so that the
    /// kernel's watchdog ejects the scheduler.
    #[arg(long, hide = true, value_name = "COMM")]
    pub debug_drop_comm: Option<String>,
}

impl Opts {
    /// The shared runqueue asked for (--no-shared-runq is --shared-runq=off;
    /// Tunables resolves auto by the machine).
    pub fn shared_runq(&self) -> SharedRunq {
        if self.no_shared_runq {
            SharedRunq::Off
        } else {
            self.shared_runq
        }
    }
}

/// A non-negative number of seconds.
fn parse_interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of seconds")),
    }
}

/// A positive number of seconds.
fn parse_period(s: &str) -> Result<f64, String> {
    match parse_interval(s)? {
        0.0 => Err(format!("{s:?} is not a positive number of seconds")),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_runqueue_is_auto_unless_asked() {
        let mode = |argv: &[&str]| Opts::try_parse_from(argv).unwrap().shared_runq();
        assert_eq!(mode(&["scx_mosaic"]), SharedRunq::Auto);
        assert_eq!(
            mode(&["scx_mosaic", "--shared-runq", "seed"]),
            SharedRunq::Seed
        );
        assert_eq!(
            mode(&["scx_mosaic", "--shared-runq=shard"]),
            SharedRunq::Shard
        );
        let both = ["scx_mosaic", "--shared-runq=shard", "--no-shared-runq"];
        assert_eq!(mode(&both), SharedRunq::Off);
        assert!(Opts::try_parse_from(["scx_mosaic", "--shared-runq=on"]).is_err());
    }

    #[test]
    fn nothing_periodic_unless_asked() {
        let opts = Opts::try_parse_from(["scx_mosaic"]).unwrap();
        assert_eq!(opts.stats, 0.0);
        let opts = Opts::try_parse_from(["scx_mosaic", "--stats", "1", "-v"]).unwrap();
        assert_eq!((opts.stats, opts.verbose), (1.0, 1));
        let opts = Opts::try_parse_from(["scx_mosaic", "-vv", "--verbose"]).unwrap();
        assert_eq!(opts.verbose, 3);
    }

    #[test]
    fn version_names_the_commit_and_target() {
        let err = Opts::try_parse_from(["scx_mosaic", "--version"]).unwrap_err();
        let out = err.to_string();
        let sha = env!("MOSAIC_GIT_SHA");
        assert!(
            out.starts_with(&format!("scx_mosaic {}", env!("CARGO_PKG_VERSION"))),
            "{out}"
        );
        assert!(out.contains(env!("MOSAIC_TARGET")), "{out}");
        // built from a git checkout (as here): the commit is named
        if std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.git")).exists() {
            assert!(
                sha.len() >= 7 && out.contains(&format!("-g{sha} ")),
                "{out}"
            );
        }
    }

    #[test]
    fn intervals_must_be_non_negative_numbers() {
        assert_eq!(parse_interval("0.5"), Ok(0.5));
        assert!(parse_interval("-1").is_err());
        assert!(parse_interval("soon").is_err());
        assert!(parse_interval("NaN").is_err());
    }
}
