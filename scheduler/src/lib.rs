//! scx_mosaic as a library: the options, the topology and everything the
//! scheduler binary (main.rs) loads and reports with. mosaic-sim uses it too,
//! so that both turn the same options into the same BPF settings.

pub mod bpf_intf;
pub mod bpf_skel;
pub mod config;
pub mod cpulist;
pub mod group;
pub mod limits;
pub mod opts;
pub mod output;
pub mod stats;
pub mod stats_server;
pub mod topology;
pub mod tunables;
pub mod warn;

pub use opts::Opts;

/// `--version`: the crate version, the last git commit that changed the
/// scheduler (when built from a checkout) and the target, as the scx crates
/// print theirs.
pub static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let sha = env!("MOSAIC_GIT_SHA");
    let commit = if sha.is_empty() {
        String::new()
    } else {
        format!("-g{sha}")
    };
    format!(
        "{}{commit} {}",
        env!("CARGO_PKG_VERSION"),
        env!("MOSAIC_TARGET")
    )
});
