//! The partition model: --gb-partitions parsed into the CPUs of each
//! partition (the topology's LLCs, L2s or nodes, or explicit lists), each
//! partition's capacity, each CPU's partition for BPF, and the group_prefs
//! value that carries a group's partition to BPF.
//!
//! group.rs provides `MAX_PARTS` (intf.h's MAX_PARTS).

use crate::cpulist;
use crate::group::MAX_PARTS;
use crate::topology::Topology;
use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;

/// Parses --gb-partitions: llc, l2, node, or explicit CPU lists "0-3;4-7".
pub fn parse_partitions(spec: &str, topo: &Topology) -> Result<Vec<Vec<usize>>> {
    let quoted = cpulist::quote(spec);
    let parts: Vec<Vec<usize>> = match spec.trim() {
        "llc" => topo.llcs.clone(),
        "l2" => topo.l2s.clone(),
        "node" => topo
            .nodes
            .iter()
            .map(|&n| {
                topo.cpus
                    .iter()
                    .filter(|c| c.node == n)
                    .map(|c| c.id)
                    .collect()
            })
            .filter(|v: &Vec<usize>| !v.is_empty())
            .collect(),
        _ => {
            let mut lists: Vec<&str> = spec.split(';').collect();
            if lists.len() > 1 && lists.last().is_some_and(|l| l.trim().is_empty()) {
                lists.pop(); // a trailing ';' as in the seed's "0-15;16-31;"
            }
            let mut parts = Vec::new();
            for (i, text) in lists.into_iter().enumerate() {
                let cpus = cpulist::parse(text)
                    .with_context(|| format!("bad --gb-partitions {quoted}"))?;
                if cpus.is_empty() {
                    bail!("bad --gb-partitions {quoted}: partition {i} is empty");
                }
                if let Some(c) = cpus.iter().find(|&&c| topo.cpu(c).is_none()) {
                    bail!("bad --gb-partitions {quoted}: CPU {c} is not an online CPU");
                }
                parts.push(cpus);
            }
            parts
        }
    };
    let mut seen = BTreeSet::new();
    for cpus in &parts {
        if let Some(c) = cpus.iter().find(|&&c| !seen.insert(c)) {
            bail!("bad --gb-partitions {quoted}: CPU {c} is in two partitions");
        }
    }
    if parts.is_empty() {
        bail!("bad --gb-partitions {quoted}: no partition");
    }
    if parts.len() > MAX_PARTS {
        bail!(
            "--gb-partitions {quoted}: {} partitions, at most {MAX_PARTS}",
            parts.len()
        );
    }
    Ok(parts)
}

/// Partition of each CPU id below @nr_cpu_ids, -1 for none.
pub fn cpu_parts(partitions: &[Vec<usize>], nr_cpu_ids: usize) -> Vec<i32> {
    let mut parts = vec![-1; nr_cpu_ids];
    for (i, cpus) in partitions.iter().enumerate() {
        for &c in cpus {
            parts[c] = i as i32;
        }
    }
    parts
}

/// Capacity of each partition in CPUs (1.0 = one CPU of capacity 1024).
pub fn capacities(partitions: &[Vec<usize>], topo: &Topology) -> Vec<f64> {
    partitions
        .iter()
        .map(|cpus| {
            cpus.iter()
                .filter_map(|&c| topo.cpu(c))
                .map(|x| x.capacity as f64 / 1024.0)
                .sum()
        })
        .collect()
}

/// The group_prefs value for a group in @part (None: registered, not
/// settled yet): struct group_pref (group.bpf.c), s32 part (-1: none), pad.
pub fn pref_value(part: Option<usize>) -> [u8; 8] {
    let mut value = [0u8; 8];
    value[..4].copy_from_slice(&part.map_or(-1, |p| p as i32).to_ne_bytes());
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::policy::tests::topo;
    use proptest::prelude::*;

    #[test]
    fn partitions_from_topology_or_lists() {
        let t = topo();
        assert_eq!(
            parse_partitions("llc", &t).unwrap(),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        assert_eq!(parse_partitions("node", &t).unwrap().len(), 2);
        assert_eq!(parse_partitions("l2", &t).unwrap().len(), 4);
        assert_eq!(
            parse_partitions("0-1;2-7", &t).unwrap(),
            vec![vec![0, 1], (2..8).collect()]
        );
        assert_eq!(parse_partitions("0-3;4-7;", &t).unwrap().len(), 2);
        assert_eq!(parse_partitions(" node ", &t).unwrap().len(), 2);
        let parts = parse_partitions("0-1;4-7", &t).unwrap();
        assert_eq!(cpu_parts(&parts, 9), vec![0, 0, -1, -1, 1, 1, 1, 1, -1]);
        assert_eq!(capacities(&parts, &t), vec![2.0, 4.0]);
    }

    #[test]
    fn bad_partitions_are_refused() {
        let t = topo();
        for (bad, why) in [
            ("0-3;3-7", "in two partitions"),
            ("0-3;;4-7", "is empty"),
            ("0-3;4-9", "not an online CPU"),
            ("0-3;x", "bad --gb-partitions"),
            ("numa", "bad --gb-partitions"),
            (";", "is empty"),
            ("", "is empty"),
            ("0-3;4-7;;", "is empty"),
        ] {
            let err = format!("{:#}", parse_partitions(bad, &t).unwrap_err());
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn group_prefs_values_are_struct_group_pref() {
        assert_eq!(pref_value(None)[..4], (-1i32).to_ne_bytes());
        assert_eq!(pref_value(Some(3))[..4], 3i32.to_ne_bytes());
        assert_eq!(pref_value(Some(3))[4..], [0; 4]);
    }

    /// The 8-CPU topology of these tests, built once for the property tests.
    fn shared_topo() -> &'static Topology {
        static TOPO: std::sync::OnceLock<Topology> = std::sync::OnceLock::new();
        TOPO.get_or_init(topo)
    }

    proptest! {
        #[test]
        fn partition_specs_never_panic_and_errors_are_one_line(
            spec in "\\PC{0,30}|[0-9;, -]{0,24}|(llc|l2|node)[ ;]{0,2}"
        ) {
            if let Err(e) = parse_partitions(&spec, shared_topo()) {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("--gb-partitions"), "{msg}");
                prop_assert!(!msg.contains('\n'), "{msg:?}");
            }
        }

        /// Disjoint CPU sets, formatted as lists: parsed back the same.
        #[test]
        fn partition_lists_round_trip(
            owner in prop::collection::vec(prop::option::of(0usize..4), 8),
            trailing in any::<bool>(),
        ) {
            let mut parts = vec![Vec::new(); 4];
            for (cpu, o) in owner.iter().enumerate() {
                if let Some(p) = o {
                    parts[*p].push(cpu);
                }
            }
            parts.retain(|p| !p.is_empty());
            prop_assume!(!parts.is_empty());
            let lists: Vec<String> = parts.iter().map(|p| cpulist::format(p)).collect();
            let spec = lists.join(";") + if trailing { ";" } else { "" };
            prop_assert_eq!(parse_partitions(&spec, shared_topo()).unwrap(), parts);
        }
    }
}
