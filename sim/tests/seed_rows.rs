//! The simulator features the seed report's rows rest on: step jitter from
//! the RNG seed, seed 003's balance cost under load bursts, and the
//! --no-wake-pair switch that lets seed 002's A/B toggle the prev rule alone.
mod common;

use serde_json::Value;

/// Runs mosaic-sim with @args; its JSON (the run must succeed).
fn sim(name: &str, args: &[&str]) -> Value {
    let (ok, json) = common::run_sim("mosaic-seed-rows", name, args);
    assert!(ok, "mosaic-sim {args:?} failed");
    json
}

fn counter(v: &Value, k: &str) -> u64 {
    v["counters"][k].as_u64().unwrap()
}

#[test]
fn step_jitter_makes_seeds_differ_and_only_then() {
    let run = |name: &str, seed: &str, jitter: &str| {
        let cost = format!("step_jitter={jitter}");
        let v = sim(
            name,
            &[
                "--machine",
                "2llc-smt",
                "--workload",
                "hackbench:groups=2,loops=30",
                "--seed",
                seed,
                "--cost",
                &cost,
            ],
        );
        v["completion_time_s"].as_f64().unwrap()
    };
    assert_eq!(run("j0-1", "1", "0"), run("j0-2", "2", "0"));
    assert_ne!(run("j5-1", "1", "0.05"), run("j5-2", "2", "0.05"));
    assert_eq!(run("j5-1b", "1", "0.05"), run("j5-1c", "1", "0.05"));
}

#[test]
fn bursts_raise_and_clear_the_flag_and_skipped_balances_show_in_tps_seed_003() {
    let base = [
        "--machine",
        "xeon-4s",
        "--workload",
        "rr:clients=96,loops=200,sync=0,server_ns=100000,hogs=128,hog_us=3000,hog_every_us=8000",
        "--cost",
        "balance_scan_ns=130000",
        // the shard design's steal scans are the balance attempts the gate counts
        "--sched-arg=--shared-runq=shard",
    ];
    let on = sim("gate-on", &base);
    let mut off_args = base.to_vec();
    off_args.push("--sched-arg=--no-overload-gate");
    let off = sim("gate-off", &off_args);
    // the flag rose more than once, so it was cleared in between
    assert!(counter(&on, "overload_sets") >= 2, "{}", on["counters"]);
    assert!(counter(&on, "steal_scans_skipped") > 0);
    assert_eq!(counter(&off, "steal_scans_skipped"), 0);
    // each scan done costs the balance walk: skipping them is throughput
    let tps = |v: &Value| v["workload"]["tps"].as_f64().unwrap();
    assert!(
        tps(&on) > tps(&off),
        "tps on {} off {}",
        tps(&on),
        tps(&off)
    );
    // without the cost the skipped scans save only BPF work
    let mut free = off_args.clone();
    free.retain(|a| !a.starts_with("balance_scan_ns"));
    free.retain(|a| *a != "--cost");
    let off_free = sim("gate-off-free", &free);
    assert!(
        tps(&off_free) > tps(&off),
        "the balance cost slows the scanning side"
    );
}

#[test]
fn no_wake_pair_leaves_the_prev_rule_to_place_a_pipe_pair_seed_002() {
    let base = [
        "--machine",
        "hikey960",
        "--workload",
        "pipe:loops=500,start=4",
    ];
    let default = sim("pair-default", &base);
    let mut args = base.to_vec();
    args.push("--sched-arg=--no-wake-pair");
    let prev = sim("pair-off", &args);
    args.push("--sched-arg=--no-prev-first");
    let neither = sim("pair-off-prev-off", &args);
    assert!(counter(&default, "wake_sync") > counter(&default, "prev_kept"));
    assert_eq!(counter(&prev, "wake_sync"), 0);
    assert!(counter(&prev, "prev_kept") > 900, "{}", prev["counters"]);
    assert_eq!(counter(&neither, "prev_kept"), 0);
    assert!(counter(&neither, "wake_capacity") > 900);
    assert!(counter(&neither, "migrations") > 100 * counter(&prev, "migrations").max(1));
}
