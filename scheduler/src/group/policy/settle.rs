//! One settle decision: the seed's try_to_settle() on plain loads per
//! partition, deciding whether a group settles, moves to another partition
//! or stays. `state` keeps the loads it decides on and carries out what it
//! decides.

/// What try_to_settle() decided for one group.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Nothing to do (no load, already best, or a move would unbalance).
    Stay,
    /// First settle into this partition.
    Settle(usize),
    /// Move from the current partition to this one.
    Resettle(usize),
}

/// The seed's try_to_settle() on loads in CPUs (1.0 = one CPU busy).
/// @part_load: all tasks per partition; @group_load: this group per
/// partition; @predict: predicted load per partition; @cap: capacity per
/// partition; @allowed: per partition, whether it shares a CPU with the
/// group's effective cpuset (the seed settles in no other); @pref: the
/// group's partition, if settled. A group settled in a partition its
/// cpuset no longer reaches moves to the best allowed one.
pub fn decide(
    part_load: &[f64],
    group_load: &[f64],
    predict: &[f64],
    cap: &[f64],
    allowed: &[bool],
    pref: Option<usize>,
) -> Decision {
    let mut best: Option<(usize, f64)> = None;
    let (mut src_load, mut mgrt_load) = (0.0, 0.0);
    let pref = pref.map(|p| (p, allowed.get(p).copied().unwrap_or(true)));
    for i in 0..part_load.len() {
        if !allowed.get(i).copied().unwrap_or(true) {
            continue;
        }
        let mgrt = group_load[i];
        // load of the partition without this group's own tasks
        let mut load = (part_load[i] - mgrt).max(0.0);
        if pref.is_some_and(|(p, _)| p == i) {
            src_load = load + mgrt;
            mgrt_load = mgrt;
        } else {
            load += predict[i];
        }
        if best.is_none_or(|(_, min)| load < min) {
            best = Some((i, load));
        }
    }
    let total: f64 = group_load.iter().sum();
    let Some((dst, dst_load)) = best else {
        return Decision::Stay;
    };
    if total <= 0.0 {
        return Decision::Stay;
    }
    let dst_load = dst_load + group_load[dst];
    match pref {
        None => Decision::Settle(dst),
        Some((_, false)) => Decision::Resettle(dst),
        Some((src, _)) if src == dst => Decision::Stay,
        Some((src, _)) => {
            // src_load/src_cap vs dst_load/dst_cap must not get further apart
            let (src_cap, dst_cap) = (cap[src], cap[dst]);
            let before = (src_load * dst_cap - dst_load * src_cap).abs();
            let after = ((src_load - mgrt_load) * dst_cap - (dst_load + mgrt_load) * src_cap).abs();
            if after <= before {
                Decision::Resettle(dst)
            } else {
                Decision::Stay
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// decide() for a group whose cpuset reaches both partitions.
    fn anywhere(
        part: &[f64],
        group: &[f64],
        pred: &[f64],
        cap: &[f64],
        pref: Option<usize>,
    ) -> Decision {
        decide(part, group, pred, cap, &[true, true], pref)
    }

    #[test]
    fn first_settle_takes_the_least_loaded_partition_without_its_own_load() {
        // the group itself makes p0 busy: excluded, p0 still looks free
        assert_eq!(
            anywhere(&[2.0, 1.0], &[2.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], None),
            Decision::Settle(0)
        );
        // predicted load steers a second group away from a just-settled partition
        assert_eq!(
            anywhere(&[0.5, 0.5], &[0.5, 0.5], &[3.0, 0.0], &[4.0, 4.0], None),
            Decision::Settle(1)
        );
        // no load: nothing to settle
        assert_eq!(
            anywhere(&[1.0, 1.0], &[0.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], None),
            Decision::Stay
        );
    }

    #[test]
    fn resettle_only_when_it_does_not_worsen_the_imbalance() {
        // settled on a crowded p0 (group 1 CPU, others 3), p1 idle: move
        assert_eq!(
            anywhere(&[4.0, 0.0], &[1.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], Some(0)),
            Decision::Resettle(1)
        );
        // p1 is lighter but has a quarter of p0's capacity: moving 1.5 CPUs of
        // load there would leave load/capacity far more uneven, so it stays
        assert_eq!(
            anywhere(&[2.1, 0.5], &[1.5, 0.0], &[0.0, 0.0], &[4.0, 1.0], Some(0)),
            Decision::Stay
        );
        // already in the best partition
        assert_eq!(
            anywhere(&[1.0, 3.0], &[1.0, 0.0], &[0.0, 0.0], &[4.0, 4.0], Some(0)),
            Decision::Stay
        );
    }

    #[test]
    fn settles_only_where_its_cpuset_reaches() {
        // p0 is emptier, but the group's cpuset holds CPUs of p1 only
        assert_eq!(
            decide(
                &[0.0, 3.0],
                &[0.0, 1.0],
                &[0.0, 0.0],
                &[4.0, 4.0],
                &[false, true],
                None
            ),
            Decision::Settle(1)
        );
        // settled in p0, then its cpuset moved to p1's CPUs: it follows,
        // although that partition is the busier one
        assert_eq!(
            decide(
                &[1.0, 3.0],
                &[1.0, 0.0],
                &[0.0, 0.0],
                &[4.0, 4.0],
                &[false, true],
                Some(0)
            ),
            Decision::Resettle(1)
        );
        // a cpuset that reaches no partition: nothing to do
        assert_eq!(
            decide(
                &[1.0, 1.0],
                &[1.0, 0.0],
                &[0.0, 0.0],
                &[4.0, 4.0],
                &[false, false],
                None
            ),
            Decision::Stay
        );
    }
}
