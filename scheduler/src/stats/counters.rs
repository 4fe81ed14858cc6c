//! The counters' model: Counters holds each counter of enum mosaic_stat
//! (summed over CPUs, or the maximum for a maximum: StatDef::is_max), per
//! CPU too, the enqueues per shard and the runnable-wait histogram; totals
//! across restarts (add), an LLC's share (on_cpus) and an interval (delta).

use super::{StatDef, NR_STATS, STATS};

/// Counter totals: the mosaic_stat counters and the per-shard enqueues.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Each counter over all CPUs, by counter id.
    pub stats: Vec<u64>,
    pub per_shard: Vec<u64>,
    /// Each counter's value on each CPU (by counter id, then CPU id).
    pub per_cpu: Vec<Vec<u64>>,
    /// Runnable waits by log2 of microseconds (wait.bpf.c), summed over CPUs.
    pub wait_hist: Vec<u64>,
    /// Who waited longest (the task of STAT_WAIT_MAX_US), if anyone waited.
    pub longest_wait: Option<LongestWait>,
}

/// A task's runnable wait: the longest one, with who it was.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LongestWait {
    pub us: u64,
    pub pid: i32,
    pub comm: String,
}

impl LongestWait {
    /// The longer of @a and @b (either may be absent).
    pub fn longer(a: Option<LongestWait>, b: Option<LongestWait>) -> Option<LongestWait> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.us > a.us { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// "comm[pid]", how the report names the task.
    pub fn task(&self) -> String {
        format!("{}[{}]", self.comm, self.pid)
    }
}

/// Counter @stat over several CPUs, or restarts: the sum, or for a maximum
/// the largest.
fn combine(stat: &StatDef, values: impl IntoIterator<Item = u64>) -> u64 {
    let values = values.into_iter();
    match stat.is_max {
        true => values.max().unwrap_or(0),
        false => values.sum(),
    }
}

/// The definition of counter @id (an enum mosaic_stat value).
fn def(id: u32) -> &'static StatDef {
    &STATS[id as usize]
}

/// Adds @b into @a element-wise, growing @a as needed.
fn add_into(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Element-wise @a - @b (saturating), for interval histograms.
pub(crate) fn hist_delta(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter()
        .enumerate()
        .map(|(i, x)| x.saturating_sub(b.get(i).copied().unwrap_or(0)))
        .collect()
}

/// The wait below which a fraction @q of the waits in log2 histogram @hist
/// fell, in microseconds: the upper edge of the bucket holding that rank
/// (bucket b holds [2^b, 2^(b+1)) us); 0 without waits.
pub fn wait_percentile_us(hist: &[u64], q: f64) -> u64 {
    let total: u64 = hist.iter().sum();
    if total == 0 {
        return 0;
    }
    let rank = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (b, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return 1u64 << (b + 1).min(63);
        }
    }
    1u64 << hist.len().min(63)
}

impl Counters {
    /// Counters from each counter's value per CPU (@per_cpu, by counter id),
    /// the enqueues per shard and the wait histogram.
    pub fn from_per_cpu(per_cpu: Vec<Vec<u64>>, per_shard: Vec<u64>, wait_hist: Vec<u64>) -> Self {
        let stats = STATS
            .iter()
            .map(|s| combine(s, per_cpu.get(s.id).into_iter().flatten().copied()))
            .collect();
        Counters {
            stats,
            per_shard,
            per_cpu,
            wait_hist,
            longest_wait: None,
        }
    }

    /// The value of counter @id (bpf_intf::mosaic_stat_STAT_*).
    pub fn stat(&self, id: u32) -> u64 {
        self.stats.get(id as usize).copied().unwrap_or(0)
    }

    /// Adds @other into self (totals across scheduler restarts; maxima
    /// stay maxima).
    pub fn add(&mut self, other: &Counters) {
        self.stats.resize(NR_STATS, 0);
        self.per_cpu.resize(NR_STATS, Vec::new());
        for s in &STATS {
            let b = other.stats.get(s.id).copied().unwrap_or(0);
            self.stats[s.id] = combine(s, [self.stats[s.id], b]);
            let (mine, theirs) = (&mut self.per_cpu[s.id], other.per_cpu.get(s.id));
            let theirs = theirs.map_or(&[][..], |v| &v[..]);
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), 0);
            }
            for (x, y) in mine.iter_mut().zip(theirs) {
                *x = combine(s, [*x, *y]);
            }
        }
        add_into(&mut self.per_shard, &other.per_shard);
        add_into(&mut self.wait_hist, &other.wait_hist);
        self.longest_wait =
            LongestWait::longer(self.longest_wait.take(), other.longest_wait.clone());
    }

    /// What happened since @prev, an earlier reading of the same counters:
    /// each sum's increase, each maximum as it is now (the run's longest, and
    /// its task), and the interval's enqueues per shard and waits.
    pub fn delta(&self, prev: &Counters) -> Counters {
        let since = |s: &StatDef, now: u64, before: u64| match s.is_max {
            true => now,
            false => now.saturating_sub(before),
        };
        let stats = STATS
            .iter()
            .map(|s| since(s, self.stat(s.id as u32), prev.stat(s.id as u32)))
            .collect();
        let per_cpu = STATS
            .iter()
            .zip(&self.per_cpu)
            .map(|(s, now)| {
                let before = prev.per_cpu.get(s.id).map_or(&[][..], |v| &v[..]);
                let before = |c: usize| before.get(c).copied().unwrap_or(0);
                now.iter()
                    .enumerate()
                    .map(|(c, &v)| since(s, v, before(c)))
                    .collect()
            })
            .collect();
        Counters {
            stats,
            per_shard: hist_delta(&self.per_shard, &prev.per_shard),
            per_cpu,
            wait_hist: hist_delta(&self.wait_hist, &prev.wait_hist),
            longest_wait: self.longest_wait.clone(),
        }
    }

    /// Counter @id over the CPUs @cpus.
    pub fn on_cpus(&self, id: u32, cpus: &[usize]) -> u64 {
        let per_cpu = self.per_cpu.get(id as usize).map_or(&[][..], |v| &v[..]);
        combine(
            def(id),
            cpus.iter().filter_map(|&c| per_cpu.get(c).copied()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf_intf;

    #[test]
    fn every_counter_has_one_name() {
        let ids: Vec<usize> = STATS.iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            (0..bpf_intf::mosaic_stat_NR_MOSAIC_STATS as usize).collect::<Vec<_>>()
        );
        let mut names: Vec<&str> = STATS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), STATS.len());
        // the table and bindgen's constants agree
        let wait_max = def(bpf_intf::mosaic_stat_STAT_WAIT_MAX_US);
        assert_eq!((wait_max.name, wait_max.is_max), ("wait_max_us", true));
        let group_tick = def(bpf_intf::mosaic_stat_STAT_GROUP_TICK_MOVES);
        assert_eq!(group_tick.name, "group_tick_moves");
        let names: Vec<&str> = STATS.iter().map(|s| s.name).collect();
        assert_eq!(names, super::super::STAT_NAMES);
    }

    #[test]
    fn only_the_max_counters_are_maxima_and_all_have_descriptions() {
        let maxima: Vec<&str> = STATS.iter().filter(|s| s.is_max).map(|s| s.name).collect();
        assert_eq!(
            maxima,
            [
                "cpu_queue_max",
                "idle_waiting_max_us",
                "bw_overdraft_max_us",
                "bw_parked_max_us",
                "wait_max_us"
            ]
        );
        for s in &STATS {
            assert!(s.desc.len() > 5, "{}: {:?}", s.name, s.desc);
        }
        let steal = def(bpf_intf::mosaic_stat_STAT_STEAL_SCANS_SKIPPED);
        assert_eq!(
            steal.desc,
            "cross-LLC steal scans skipped: the overload flag was clear"
        );
        // a comment wrapped over lines is one description
        let remote_rq = def(bpf_intf::mosaic_stat_STAT_SHARD_PULLS_REMOTE_RQ);
        assert_eq!(
            remote_rq.desc,
            "own-shard pull (--same-rq-pull) took the head off another CPU's runqueue: \
             none of its own in reach"
        );
    }

    #[test]
    fn totals_add_up_across_restarts() {
        let n = NR_STATS;
        let mut a = Counters {
            stats: vec![1; n],
            per_shard: vec![2, 3],
            ..Default::default()
        };
        let b = Counters {
            stats: vec![5; n],
            per_shard: vec![1, 1, 7],
            ..Default::default()
        };
        a.add(&b);
        assert_eq!(a.stat(bpf_intf::mosaic_stat_STAT_SHARD_ENQUEUES), 6);
        assert_eq!(a.per_shard, vec![3, 4, 7]);
        assert_eq!(a.stat(bpf_intf::mosaic_stat_STAT_DIRECT_DISPATCHES), 6);
        // a maximum stays the larger of the two
        assert_eq!(a.stat(bpf_intf::mosaic_stat_STAT_WAIT_MAX_US), 5);
    }

    #[test]
    fn the_longest_wait_keeps_its_task_across_restarts() {
        let wait = |us, pid, comm: &str| {
            Some(LongestWait {
                us,
                pid,
                comm: comm.into(),
            })
        };
        let with = |longest_wait| Counters {
            longest_wait,
            ..Default::default()
        };
        let mut a = with(wait(900, 7, "kworker/1:2"));
        a.add(&with(None));
        a.add(&with(wait(400, 8, "hackbench")));
        assert_eq!(a.longest_wait, wait(900, 7, "kworker/1:2"));
        a.add(&with(wait(1200, 9, "stress-ng")));
        assert_eq!(a.longest_wait.as_ref().unwrap().task(), "stress-ng[9]");
        let mut b = with(None);
        b.add(&with(wait(5, 1, "init")));
        assert_eq!(b.longest_wait, wait(5, 1, "init"));
        // an interval reports the run's longest, as the maximum counter
        assert_eq!(a.delta(&b).longest_wait, a.longest_wait);
    }

    #[test]
    fn a_delta_subtracts_sums_and_keeps_maxima() {
        let (kicks, wait_max) = (
            bpf_intf::mosaic_stat_STAT_KICKS as usize,
            bpf_intf::mosaic_stat_STAT_WAIT_MAX_US as usize,
        );
        let reading = |k: u64, w: u64| {
            let mut per_cpu = vec![vec![0, 0]; NR_STATS];
            per_cpu[kicks] = vec![k, 2 * k];
            per_cpu[wait_max] = vec![w, 1];
            Counters::from_per_cpu(per_cpu, vec![k], vec![k, 1])
        };
        let (before, now) = (reading(10, 700), reading(25, 300));
        assert_eq!((before.stats[kicks], before.stats[wait_max]), (30, 700));
        let d = now.delta(&before);
        assert_eq!((d.stats[kicks], d.stats[wait_max]), (45, 300));
        assert_eq!(d.per_cpu[kicks], [15, 30]);
        assert_eq!(d.on_cpus(kicks as u32, &[1]), 30);
        assert_eq!((d.per_shard, d.wait_hist), (vec![15], vec![15, 0]));
    }

    #[test]
    fn wait_percentiles_are_bucket_upper_edges() {
        // 90 waits under 2 us, 9 in [8, 16) us, 1 in [1024, 2048) us
        let mut hist = vec![0u64; 24];
        hist[0] = 90;
        hist[3] = 9;
        hist[10] = 1;
        assert_eq!(wait_percentile_us(&hist, 0.5), 2);
        assert_eq!(wait_percentile_us(&hist, 0.9), 2);
        assert_eq!(wait_percentile_us(&hist, 0.99), 16);
        assert_eq!(wait_percentile_us(&hist, 0.999), 2048);
        assert_eq!(wait_percentile_us(&[0; 24], 0.99), 0);
        assert_eq!(hist_delta(&[5, 7], &[2]), vec![3, 7]);
    }
}
