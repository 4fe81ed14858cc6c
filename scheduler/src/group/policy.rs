//! The group balancer's policy (seed 004), free of libbpf and of any I/O, so
//! that it lives once: scx_mosaic's library has it as `group::policy`, and
//! mosaic-sim uses it from there (sim/src/group.rs). Both drive it with
//! plain inputs (the live cgroup ids, runtime totals per partition and per
//! group and partition, time in ns) and carry its one output, which cgroup
//! goes to which partition, to their BPF maps.
//!
//! The algorithm is the seed's try_to_settle(): a group's load is excluded
//! from the partitions it already runs in; partitions other than the group's
//! current one carry the load predicted by recent settles (decaying by half
//! every second, gone after ten); a settled group moves again only if that
//! does not worsen the load/capacity imbalance between the two partitions;
//! and a group's settle period doubles after each attempt (up to 10 s) so
//! that settled groups yield to the others. Settled groups are tried one
//! per period, round robin, and after a move the next one waits a period.
//!
//! One departure from the seed: groups never settled all settle in the same
//! period, one after the other (each seeing the load the previous ones are
//! predicted to bring), instead of one per period. The seed serialises
//! settles because they start from concurrent task work; here one thread
//! decides them in turn, and the prediction already keeps a batch from
//! crowding one partition. It matters when userspace is slow under load: on
//! the TCG test VM a period of 200 ms stretched to 1-3 s with 8 busy CPUs,
//! and a group settled first spent those seconds spread across partitions
//! next to a group not yet settled (no swap partner; test_group's
//! exclusivity 0.59-0.79 in failing runs).
//!
//! A second departure: the load a settled group still has outside its
//! partition counts in no partition for the others' decisions (its tasks move
//! in at their next tick). The seed's partition loads are PELT averages of a
//! few ms; ours are averages over a window (LOAD_WINDOW_NS, 1 s; it was two
//! periods), so a group settled a period ago still weighed on the partition
//! it was leaving, and in one of 20 runs of
//! test_group the second group followed the first into its partition (the
//! prediction, the first's load while it was starting, was too small to
//! outweigh it). A settled group deciding its own move sees its load where it
//! is.
//!
//! The parts, each in its own file:
//! - `partitions`: the partition model, --gb-partitions parsed into CPU
//!   sets, their capacities, each CPU's partition and the group_prefs value
//!   BPF reads;
//! - `settle`: one settle decision, the seed's try_to_settle() on plain
//!   loads (`decide`, `Decision`);
//! - `state`: the state across periods (`Policy`, and `Group` per cgroup):
//!   windowed loads, predicted loads, settle periods and the round robin.
//!
//! - `limit`: more cgroups than the BPF maps hold: which are tracked (the
//!   busiest) and which skipped.
//!
//! Each keeps its tests next to it; what they and group.rs's tests share is
//! in `tests` here.

mod limit;
mod partitions;
mod settle;
mod state;

pub use limit::{growth, keep_and_fill, select_largest, Selection};
pub use partitions::{capacities, cpu_parts, parse_partitions, pref_value};
pub use settle::{decide, Decision};
pub use state::{Group, Policy, PREDICT_HALF_LIFE_NS, SETTLE_PERIOD_MAX_NS};

#[cfg(test)]
pub mod tests {
    //! Fixtures of the balancer's tests (these files' and group.rs's).
    use crate::topology::tests::fake_sysfs;
    use crate::topology::Topology;

    /// 8 CPUs: 2 LLCs (and nodes) of 2 SMT cores of 2 threads.
    pub fn topo() -> Topology {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 8, 4, true, 2);
        Topology::from_root(dir.path()).unwrap()
    }
}
