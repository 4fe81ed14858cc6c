//! Presentation: the live lines that --stats and --monitor print for an
//! interval (from typed Counters deltas), and --help-stats' text.

use super::metrics::{all_meta, Metrics};
use super::{wait_percentile_us, Counters};
use crate::bpf_intf as b;
use crate::output::escape;

/// cpu.max cgroups shown per interval, the longest throttled first.
const CPU_MAX_LINES: usize = 5;

/// @us as a short human figure: "850us", "12ms", "2.3s".
fn fmt_us(us: u64) -> String {
    match us {
        0..=999 => format!("{us}us"),
        1000..=999_999 => format!("{}ms", us / 1000),
        _ => format!("{:.1}s", us as f64 / 1e6),
    }
}

/// Counter @id of @delta per second of @secs.
fn rate(delta: &Counters, id: u32, secs: f64) -> f64 {
    delta.stat(id) as f64 / secs.max(1e-3)
}

impl Counters {
    /// The live line of an interval of @secs seconds, self being its delta
    /// (Counters::delta): where tasks went, per second.
    pub fn format(&self, secs: f64) -> String {
        let r = |id| rate(self, id, secs);
        format!(
            "direct {:>7.0}/s | shard enq {:>7.0}/s pull own {:>7.0}/s sibling {:>6.0}/s | \
             cpu-q {:>6.0}/s | kicks {:>6.0}/s | idle dispatch {:>6.0}/s",
            r(b::mosaic_stat_STAT_DIRECT_DISPATCHES),
            r(b::mosaic_stat_STAT_SHARD_ENQUEUES),
            r(b::mosaic_stat_STAT_SHARD_PULLS_LOCAL),
            r(b::mosaic_stat_STAT_SHARD_PULLS_SIBLING),
            r(b::mosaic_stat_STAT_CPU_ENQUEUES),
            r(b::mosaic_stat_STAT_KICKS),
            r(b::mosaic_stat_STAT_DISPATCH_EMPTY),
        )
    }
}

impl Metrics {
    /// What --stats and --monitor print for the interval since @prev: the
    /// rates, per LLC where there are several, and the balanced groups.
    pub fn interval_lines(&self, prev: &Metrics, secs: f64) -> Vec<String> {
        let delta = self.counters().delta(&prev.counters());
        let waits = &delta.wait_hist;
        let mut lines = vec![format!(
            "mosaic {:>7.1}s | {} | wait p50 {} p99 {} max {}{}",
            self.runtime_s,
            delta.format(secs),
            fmt_us(wait_percentile_us(waits, 0.5)),
            fmt_us(wait_percentile_us(waits, 0.99)),
            fmt_us(self.wait_max_us),
            match self.wait_max_task.as_str() {
                "" => String::new(),
                task => format!(" ({})", escape(task)),
            },
        )];
        if self.per_llc.len() > 1 {
            for (id, llc) in &self.per_llc {
                let before = prev.per_llc.get(id);
                let llc_counters = |stats| Counters {
                    stats,
                    ..Default::default()
                };
                let now = llc_counters(llc.counter_values());
                let delta = now.delta(&llc_counters(
                    before.map_or(Vec::new(), |l| l.counter_values()),
                ));
                let r = |id| rate(&delta, id, secs);
                let into = before.map_or(0, |l| l.enqueued_on_shards);
                lines.push(format!(
                    "mosaic llc{id:<3} | cpus {:<8} shard enq {:>7.0}/s pull own {:>7.0}/s \
                     sibling {:>6.0}/s | stolen {:>6.0}/s | idle dispatch {:>6.0}/s",
                    llc.cpus,
                    llc.enqueued_on_shards.saturating_sub(into) as f64 / secs.max(1e-3),
                    r(b::mosaic_stat_STAT_SHARD_PULLS_LOCAL),
                    r(b::mosaic_stat_STAT_SHARD_PULLS_SIBLING),
                    r(b::mosaic_stat_STAT_STEAL_HITS),
                    r(b::mosaic_stat_STAT_DISPATCH_EMPTY),
                ));
            }
        }
        for g in &self.group_balancer.groups {
            lines.push(format!(
                "mosaic group   | {} -> {} excl {:.2} settles {}",
                escape(&g.path),
                g.partition.0.map_or("-".into(), |p| format!("p{p}")),
                g.exclusivity,
                g.settles
            ));
        }
        if !self.cgroup_bandwidth.is_empty() || self.bw_limits_missed > 0 {
            lines.push(format!(
                "mosaic cpu.max | {} limits, {} throttled now, {} NOT enforced",
                self.cgroup_bandwidth.len(),
                self.cgroup_bandwidth
                    .iter()
                    .filter(|c| c.throttled.0)
                    .count(),
                self.bw_limits_missed,
            ));
        }
        // the cgroups throttled longest in the interval: a host has thousands
        let mut throttled: Vec<_> = self
            .cgroup_bandwidth
            .iter()
            .map(|c| {
                let before = prev
                    .cgroup_bandwidth
                    .iter()
                    .find(|b| b.cgroup_id == c.cgroup_id);
                let times = c
                    .throttles
                    .saturating_sub(before.map_or(0, |b| b.throttles));
                let ns = c
                    .throttled_ns
                    .saturating_sub(before.map_or(0, |b| b.throttled_ns));
                (ns, times, c)
            })
            .collect();
        throttled.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        for (ns, times, c) in throttled.into_iter().take(CPU_MAX_LINES) {
            lines.push(format!(
                "mosaic cpu.max | {} {}/{} us throttled {}x {:.0} ms{}",
                escape(&c.path),
                c.quota_us,
                c.period_us,
                times,
                ns as f64 / 1e6,
                if c.throttled.0 { " (now)" } else { "" }
            ));
        }
        lines
    }
}

/// --help-stats: every field of every struct, with its type and meaning.
pub fn help_text() -> String {
    let mut out = String::new();
    for m in all_meta() {
        let desc = m.attrs.desc.as_deref().unwrap_or("");
        out += &format!("[{}] {desc}\n", m.name);
        let types: Vec<String> = m.fields.values().map(|f| format!("({})", f.data)).collect();
        let width = m.fields.keys().map(|k| k.len()).max().unwrap_or(0);
        let ty_width = types.iter().map(|t| t.len()).max().unwrap_or(0);
        for ((name, f), ty) in m.fields.iter().zip(types) {
            let desc = f.attrs.desc.as_deref().unwrap_or("");
            out += &format!("  {name:width$} {ty:ty_width$} {desc}\n");
        }
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::report::tests::{distinct_counters, two_llcs};
    use super::super::{BandwidthMetrics, Flag, GroupMetrics, MaybeIndex, STAT_NAMES};
    use super::*;

    #[test]
    fn help_describes_every_counter_and_field() {
        let help = help_text();
        for name in STAT_NAMES {
            let line = help
                .lines()
                .find(|l| l.split_whitespace().next() == Some(*name));
            let line = line.unwrap_or_else(|| panic!("--help-stats misses {name}"));
            assert!(line.split(')').nth(1).unwrap().trim().len() > 10, "{line}");
        }
        for m in all_meta() {
            assert!(help.contains(&format!("[{}]", m.name)));
            for (name, f) in &m.fields {
                assert!(
                    f.attrs.desc.is_some(),
                    "{}.{name} has no description",
                    m.name
                );
            }
        }
    }

    #[test]
    fn interval_lines_show_rates_per_second_and_per_llc() {
        let (topo, layout) = two_llcs();
        let c = distinct_counters();
        let mut now = Metrics::new(&c, &topo, &layout);
        now.runtime_s = 3.0;
        let mut c0 = c.clone();
        c0.stats.iter_mut().for_each(|v| *v -= 100);
        c0.per_cpu.iter_mut().flatten().for_each(|v| *v = 0);
        c0.per_shard = vec![1, 1];
        let prev = Metrics::new(&c0, &topo, &layout);
        let lines = now.interval_lines(&prev, 2.0);
        assert_eq!(lines.len(), 3, "{lines:?}");
        // every counter moved by 100 in 2 s: 50/s
        assert!(
            lines[0].starts_with("mosaic     3.0s | direct      50/s"),
            "{}",
            lines[0]
        );
        assert!(lines[0].contains("kicks     50/s"), "{}", lines[0]);
        // LLC 1 (CPUs 2-3): enqueued 9 - 1 in 2 s; steal_hits (id 10) 11*3 + 11*4
        let hits = (b::mosaic_stat_STAT_STEAL_HITS as f64 + 1.0) * 7.0 / 2.0;
        assert!(
            lines[2].starts_with("mosaic llc1   | cpus 2-3"),
            "{}",
            lines[2]
        );
        assert!(lines[2].contains("shard enq       4/s"), "{}", lines[2]);
        assert!(
            lines[2].contains(&format!("stolen {hits:>6.0}/s")),
            "{}",
            lines[2]
        );
        // a line per balanced group: where it is settled, how exclusively
        now.group_balancer.groups = vec![
            GroupMetrics {
                path: "a/b".into(),
                partition: MaybeIndex(Some(0)),
                exclusivity: 0.75,
                settles: 1,
                ..Default::default()
            },
            GroupMetrics {
                path: "c".into(),
                ..Default::default()
            },
        ];
        let lines = now.interval_lines(&prev, 2.0);
        assert_eq!(
            lines[3..],
            [
                "mosaic group   | a/b -> p0 excl 0.75 settles 1",
                "mosaic group   | c -> - excl 0.00 settles 0"
            ]
        );
    }

    #[test]
    fn interval_lines_show_each_limited_cgroups_throttling_in_the_interval() {
        let (topo, layout) = two_llcs();
        let c = distinct_counters();
        let limit = |throttles, throttled_ns, now| BandwidthMetrics {
            path: "web/a".into(),
            cgroup_id: 7,
            quota_us: 20000,
            period_us: 100000,
            throttles,
            throttled_ns,
            throttled: Flag(now),
            ..Default::default()
        };
        let mut prev = Metrics::new(&c, &topo, &layout);
        prev.cgroup_bandwidth = vec![limit(3, 40_000_000, false)];
        let mut now = prev.clone();
        now.cgroup_bandwidth = vec![
            limit(8, 290_000_000, true),
            BandwidthMetrics {
                path: "new".into(),
                cgroup_id: 9,
                quota_us: 5000,
                period_us: 50000,
                throttles: 2,
                throttled_ns: 1_500_000,
                ..Default::default()
            },
        ];
        let lines = now.interval_lines(&prev, 1.0);
        let n = lines.len();
        assert_eq!(
            lines[n - 2..],
            [
                "mosaic cpu.max | web/a 20000/100000 us throttled 5x 250 ms (now)",
                "mosaic cpu.max | new 5000/50000 us throttled 2x 2 ms"
            ]
        );
    }

    #[test]
    fn a_host_of_limits_shows_a_summary_and_the_longest_throttled_few() {
        let (topo, layout) = two_llcs();
        let c = distinct_counters();
        let prev = Metrics::new(&c, &topo, &layout);
        let mut now = prev.clone();
        now.bw_limits_missed = 2;
        now.cgroup_bandwidth = (0..40u64)
            .map(|i| BandwidthMetrics {
                path: format!("c{i}"),
                cgroup_id: i,
                quota_us: 1000,
                period_us: 100000,
                throttles: 1,
                throttled_ns: i * 1_000_000,
                throttled: Flag(i % 2 == 0),
                ..Default::default()
            })
            .collect();
        let lines = now.interval_lines(&prev, 1.0);
        let bw: Vec<_> = lines
            .iter()
            .filter(|l| l.starts_with("mosaic cpu.max"))
            .collect();
        assert_eq!(bw.len(), 1 + CPU_MAX_LINES, "{bw:?}");
        assert_eq!(
            bw[0],
            "mosaic cpu.max | 40 limits, 20 throttled now, 2 NOT enforced"
        );
        assert!(bw[1].starts_with("mosaic cpu.max | c39 "), "{}", bw[1]);
        assert!(
            bw[CPU_MAX_LINES].starts_with("mosaic cpu.max | c35 "),
            "{bw:?}"
        );
    }

    #[test]
    fn live_lines_escape_task_names_and_cgroup_paths() {
        let (topo, layout) = two_llcs();
        let c = distinct_counters();
        let prev = Metrics::new(&c, &topo, &layout);
        let mut now = prev.clone();
        now.wait_max_task = "x\x1b[2J\r[7]".into();
        now.group_balancer.groups = vec![GroupMetrics {
            path: "a\nmosaic fake".into(),
            ..Default::default()
        }];
        now.cgroup_bandwidth = vec![BandwidthMetrics {
            path: "b\x1b]0;t\x07".into(),
            ..Default::default()
        }];
        let lines = now.interval_lines(&prev, 1.0);
        for l in &lines {
            assert!(!l.chars().any(|c| c.is_control()), "{l:?}");
        }
        assert!(lines[0].ends_with("(x\\x1b[2J\\r[7])"), "{}", lines[0]);
        let n = lines.len();
        assert_eq!(
            lines[n - 3],
            "mosaic group   | a\\nmosaic fake -> - excl 0.00 settles 0"
        );
        assert_eq!(
            lines[n - 2],
            "mosaic cpu.max | 1 limits, 0 throttled now, 0 NOT enforced"
        );
        assert!(
            lines[n - 1].starts_with("mosaic cpu.max | b\\x1b]0;t\\x07 "),
            "{}",
            lines[n - 1]
        );
    }
}
