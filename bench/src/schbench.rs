//! `mosaic-bench schbench`: a workalike of schbench (not packaged), written for this suite.
//! `messengers` message threads each own `workers` worker threads. A message thread stamps a
//! request into every one of its workers' slots and wakes them, then sleeps until the last of
//! them finished; a worker measures its wakeup latency (stamp → running), burns `work_us` of
//! calibrated CPU work over a private buffer, and records its request latency (stamp → done).
//! Closed loop: the next round starts as soon as a round completes, so RPS measures how well
//! the scheduler packs and spreads the bursts.
//!
//! Output (parsed by the suite): one line
//! `schbench: wakeup_p50_us=.. wakeup_p90_us=.. wakeup_p99_us=.. wakeup_p999_us=..
//!  request_p50_us=.. request_p99_us=.. rps=..`.

use anyhow::{bail, Result};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// The p-th percentile (0..=100) of sorted `v` (0 if empty), nearest rank.
pub fn percentile(v: &[u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the process's epoch, never 0 (0 marks an empty slot).
fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// One unit of CPU work: a pass of multiply-add over a 16 KiB buffer.
fn work_unit(buf: &mut [u64]) {
    let mut acc = 0x9e37_79b9_7f4a_7c15u64;
    for x in buf.iter_mut() {
        acc = acc.wrapping_mul(6364136223846793005).wrapping_add(*x);
        *x = acc;
    }
    black_box(acc);
}

/// Work units per microsecond on this CPU, measured for ~50 ms.
fn calibrate() -> f64 {
    let mut buf = vec![1u64; 2048];
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < Duration::from_millis(50) {
        for _ in 0..16 {
            work_unit(&mut buf);
        }
        n += 16;
    }
    n as f64 / t.elapsed().as_micros().max(1) as f64
}

/// A worker's mailbox: the stamp of its pending request (0: none).
struct Slot {
    posted: AtomicU64,
    thread: OnceLock<Thread>,
}

/// One message thread's group.
struct Group {
    slots: Vec<Slot>,
    pending: AtomicUsize,
    messenger: OnceLock<Thread>,
}

/// Latencies (ns) recorded by one worker.
struct Samples {
    wake: Vec<u64>,
    req: Vec<u64>,
}

/// Run the workload and print the result line.
pub fn run(messengers: usize, workers: usize, secs: f64, work_us: u64) -> Result<()> {
    if messengers == 0 || workers == 0 {
        bail!("--messengers and --workers must be at least 1");
    }
    now_ns();
    let units = ((calibrate() * work_us as f64).round() as u64).max(1);
    let stop = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicU64::new(0));
    let mut groups = Vec::new();
    let mut worker_handles = Vec::new();
    let mut msg_handles = Vec::new();
    for _ in 0..messengers {
        let g = Arc::new(Group {
            slots: (0..workers)
                .map(|_| Slot {
                    posted: AtomicU64::new(0),
                    thread: OnceLock::new(),
                })
                .collect(),
            pending: AtomicUsize::new(0),
            messenger: OnceLock::new(),
        });
        for w in 0..workers {
            let (gw, stopw) = (g.clone(), stop.clone());
            let h = thread::spawn(move || worker(&gw, w, units, &stopw));
            let _ = g.slots[w].thread.set(h.thread().clone());
            worker_handles.push(h);
        }
        let (g2, stop2, done) = (g.clone(), stop.clone(), completed.clone());
        let h = thread::spawn(move || messenger(&g2, &stop2, &done));
        let _ = g.messenger.set(h.thread().clone());
        msg_handles.push(h);
        groups.push(g);
    }
    let start = Instant::now();
    thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::SeqCst);
    let elapsed = start.elapsed().as_secs_f64();
    let requests = completed.load(Ordering::SeqCst);
    for g in &groups {
        for s in &g.slots {
            if let Some(t) = s.thread.get() {
                t.unpark();
            }
        }
    }
    for h in msg_handles {
        h.join()
            .map_err(|_| anyhow::anyhow!("message thread panicked"))?;
    }
    let (mut wake, mut req) = (Vec::new(), Vec::new());
    for h in worker_handles {
        let s = h
            .join()
            .map_err(|_| anyhow::anyhow!("worker thread panicked"))?;
        wake.extend(s.wake);
        req.extend(s.req);
    }
    wake.sort_unstable();
    req.sort_unstable();
    let us = |v: &[u64], p: f64| percentile(v, p) as f64 / 1000.0;
    println!(
        "schbench: messengers={messengers} workers={workers} work_us={work_us} \
         wakeup_p50_us={:.1} wakeup_p90_us={:.1} wakeup_p99_us={:.1} wakeup_p999_us={:.1} \
         request_p50_us={:.1} request_p99_us={:.1} rps={:.1}",
        us(&wake, 50.0),
        us(&wake, 90.0),
        us(&wake, 99.0),
        us(&wake, 99.9),
        us(&req, 50.0),
        us(&req, 99.0),
        requests as f64 / elapsed
    );
    Ok(())
}

/// Message thread: post a request to every worker, sleep until all are done, repeat.
fn messenger(g: &Group, stop: &AtomicBool, completed: &AtomicU64) {
    while g.slots.iter().any(|s| s.thread.get().is_none()) {
        thread::yield_now();
    }
    while !stop.load(Ordering::SeqCst) {
        g.pending.store(g.slots.len(), Ordering::SeqCst);
        let t = now_ns();
        for s in &g.slots {
            s.posted.store(t, Ordering::SeqCst);
            s.thread.get().unwrap().unpark();
        }
        while g.pending.load(Ordering::SeqCst) != 0 {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            thread::park_timeout(Duration::from_millis(100));
        }
        completed.fetch_add(g.slots.len() as u64, Ordering::SeqCst);
    }
}

/// Worker `w` of group `g`: wait for a request, measure, work, report done.
fn worker(g: &Group, w: usize, units: u64, stop: &AtomicBool) -> Samples {
    let mut buf = vec![1u64; 2048];
    let mut s = Samples {
        wake: Vec::new(),
        req: Vec::new(),
    };
    let slot = &g.slots[w];
    loop {
        let posted = loop {
            if stop.load(Ordering::SeqCst) {
                return s;
            }
            let p = slot.posted.load(Ordering::SeqCst);
            if p != 0 {
                break p;
            }
            thread::park();
        };
        s.wake.push(now_ns().saturating_sub(posted));
        for _ in 0..units {
            work_unit(&mut buf);
        }
        s.req.push(now_ns().saturating_sub(posted));
        slot.posted.store(0, Ordering::SeqCst);
        if g.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Some(m) = g.messenger.get() {
                m.unpark();
            }
        }
    }
}
