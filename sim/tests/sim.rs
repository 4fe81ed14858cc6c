//! End-to-end tests: each simulation runs in its own process (the native
//! scheduler's globals are process state).
mod common;

use mosaic_sim::report::WORK_SEEDS;
use serde_json::Value;
use std::process::Command;

fn sim(name: &str, args: &[&str]) -> (bool, Value) {
    common::run_sim("mosaic-sim-test", name, args)
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
            "hackbench:groups=2,loops=30,startup=1",
            "pipe:loops=500,pairs=2",
            "rr:clients=8,loops=50",
            "memgroups:groups=3,threads=3,work_ms=3",
            "schbench:requests=50,workers=4",
        ] {
            for flags in [&[][..], &["--sched-arg=--shared-runq=shard"][..]] {
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
    // loops=100: shorter runs can end before short idle spells pull a
    // CPU's average under the migration cost (the avg_idle gate then never
    // acts; since idle CPUs are rescheduled by every wakeup onto their
    // runqueue it acted 0 times at 50 and 157 at 100)
    let base = [
        "--machine",
        "ryzen-7950x",
        "--workload",
        "hackbench:loops=100",
    ];
    let mut on_args = base.to_vec();
    on_args.push("--sched-arg=--shared-runq=shard");
    let (ok_on, on) = sim("srq-on", &on_args);
    let mut off_args = base.to_vec();
    off_args.push("--sched-arg=--shared-runq=off");
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
    // the kernel-like baseline's newidle gates act: short idle spells skip
    // the balance, and the balance still pulls within the LLC
    assert!(c(&off, "newidle_skips_avg_idle") > 0);
    assert!(c(&off, "newidle_pulls") > 0);
    assert_eq!(c(&off, "seed_index_sets"), 0);
    // the seed's own design: tasks wait on per-CPU queues that the shards
    // index; a CPU about to idle pulls through the index, and the LLC pass of
    // newidle balance is skipped (the seed starts above the LLC)
    let mut seed_args = base.to_vec();
    seed_args.push("--sched-arg=--shared-runq=seed");
    let (ok_seed, seed) = sim("srq-seed", &seed_args);
    assert!(ok_seed);
    assert_eq!(c(&seed, "shard_enqueues"), 0);
    assert!(c(&seed, "cpu_enqueues") > 0);
    assert!(c(&seed, "seed_index_sets") > 0);
    assert!(c(&seed, "seed_pulls_own") > 0);
    assert!(c(&seed, "seed_pulls_sibling") > 0);
    assert_eq!(c(&seed, "newidle_pulls"), 0);
    // DEFECT (reported): the seed's mechanism - less time with a CPU idle
    // while a task waits - is not asserted, because the model does not show
    // it as a distribution. This test once compared medians over seven
    // nudges of the BPF call cost at hackbench:loops=30, one trajectory of a
    // chaotic system each: a change that decides nothing differently (one
    // more kfunc call in enqueue) flipped it (on 0.72 ms < off 0.97 ms, then
    // 1.02 > 0.81). Over nine seeds of step_jitter=0.05 at loops=100 the two
    // overlap wholly (medians on 3.32 ms, off 3.36 ms), and the seed's
    // "faster" is no better (docs/sim-report.md's 000 rows).
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

fn counter(j: &Value, k: &str) -> u64 {
    j["counters"][k].as_u64().unwrap()
}

/// Runs @args with and without @flag: (on, off).
fn ab(name: &str, args: &[&str], flag: &str) -> (Value, Value) {
    let (ok_on, on) = sim(&format!("{name}-on"), args);
    let mut off_args = args.to_vec();
    off_args.push(flag);
    let (ok_off, off) = sim(&format!("{name}-off"), &off_args);
    assert!(
        ok_on && ok_off,
        "{name}: {} / {}",
        on["invariants"],
        off["invariants"]
    );
    (on, off)
}

#[test]
fn l2_locality_counters_move_on_seed_001_scenario() {
    // L2 groups of 2 SMT threads inside one LLC (the VM preset l2-8)
    let (on, off) = ab(
        "l2",
        &["--machine", "l2-8", "--workload", "rr:clients=3,loops=200"],
        "--sched-arg=--no-l2-locality",
    );
    // on: a waker inserts directly only within its L2; beyond, it queues
    assert_eq!(counter(&on, "insert_direct_wide"), 0);
    assert!(counter(&on, "insert_queued") > 0);
    // off: the whole LLC is the direct-insert domain
    assert!(counter(&off, "insert_direct_wide") > 0);
    assert_eq!(counter(&off, "insert_queued"), 0);
    // and the kernel model queues wakeups (SCX_OPS_ALLOW_QUEUED_WAKEUP, set
    // by the loader) beyond the LLC and, inside it, only onto an idle CPU
    // (ttwu_queue_cond()'s idle rule): without that rule, none on this
    // one-LLC machine
    assert!(on["wakeups"]["queued_ipi"].as_u64().unwrap() > 0);
    let (ok, no_idle_rule) = sim(
        "l2-no-idle-rule",
        &[
            "--machine",
            "l2-8",
            "--workload",
            "rr:clients=3,loops=200",
            "--cost",
            "ttwu_queue_idle=0",
        ],
    );
    assert!(ok);
    assert_eq!(no_idle_rule["wakeups"]["queued_ipi"], 0);
}

#[test]
fn prev_first_stops_migrations_on_seed_002_big_little() {
    let (on, off) = ab(
        "prev",
        &[
            "--machine",
            "hikey960",
            "--workload",
            "pipe:loops=2000,start=4",
        ],
        "--sched-arg=--no-prev-first",
    );
    let wakeups = 2 * 2000;
    assert!(
        counter(&on, "migrations") <= 2,
        "{}",
        counter(&on, "migrations")
    );
    // each keeps its CPU, or, as a pair that wakes each other in turn, shares
    // the waker's (a sync wakeup): no move either way
    assert!(counter(&on, "prev_kept") + counter(&on, "wake_sync") >= wakeups - 2);
    assert!(counter(&off, "migrations") >= wakeups * 9 / 10);
    assert_eq!(counter(&off, "prev_kept"), 0);
}

#[test]
fn overload_gate_skips_most_steal_scans_under_partial_load_seed_003() {
    let (on, off) = ab(
        "gate",
        &[
            "--machine",
            "xeon-4s",
            "--workload",
            // the seed's clients send from the network: no WF_SYNC, so each
            // side idles its CPU between transactions
            "rr:clients=48,loops=100,sync=0",
        ],
        "--sched-arg=--no-overload-gate",
    );
    let (done, skipped) = (
        counter(&on, "steal_scans"),
        counter(&on, "steal_scans_skipped"),
    );
    assert!(
        skipped > 0 && skipped * 4 >= (done + skipped) * 3,
        "{done} done, {skipped} skipped"
    );
    // without the gate every idle-time scan is done
    assert_eq!(counter(&off, "steal_scans_skipped"), 0);
    assert!(counter(&off, "steal_scans") >= done + skipped);
}

#[test]
fn group_balancer_settles_groups_into_partitions_seed_004() {
    let args = [
        "--machine",
        "16cpu",
        "--workload",
        "memgroups:groups=4,threads=2,work_ms=60,sleep_us=200,interleave=1",
        "--sched-arg=--gb-parent=sim",
        "--sched-arg=--gb-partitions=0-3;4-7;8-11;12-15",
        "--sched-arg=--gb-period-ms=10",
    ];
    let (on, off) = ab("gb", &args, "--sched-arg=--no-group-balancer");
    let excl = |j: &Value| j["group_balancer"]["mean_exclusivity"].as_f64().unwrap();
    let groups = on["group_balancer"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 4);
    // every group settled, into different partitions (one per partition)
    let mut parts: Vec<i64> = groups
        .iter()
        .map(|g| g["partition"].as_i64().unwrap())
        .collect();
    parts.sort();
    assert_eq!(parts, vec![0, 1, 2, 3]);
    // BPF accounted every group's runtime, and the soft binding acted
    assert!(groups.iter().all(|g| g["runtime_ns_per_partition"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x.as_u64() > Some(0))));
    assert!(counter(&on, "wake_group_part") + counter(&on, "group_moves") > 0);
    assert!(excl(&on) > 0.9, "{}", excl(&on));
    // off: accounted, never settled, interleaved groups stay spread
    assert!(off["group_balancer"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["partition"].is_null()));
    assert_eq!(counter(&off, "wake_group_part"), 0);
    assert!(excl(&off) < 0.6, "{}", excl(&off));
}

#[test]
fn settled_groups_share_lines_inside_their_cluster_seed_004() {
    // seed 004's machine (8 clusters of 16) and sysbench's shared buffer:
    // a group kept in one cluster takes its lines over at the in-cluster
    // latency, a group spread over the clusters mostly from other clusters
    let args = [
        "--machine",
        "arm64-128-cl",
        "--workload",
        "memgroups:groups=8,threads=8,work_ms=40,sleep_us=200,interleave=1,ws_kb=1,shared=1",
        "--sched-arg=--gb-parent=sim",
        "--sched-arg=--gb-partitions=0-15;16-31;32-47;48-63;64-79;80-95;96-111;112-127",
        "--sched-arg=--gb-period-ms=10",
    ];
    let (on, off) = ab("gb-cl", &args, "--sched-arg=--no-group-balancer");
    let t = |j: &Value| j["completion_time_s"].as_f64().unwrap();
    let excl = |j: &Value| j["group_balancer"]["mean_exclusivity"].as_f64().unwrap();
    assert!(
        excl(&on) > 0.8 && excl(&off) < 0.5,
        "{} {}",
        excl(&on),
        excl(&off)
    );
    assert!(
        t(&on) < 0.9 * t(&off),
        "settled {:.4} s, spread {:.4} s",
        t(&on),
        t(&off)
    );
    // without the shared lines the placement changes nothing but migrations
    let private: Vec<&str> = args
        .iter()
        .map(|a| {
            if a.starts_with("memgroups") {
                "memgroups:groups=8,threads=8,work_ms=40,sleep_us=200,interleave=1,ws_kb=1"
            } else {
                a
            }
        })
        .collect();
    let (on_p, off_p) = ab("gb-cl-private", &private, "--sched-arg=--no-group-balancer");
    assert!(
        (t(&on_p) - t(&off_p)).abs() < 0.05 * t(&off_p),
        "settled {:.4} s, spread {:.4} s",
        t(&on_p),
        t(&off_p)
    );
}

#[test]
fn a_request_response_transaction_pays_both_sides_and_two_wakeups() {
    // 2 pairs on 4 CPUs: nothing queues; a message lands when its sender's
    // network-stack step ends, so each transaction's latency covers both
    // sides' steps and each message wakes its blocked reader
    let (ok, j) = sim(
        "rr-pair",
        &["--machine", "1llc", "--workload", "rr:clients=2,loops=100"],
    );
    assert!(ok, "{}", j["exit"]);
    let w = &j["workload"];
    assert_eq!(w["transactions"], 200);
    let side = mosaic_sim::cost::UDP_RR_SIDE_NS;
    let p50 = w["latency_ns"]["p50"].as_u64().unwrap();
    assert!(p50 >= 2 * side, "p50 {p50} ns < 2 x {side} ns");
    let wakeups: u64 = ["local", "queued_ipi", "remote_lock"]
        .iter()
        .map(|k| j["wakeups"][k].as_u64().unwrap())
        .sum();
    assert!(wakeups >= 400, "{wakeups} wakeups for 200 transactions");
    // every pair runs the whole window, so the window's rate is the run's
    let (tps, to_end) = (
        w["tps"].as_f64().unwrap(),
        w["tps_to_end"].as_f64().unwrap(),
    );
    assert!((tps - to_end).abs() < 0.05 * to_end, "{tps} vs {to_end}");
}

/// Work per callback (kfunc calls + loop iterations, `bpf_work`) of @workload on @machine,
/// configured as on bare metal (the guest-only same-rq walk off on vm/run's presets too):
/// the median over WORK_SEEDS jittered runs, as the report's table reads it.
fn work_per_callback(machine: &str, workload: &str) -> f64 {
    let dir = std::env::temp_dir().join(format!("mosaic-sim-work-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_mosaic-sim"));
    let tag = format!("{machine}-{}", workload.replace([':', ',', '='], "_"));
    let (runs, _) =
        mosaic_sim::report::bpf_work_runs(exe, &dir, &tag, machine, workload, &[], 1).unwrap();
    mosaic_sim::stats::median(&runs)
}

#[test]
fn work_per_scheduling_event_does_not_grow_with_the_machine() {
    // the BPF work one callback does on 192 CPUs (24 CCX of 8; 4 sockets of 48
    // with SMT) stays within 2x of what it does on 8: no walk over every CPU
    // or every shard of the machine, and sibling walks bounded by the default
    // shard count per LLC
    for w in ["hackbench:loops=50", "rr:clients=128,loops=100"] {
        let small = work_per_callback("2llc-smt", w);
        for big in ["epyc-9654x2", "xeon-4s"] {
            let large = work_per_callback(big, w);
            assert!(
                large <= 2.0 * small,
                "{w}: {large:.2} kfunc calls + loop iterations per callback on {big}, {small:.2} on 2llc-smt (medians of {WORK_SEEDS} seeds)"
            );
        }
    }
}

/// CPU ms per unit of weight of the least served cgroup over the most served
/// one, in the hogs workload's window (1.0: shares exact).
fn hogs_share(j: &Value) -> f64 {
    j["workload"]["share_min_over_max"].as_f64().unwrap()
}

/// Runs hogs workload @w on 1llc under --shared-runq=@design: it must end well, split at
/// least @min_share of the weights and cut no lag.
fn assert_split_without_lag_cuts(name: &str, w: &str, design: &str, min_share: f64) {
    let flag = format!("--sched-arg=--shared-runq={design}");
    let (ok, j) = sim(
        &format!("{name}-{design}"),
        &["--machine", "1llc", "--workload", w, flag.as_str()],
    );
    assert!(ok, "{design} {w}: {}", j["exit"]);
    assert!(
        hogs_share(&j) >= min_share,
        "{design} {w}: {}",
        j["workload"]
    );
    assert_eq!(counter(&j, "lag_cuts"), 0, "{design} {w}");
}

#[test]
fn busy_llcs_even_out_by_weight_so_cgroup_shares_hold_across_llcs() {
    // two equal cgroups of 8 busy loops on 2 LLCs of 4 CPUs; the second is
    // forked from CPU 0 a second in, while every CPU is busy: without
    // balancing its tasks never leave LLC 0 and it gets half the CPU of the
    // first; with it, both get the same to within 10 %
    let w = "hogs:counts=8:8,weights=100:100,late_ms=1000,ms=5000";
    let (on, off) = ab(
        "hogs",
        &["--machine", "2llc-smt", "--workload", w],
        "--sched-arg=--no-llc-balance",
    );
    assert!(hogs_share(&on) >= 0.9, "{}", on["workload"]);
    assert!(counter(&on, "llc_balance_pulls") > 0);
    assert!(hogs_share(&off) < 0.6, "{}", off["workload"]);
    assert_eq!(counter(&off, "llc_balance_hints"), 0);
    // cpu.weight 100 against 300, 16 loops each, the 300 ones forked late on CPU 0, on
    // 2 LLCs of 8 CPUs and on 2 nodes of 2 LLCs: 3:1 to within 10 % once LLCs are
    // weighed (0.75:1 and 0.27:1 without); on 2node also as two children of one parent
    // cgroup (each share is then its parent's split twice)
    for (m, nested) in [("16cpu", 0), ("2node", 0), ("2node", 1)] {
        let w = format!("hogs:counts=16:16,weights=100:300,late_ms=1000,ms=5000,nested={nested}");
        let w = w.as_str();
        let (on, off) = ab(
            &format!("hogs-w-{m}-{nested}"),
            &["--machine", m, "--workload", w],
            "--sched-arg=--no-llc-balance",
        );
        assert!(hogs_share(&on) >= 0.9, "{m} {w}: {}", on["workload"]);
        assert!(hogs_share(&off) < 0.5, "{m} {w}: {}", off["workload"]);
    }
}

#[test]
fn overload_time_counts_a_spell_still_open() {
    // 12 busy loops on 4 CPUs keep a task waiting all along: the overload flag goes up
    // once and never comes down. A reader of the counters during such a spell (the VM's
    // --stats-json around a workload; here a run cut at --max-time) saw none of its time
    // when only a closed spell was added (overload_ns 0 of 1 s); the periodic scan
    // (10 ms) now adds it as it goes
    for seed in ["1", "2"] {
        let (_, j) = sim(
            &format!("open-spell-{seed}"),
            &[
                "--machine",
                "1llc",
                "--workload",
                "hogs:counts=12,weights=100,ms=4000",
                "--max-time",
                "1",
                "--seed",
                seed,
            ],
        );
        assert_eq!(counter(&j, "overload_sets"), 1, "{}", j["counters"]);
        let ns = counter(&j, "overload_ns");
        assert!(
            (980_000_000..=1_000_000_000).contains(&ns),
            "overload_ns {ns} of a 1 s run"
        );
    }
}

#[test]
fn every_wait_is_counted_not_only_a_wakeup_s() {
    // two busy loops on one CPU never sleep: after their start, one of them
    // always waits behind the other's turn, after a requeue that the wakeup
    // latency does not see and the bench's shared measure does; so the waits
    // add up to the run's second, less the one still open at its end
    let (_, j) = sim(
        "requeue-waits",
        &[
            "--machine",
            "1cpu",
            "--workload",
            "hogs:counts=2,weights=100,ms=2000",
            "--max-time",
            "1",
        ],
    );
    let (waits, wakes) = (&j["wait_ns"], &j["wakeup_latency_ns"]);
    let n = |v: &serde_json::Value| v["count"].as_u64().unwrap_or(0);
    assert!(n(waits) >= 10, "1 s of turns: {waits}");
    assert!(n(wakes) <= 2, "only the start wakes: {wakes}");
    let total = waits["mean"].as_f64().unwrap_or(0.0) * n(waits) as f64;
    // the wait still open at the end is at most one turn, the longest wait
    let open = waits["max"].as_f64().unwrap_or(0.0);
    assert!(
        (1e9 - open..=1e9).contains(&total),
        "waits add up to {total} ns: {waits}"
    );
}

#[test]
fn llc_balance_widens_its_limit_when_no_waiter_is_light_enough() {
    // the VM test's load (cpu.weight 100 against 300, 8 loops each, the 300 ones forked
    // late on CPU 0, 2 LLCs of 4 CPUs) with the light cgroup held to LLC 1: moves of at
    // most the even-out load stop at 6 heavy loops in LLC 0 against 2 heavy and 8 light
    // (x = 25, each heavy loop 37.5) and the split at 2.55:1; a wide hint moves one more
    let w = "hogs:counts=8:8,weights=100:300,late_ms=1000,ms=8000,cpus=4-7:";
    for seed in ["1", "2"] {
        let (ok, j) = sim(
            &format!("wide-hint-{seed}"),
            &["--machine", "2llc-smt", "--workload", w, "--seed", seed],
        );
        assert!(ok, "{w}: {}", j["exit"]);
        assert!(
            counter(&j, "llc_balance_wide_hints") > 0,
            "{}",
            j["counters"]
        );
        assert!(hogs_share(&j) >= 0.9, "{w}: {}", j["workload"]);
    }
}

#[test]
fn root_tasks_running_for_a_moment_do_not_move_busy_loops() {
    // the VM test's load (cpu.weight 100 against 300, 8 loops each, the 300 ones forked
    // late on CPU 0, 2 LLCs of 4 CPUs) next to root-cgroup tasks that run for a moment, as
    // a guest's kworkers and shell do: each weighs its share times how much of the recent
    // past it was runnable. Weighed by share alone (100 against 12.5 for a light loop),
    // the CPU a scan caught one on looked heavy, loops moved back and forth and the split
    // fell to 0.73 and 0.68 of 3:1 here
    for (probes, seed) in [
        ("probe_ms=10,probe_us=1000,probes=4", "1"),
        ("probe_ms=5,probe_us=500,probes=8", "2"),
    ] {
        let w = format!("hogs:counts=8:8,weights=100:300,late_ms=1000,ms=20000,{probes}");
        let (ok, j) = sim(
            &format!("root-noise-{seed}"),
            &[
                "--machine",
                "2llc-smt",
                "--workload",
                &w,
                "--seed",
                seed,
                "--cost",
                "step_jitter=0.2",
            ],
        );
        assert!(ok, "{w}: {}", j["exit"]);
        assert!(hogs_share(&j) >= 0.9, "{w}: {}", j["workload"]);
    }
}

#[test]
fn per_cpu_queues_keep_cgroup_weights_by_weighing_their_cpus() {
    // the per-CPU designs (--shared-runq off, the kernel-like baseline, and
    // seed) weigh shares in their periodic balance and in the LLC balance,
    // and a heavier running task keeps its CPU for its weight's turns: with
    // counts of tasks only, 8 loops at cpu.weight 100 against 4 at 300 on one
    // LLC split 1:1, and a cgroup forked late on one LLC got half its share.
    // Each CPU's queue keeps its own clock: with one clock for the LLC, a CPU
    // whose weight-300 loop ran alone (a root-cgroup probe waking every 10 ms
    // made that CPU look heavy to the balance) moved it ahead, the other
    // CPUs' weight-300 loops fell more than the lag bound behind it and were
    // cut back at every requeue (lag_cuts 196), and the probe case split at
    // 0.68 of 1:3 (0.89 with per-CPU clocks; the rest is that placement)
    for design in ["off", "seed"] {
        let flag = format!("--sched-arg=--shared-runq={design}");
        let w = "hogs:counts=8:4,weights=100:300,ms=8000,probe_ms=10";
        assert_split_without_lag_cuts("pcq-probe", w, design, 0.85);
        for (m, w, balanced) in [
            ("1llc", "hogs:counts=8:4,weights=100:300,ms=8000", false),
            (
                "1llc",
                "hogs:counts=8:8,weights=300:100,ms=4000,late_ms=1000",
                true,
            ),
            (
                "2llc-smt",
                "hogs:counts=8:8,weights=100:100,late_ms=1000,ms=5000",
                true,
            ),
        ] {
            let (ok, j) = sim(
                &format!("pcq-{design}-{m}"),
                &["--machine", m, "--workload", w, flag.as_str()],
            );
            assert!(ok, "{design} {m} {w}: {}", j["exit"]);
            assert!(hogs_share(&j) >= 0.9, "{design} {m} {w}: {}", j["workload"]);
            // a late cgroup on one CPU is spread by the periodic balance
            if balanced {
                assert!(counter(&j, "periodic_pulls") > 0, "{design} {m} {w}");
            }
        }
    }
}

#[test]
fn pinned_crowds_keep_cgroup_weights_in_every_design() {
    // 8 loops at cpu.weight 100 and 4 at 300, pinned one of 300 and two of 100 per CPU
    // (taskset -c): no balance acts, so the split is each CPU queue's own order, kept by a
    // clock per CPU queue: the per-CPU designs' own, the shard design's for its pinned
    // crowd. Ordered against the LLC's clock, the furthest of the four CPUs' crowds, the
    // others' heavy loops were cut back to the lag bound at every requeue (0.33 of the
    // weights, lag_cuts 766)
    for design in ["shard", "off", "seed"] {
        let w = "hogs:counts=8:4,weights=100:300,ms=8000,pinned=1";
        assert_split_without_lag_cuts("pinned-crowd", w, design, 0.9);
    }
}

#[test]
fn sibling_pulls_keep_the_llc_vtime_order_with_many_shards() {
    // cpu.weight 100 against 300, 16 loops each, the 300 ones forked late on CPU 0, on
    // 2 LLCs of 8 CPUs cut into one-CPU shards (8 per LLC): a CPU that takes from its
    // siblings in walk order only, whatever their heads' vtimes, ran this at 0.58 of the
    // weights; taking a head more than a slice older than the next in turn's first,
    // 0.99 (shards of 2: 0.99 either way)
    let w = "hogs:counts=16:16,weights=100:300,late_ms=1000,ms=5000";
    let (ok, j) = sim(
        "hogs-w-16cpu-shard1",
        &[
            "--machine",
            "16cpu",
            "--workload",
            w,
            "--sched-arg=--shard-size=1",
            "--sched-arg=--shared-runq=shard",
        ],
    );
    assert!(ok, "{}", j["invariants"]);
    assert!(hogs_share(&j) >= 0.9, "{}", j["workload"]);
    assert!(counter(&j, "shard_pulls_sibling") > 0);
}

#[test]
fn a_woken_root_task_beside_200_busy_cgroups_preempts_and_waits_little() {
    // one hog in each of 200 cgroups under one parent, a root-cgroup probe
    // that runs 100 us every 10 ms (the manylimits gauntlet cell's, without
    // cpu.max): its waits, with wakeup preemption and without, three seeds
    let counts = vec!["1"; 200].join(":");
    let weights = vec!["100"; 200].join(":");
    let wl = format!("hogs:counts={counts},weights={weights},nested=1,ms=3000,probe_ms=10");
    let probe_wait = |seed: &str, extra: &[&str]| {
        let mut args = vec!["--machine", "1llc", "--workload", &wl, "--seed", seed];
        args.extend_from_slice(&["--cost", "step_jitter=0.05"]);
        args.extend_from_slice(extra);
        let (ok, j) = sim(&format!("probe-{seed}-{}", extra.len()), &args);
        assert!(ok);
        let preempts = j["counters"]["wake_preempts"].as_u64().unwrap();
        (
            j["workload"]["probe"]["mean_wait_us"].as_f64().unwrap(),
            preempts,
        )
    };
    for seed in ["1", "2", "3"] {
        let (with, preempts) = probe_wait(seed, &[]);
        let (without, none) = probe_wait(seed, &["--sched-arg=--no-wake-preempt"]);
        assert!(preempts > 0 && none == 0, "preemptions {preempts} / {none}");
        assert!(
            with * 10.0 < without,
            "seed {seed}: probe mean wait {with} us with preemption, {without} us without"
        );
    }
}

/// Simulated seconds of @workload on @machine with cost overrides @costs.
fn completion_s(name: &str, machine: &str, workload: &str, costs: &[&str]) -> f64 {
    let mut args = vec!["--machine", machine, "--workload", workload];
    for c in costs {
        args.extend(["--cost", c]);
    }
    let (ok, j) = sim(name, &args);
    assert!(ok, "{name}: {} {}", j["exit"], j["invariants"]);
    assert_eq!(j["completed"], true, "{name}: tasks left");
    j["completion_time_s"].as_f64().unwrap()
}

#[test]
fn the_programs_life_forks_the_workers_one_by_one_then_reaps_them() {
    // 2 groups of 5 + 5: the main task forks 20 workers in turn (60 us
    // each), so the run is at least that much longer than the messages alone
    let w = "hackbench:groups=2,fds=5,loops=20";
    let bare = completion_s("life-off", "1llc", w, &[]);
    let life = completion_s("life-on", "1llc", &format!("{w},startup=1"), &[]);
    assert!(
        life >= bare + 20.0 * 60e-6,
        "startup=1 {life} s, messages alone {bare} s"
    );
    // the forked workers wake on the idle CPUs beside the main task
    let (ok, j) = sim(
        "life-idle",
        &["--machine", "1llc", "--workload", &format!("{w},startup=1")],
    );
    assert!(ok);
    assert!(counter(&j, "wake_llc_idle") > 0, "{}", j["counters"]);
    assert_eq!(j["workload"]["startup"], true);
}

#[test]
fn the_vms_host_thread_runs_one_vcpu_at_a_time() {
    // pipe's pair shares one CPU: one vCPU busy, nothing to take turns with,
    // so at slowdown 1 the host thread changes nothing but the turns' costs
    let pipe = "pipe:pairs=1,loops=2000";
    let hw = completion_s("tcg-pipe-hw", "1llc", pipe, &[]);
    let one = completion_s("tcg-pipe-1", "1llc", pipe, &["tcg_slowdown=1"]);
    assert!((one - hw).abs() <= 0.1 * hw, "pipe {one} s on TCG, {hw} s");
    // four busy CPUs in turn: about four times as long
    let hb = "hackbench:groups=4,fds=10,loops=20";
    let hw = completion_s("tcg-hb-hw", "1llc", hb, &[]);
    let one = completion_s("tcg-hb-1", "1llc", hb, &["tcg_slowdown=1"]);
    assert!(one >= 3.0 * hw, "hackbench {one} s on TCG, {hw} s");
    // the ticks' kicks ended turns (a busy vCPU ticks every 4 ms at HZ=250),
    // and the vCPUs that halted gave theirs up too
    let (ok, j) = sim(
        "tcg-turns",
        &[
            "--machine",
            "1llc",
            "--workload",
            hb,
            "--cost",
            "tcg_slowdown=1",
        ],
    );
    assert!(ok);
    let ms = j["completion_time_s"].as_f64().unwrap() * 1e3;
    let turns = j["tcg"]["turns"].as_u64().unwrap();
    let kicks = j["tcg"]["kicks"].as_u64().unwrap();
    // (one kick per point of the ticks' shared grid that passed)
    assert!(
        kicks as f64 >= (ms / 4.0).floor(),
        "{kicks} kicks in {ms} ms"
    );
    assert!(turns > kicks, "{turns} turns, {kicks} kicks");
    assert_eq!(
        sim("hw-turns", &["--machine", "1llc", "--workload", hb]).1["tcg"],
        serde_json::Value::Null
    );
    // and the slowdown stretches it further
    let two = completion_s("tcg-hb-2", "1llc", hb, &["tcg_slowdown=2"]);
    assert!(two >= 1.8 * one, "slowdown 2: {two} s, 1: {one} s");
    // the invariants hold across LLCs and nodes in turn too
    for m in ["2llc-smt", "2node", "l2-8"] {
        completion_s(
            "tcg-inv",
            m,
            &format!("{hb},startup=1"),
            &["tcg_slowdown=4"],
        );
    }
}

#[test]
fn busy_vcpus_change_turns_once_per_tick_of_the_shared_grid() {
    // Every vCPU busy with a pinned loop: the guest's ticks share one 4 ms
    // grid (no skew_tick), QEMU's main loop serves the timers that expire
    // together in one pass, and a vCPU off the host thread raises no second
    // timer interrupt until it runs: one turn per grid point, plus the
    // scheduler's own timers (its 10 ms overload scan). Per-vCPU tick phases
    // or a kick per expired timer would give the turns of 1 ms that the VM
    // does not show (tests/guest/tcg-turns.sh measures 2-4 ms).
    for (machine, n) in [("1llc", "4"), ("2node", "8")] {
        let (ok, j) = sim(
            "tcg-grid",
            &[
                "--machine",
                machine,
                "--workload",
                &format!("hogs:counts={n},weights=100,pinned=1,ms=2000"),
                "--cost",
                "tcg_slowdown=5",
            ],
        );
        assert!(ok, "{machine}: {} {}", j["exit"], j["invariants"]);
        let ms = j["completion_time_s"].as_f64().unwrap() * 1e3;
        let kicks = j["tcg"]["kicks"].as_u64().unwrap() as f64;
        let grid = ms / 4.0;
        assert!(
            kicks >= 0.9 * grid && kicks <= grid + ms / 10.0,
            "{machine}: {kicks} kicks in {ms} ms"
        );
    }
}

#[test]
fn an_idle_vcpu_runs_in_its_turn_what_its_queued_wakeups_gave_it() {
    // An idle vCPU's turn serves the wakeups queued to it; the first one's
    // ops.enqueue fills its local DSQ and asks for a reschedule on the spot.
    // The vCPU must schedule in that turn, not give the host thread away and
    // leave the task on an idle CPU until its next turn (21 ms here, which
    // the simulator's idle-CPU check flags). The background of the VM's
    // counters recorded at 219ad19 and the slowdown the report fitted on them
    // made it happen at these two seeds.
    let w = "hackbench:groups=2,fds=20,loops=100,startup=1,\
             bg_ms=2093,bg_unbound_us=39392,bg_percpu_us=577424";
    for seed in ["10", "13"] {
        let (ok, j) = sim(
            "tcg-queued-wakeups",
            &[
                "--machine",
                "2llc-smt",
                "--workload",
                w,
                "--cost",
                "step_jitter=0.05",
                "--cost",
                "tcg_slowdown=8.937",
                "--seed",
                seed,
            ],
        );
        assert!(ok, "seed {seed}: {} {}", j["exit"], j["invariants"]);
        assert_eq!(j["invariants"]["ok"], true, "seed {seed}");
    }
}

/// @workload on 2node alone and with background options @bg, both
/// completed: (alone, with, its own time s, the run's time s).
fn with_background(tag: &str, workload: &str, bg: &str) -> (Value, Value, f64, f64) {
    let (ok, bare) = sim(
        &format!("{tag}-off"),
        &["--machine", "2node", "--workload", workload],
    );
    assert!(ok);
    let with = format!("{workload},{bg}");
    let (ok, j) = sim(
        &format!("{tag}-on"),
        &["--machine", "2node", "--workload", &with],
    );
    assert!(ok, "{} {}", j["exit"], j["invariants"]);
    assert_eq!(j["completed"], true);
    let own = j["workload"]["workload_time_s"].as_f64().unwrap();
    let whole = j["completion_time_s"].as_f64().unwrap();
    (bare, j, own, whole)
}

#[test]
fn the_background_runs_before_the_workload_and_leaves_its_time_alone() {
    // pipe's pair alone makes only sync wakeups; with 0.5 s of background
    // before it the agent (every 50 ms), an unbound thread (every 10 ms)
    // and each CPU's (every 100 ms) wake on the idle machine
    let (bare, j, own, whole) = with_background(
        "bg",
        "pipe:pairs=1,loops=2000",
        "bg_ms=500,bg_unbound_us=10000,bg_percpu_us=100000",
    );
    let alone = bare["completion_time_s"].as_f64().unwrap();
    assert!(
        (whole - own - 0.5).abs() < 1e-9,
        "{whole} s in all, {own} s its own"
    );
    assert!(
        (own - alone).abs() <= 0.01 * alone,
        "{own} s with, {alone} s without"
    );
    let ops = |j: &Value| j["workload"]["ops_per_sec"].as_f64().unwrap();
    assert!((ops(&j) - ops(&bare)).abs() <= 0.01 * ops(&bare));
    // the agent's 10 and the unbound thread's 50 wakeups find their CPU
    // idle, less the last few whose period would end past 0.5 s
    let placed = counter(&j, "prev_kept") - counter(&bare, "prev_kept");
    assert!(
        (55..=60).contains(&placed),
        "{placed} background wakeups placed"
    );
    // the CPUs' own threads (8 x 5) wait on their CPUs' own queues
    assert!(
        (32..=40).contains(&counter(&j, "cpu_pulls")),
        "{}",
        j["counters"]
    );
    assert_eq!(counter(&bare, "cpu_pulls"), 0);
    // each leaves its CPU idle again
    assert!(counter(&j, "dispatch_empty") >= counter(&bare, "dispatch_empty") + 80);
}

#[test]
fn the_background_goes_on_during_the_workload_and_ends_with_it() {
    // bg_during=1 with no time before: the agent (every 50 ms) and an
    // unbound thread (every 1 ms) wake while pipe's pair runs, on CPUs the
    // pair leaves idle, and the run ends when the pair exits, its sleeping
    // threads left behind without a violation
    let (bare, j, own, whole) = with_background(
        "bgd",
        "pipe:pairs=1,loops=20000",
        "bg_during=1,bg_unbound_us=1000,bg_percpu_us=0",
    );
    assert_eq!(own, whole, "no time before the workload");
    let alone = bare["completion_time_s"].as_f64().unwrap();
    assert!(
        (own - alone).abs() <= 0.02 * alone,
        "{own} s with, {alone} s without"
    );
    // one unbound wakeup a ms over the run, each on an idle CPU
    let placed = counter(&j, "prev_kept")
        + counter(&j, "wake_llc_idle")
        + counter(&j, "wake_l2_idle")
        + counter(&j, "wake_remote_idle")
        - counter(&bare, "prev_kept")
        - counter(&bare, "wake_llc_idle")
        - counter(&bare, "wake_l2_idle")
        - counter(&bare, "wake_remote_idle");
    let expected = (own * 1000.0) as u64;
    assert!(
        placed + 5 >= expected && placed <= expected + (own * 20.0) as u64 + 5,
        "{placed} background wakeups placed over {own} s"
    );
}

#[test]
fn busy_cpus_ticks_kick_idle_cpus_past_their_newidle_gates() {
    // Under the VM's host thread a newidle balance that spans a spin (a
    // runqueue lock held by a vCPU off the thread) costs milliseconds on the
    // guest's clock, and the cost gate then skips that CPU's balances. At
    // this seed, without the idle balance (steal.bpf.c: a busy CPU's tick
    // kicks an idle one to balance, as the kernel's nohz_balancer_kick()),
    // CPU 5 idled 51 ms while a task waited in its LLC.
    let w = "hackbench:groups=4,fds=20,loops=200,startup=1,bg_during=1,\
             bg_unbound_us=9600,bg_percpu_us=489000,fork_ns=284000,exit_ns=284000";
    let (ok, j) = sim(
        "tcg-idle-balance",
        &[
            "--machine",
            "l2-8",
            "--workload",
            w,
            "--cost",
            "step_jitter=0.05",
            "--cost",
            "tcg_slowdown=5.3",
            "--seed",
            "26",
        ],
    );
    assert!(ok, "{} {}", j["exit"], j["invariants"]);
    assert_eq!(j["invariants"]["ok"], true);
    assert!(
        counter(&j, "newidle_skips_cost") > 0,
        "no balance was skipped"
    );
    assert!(
        counter(&j, "idle_balance_kicks") > 0,
        "no idle CPU was kicked"
    );
    assert!(
        j["tcg"]["pauses"].as_u64().unwrap() > 0,
        "no spin ended a turn"
    );
}

#[test]
fn a_timeline_adds_up_to_the_run_and_changes_nothing_else() {
    // --timeline-ms samples the counters as the run goes (scripts/vm-timeline puts them
    // beside the VM's live lines): each counter's increases over the periods add up to its
    // total, there is one period per 2 ms begun (the run lasts ~20 ms), and the run itself
    // is the one without it
    let args = [
        "--machine",
        "2llc-smt",
        "--workload",
        "hackbench:groups=2,loops=50,startup=1",
        "--seed",
        "3",
    ];
    let (ok, plain) = sim("timeline-off", &args);
    let mut with = args.to_vec();
    with.extend(["--timeline-ms", "2"]);
    let (ok2, mut j) = sim("timeline-on", &with);
    assert!(ok && ok2);
    let t = j
        .as_object_mut()
        .unwrap()
        .remove("timeline")
        .expect("timeline");
    assert_eq!(j, plain, "sampling the counters changed the run");
    assert_eq!(t["period_ms"], 2);
    let periods = (j["completion_time_s"].as_f64().unwrap() * 500.0).floor() as usize + 1;
    assert!(periods >= 5, "{periods} periods");
    let moved = t["counters"].as_object().unwrap();
    assert!(moved.contains_key("dispatch_empty"), "{moved:?}");
    for (k, steps) in moved {
        let steps = steps.as_array().unwrap();
        assert_eq!(steps.len(), periods, "{k}");
        let sum: u64 = steps.iter().map(|x| x.as_u64().unwrap()).sum();
        assert_eq!(sum, counter(&j, k), "{k}");
    }
}
