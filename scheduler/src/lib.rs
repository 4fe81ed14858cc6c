//! scx_mosaic as a library: the options, the topology and everything the
//! scheduler binary (main.rs) loads and reports with. mosaic-sim uses it too,
//! so that both turn the same options into the same BPF settings.

pub mod bpf_intf;
pub mod bpf_skel;
pub mod config;
pub mod cpulist;
pub mod group;
pub mod opts;
pub mod stats;
pub mod stats_server;
pub mod topology;
pub mod tunables;

pub use opts::Opts;
