//! The cost model: every time the simulator charges, in one place.
//!
//! Defaults and their sources (see ../shared/DESIGN.md, "Simulator"):
//! - cache-line transfer: 5–10 ns between SMT siblings, 16–24 ns inside a
//!   CCX/LLC, 84–115 ns across CCXs of a socket, 110–200 ns across sockets
//!   (AMD Zen 4 and Intel core-to-core latency measurements; seed 001 quotes
//!   L2 ≥ 14 ns, L3 ≈ 50 ns, RAM ≈ 120 ns on EPYC 9654).
//! - context switch 2–4 µs (lmbench lat_ctx class numbers on recent x86;
//!   pipe-heavy workloads switch between hot tasks, so the low end).
//! - IPI delivery 1.3–1.7 µs (wake of a remote CPU, x2APIC).
//! - shard/DSQ lock hold ≈ 0.3 µs (seed 000's lock_stat: holdtime-avg
//!   0.32–0.50 µs on the shard lock); runqueue lock hold from the same
//!   tables (rq->__lock holdtime-avg ≈ 5 µs is for the whole __schedule; the
//!   part a remote waker holds is much shorter, 0.5 µs).
//! - cache refill after a migration: the task's working set in lines, each
//!   fetched at the latency of the distance moved, divided by the memory-level
//!   parallelism of a core (≈ 8 outstanding misses).
use serde::Serialize;

/// netperf UDP_RR on loopback, one side's CPU time per transaction on a
/// reference core: its recvmsg of the message that woke it and its sendmsg
/// of the next (the kernel's UDP/IP and loopback path, softirq included);
/// client and server do the same calls, so the same cost.
/// From seed 000's Skylake row (128 netperf on 36 saturated CPUs, 15,699 tps
/// each, so 36 / (128 x 15,699) = 17.9 us of CPU per transaction), less the
/// simulator's own scheduling charges per transaction there (8.3 us: two
/// context switches, wakeups, locks, BPF, refills; measured with
/// --no-shared-runq), at Skylake's speed 0.7 and SMT rate 0.62:
/// (17.9 - 8.3) x 0.7 x 0.62 = 4.2 us per transaction, half per side.
/// (The 7950X's row gives 0.6 us and Milan's, run at 700 MHz, 5.6 us: the
/// model's fixed-ns scheduling charges do not scale with the clock.)
pub const UDP_RR_SIDE_NS: u64 = 2100;

/// How far apart two CPUs are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Dist {
    Same = 0,
    Smt = 1,
    L2 = 2,
    Llc = 3,
    Node = 4,
    Remote = 5,
}

pub const DIST_NAMES: [&str; 6] = ["same", "smt", "l2", "llc", "node", "remote"];

#[derive(Debug, Clone, Serialize)]
pub struct Costs {
    /// Cache-line transfer latency by distance (ns), indexed by Dist.
    pub line_ns: [f64; 6],
    pub ctx_switch_ns: f64,
    pub ipi_ns: f64,
    /// Waker's base cost of try_to_wake_up (ns), without locks.
    pub ttwu_ns: f64,
    /// Cost of queueing a wakeup on a remote wake list and sending the IPI.
    pub ttwu_queue_ns: f64,
    /// Cost charged per call of a scheduler callback (BPF program run).
    pub bpf_call_ns: f64,
    /// Cost charged per unit of work inside a callback: each kfunc call and
    /// each loop iteration (a queue-length read in a scan of other CPUs'
    /// queues is about one cache-line read of a line another CPU writes).
    pub bpf_work_ns: f64,
    pub dsq_lock_hold_ns: f64,
    pub rq_lock_hold_ns: f64,
    /// Outstanding misses a core overlaps while refilling its cache.
    pub refill_mlp: f64,
    /// Bytes per cache line.
    pub line_bytes: f64,
    /// Throughput of an SMT thread whose sibling is busy (1.0 = no loss).
    pub smt_rate: f64,
    /// Extra run time per unit of LLC over-subscription for memory-bound work.
    pub llc_interference: f64,
    /// ttwu_queue_cond boundary: "llc" (kernel) or "l2" (seed 001's patch).
    pub ttwu_boundary_l2: bool,
    /// CPU time of one idle-time balance attempt that the overload gate did
    /// not skip (a steal scan done), on top of its BPF work: the kernel's
    /// load-balance walk over the machine's domains that the scan stands for.
    /// 0 by default (BPF work only); seed 003's row sets the seed's own
    /// measurement (0.13 ms per full balance on its 4-socket machine).
    pub balance_scan_ns: f64,
    /// Each workload step's CPU time is scaled by a factor uniform in
    /// [1 - step_jitter, 1 + step_jitter], drawn from the run's RNG seed;
    /// 0 (default): every step exactly as the workload asks, and the seed
    /// only reaches the scheduler's bpf_get_prandom_u32().
    pub step_jitter: f64,
    /// QEMU TCG's cost of the guest's instructions over the hardware's: > 0
    /// models the VM's single host thread running the vCPUs in turn
    /// (engine/tcg.rs), each turn's work and overheads this many times
    /// slower, with no SMT sharing and no caches to refill; 0 (default):
    /// hardware, every CPU at once.
    pub tcg_slowdown: f64,
    /// Under TCG (tcg_slowdown > 0), what loading another process's address
    /// space costs the guest, ns of guest time (not stretched by the
    /// slowdown): QEMU keeps no TLB tags, so a CR3 load empties its software
    /// TLB and the pages the next task touches are walked again.
    /// scripts/switch-cost measures it in the guest; 0 (default): nothing
    /// beyond the context switch's own cost.
    pub tcg_mm_switch_ns: f64,
    /// Whether a wakeup onto an idle CPU of the waker's cache domain goes
    /// through that CPU's wake list (an IPI; the idle CPU enqueues), as
    /// ttwu_queue_cond() does since the wakee-CPU-idle rule (Linux 6.0);
    /// false: only wakeups across the cache boundary do.
    pub ttwu_queue_idle: bool,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            line_ns: [0.0, 7.0, 12.0, 20.0, 100.0, 155.0],
            ctx_switch_ns: 2000.0,
            ipi_ns: 1500.0,
            ttwu_ns: 400.0,
            ttwu_queue_ns: 150.0,
            bpf_call_ns: 60.0,
            bpf_work_ns: 10.0,
            // seed 000's lock_stat on Skylake: shard holdtime-avg 0.32 us, the
            // same with 3 shards and with one of all 36 CPUs, 0.34 with smaller:
            // the hold does not grow with the CPUs hammering a shard; the
            // handoff's line transfer from the last holder is added per
            // acquisition (engine/locks.rs), waiting is queued
            dsq_lock_hold_ns: 300.0,
            // the part of rq->__lock a remote waker or puller holds (the
            // seed's 5 us holdtime-avg is the whole __schedule)
            rq_lock_hold_ns: 500.0,
            refill_mlp: 8.0,
            line_bytes: 64.0,
            smt_rate: 0.62,
            llc_interference: 0.6,
            ttwu_boundary_l2: false,
            balance_scan_ns: 0.0,
            step_jitter: 0.0,
            tcg_slowdown: 0.0,
            tcg_mm_switch_ns: 0.0,
            ttwu_queue_idle: true,
        }
    }
}

impl Costs {
    pub fn line(&self, d: Dist) -> f64 {
        self.line_ns[d as usize]
    }

    /// Time to refill @ws bytes of working set after moving by @d.
    pub fn refill(&self, ws: u64, d: Dist) -> f64 {
        if d <= Dist::Smt {
            return 0.0;
        }
        ws as f64 / self.line_bytes * self.line(d) / self.refill_mlp
    }

    /// Applies one `key=value` override (CLI --cost).
    pub fn set(&mut self, kv: &str) -> anyhow::Result<()> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--cost wants key=value, got {kv:?}"))?;
        let switch = match k {
            "ttwu_boundary" => Some((&mut self.ttwu_boundary_l2, "l2", "llc")),
            "ttwu_queue_idle" => Some((&mut self.ttwu_queue_idle, "1", "0")),
            _ => None,
        };
        if let Some((slot, on, off)) = switch {
            *slot = match v {
                _ if v == on => true,
                _ if v == off => false,
                _ => anyhow::bail!("{k} is {on} or {off}"),
            };
            return Ok(());
        }
        let x: f64 = v.parse()?;
        let slot = match k {
            "ctx_switch_ns" => &mut self.ctx_switch_ns,
            "ipi_ns" => &mut self.ipi_ns,
            "ttwu_ns" => &mut self.ttwu_ns,
            "ttwu_queue_ns" => &mut self.ttwu_queue_ns,
            "bpf_call_ns" => &mut self.bpf_call_ns,
            "bpf_work_ns" => &mut self.bpf_work_ns,
            "dsq_lock_hold_ns" => &mut self.dsq_lock_hold_ns,
            "rq_lock_hold_ns" => &mut self.rq_lock_hold_ns,
            "refill_mlp" => &mut self.refill_mlp,
            "smt_rate" => &mut self.smt_rate,
            "llc_interference" => &mut self.llc_interference,
            "balance_scan_ns" => &mut self.balance_scan_ns,
            "step_jitter" => &mut self.step_jitter,
            "tcg_slowdown" => &mut self.tcg_slowdown,
            "tcg_mm_switch_ns" => &mut self.tcg_mm_switch_ns,
            "line_smt_ns" => &mut self.line_ns[1],
            "line_l2_ns" => &mut self.line_ns[2],
            "line_llc_ns" => &mut self.line_ns[3],
            "line_node_ns" => &mut self.line_ns[4],
            "line_remote_ns" => &mut self.line_ns[5],
            _ => anyhow::bail!("unknown cost {k:?}"),
        };
        *slot = x;
        Ok(())
    }
}
