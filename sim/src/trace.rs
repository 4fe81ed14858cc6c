//! `mosaic-sim --trace FILE`: a Chrome trace-event JSON file (Perfetto and
//! chrome://tracing open it) of one simulation.
//!
//! What it holds:
//! - process "CPUs": one track per CPU, named with its LLC, L2 and shard; an
//!   "X" slice per stretch a task ran there, named after the task (so a task
//!   keeps one colour), its `args` saying how it got there;
//! - process "Tasks": one track per task, an "X" slice per wait (runnable,
//!   not running) named after what queued it, and per run ("on CPU n": a
//!   task's migrations read along its own track);
//! - instants: `wake T` on the waker's CPU at each wakeup, `migrate T` on
//!   the new CPU each time a task starts away from where it last ran;
//! - counters, each millisecond: tasks waiting and CPUs idle.
//!
//! How a placement is attributed: the scheduler reports its decisions only
//! through its per-CPU counters (intf.h's `enum mosaic_stat`), so while
//! tracing the engine reads the calling CPU's counter row before and after
//! each select_cpu, enqueue and dispatch call, and the counters that moved
//! name the path taken (e.g. `wake_l2_idle`, `shard_enqueues`,
//! `shard_pulls_sibling`, `steal_pulls_node`, `wake_group_part`). A task's
//! slice lists those of the select_cpu of its wakeup, of its last enqueue,
//! and of the dispatch on its CPU at the instant it started (none: it came
//! from its local DSQ without a dispatch). Maxima (`*_max_*`) are left out.
//!
//! Size: events are kept in memory and written at the end; past
//! `max_events` they are dropped and counted (`otherData.dropped_events`),
//! and only those inside the time window are recorded.
use crate::cost::DIST_NAMES;
use crate::intf::{NR_STATS, STATS};
use crate::machine::Machine;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

const _: () = assert!(NR_STATS <= 128, "stat sets are u128 bitmasks");

/// What a trace records: at most @max_events, between @from_ns and @until_ns.
#[derive(Debug, Clone, Copy)]
pub struct TraceLimits {
    pub max_events: usize,
    pub from_ns: u64,
    pub until_ns: u64,
}

/// The default cap on recorded events (200 to 300 bytes of JSON each:
/// about 100 MB at most).
pub const DEFAULT_MAX_EVENTS: u64 = 400_000;

/// The callback a counter diff came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    Select { t: usize },
    Enqueue { t: usize },
    Dispatch { cpu: usize },
}

/// Counters (bit i: stat i) that moved in each callback that placed a task.
#[derive(Default, Clone, Copy)]
struct Placement {
    select: u128,
    enqueue: u128,
}

/// One recorded event.
enum Event {
    /// @t ran on @cpu over [@start, @end], after waiting since @queued,
    /// placed as @how says, @dist from where it last ran.
    Slice {
        cpu: usize,
        t: usize,
        start: u64,
        end: u64,
        queued: u64,
        select: u128,
        enqueue: u128,
        dispatch: u128,
        from: Option<usize>,
    },
    /// @t waited (runnable) over [@start, @end] for @cpu.
    Wait {
        t: usize,
        start: u64,
        end: u64,
        cpu: usize,
        enqueue: u128,
    },
    /// @from woke @t at @at towards @to.
    Wake {
        at: u64,
        from: usize,
        t: usize,
        to: usize,
        queued: bool,
        select: u128,
    },
    /// @t started on @cpu at @at, last ran on @from, @dist away.
    Migrate {
        at: u64,
        cpu: usize,
        t: usize,
        from: usize,
        dist: usize,
    },
    /// Tasks waiting and CPUs idle at @at.
    Counts {
        at: u64,
        waiting: usize,
        idle: usize,
    },
}

/// A slice under way on one CPU.
#[derive(Clone, Copy)]
struct Open {
    t: usize,
    start: u64,
    queued: u64,
    select: u128,
    enqueue: u128,
    dispatch: u128,
    from: Option<usize>,
}

/// The recorder the engine feeds while tracing (engine/*.rs call it only
/// when `Config::trace` is set).
pub struct Tracer {
    limits: TraceLimits,
    events: Vec<Event>,
    dropped: u64,
    open: Vec<Option<Open>>,
    placement: Vec<Placement>,
    /// per CPU: when its last dispatch ran and the counters it moved
    dispatch: Vec<(u64, u128)>,
    /// the counter row read before the callback under way
    before: Vec<u64>,
    wakeups: u64,
    migrations: u64,
}

impl Tracer {
    /// A recorder for @nr_cpus CPUs.
    pub fn new(limits: TraceLimits, nr_cpus: usize) -> Tracer {
        Tracer {
            limits,
            events: Vec::new(),
            dropped: 0,
            open: vec![None; nr_cpus],
            placement: Vec::new(),
            dispatch: vec![(u64::MAX, 0); nr_cpus],
            before: vec![0; NR_STATS],
            wakeups: 0,
            migrations: 0,
        }
    }

    /// Whether @at is inside the window.
    fn in_window(&self, at: u64) -> bool {
        at >= self.limits.from_ns && at <= self.limits.until_ns
    }

    /// Records @ev unless the cap is reached.
    fn record(&mut self, ev: Event) {
        if self.events.len() < self.limits.max_events {
            self.events.push(ev);
        } else {
            self.dropped += 1;
        }
    }

    /// Placement slot of task @t.
    fn placement_of(&mut self, t: usize) -> &mut Placement {
        if self.placement.len() <= t {
            self.placement.resize(t + 1, Placement::default());
        }
        &mut self.placement[t]
    }

    /// Before a placing callback: remembers the calling CPU's counters @row.
    pub fn before_call(&mut self, row: &[u64]) {
        self.before.clear();
        self.before.extend_from_slice(row);
    }

    /// After callback @d at @now: the counters that moved since before_call.
    pub fn after_call(&mut self, d: Decision, row: &[u64], now: u64) {
        let mut moved = 0u128;
        for (i, (a, b)) in self.before.iter().zip(row).enumerate() {
            if b != a && !STATS[i].is_max {
                moved |= 1 << i;
            }
        }
        match d {
            Decision::Select { t } => self.placement_of(t).select = moved,
            Decision::Enqueue { t } => self.placement_of(t).enqueue = moved,
            Decision::Dispatch { cpu } => {
                let (at, bits) = &mut self.dispatch[cpu];
                if *at != now {
                    *bits = 0;
                }
                *at = now;
                *bits |= moved;
            }
        }
    }

    /// @from woke @t at @now, to run on @to (@queued: through the target's
    /// wake list).
    pub fn wake(&mut self, now: u64, from: usize, t: usize, to: usize, queued: bool) {
        self.wakeups += 1;
        let select = self.placement_of(t).select;
        if self.in_window(now) {
            self.record(Event::Wake {
                at: now,
                from,
                t,
                to,
                queued,
                select,
            });
        }
    }

    /// @t starts on @cpu at @now, runnable since @queued, last ran on
    /// @last, @dist (cost::Dist) away from it.
    pub fn start(
        &mut self,
        now: u64,
        cpu: usize,
        t: usize,
        queued: u64,
        last: Option<usize>,
        dist: usize,
    ) {
        self.stop(now, cpu);
        let p = std::mem::take(self.placement_of(t));
        let (at, bits) = self.dispatch[cpu];
        let dispatch = if at == now { bits } else { 0 };
        self.dispatch[cpu] = (u64::MAX, 0);
        let from = last.filter(|_| dist != 0);
        if from.is_some() {
            self.migrations += 1;
        }
        if self.in_window(now) {
            if queued < now {
                self.record(Event::Wait {
                    t,
                    start: queued.max(self.limits.from_ns),
                    end: now,
                    cpu,
                    enqueue: p.enqueue,
                });
            }
            if let Some(f) = from {
                self.record(Event::Migrate {
                    at: now,
                    cpu,
                    t,
                    from: f,
                    dist,
                });
            }
        }
        self.open[cpu] = Some(Open {
            t,
            start: now,
            queued,
            select: p.select,
            enqueue: p.enqueue,
            dispatch,
            from,
        });
    }

    /// The task on @cpu leaves it at @now.
    pub fn stop(&mut self, now: u64, cpu: usize) {
        let Some(o) = self.open[cpu].take() else {
            return;
        };
        let start = o.start.max(self.limits.from_ns);
        let end = now.min(self.limits.until_ns);
        if start > end {
            return;
        }
        self.record(Event::Slice {
            cpu,
            t: o.t,
            start,
            end,
            queued: o.queued,
            select: o.select,
            enqueue: o.enqueue,
            dispatch: o.dispatch,
            from: o.from,
        });
    }

    /// Samples the run queue at @now: @waiting tasks, @idle CPUs.
    pub fn counts(&mut self, now: u64, waiting: usize, idle: usize) {
        if self.in_window(now) {
            self.record(Event::Counts {
                at: now,
                waiting,
                idle,
            });
        }
    }

    /// Ends every slice under way at @end.
    pub fn finish(&mut self, end: u64) {
        for cpu in 0..self.open.len() {
            self.stop(end, cpu);
        }
    }

    /// Writes the trace to @path: @m's CPUs, the tasks @names, @shard_of
    /// each CPU, and @meta (the run: machine, workload, seed...) under
    /// `otherData`.
    pub fn write(
        &self,
        path: &Path,
        m: &Machine,
        names: &[String],
        shard_of: &[Option<usize>],
        meta: serde_json::Value,
    ) -> Result<()> {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        let mut w = std::io::BufWriter::new(f);
        self.write_to(&mut w, m, names, shard_of, meta)
            .and_then(|()| w.flush().map_err(Into::into))
            .with_context(|| format!("writing {}", path.display()))
    }

    /// write()'s body, on any writer.
    fn write_to(
        &self,
        w: &mut impl Write,
        m: &Machine,
        names: &[String],
        shard_of: &[Option<usize>],
        mut meta: serde_json::Value,
    ) -> Result<()> {
        meta["recorded_events"] = self.events.len().into();
        meta["dropped_events"] = self.dropped.into();
        meta["truncated"] = (self.dropped > 0).into();
        meta["wakeups"] = self.wakeups.into();
        meta["migrations"] = self.migrations.into();
        meta["window_ns"] = serde_json::json!([self.limits.from_ns, self.limits.until_ns]);
        meta["max_events"] = self.limits.max_events.into();
        write!(
            w,
            "{{\"displayTimeUnit\":\"ns\",\"otherData\":{meta},\"traceEvents\":["
        )?;
        let mut first = true;
        let mut line = |w: &mut dyn Write, s: String| -> std::io::Result<()> {
            let sep = if std::mem::take(&mut first) {
                "\n"
            } else {
                ",\n"
            };
            write!(w, "{sep}{s}")
        };
        let q = |s: &str| serde_json::Value::from(s).to_string();
        line(
            w,
            meta_name("process_name", CPUS_PID, 0, &format!("CPUs ({})", m.name)),
        )?;
        line(w, meta_name("process_name", TASKS_PID, 0, "Tasks"))?;
        for cpu in 0..m.nr_cpus() {
            let c = m.cpu(cpu);
            let shard = shard_of
                .get(cpu)
                .copied()
                .flatten()
                .map_or(String::new(), |s| format!(" shard {s}"));
            let name = format!("CPU {cpu} (LLC {} L2 {}{shard})", c.llc, c.l2);
            line(w, meta_name("thread_name", CPUS_PID, cpu, &name))?;
            line(w, sort_index(CPUS_PID, cpu))?;
        }
        for t in 0..names.len() {
            line(
                w,
                meta_name("thread_name", TASKS_PID, t, &task_label(names, t)),
            )?;
            line(w, sort_index(TASKS_PID, t))?;
        }
        for ev in &self.events {
            let s = match *ev {
                Event::Slice {
                    cpu,
                    t,
                    start,
                    end,
                    queued,
                    select,
                    enqueue,
                    dispatch,
                    from,
                } => {
                    let how = placed_by(select, enqueue, dispatch);
                    // the same run on the task's own track, named after its CPU
                    line(w, format!(
                        "{{\"ph\":\"X\",\"pid\":{TASKS_PID},\"tid\":{t},\"ts\":{},\"dur\":{},\"name\":\"on CPU {cpu}\",\"cat\":\"task_run\",\"args\":{{\"cpu\":{cpu}}}}}",
                        us(start),
                        us(end - start),
                    ))?;
                    format!(
                        "{{\"ph\":\"X\",\"pid\":{CPUS_PID},\"tid\":{cpu},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"run\",\"args\":{{\"task\":{t},\"placed_by\":{},\"select_cpu\":{},\"enqueue\":{},\"dispatch\":{},\"waited_us\":{},\"from_cpu\":{}}}}}",
                        us(start),
                        us(end - start),
                        q(&task_label(names, t)),
                        q(&how),
                        stat_list(select),
                        stat_list(enqueue),
                        stat_list(dispatch),
                        us(start.saturating_sub(queued)),
                        from.map_or("null".to_string(), |f| f.to_string()),
                    )
                }
                Event::Wait {
                    t,
                    start,
                    end,
                    cpu,
                    enqueue,
                } => {
                    let why = match names_of(enqueue).as_slice() {
                        [] => "waiting".to_string(),
                        n => format!("waiting: {}", n.join("+")),
                    };
                    format!(
                        "{{\"ph\":\"X\",\"pid\":{TASKS_PID},\"tid\":{t},\"ts\":{},\"dur\":{},\"name\":{},\"cat\":\"wait\",\"args\":{{\"ran_on_cpu\":{cpu},\"enqueue\":{}}}}}",
                        us(start),
                        us(end - start),
                        q(&why),
                        stat_list(enqueue),
                    )
                }
                Event::Wake {
                    at,
                    from,
                    t,
                    to,
                    queued,
                    select,
                } => format!(
                    "{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{CPUS_PID},\"tid\":{from},\"ts\":{},\"name\":{},\"cat\":\"wakeup\",\"args\":{{\"task\":{t},\"to_cpu\":{to},\"queued_wakeup\":{queued},\"select_cpu\":{}}}}}",
                    us(at),
                    q(&format!("wake {} -> CPU {to}", task_label(names, t))),
                    stat_list(select),
                ),
                Event::Migrate {
                    at,
                    cpu,
                    t,
                    from,
                    dist,
                } => format!(
                    "{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{CPUS_PID},\"tid\":{cpu},\"ts\":{},\"name\":{},\"cat\":\"migration\",\"args\":{{\"task\":{t},\"from_cpu\":{from},\"distance\":{}}}}}",
                    us(at),
                    q(&format!(
                        "migrate {} from CPU {from} ({})",
                        task_label(names, t),
                        DIST_NAMES[dist]
                    )),
                    q(DIST_NAMES[dist]),
                ),
                Event::Counts { at, waiting, idle } => format!(
                    "{{\"ph\":\"C\",\"pid\":{CPUS_PID},\"tid\":0,\"ts\":{},\"name\":\"runqueue\",\"args\":{{\"tasks_waiting\":{waiting},\"cpus_idle\":{idle}}}}}",
                    us(at)
                ),
            };
            line(w, s)?;
        }
        writeln!(w, "\n]}}")?;
        Ok(())
    }
}

/// The process id of the CPU tracks.
const CPUS_PID: usize = 1;
/// The process id of the task tracks.
const TASKS_PID: usize = 2;

/// Nanoseconds @ns as the format's microseconds, exactly (three decimals).
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// Task @t's label: its name and pid (pids are t + 1, as in the engine).
fn task_label(names: &[String], t: usize) -> String {
    format!("{}[{}]", names.get(t).map_or("?", String::as_str), t + 1)
}

/// Names of the counters in @bits.
fn names_of(bits: u128) -> Vec<&'static str> {
    (0..NR_STATS)
        .filter(|&i| bits >> i & 1 == 1)
        .map(|i| STATS[i].name)
        .collect()
}

/// @bits as a JSON array of counter names.
fn stat_list(bits: u128) -> String {
    serde_json::Value::from(names_of(bits)).to_string()
}

/// One line saying how a task was placed: the counters each callback moved.
fn placed_by(select: u128, enqueue: u128, dispatch: u128) -> String {
    let parts: Vec<String> = [
        ("select_cpu", select),
        ("enqueue", enqueue),
        ("dispatch", dispatch),
    ]
    .iter()
    .filter(|(_, b)| *b != 0)
    .map(|(n, b)| format!("{n}: {}", names_of(*b).join("+")))
    .collect();
    if parts.is_empty() {
        "kept or local DSQ".to_string()
    } else {
        parts.join("; ")
    }
}

/// A process_name/thread_name metadata event.
fn meta_name(kind: &str, pid: usize, tid: usize, name: &str) -> String {
    format!(
        "{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"{kind}\",\"args\":{{\"name\":{}}}}}",
        serde_json::Value::from(name)
    )
}

/// A thread_sort_index metadata event: tracks in id order.
fn sort_index(pid: usize, tid: usize) -> String {
    format!("{{\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{tid}}}}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_events: usize) -> TraceLimits {
        TraceLimits {
            max_events,
            from_ns: 0,
            until_ns: u64::MAX,
        }
    }

    #[test]
    fn microseconds_are_exact() {
        assert_eq!(us(1_234_567), "1234.567");
        assert_eq!(us(5), "0.005");
    }

    #[test]
    fn a_slice_carries_the_counters_its_callbacks_moved() {
        let mut tr = Tracer::new(limits(100), 2);
        let mut row = vec![0u64; NR_STATS];
        tr.before_call(&row);
        row[1] += 1;
        tr.after_call(Decision::Dispatch { cpu: 1 }, &row, 10);
        tr.before_call(&row);
        row[0] += 1;
        tr.after_call(Decision::Enqueue { t: 0 }, &row, 5);
        tr.start(10, 1, 0, 5, Some(0), 3);
        tr.finish(30);
        let Event::Slice {
            dispatch,
            enqueue,
            select,
            start,
            end,
            ..
        } = tr.events[2]
        else {
            panic!("no slice last");
        };
        assert_eq!((dispatch, enqueue, select), (1 << 1, 1 << 0, 0));
        assert_eq!((start, end), (10, 30));
        assert!(matches!(
            tr.events[0],
            Event::Wait {
                start: 5,
                end: 10,
                ..
            }
        ));
        assert!(matches!(tr.events[1], Event::Migrate { from: 0, .. }));
        assert_eq!(tr.migrations, 1);
    }

    #[test]
    fn past_the_cap_events_are_dropped_and_counted() {
        let mut tr = Tracer::new(limits(3), 1);
        for i in 0..5 {
            tr.counts(i, 0, 1);
        }
        assert_eq!((tr.events.len(), tr.dropped), (3, 2));
    }

    #[test]
    fn slices_are_clipped_to_the_window() {
        let mut tr = Tracer::new(
            TraceLimits {
                max_events: 10,
                from_ns: 100,
                until_ns: 200,
            },
            1,
        );
        tr.start(50, 0, 0, 50, None, 0);
        tr.stop(300, 0);
        tr.start(300, 0, 0, 300, None, 0);
        tr.stop(400, 0);
        assert_eq!(tr.events.len(), 1);
        assert!(matches!(
            tr.events[0],
            Event::Slice {
                start: 100,
                end: 200,
                ..
            }
        ));
    }
}
