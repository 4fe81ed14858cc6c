//! Modelled machines: presets, the VM harness's topologies, and this host.
//!
//! A machine is the scheduler's own `Topology` (scheduler/src/topology.rs,
//! from scx_mosaic's library) plus what only the simulator needs:
//! relative core speed and LLC size.
use crate::cost::Dist;
use crate::topology::{Cpu, Topology};
use anyhow::{bail, Result};

pub struct Machine {
    pub name: String,
    pub topo: Topology,
    /// Core speed relative to the reference the workload costs assume.
    pub speed: f64,
    /// Bytes of each LLC.
    pub llc_bytes: u64,
    /// Per CPU: its SMT siblings (other than itself).
    pub siblings: Vec<Vec<usize>>,
}

/// One CPU's place: (core, l2, llc, node) keys and capacity.
struct Place {
    core: usize,
    l2: usize,
    llc: usize,
    node: usize,
    cap: u32,
}

/// Builds a Topology the way Topology::from_root numbers groups: in CPU id
/// order of first appearance.
fn build(places: &[Place]) -> Topology {
    let n = places.len();
    let group = |key: &dyn Fn(&Place) -> usize| -> Vec<Vec<usize>> {
        let mut order: Vec<usize> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (id, p) in places.iter().enumerate() {
            let k = key(p);
            match order.iter().position(|&o| o == k) {
                Some(i) => groups[i].push(id),
                None => {
                    order.push(k);
                    groups.push(vec![id]);
                }
            }
        }
        groups
    };
    let cores = group(&|p| p.core);
    let l2s = group(&|p| p.l2);
    let llcs = group(&|p| p.llc);
    let find = |g: &Vec<Vec<usize>>, id: usize| g.iter().position(|m| m.contains(&id)).unwrap();
    let cpus = (0..n)
        .map(|id| Cpu {
            id,
            core: find(&cores, id),
            l2: find(&l2s, id),
            llc: find(&llcs, id),
            node: places[id].node,
            capacity: places[id].cap,
        })
        .collect();
    let mut nodes: Vec<usize> = places.iter().map(|p| p.node).collect();
    nodes.sort_unstable();
    nodes.dedup();
    Topology {
        nr_cpu_ids: n,
        cpus,
        cores,
        l2s,
        llcs,
        nodes,
        // bare metal unless the preset is one of vm/run's (Machine::preset)
        guest: false,
    }
}

/// A regular x86-like part: @sockets × @llcs_per_socket LLCs of @cores cores
/// with @threads threads; @l2_cores cores share an L2. With @linux_smt_order
/// the second threads of all cores come after all first threads (how Linux
/// numbers AMD/Intel servers); otherwise siblings are adjacent (QEMU).
#[allow(clippy::too_many_arguments)]
fn regular(
    sockets: usize,
    nodes_per_socket: usize,
    llcs_per_socket: usize,
    cores_per_llc: usize,
    threads: usize,
    l2_cores: usize,
    linux_smt_order: bool,
) -> Vec<Place> {
    let ncores = sockets * llcs_per_socket * cores_per_llc;
    let n = ncores * threads;
    let mut v = Vec::with_capacity(n);
    for id in 0..n {
        let (core, _t) = if linux_smt_order {
            (id % ncores, id / ncores)
        } else {
            (id / threads, id % threads)
        };
        let llc = core / cores_per_llc;
        let socket = llc / llcs_per_socket;
        let llc_in_socket = llc % llcs_per_socket;
        let node = socket * nodes_per_socket + llc_in_socket * nodes_per_socket / llcs_per_socket;
        v.push(Place {
            core,
            l2: core / l2_cores,
            llc,
            node,
            cap: 1024,
        });
    }
    v
}

/// The presets that model vm/run's guests: the scheduler sees a guest there,
/// as in the VM (its guest-only defaults apply: --same-rq-pull's auto is on).
pub const VM_PRESETS: [&str; 6] = ["1llc", "2llc-smt", "2node", "l2-8", "1cpu", "16cpu"];

/// The mosaic-sim argument that runs any preset in bare metal's configuration
/// (the guest-only same-runqueue walk off on VM_PRESETS too): the BPF work
/// table and its test compare machines in one configuration.
pub const BARE_METAL_SCHED_ARG: &str = "--sched-arg=--same-rq-pull=off";

pub const PRESETS: &[(&str, &str)] = &[
    (
        "epyc-9654x2",
        "2x AMD EPYC 9654, SMT off: 192 CPUs, 24 CCX (LLC) of 8 cores, 2 nodes",
    ),
    (
        "epyc-9654x2-smt",
        "2x AMD EPYC 9654: 384 CPUs, 24 CCX of 8 cores x 2 threads, 2 nodes",
    ),
    (
        "ryzen-7950x",
        "AMD Ryzen 9 7950X: 32 CPUs, 2 CCX of 8 cores x 2 threads",
    ),
    ("skylake-18c", "Intel Skylake 18 cores x 2 threads, one LLC"),
    (
        "milan-72",
        "AMD Milan, 72 CPUs: 6 CCX of 6 cores x 2 threads",
    ),
    (
        "xeon-4s",
        "4-socket Xeon: 4 x 24 cores x 2 threads (192 CPUs), 4 nodes",
    ),
    (
        "hikey960",
        "HiKey960 big.LITTLE: 4 A53 (capacity 462) + 4 A73 (1024), 2 clusters",
    ),
    (
        "arm64-128",
        "128-core ARM64 server (Altra-like): 1 node, per-core L2, one system-level cache",
    ),
    (
        "arm64-128-cl",
        "128-core ARM64 as seed 004 ran it: 8 clusters of 16 cores, each sharing a cluster cache (its LLC, 16 MiB), 1 node",
    ),
    ("1llc", "vm/run 1llc: 4 CPUs, 1 LLC, no SMT"),
    (
        "2llc-smt",
        "vm/run 2llc-smt: 8 CPUs, 2 LLCs x 2 cores x 2 SMT",
    ),
    (
        "2node",
        "vm/run 2node: 8 CPUs, 2 NUMA nodes x 2 LLCs x 2 cores",
    ),
    (
        "l2-8",
        "vm/run l2-8: 8 CPUs, 1 LLC, 2 L2 modules of 2 cores x 2 SMT",
    ),
    ("1cpu", "vm/run 1cpu: 1 CPU"),
    ("16cpu", "vm/run 16cpu: 16 CPUs, 2 LLCs x 8 cores"),
    (
        "from-sysfs",
        "this host, read from /sys like the scheduler does",
    ),
];

impl Machine {
    pub fn preset(name: &str) -> Result<Machine> {
        let mb = 1u64 << 20;
        let (places, speed, llc_bytes) = match name {
            "epyc-9654x2" => (regular(2, 1, 12, 8, 1, 1, true), 1.0, 32 * mb),
            "epyc-9654x2-smt" => (regular(2, 1, 12, 8, 2, 1, true), 1.0, 32 * mb),
            "ryzen-7950x" => (regular(1, 1, 2, 8, 2, 1, true), 1.25, 32 * mb),
            "skylake-18c" => (regular(1, 1, 1, 18, 2, 1, true), 0.7, 25 * mb),
            "milan-72" => (regular(1, 1, 6, 6, 2, 1, true), 0.75, 32 * mb),
            "xeon-4s" => (regular(4, 1, 1, 24, 2, 1, true), 0.85, 33 * mb),
            "hikey960" => {
                let mut v = regular(1, 1, 2, 4, 1, 4, false);
                for p in v.iter_mut().take(4) {
                    p.cap = 462;
                }
                (v, 0.45, mb)
            }
            "arm64-128" => (regular(1, 1, 1, 128, 1, 1, false), 0.8, 32 * mb),
            // seed 004: "8 partition according to cluster info" on 128 CPUs:
            // 8 clusters of 16; the cluster's shared cache is the last level
            // the scheduler sees (a memory-side system cache behind it is not
            // a CPU cache), 1 MiB per core as ARM servers of 2022; a line
            // between clusters moves at the cross-LLC latency (cost.rs)
            "arm64-128-cl" => (regular(1, 1, 8, 16, 1, 1, false), 0.8, 16 * mb),
            "1llc" => (regular(1, 1, 1, 4, 1, 1, false), 1.0, 16 * mb),
            "2llc-smt" => (regular(2, 1, 1, 2, 2, 1, false), 1.0, 16 * mb),
            "2node" => (regular(2, 1, 2, 2, 1, 1, false), 1.0, 16 * mb),
            "l2-8" => (regular(1, 1, 1, 4, 2, 2, false), 1.0, 16 * mb),
            "1cpu" => (regular(1, 1, 1, 1, 1, 1, false), 1.0, 16 * mb),
            "16cpu" => (regular(2, 1, 1, 8, 1, 1, false), 1.0, 16 * mb),
            "from-sysfs" => {
                let topo = Topology::from_sysfs()?;
                return Ok(Machine::new(name, topo, 1.0, 32 * mb));
            }
            _ => bail!("unknown machine {name:?} (--list-machines)"),
        };
        let mut topo = build(&places);
        topo.guest = VM_PRESETS.contains(&name);
        Ok(Machine::new(name, topo, speed, llc_bytes))
    }

    fn new(name: &str, topo: Topology, speed: f64, llc_bytes: u64) -> Machine {
        let n = topo.nr_cpu_ids;
        let mut siblings = vec![Vec::new(); n];
        for core in &topo.cores {
            for &c in core {
                siblings[c] = core.iter().copied().filter(|&s| s != c).collect();
            }
        }
        Machine {
            name: name.to_string(),
            topo,
            speed,
            llc_bytes,
            siblings,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.topo.nr_cpu_ids
    }

    pub fn cpu(&self, id: usize) -> &Cpu {
        &self.topo.cpus[id]
    }

    pub fn dist(&self, a: usize, b: usize) -> Dist {
        if a == b {
            return Dist::Same;
        }
        let (x, y) = (self.cpu(a), self.cpu(b));
        if x.core == y.core {
            Dist::Smt
        } else if x.l2 == y.l2 {
            Dist::L2
        } else if x.llc == y.llc {
            Dist::Llc
        } else if x.node == y.node {
            Dist::Node
        } else {
            Dist::Remote
        }
    }
}
