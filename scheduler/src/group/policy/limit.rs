//! More cgroups than the BPF maps hold: which ones the balancer tracks.
//!
//! group_prefs and group_runtime (group.bpf.c) hold MAX_GROUPS cgroups each.
//! A container host may have more below --gb-parent; then the balancer
//! tracks the busiest (their runtime over the last ranking interval: the
//! tracked groups' from their full account, the others' from BPF's note of
//! the unregistered cgroups that ran lately) and skips the rest, which BPF
//! neither accounts nor binds: their tasks run as any task outside the
//! balanced tree does.
//! Between two rankings a group keeps its place; cgroups that appear take
//! the places free.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// Which live cgroups are tracked and which are skipped.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Selection {
    /// The cgroups to track (at most the limit).
    pub tracked: BTreeSet<u64>,
    /// The rest, busiest first.
    pub skipped: Vec<u64>,
}

/// The @limit busiest of the cgroups of @loads (cgroup id -> its load, any
/// unit); on equal loads the ones @tracked already come first (no churn
/// among idle groups), then the lower id.
pub fn select_largest(
    loads: &BTreeMap<u64, u64>,
    tracked: &BTreeSet<u64>,
    limit: usize,
) -> Selection {
    let mut order: Vec<u64> = loads.keys().copied().collect();
    order.sort_by_key(|id| (Reverse(loads[id]), !tracked.contains(id), *id));
    let skipped = order.split_off(limit.min(order.len()));
    Selection {
        tracked: order.into_iter().collect(),
        skipped,
    }
}

/// Between two rankings: the groups @tracked still in @live keep their
/// places, and cgroups new in @live take the free ones, lowest id first.
pub fn keep_and_fill(live: &BTreeSet<u64>, tracked: &BTreeSet<u64>, limit: usize) -> Selection {
    let mut keep: BTreeSet<u64> = tracked.intersection(live).copied().collect();
    let mut skipped = Vec::new();
    for &id in live.difference(tracked) {
        if keep.len() < limit {
            keep.insert(id);
        } else {
            skipped.push(id);
        }
    }
    // more kept than the limit (it shrank): drop the highest ids
    while keep.len() > limit {
        let last = keep.pop_last().unwrap();
        skipped.push(last);
    }
    Selection {
        tracked: keep,
        skipped,
    }
}

/// Loads over a ranking interval: the growth of each cgroup's runtime
/// from @before to @now (a cgroup new since then: all of it).
pub fn growth(now: &BTreeMap<u64, u64>, before: &BTreeMap<u64, u64>) -> BTreeMap<u64, u64> {
    now.iter()
        .map(|(&id, &u)| (id, u.saturating_sub(before.get(&id).copied().unwrap_or(0))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[u64]) -> BTreeSet<u64> {
        ids.iter().copied().collect()
    }

    #[test]
    fn past_the_limit_the_busiest_are_tracked_and_the_rest_named() {
        // 10 cgroups, room for 4: 7 and 3 are busy, 9 a little, the rest idle
        let mut loads: BTreeMap<u64, u64> = (1..=10).map(|id| (id, 0)).collect();
        loads.insert(7, 5_000);
        loads.insert(3, 9_000);
        loads.insert(9, 10);
        let s = select_largest(&loads, &set(&[]), 4);
        assert_eq!(s.tracked, set(&[1, 3, 7, 9]));
        // skipped: busiest first, then by id
        assert_eq!(s.skipped, [2, 4, 5, 6, 8, 10]);
        // idle groups already tracked keep their places over idle new ones
        let s = select_largest(&loads, &set(&[3, 7, 9, 6]), 4);
        assert_eq!(s.tracked, set(&[3, 6, 7, 9]));
        // a busy group not tracked displaces an idle tracked one
        loads.insert(10, 100);
        let s = select_largest(&loads, &set(&[3, 7, 9, 6]), 4);
        assert_eq!(s.tracked, set(&[3, 7, 9, 10]));
        assert_eq!(s.skipped[0], 6);
        // under the limit: all tracked, none skipped
        let s = select_largest(&loads, &set(&[]), 20);
        assert_eq!((s.tracked.len(), s.skipped.len()), (10, 0));
    }

    #[test]
    fn between_rankings_tracked_groups_stay_and_new_ones_fill_free_places() {
        let s = keep_and_fill(&set(&[1, 2, 5, 6, 7]), &set(&[2, 3, 6]), 4);
        // 3 is gone; 2 and 6 stay; 1 and 5 take the free places; 7 waits
        assert_eq!(s.tracked, set(&[1, 2, 5, 6]));
        assert_eq!(s.skipped, [7]);
        let s = keep_and_fill(&set(&[1, 2, 3]), &set(&[1, 2, 3]), 2);
        assert_eq!((s.tracked, s.skipped), (set(&[1, 2]), vec![3]));
    }

    #[test]
    fn the_load_is_the_runtime_since_the_last_ranking() {
        let now = BTreeMap::from([(1, 1000), (2, 700), (3, 200)]);
        let before = BTreeMap::from([(1, 400), (2, 900)]);
        // 2's runtime fell (its account moved between BPF maps): none
        assert_eq!(
            growth(&now, &before),
            BTreeMap::from([(1, 600), (2, 0), (3, 200)])
        );
    }
}
