//! What a run produces: the result JSON (Outcome), the latency percentile
//! summary (the trace is trace.rs's).
use super::Engine;
use crate::cost::DIST_NAMES;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Result of one simulation.
pub struct Outcome {
    pub json: Value,
    pub ok: bool,
}

/// Count, p50/p90/p99/p999, max and mean of @v (null if empty).
pub fn percentiles(v: &[u64]) -> Value {
    if v.is_empty() {
        return json!(null);
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let p = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    json!({"count": s.len(), "p50": p(0.5), "p90": p(0.9), "p99": p(0.99), "p999": p(0.999),
           "max": s[s.len() - 1], "mean": s.iter().map(|&x| x as f64).sum::<f64>() / s.len() as f64})
}

impl Engine {
    /// The wakeup latencies split by the woken task's name (the workload's
    /// roles: a message program's receivers and senders).
    fn wake_lat_by_task(&self) -> Value {
        let mut by: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for (&lat, &t) in self.wake_lat.iter().zip(&self.wake_lat_task) {
            by.entry(self.tasks[t].spec.name.as_str())
                .or_default()
                .push(lat);
        }
        by.into_iter()
            .map(|(k, v)| (k.to_string(), percentiles(&v)))
            .collect()
    }

    /// The scheduler's counters summed over the CPUs (maxima: their largest).
    pub(super) fn counter_row(&self) -> Vec<u64> {
        self.maps.combine_percpu("stats", |i| {
            crate::intf::STATS.get(i).is_some_and(|s| s.is_max)
        })
    }

    /// --timeline-ms: each counter's increase per sample period, up to the
    /// run's end (@last: the counters then), for the counters that moved;
    /// None when not sampled.
    fn timeline_json(&self, last: &[u64]) -> Option<Value> {
        if self.cfg.timeline_ns == 0 {
            return None;
        }
        let mut rows = vec![vec![0; last.len()]];
        rows.extend(self.timeline.iter().cloned());
        rows.push(last.to_vec());
        let mut counters = serde_json::Map::new();
        for (i, s) in crate::intf::STATS.iter().enumerate() {
            if s.is_max {
                continue;
            }
            let at = |r: &Vec<u64>| r.get(i).copied().unwrap_or(0);
            let steps: Vec<u64> = rows
                .windows(2)
                .map(|w| at(&w[1]).saturating_sub(at(&w[0])))
                .collect();
            if steps.iter().any(|&d| d > 0) {
                counters.insert(crate::intf::STAT_NAMES[i].to_string(), json!(steps));
            }
        }
        Some(json!({"period_ms": self.cfg.timeline_ns / 1_000_000, "counters": counters}))
    }

    /// The result JSON of a run that ended at @end with exit @kind/@msg.
    pub(super) fn report(&mut self, end: u64, kind: i32, msg: &str, label: &str) -> Outcome {
        let completed = self.end_checks(end, kind);
        let names = crate::intf::STAT_NAMES;
        let stats = self.counter_row();
        let timeline = self.timeline_json(&stats);
        let mut counters = serde_json::Map::new();
        for (i, n) in names.iter().enumerate() {
            counters.insert(n.to_string(), json!(stats.get(i).copied().unwrap_or(0)));
        }
        let mut maps = serde_json::Map::new();
        for (name, v) in self.maps.all_percpu_sums() {
            if name != "stats" {
                maps.insert(name, json!(v));
            }
        }
        let mut migr = serde_json::Map::new();
        for d in 1..6 {
            migr.insert(DIST_NAMES[d].into(), json!(self.migrations[d]));
        }
        let (mut dsq_wait, mut dsq_acq, mut dsq_cont) = (0u64, 0u64, 0u64);
        for d in self.dsqs.values().chain(std::iter::once(&self.global)) {
            dsq_wait += d.lock.wait_ns;
            dsq_acq += d.lock.acquisitions;
            dsq_cont += d.lock.contended;
        }
        let rq_wait: u64 = self.cpus.iter().map(|c| c.rq_lock.wait_ns).sum();
        let rq_acq: u64 = self.cpus.iter().map(|c| c.rq_lock.acquisitions).sum();
        let rq_cont: u64 = self.cpus.iter().map(|c| c.rq_lock.contended).sum();
        let mut groups = serde_json::Map::new();
        for (g, per_llc) in &self.group_llc_ns {
            if *g == 0 && self.group_llc_ns.len() > 1 {
                continue;
            }
            let total: u64 = per_llc.iter().sum();
            let best = per_llc.iter().copied().max().unwrap_or(0);
            groups.insert(
                format!("cgroup{g}"),
                json!({"runtime_ns": total, "home_llc": per_llc.iter().position(|&x| x == best),
                       "exclusivity": if total > 0 { best as f64 / total as f64 } else { 0.0 }}),
            );
        }
        let busy: u64 = self.cpus.iter().map(|c| c.busy_ns).sum();
        let ok = kind < 1024 && self.violations.is_empty();
        let json = json!({
            "machine": self.m.name,
            "nr_cpus": self.cpus.len(),
            "scheduler": label,
            "seed": self.cfg.seed,
            "hz": self.cfg.hz,
            "completed": completed,
            "completion_time_s": end as f64 / 1e9,
            "workload": self.wl.metrics(end),
            "wakeup_latency_ns": percentiles(&self.wake_lat),
            "wakeup_latency_by_task_ns": self.wake_lat_by_task(),
            "wait_ns": percentiles(&self.run_wait),
            "migrations": migr,
            "context_switches": self.ctx_switches,
            "counters": counters,
            "maps": maps,
            "inserts": {"direct_local": self.inserts_local, "user_dsq": self.inserts_dsq, "global": self.inserts_global},
            "wakeups": {"local": self.wakeups_local, "remote_lock": self.wakeups_remote_lock, "queued_ipi": self.wakeups_queued},
            "idle_while_runnable_s": self.idle_runnable_ns as f64 / 1e9,
            "cpu_utilisation": busy as f64 / (end.max(1) as f64 * self.cpus.len() as f64),
            "lock_wait": {"dsq_wait_s": dsq_wait as f64 / 1e9, "dsq_acquisitions": dsq_acq, "dsq_contended": dsq_cont,
                          "rq_wait_s": rq_wait as f64 / 1e9, "rq_acquisitions": rq_acq, "rq_contended": rq_cont},
            "groups": groups,
            "group_balancer": self.gb.as_ref().map_or(Value::Null, |b| b.to_json()),
            "exit": {"kind": kind, "msg": msg},
            "invariants": {"ok": self.violations.is_empty(), "violations": self.violations},
            "events": self.events_done,
            "bpf_work": {"callbacks": self.bpf_work.callbacks, "kfunc_calls": self.bpf_work.kfunc_calls,
                         "loop_iterations": self.bpf_work.loop_iterations,
                         "per_callback": self.bpf_work.per_callback()},
            "costs": self.cfg.costs,
            "tcg": self.tcg.as_ref().map_or(Value::Null, |t| json!({"turns": t.turns, "kicks": t.kicks, "pauses": t.pauses})),
        });
        let mut json = json;
        if let Some(t) = timeline {
            json["timeline"] = t;
        }
        Outcome { json, ok }
    }
}
