//! mosaic-sim: runs scx_mosaic's own BPF C (compiled natively, csrc/) on
//! modelled machines under a deterministic discrete-event engine.
//!
//! Map of the crate: `engine` (events, CPUs, DSQs, the kernel's sched_ext
//! rules; engine/mod.rs lists its parts), `kfuncs` + `maps` + `ffi` (the
//! shim the scheduler links against; kfuncs reach the engine through
//! engine/context.rs),
//! `sched` (flags -> scx_mosaic's tunables, the loader's part), `machine` (presets),
//! `cost` (every cost, one place), `workload` (task behaviour), `group` (the
//! group balancer's settle loop around group.rs's policy), `cli`,
//! `report` (the seed A/B report), `design` (its evidence for the
//! shared-runqueue default) and `trace` (--trace's Perfetto file).

// The kfuncs are FFI entry points taking the scheduler's raw pointers.
#![allow(clippy::not_unsafe_ptr_arg_deref, clippy::missing_safety_doc)]
#![allow(clippy::too_many_arguments, clippy::needless_range_loop)]

/// The scheduler's own topology (scx_mosaic's library).
pub use scx_mosaic::topology;

/// Constants and counter names generated from scheduler/src/bpf/intf.h.
pub mod intf {
    include!(concat!(env!("OUT_DIR"), "/intf.rs"));
}

pub mod cli;
pub mod cost;
pub mod design;
pub mod engine;
pub mod ffi;
pub mod fidelity;
pub mod group;
pub mod kfuncs;
pub mod machine;
pub mod maps;
pub mod report;
pub mod sched;
pub mod stats;
pub mod trace;
pub mod workload;
