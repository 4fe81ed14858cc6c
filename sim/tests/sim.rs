//! End-to-end tests: each simulation runs in its own process (the native
//! scheduler's globals are process state).
use serde_json::Value;
use std::process::Command;

fn sim(name: &str, args: &[&str]) -> (bool, Value) {
    let dir = std::env::temp_dir().join(format!("mosaic-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.json"));
    let st = Command::new(env!("CARGO_BIN_EXE_mosaic-sim"))
        .args(args)
        .arg("--json")
        .arg(&out)
        .status()
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    (st.success(), serde_json::from_str(&text).unwrap())
}

#[test]
fn same_seed_same_json() {
    let args = [
        "--machine",
        "2llc-smt",
        "--workload",
        "hackbench:groups=2,loops=50",
        "--seed",
        "7",
    ];
    let (ok1, j1) = sim("det1", &args);
    let (ok2, j2) = sim("det2", &args);
    assert!(ok1 && ok2);
    assert_eq!(j1, j2, "same seed must give identical JSON");
}

#[test]
fn invariants_hold_on_every_workload_and_vm_topology() {
    for m in [
        "1llc", "2llc-smt", "2node", "l2-8", "1cpu", "16cpu", "hikey960",
    ] {
        for w in [
            "hackbench:groups=2,loops=30",
            "pipe:loops=500,pairs=2",
            "rr:clients=8,loops=50",
            "memgroups:groups=3,threads=3,work_ms=3",
            "schbench:requests=50,workers=4",
        ] {
            for flags in [&[][..], &["--sched-arg=--no-shared-runq"][..]] {
                let mut args = vec!["--machine", m, "--workload", w];
                args.extend_from_slice(flags);
                let (ok, j) = sim("inv", &args);
                assert!(ok, "{m} {w} {flags:?}: {} {}", j["exit"], j["invariants"]);
                assert_eq!(j["completed"], true, "{m} {w}: tasks left");
                assert_eq!(j["invariants"]["ok"], true);
            }
        }
    }
}

#[test]
fn shared_runqueue_counters_move_on_seed_000_scenario() {
    let base = [
        "--machine",
        "ryzen-7950x",
        "--workload",
        "hackbench:loops=30",
    ];
    let (ok_on, on) = sim("srq-on", &base);
    let mut off_args = base.to_vec();
    off_args.push("--sched-arg=--no-shared-runq");
    let (ok_off, off) = sim("srq-off", &off_args);
    assert!(ok_on && ok_off);
    let c = |j: &Value, k: &str| j["counters"][k].as_u64().unwrap();
    // on: tasks wait on shards, idle CPUs pull from their own and sibling shards
    assert!(c(&on, "shard_enqueues") > 0);
    assert!(c(&on, "shard_pulls_local") > 0);
    assert!(c(&on, "shard_pulls_sibling") > 0);
    // off: no shard is used, per-CPU queues are
    assert_eq!(c(&off, "shard_enqueues"), 0);
    assert_eq!(c(&off, "shard_pulls_sibling"), 0);
    assert!(c(&off, "cpu_enqueues") > 0);
    // and the seed's direction: less idle-while-runnable, faster
    assert!(on["idle_while_runnable_s"].as_f64() < off["idle_while_runnable_s"].as_f64());
    assert!(on["completion_time_s"].as_f64() < off["completion_time_s"].as_f64());
}

#[test]
fn unknown_scheduler_flag_is_refused() {
    let st = Command::new(env!("CARGO_BIN_EXE_mosaic-sim"))
        .args([
            "--machine",
            "1llc",
            "--workload",
            "pipe",
            "--sched-arg=--no-such-thing",
        ])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&st.stderr).contains("no-such-thing"));
}
