//! The scheduler's counters and its report. The counters are enum
//! mosaic_stat of intf.h, their one definition: build.rs generates from it
//! the table below (StatDef per counter: id, JSON name, sum or maximum,
//! description; build/stat_table.rs, shared with mosaic-sim).
//!
//! - read.rs:     the BPF maps -> Counters, BPF programs' cost, cpu.max slots
//! - counters.rs: Counters, the model: totals, per-LLC shares, deltas
//! - metrics.rs:  Metrics, the report's shape (scx_stats, --stats-file)
//! - report.rs:   Counters -> Metrics and back
//! - show.rs:     the live lines and --help-stats

// StatDef, NR_STATS, STATS, STAT_NAMES and with_stats! (used by metrics.rs)
include!(concat!(env!("OUT_DIR"), "/stat_table.rs"));

mod counters;
mod metrics;
mod read;
mod report;
mod show;

pub use counters::{wait_percentile_us, Counters, LongestWait};
pub use metrics::{
    all_meta, BandwidthMetrics, BpfMetrics, CpuIds, ExitMetrics, Flag, GroupBalancerMetrics,
    GroupMetrics, LlcMetrics, MaybeIndex, Metrics, ProgMetrics,
};
pub use read::{bandwidth_limits, bpf_prog_costs, sum_percpu};
pub use report::{add_costs, ProgCosts};
pub use show::help_text;

// the generated table and bindgen's view of intf.h count the same counters
const _: () = assert!(NR_STATS == crate::bpf_intf::mosaic_stat_NR_MOSAIC_STATS as usize);
