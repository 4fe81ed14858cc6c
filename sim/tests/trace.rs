//! `mosaic-sim --trace`: the file it writes is the Chrome trace-event JSON
//! Perfetto loads, consistent with itself and with the run's own counters.
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output};

/// A scratch path for @name in this test process's directory.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mosaic-sim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs mosaic-sim with @args.
fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic-sim"))
        .args(args)
        .output()
        .unwrap()
}

/// Runs @args with --json and --trace (and @extra): (run JSON, trace JSON).
fn traced(name: &str, args: &[&str], extra: &[&str]) -> (Value, Value) {
    let (json, trace) = (
        scratch(&format!("{name}.json")),
        scratch(&format!("{name}.trace.json")),
    );
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    all.extend(extra);
    let out = sim(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    (read(&json), read(&trace))
}

/// A trace timestamp (µs, three decimals) as whole nanoseconds.
fn ns(v: &Value) -> u64 {
    let us = v.as_f64().expect("a number");
    assert!(us >= 0.0, "negative time {us}");
    (us * 1000.0).round() as u64
}

/// Events of @trace whose phase is @ph and category @cat (any if None).
fn events<'a>(trace: &'a Value, ph: &str, cat: Option<&str>) -> Vec<&'a Value> {
    trace["traceEvents"]
        .as_array()
        .expect("traceEvents is an array")
        .iter()
        .filter(|e| e["ph"] == ph && cat.is_none_or(|c| e["cat"] == c))
        .collect()
}

/// Sum of the numbers in JSON object @v.
fn sum(v: &Value) -> u64 {
    v.as_object()
        .unwrap()
        .values()
        .map(|x| x.as_u64().unwrap())
        .sum()
}

#[test]
fn the_trace_is_well_formed_and_agrees_with_the_run() {
    let (run, trace) = traced(
        "hackbench",
        &[
            "--machine",
            "2llc-smt",
            "--workload",
            "hackbench:groups=2,loops=30",
            "--sched-arg=--shared-runq=shard",
        ],
        &[],
    );
    let nr_cpus = run["nr_cpus"].as_u64().unwrap();
    assert_eq!(trace["otherData"]["truncated"], false);

    // the trace-event format: known phases, integer pid/tid, a time on all
    // but metadata, instants scoped to their thread, counters with numbers
    for e in trace["traceEvents"].as_array().unwrap() {
        let ph = e["ph"].as_str().expect("ph");
        assert!(["X", "i", "C", "M"].contains(&ph), "phase {ph}");
        assert!(e["pid"].is_u64() && e["tid"].is_u64(), "pid/tid: {e}");
        assert!(e["name"].is_string(), "name: {e}");
        match ph {
            "M" => assert!(e["args"]["name"].is_string() || e["args"]["sort_index"].is_u64()),
            "i" => assert_eq!(e["s"], "t"),
            "C" => assert!(e["args"].as_object().unwrap().values().all(Value::is_u64)),
            _ => {}
        }
        if ph != "M" {
            ns(&e["ts"]);
        }
    }

    // every CPU is a named track
    let named: BTreeSet<u64> = events(&trace, "M", None)
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == 1)
        .map(|e| e["tid"].as_u64().unwrap())
        .collect();
    assert_eq!(named, (0..nr_cpus).collect());

    // task slices: complete, on an existing CPU, never two at once on one CPU
    let slices = events(&trace, "X", Some("run"));
    assert!(
        slices.iter().all(|s| s["pid"] == 1),
        "a run slice off the CPU tracks"
    );
    assert!(slices.len() > 100, "only {} slices", slices.len());
    let mut per_cpu: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for e in events(&trace, "X", None) {
        for k in ["ts", "dur", "pid", "tid", "name"] {
            assert!(!e[k].is_null(), "X event without {k}: {e}");
        }
    }
    for s in &slices {
        let cpu = s["tid"].as_u64().unwrap();
        assert!(cpu < nr_cpus, "slice on CPU {cpu} of {nr_cpus}");
        let start = ns(&s["ts"]);
        per_cpu
            .entry(cpu)
            .or_default()
            .push((start, start + ns(&s["dur"])));
    }
    for (cpu, v) in per_cpu.iter_mut() {
        v.sort();
        for w in v.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "CPU {cpu}: slices {:?} and {:?} overlap",
                w[0],
                w[1]
            );
        }
    }

    // the run's time and counters
    let end = (run["completion_time_s"].as_f64().unwrap() * 1e9).round() as u64;
    assert!(per_cpu.values().flatten().all(|&(_, e)| e <= end + 1));
    let wakes = events(&trace, "i", Some("wakeup")).len() as u64;
    assert_eq!(
        wakes,
        sum(&run["wakeups"]),
        "wakeup instants vs the run's wakeups"
    );
    let migrations = events(&trace, "i", Some("migration")).len() as u64;
    assert_eq!(
        migrations,
        sum(&run["migrations"]),
        "migration instants vs the run's"
    );
    let from_elsewhere = slices
        .iter()
        .filter(|s| !s["args"]["from_cpu"].is_null())
        .count();
    assert_eq!(
        from_elsewhere as u64, migrations,
        "slices that start a migration"
    );

    // placements name the scheduler's counters: the shard design's here
    let named_by = |c: &str| {
        slices
            .iter()
            .filter(|s| {
                ["select_cpu", "enqueue", "dispatch"]
                    .iter()
                    .any(|k| s["args"][k].as_array().unwrap().iter().any(|n| n == c))
            })
            .count() as u64
    };
    let counters = &run["counters"];
    for c in ["shard_enqueues", "shard_pulls_local", "wake_busy"] {
        assert!(counters[c].as_u64().unwrap() > 0, "{c} never moved");
        assert!(named_by(c) > 0, "no slice placed by {c}");
        assert!(
            named_by(c) <= counters[c].as_u64().unwrap(),
            "{c}: more slices than counts"
        );
    }
    // a task's track: its runs (one per CPU slice) and waits, never two at once
    let task_runs = events(&trace, "X", Some("task_run"));
    assert_eq!(task_runs.len(), slices.len());
    let mut per_task: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for e in task_runs.iter().chain(&events(&trace, "X", Some("wait"))) {
        assert_eq!(e["pid"], 2, "a task event off the task tracks: {e}");
        let start = ns(&e["ts"]);
        per_task
            .entry(e["tid"].as_u64().unwrap())
            .or_default()
            .push((start, start + ns(&e["dur"])));
    }
    for (t, v) in per_task.iter_mut() {
        v.sort();
        for w in v.windows(2) {
            assert!(
                w[1].0 >= w[0].1,
                "task {t}: {:?} and {:?} overlap",
                w[0],
                w[1]
            );
        }
    }
    // every wait ends where a slice of its task starts
    let starts: BTreeSet<(u64, u64)> = slices
        .iter()
        .map(|s| (s["args"]["task"].as_u64().unwrap(), ns(&s["ts"])))
        .collect();
    for w in events(&trace, "X", Some("wait")) {
        let end = ns(&w["ts"]) + ns(&w["dur"]);
        assert!(
            starts.contains(&(w["tid"].as_u64().unwrap(), end)),
            "wait {w} ends at no slice"
        );
    }
}

#[test]
fn the_trace_is_bounded_by_its_cap_and_window() {
    let args = [
        "--machine",
        "2llc-smt",
        "--workload",
        "hackbench:groups=2,loops=30",
    ];
    let (_, capped) = traced("capped", &args, &["--trace-max-events", "50"]);
    let recorded = capped["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M" && e["cat"] != "task_run")
        .count();
    assert_eq!(recorded, 50, "events past the cap of 50");
    assert_eq!(capped["otherData"]["recorded_events"], 50);
    assert_eq!(capped["otherData"]["truncated"], true);
    assert!(capped["otherData"]["dropped_events"].as_u64().unwrap() > 0);

    let (_, windowed) = traced("window", &args, &["--trace-window", "1:2"]);
    let timed: Vec<&Value> = windowed["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .collect();
    assert!(!timed.is_empty());
    for e in timed {
        let start = ns(&e["ts"]);
        let end = start + e.get("dur").map_or(0, ns);
        assert!(
            start >= 1_000_000 && end <= 2_000_000,
            "{e} outside 1..2 ms"
        );
    }
}

#[test]
fn bad_trace_options_are_refused_on_one_line() {
    for bad in [
        &["--trace-window", "5:2"][..],
        &["--trace-window", "x"],
        &["--trace-max-events", "0"],
        &["--trace-max-events", "many"],
    ] {
        let mut args = vec![
            "--machine",
            "1llc",
            "--workload",
            "pipe",
            "--trace",
            "/dev/null",
        ];
        args.extend(bad);
        let out = sim(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{bad:?}: {err}");
        assert!(err.contains("--trace"), "{bad:?}: {err}");
    }
}

#[test]
fn tracing_leaves_the_simulation_unchanged() {
    let args = [
        "--machine",
        "2node",
        "--workload",
        "rr:clients=8,loops=50",
        "--seed",
        "3",
    ];
    let (traced_run, _) = traced("same", &args, &[]);
    let json = scratch("untraced.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap()]);
    assert!(sim(&all).status.success());
    let plain: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(plain, traced_run, "--trace changed the run");
}
