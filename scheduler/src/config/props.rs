//! Property tests of the parsers of user input, besides config.rs's own:
//! CPU lists (cpulist.rs) and --cpu-capacity (topology.rs). They live here,
//! in the scheduler crate only, because mosaic-sim compiles cpulist.rs and
//! topology.rs too, without proptest; group.rs's are in its own tests.

use crate::cpulist;
use crate::topology::tests::fake_sysfs;
use crate::topology::Topology;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

/// A fake machine of 8 CPUs (4 per LLC, SMT pairs), read from a fake sysfs
/// once: the property tests clone it for each case.
fn topo() -> Topology {
    static TOPO: OnceLock<Topology> = OnceLock::new();
    TOPO.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        fake_sysfs(dir.path(), 8, 4, true, 1);
        Topology::from_root(dir.path()).unwrap()
    })
    .clone()
}

/// A CPU set and the list text for it, ranges shuffled and overlapping.
fn messy_list() -> impl Strategy<Value = (BTreeSet<usize>, String)> {
    prop::collection::vec((0usize..300, 0usize..20, " ?", " ?"), 1..12).prop_map(|ranges| {
        let mut set = BTreeSet::new();
        let mut parts = Vec::new();
        for (lo, len, pre, post) in ranges {
            set.extend(lo..=lo + len);
            parts.push(match len {
                0 => format!("{pre}{lo}{post}"),
                _ => format!("{pre}{lo}-{}{post}", lo + len),
            });
        }
        (set, parts.join(","))
    })
}

proptest! {
    #[test]
    fn cpu_lists_never_panic_and_errors_are_one_line(text in "\\PC{0,40}|[0-9, -]{0,40}") {
        if let Err(e) = cpulist::parse(&text) {
            let msg = format!("{e:#}");
            prop_assert!(msg.starts_with("bad CPU list"), "{msg}");
            prop_assert!(!msg.contains('\n'), "{msg:?}");
        }
    }

    #[test]
    fn cpu_lists_parse_to_the_union_of_their_ranges((set, text) in messy_list()) {
        prop_assert_eq!(cpulist::parse(&text).unwrap(), set.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn cpu_lists_format_then_parse_is_identity(set in prop::collection::btree_set(0usize..5000, 0..64)) {
        let cpus: Vec<usize> = set.into_iter().collect();
        prop_assert_eq!(cpulist::parse(&cpulist::format(&cpus)).unwrap(), cpus);
    }
}

proptest! {
    #[test]
    fn capacity_specs_never_panic_and_errors_are_one_line(
        spec in "\\PC{0,30}|[0-9:, -]{0,24}"
    ) {
        let mut t = topo();
        if let Err(e) = t.set_capacities(&spec) {
            let msg = format!("{e:#}");
            prop_assert!(msg.starts_with("bad --cpu-capacity"), "{msg}");
            prop_assert!(!msg.contains('\n'), "{msg:?}");
            prop_assert!(t.cpus.iter().all(|c| c.capacity == 1024), "changed on error");
        }
    }

    /// Capacities given per CPU, grouped into CPU lists: applied as given.
    #[test]
    fn capacity_lists_round_trip(
        caps in prop::collection::vec(prop::option::of(prop_oneof![1u32..=1024, Just(446)]), 8),
    ) {
        let mut by_cap: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (cpu, cap) in caps.iter().enumerate() {
            if let Some(cap) = cap {
                by_cap.entry(*cap).or_default().push(cpu);
            }
        }
        prop_assume!(!by_cap.is_empty());
        // a CPU list with gaps ("0,2") is one entry per range ("0:5,2:5")
        let spec: Vec<String> = by_cap
            .iter()
            .flat_map(|(cap, cpus)| {
                let list = cpulist::format(cpus);
                list.split(',').map(|r| format!("{r}:{cap}")).collect::<Vec<_>>()
            })
            .collect();
        let mut t = topo();
        t.set_capacities(&spec.join(",")).unwrap();
        for (cpu, cap) in caps.iter().enumerate() {
            prop_assert_eq!(t.cpu(cpu).unwrap().capacity, cap.unwrap_or(1024));
        }
    }
}
