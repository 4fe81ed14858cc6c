//! The scheduler's loader, simulated: --sched-arg flags become scx_mosaic's
//! own settings, written into the native scheduler's `const volatile`
//! globals before ops.init, as scx_mosaic (scheduler/src/main.rs) writes
//! them into .rodata before load.
//!
//! Nothing is mirrored: the flags are parsed by scx_mosaic's own command
//! line (`scx_mosaic::Opts`, the same defaults and ranges) and turned into
//! settings by its own `scx_mosaic::tunables::LoadPlan`; this file writes
//! `Tunables::by_name` into the globals of the same names. The plan's
//! settings outside .rodata are taken from it too: the ops flags, resolved
//! here by name as scx_mosaic resolves them against the kernel, the ops
//! table's timeout, and the group balancer's `GroupPlan`, which configures
//! the simulated balancer (group.rs); in the simulator --gb-parent's value
//! is not a path: every cgroup of the workload other than the root is
//! balanced.
use crate::ffi;
use crate::machine::Machine;
use crate::topology::ShardLayout;
use anyhow::{bail, Result};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use scx_mosaic::tunables::{GroupPlan, LoadPlan, Tunables};
use scx_mosaic::Opts;
use std::ffi::{c_void, CString};

/// scx_mosaic's flags that change nothing the BPF scheduler (or the
/// simulated group balancer) runs with, each with what it does instead.
/// The simulator refuses them rather than ignore them silently.
pub const RUNTIME_ONLY_FLAGS: &[(&str, &str)] = &[
    ("stats", "prints live stats"),
    (
        "stats-file",
        "writes the final counters (the simulator's is --json)",
    ),
    (
        "monitor",
        "reads a running scx_mosaic's stats and loads nothing",
    ),
    (
        "stats-json",
        "prints a running scx_mosaic's stats once and loads nothing",
    ),
    ("help-stats", "describes the stats fields"),
    ("bpf-stats", "has the kernel time the BPF programs"),
    (
        "exit-dump-len",
        "sizes the kernel's debug dump at an ejection",
    ),
    ("verbose", "prints log messages and libbpf's debug output"),
];

/// What loading produced: the settings written, the ops flags the loader
/// adds, the ops table's timeout and the group balancer's configuration.
#[derive(Debug)]
pub struct Loaded {
    pub layout: ShardLayout,
    pub tunables: Tunables,
    pub ops_flags: u64,
    /// --timeout-ms: the ops table's timeout_ms as the loader sets it (0:
    /// the kernel's default).
    pub timeout_ms: u32,
    pub gb: Option<GroupPlan>,
}

/// The value of the ops flag @name (LoadPlan::ops_flags): every kernel the
/// simulator models knows the flags the plan asks for.
fn ops_flag(name: &str) -> Result<u64> {
    Ok(match name {
        "SCX_OPS_ENQ_LAST" => ffi::SCX_OPS_ENQ_LAST,
        "SCX_OPS_ALLOW_QUEUED_WAKEUP" => ffi::SCX_OPS_ALLOW_QUEUED_WAKEUP,
        _ => bail!("the simulator does not model the ops flag {name}"),
    })
}

/// The command-line tokens of the --sched-arg values: "--flag=value" as it
/// is, anything else split at blanks ("--shard-size 2").
fn sched_arg_tokens(args: &[String]) -> Vec<String> {
    args.iter()
        .flat_map(|s| match s.starts_with("--") && s.contains('=') {
            true => vec![s.clone()],
            false => s.split_whitespace().map(String::from).collect(),
        })
        .collect()
}

/// Parses the --sched-arg values as scx_mosaic parses its command line
/// (repeated flags override, as there), refusing runtime-only flags.
pub fn parse_sched_args(args: &[String]) -> Result<Opts> {
    let argv = std::iter::once("scx_mosaic".to_string()).chain(sched_arg_tokens(args));
    let cmd = Opts::command().args_override_self(true);
    let matches = match cmd.clone().try_get_matches_from(argv) {
        Ok(m) => m,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            bail!(
                "--sched-arg: scx_mosaic's --help and --version only print (see scx_mosaic --help)"
            )
        }
        Err(e) => bail!("--sched-arg: {}", clap_error_line(&e)),
    };
    for (flag, what) in RUNTIME_ONLY_FLAGS {
        let arg = cmd.get_arguments().find(|a| a.get_long() == Some(flag));
        let Some(arg) = arg else {
            bail!("scx_mosaic has no --{flag} any more: update RUNTIME_ONLY_FLAGS");
        };
        if matches.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine) {
            bail!("--sched-arg: --{flag} is runtime-only (it {what}): nothing to simulate");
        }
    }
    Opts::from_arg_matches(&matches)
        .map_err(|e| anyhow::anyhow!("--sched-arg: {}", clap_error_line(&e)))
}

/// A clap error's message on one line (its first paragraph, without
/// "error: ", the usage and tips that follow).
pub(crate) fn clap_error_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let para: Vec<&str> = text
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    match para.join(" ").trim_start_matches("error: ") {
        "" => "bad arguments".to_string(),
        s => s.to_string(),
    }
}

/// Address and sizes of the tunable @name, made writable.
fn tunable(name: &str) -> Result<(*mut u8, usize, usize)> {
    let c = CString::new(name).unwrap();
    let (mut addr, mut size, mut elem) = (std::ptr::null_mut::<c_void>(), 0usize, 0usize);
    if unsafe { ffi::sim_tunable_find(c.as_ptr(), &mut addr, &mut size, &mut elem) } == 0 {
        bail!("the scheduler has no tunable {name:?}");
    }
    // const volatile globals live in .rodata: unprotect their pages, as
    // libbpf writes .rodata before load
    let page = 4096usize;
    let start = addr as usize & !(page - 1);
    let end = (addr as usize + size).div_ceil(page) * page;
    let rc = unsafe {
        libc::mprotect(
            start as *mut c_void,
            end - start,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    if rc != 0 {
        bail!("cannot make tunable {name} writable");
    }
    Ok((addr as *mut u8, size, elem))
}

/// Writes @values into the elements of tunable @name from index 0 (each
/// an integer or bool of any width, truncated to it).
pub fn set(name: &str, values: &[u64]) -> Result<()> {
    let (addr, size, elem) = tunable(name)?;
    if values.len() * elem > size {
        bail!(
            "tunable {name}: {} elements, room for {}",
            values.len(),
            size / elem
        );
    }
    for (idx, value) in values.iter().enumerate() {
        let bytes = value.to_ne_bytes();
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), addr.add(idx * elem), elem.min(8)) };
    }
    Ok(())
}

/// The loader's decisions for @opts on @m, touching nothing: --cpu-capacity
/// is applied to the machine, the rest is in the result.
pub fn prepare(m: &mut Machine, opts: &Opts) -> Result<Loaded> {
    let plan = LoadPlan::new(opts, m.topo.clone())?;
    m.topo = plan.topo;
    let mut ops_flags = 0;
    for name in plan.ops_flags {
        ops_flags |= ops_flag(name)?;
    }
    Ok(Loaded {
        layout: plan.layout,
        tunables: plan.tunables,
        ops_flags,
        timeout_ms: plan.timeout_ms,
        gb: plan.group,
    })
}

/// The loader's work: prepare(), then every tunable written by name.
pub fn load(m: &mut Machine, opts: &Opts) -> Result<Loaded> {
    let loaded = prepare(m, opts)?;
    for (name, values) in loaded.tunables.by_name() {
        set(name, &values)?;
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{ArgAction, Parser};

    /// Whether the scheduler has tunable @name, and its size and element size.
    fn find(name: &str) -> Option<(usize, usize)> {
        let c = CString::new(name).unwrap();
        let (mut a, mut s, mut e) = (std::ptr::null_mut::<c_void>(), 0usize, 0usize);
        let found = unsafe { ffi::sim_tunable_find(c.as_ptr(), &mut a, &mut s, &mut e) != 0 };
        found.then_some((s, e))
    }

    /// The flags these tests give with --@long besides the ones it needs
    /// (@needs) and the value, on the 16-CPU machine; None for flags that
    /// take no value. A new value flag of scx_mosaic panics here until it
    /// has a sample (and is classified, see the test below).
    fn sample(long: &str) -> (Vec<&'static str>, Option<&'static str>) {
        let gb: Vec<&str> = vec!["--gb-parent=sim"];
        match long {
            "shard-size" => (vec![], Some("4")),
            // 16cpu is one of vm/run's presets, a guest: auto is on there
            "same-rq-pull" => (vec![], Some("off")),
            "shared-runq" => (vec![], Some("seed")),
            // it overrides a design asked for
            "no-shared-runq" => (vec!["--shared-runq=shard"], None),
            "overload-scan-us" => (vec![], Some("500")),
            "gb-parent" => (vec![], Some("sim")),
            "gb-partitions" => (gb, Some("0-3;4-15")),
            "gb-period-ms" => (gb, Some("50")),
            "no-group-balancer" => (gb, None),
            "cpu-capacity" => (vec![], Some("0-7:512")),
            "slice-us" => (vec![], Some("3000")),
            "timeout-ms" => (vec![], Some("5000")),
            "debug-drop-comm" => (vec![], Some("victim")),
            "stats" => (vec![], Some("0")),
            "stats-file" => (vec![], Some("/tmp/stats.json")),
            "monitor" => (vec![], Some("1")),
            "exit-dump-len" => (vec![], Some("65536")),
            _ => (vec![], None),
        }
    }

    /// Walks scx_mosaic's flags as clap lists them. Every flag that changes
    /// what the BPF side runs with (.rodata, the ops table) or the group
    /// balancer must be accepted by the simulator's parser and change what
    /// it loads. Runtime-only flags (RUNTIME_ONLY_FLAGS: --stats,
    /// --stats-file, --monitor, --help-stats, --bpf-stats, --exit-dump-len,
    /// --verbose) are excluded: they only print, measure or read stats in the
    /// running scx_mosaic, or size the kernel's dump at an ejection, so they
    /// must change none of its settings, and the simulator refuses them.
    /// --help and --version are clap's, not listed by Opts::command().
    #[test]
    fn every_flag_that_changes_bpf_settings_reaches_the_simulator() {
        let machine = || Machine::preset("16cpu").unwrap();
        let argv =
            |flags: &[String]| std::iter::once("scx_mosaic".to_string()).chain(flags.to_vec());
        let mut checked = 0;
        for arg in Opts::command().get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if matches!(arg.get_action(), ArgAction::Help | ArgAction::Version) {
                continue;
            }
            let (needs, value) = sample(long);
            let base: Vec<String> = needs.iter().map(|s| s.to_string()).collect();
            let mut with = base.clone();
            with.push(match (arg.get_action(), value) {
                (ArgAction::SetTrue | ArgAction::Count, None) => format!("--{long}"),
                (ArgAction::Set, Some(v)) => format!("--{long}={v}"),
                (action, _) => panic!("--{long} ({action:?}) is new: add a sample value above"),
            });
            let runtime_only = RUNTIME_ONLY_FLAGS.iter().any(|(f, _)| *f == long);
            if runtime_only {
                // the scheduler's own settings do not move...
                let plan = |flags: &[String]| {
                    let opts = Opts::try_parse_from(argv(flags)).unwrap();
                    format!("{:?}", LoadPlan::new(&opts, machine().topo).unwrap())
                };
                assert!(
                    plan(&base) == plan(&with),
                    "--{long} is listed runtime-only but changes scx_mosaic's settings"
                );
                // ...and the simulator says so
                let err = parse_sched_args(&with).unwrap_err().to_string();
                assert!(err.contains("runtime-only"), "--{long}: {err}");
            } else {
                let loaded = |flags: &[String]| {
                    let opts = parse_sched_args(flags)
                        .unwrap_or_else(|e| panic!("the simulator refuses {flags:?}: {e:#}"));
                    format!("{:?}", prepare(&mut machine(), &opts).unwrap())
                };
                assert!(
                    loaded(&base) != loaded(&with),
                    "--{long} changes nothing the simulator loads: model it, \
                     or list it in RUNTIME_ONLY_FLAGS if the BPF side never sees it"
                );
            }
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} flags");
    }

    /// Every name Tunables::by_name gives is a global of the compiled
    /// scheduler, with room for its elements.
    #[test]
    fn every_tunable_is_a_global_of_the_native_scheduler() {
        let mut m = Machine::preset("epyc-9654x2-smt").unwrap();
        let opts = parse_sched_args(&["--gb-parent=sim".into()]).unwrap();
        let loaded = prepare(&mut m, &opts).unwrap();
        for (name, values) in loaded.tunables.by_name() {
            let (size, elem) = find(name).unwrap_or_else(|| panic!("no global {name}"));
            assert!(
                values.len() * elem <= size,
                "{name}: {} elements",
                values.len()
            );
        }
    }

    #[test]
    fn sched_args_parse_as_scx_mosaic_parses_flags() {
        let args =
            |a: &[&str]| parse_sched_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let o = args(&["--shard-size 2", "--slice-us=300", "--no-cgroup-weights"]).unwrap();
        assert_eq!((o.shard_size, o.slice_us), (Some(2), 300));
        assert!(o.no_cgroup_weights);
        assert_eq!(o.overload_scan_us, 10_000, "clap's default");
        let o = args(&["--shard-size", "2", "--shard-size=3"]).unwrap();
        assert_eq!(o.shard_size, Some(3), "the last one wins");
        for (bad, why) in [
            ("--no-such-thing", "unexpected argument '--no-such-thing'"),
            ("--slice-us=50", "50 is not in 100..=1000000"),
            ("--stats-file=/x", "--stats-file is runtime-only"),
            ("--help", "only print"),
        ] {
            let err = args(&[bad]).unwrap_err().to_string();
            assert!(err.contains(why) && !err.contains('\n'), "{bad}: {err}");
        }
    }
}
