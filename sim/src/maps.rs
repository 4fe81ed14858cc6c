//! BPF maps, in userspace: arrays, per-CPU arrays, hashes, task and cgroup
//! storage. Registered by address from the generated sim_maps.h; ordered
//! containers only, so that nothing depends on addresses or hash seeds.
use crate::ffi::*;
use std::collections::BTreeMap;

pub struct Map {
    pub name: String,
    pub kind: u32,
    pub key_size: usize,
    pub value_size: usize,
    pub max_entries: usize,
    /// value slot in u64 words (8-byte aligned values)
    words: usize,
    array: Vec<u64>,
    hash: BTreeMap<Vec<u8>, Box<[u64]>>,
    /// task/cgroup storage, indexed by pid or cgroup id
    store: Vec<Option<Box<[u64]>>>,
}

pub struct Maps {
    nr_cpus: usize,
    by_addr: BTreeMap<usize, Map>,
}

impl Maps {
    pub fn new(nr_cpus: usize) -> Maps {
        Maps {
            nr_cpus,
            by_addr: BTreeMap::new(),
        }
    }

    pub fn register(
        &mut self,
        addr: usize,
        name: String,
        kind: u32,
        ks: usize,
        vs: usize,
        max: usize,
    ) {
        let words = vs.div_ceil(8).max(1);
        let cells = match kind {
            BPF_MAP_TYPE_ARRAY => max * words,
            BPF_MAP_TYPE_PERCPU_ARRAY => max * words * self.nr_cpus,
            BPF_MAP_TYPE_HASH
            | BPF_MAP_TYPE_LRU_HASH
            | BPF_MAP_TYPE_PERCPU_HASH
            | BPF_MAP_TYPE_LRU_PERCPU_HASH
            | BPF_MAP_TYPE_TASK_STORAGE
            | BPF_MAP_TYPE_CGRP_STORAGE => 0,
            k => panic!(
                "mosaic-sim: map {name}: map type {k} is not simulated (add it in src/maps.rs)"
            ),
        };
        self.by_addr.insert(
            addr,
            Map {
                name,
                kind,
                key_size: ks,
                value_size: vs,
                max_entries: max,
                words,
                array: vec![0; cells],
                hash: BTreeMap::new(),
                store: Vec::new(),
            },
        );
    }

    fn get(&mut self, addr: usize) -> &mut Map {
        match self.by_addr.get_mut(&addr) {
            Some(m) => m,
            None => panic!("mosaic-sim: a helper was given an unregistered map at {addr:#x}"),
        }
    }

    pub unsafe fn lookup(&mut self, addr: usize, key: *const u8, cpu: usize) -> *mut u8 {
        let nr = self.nr_cpus;
        let m = self.get(addr);
        match m.kind {
            BPF_MAP_TYPE_ARRAY | BPF_MAP_TYPE_PERCPU_ARRAY => {
                let idx = (key as *const u32).read_unaligned() as usize;
                if idx >= m.max_entries {
                    return std::ptr::null_mut();
                }
                let base = if m.kind == BPF_MAP_TYPE_PERCPU_ARRAY {
                    (cpu * m.max_entries + idx) * m.words
                } else {
                    idx * m.words
                };
                let _ = nr;
                m.array.as_mut_ptr().add(base) as *mut u8
            }
            _ => {
                let k = std::slice::from_raw_parts(key, m.key_size).to_vec();
                let per = if matches!(
                    m.kind,
                    BPF_MAP_TYPE_PERCPU_HASH | BPF_MAP_TYPE_LRU_PERCPU_HASH
                ) {
                    m.words * cpu
                } else {
                    0
                };
                match m.hash.get_mut(&k) {
                    Some(v) => (v.as_mut_ptr().add(per)) as *mut u8,
                    None => std::ptr::null_mut(),
                }
            }
        }
    }

    pub unsafe fn update(
        &mut self,
        addr: usize,
        key: *const u8,
        val: *const u8,
        flags: u64,
        cpu: usize,
    ) -> i64 {
        let nr = self.nr_cpus;
        let m = self.get(addr);
        match m.kind {
            BPF_MAP_TYPE_ARRAY | BPF_MAP_TYPE_PERCPU_ARRAY => {
                if flags == BPF_NOEXIST {
                    return -17;
                }
                let p = self.lookup(addr, key, cpu);
                if p.is_null() {
                    return -7; // -E2BIG
                }
                let vs = self.get(addr).value_size;
                std::ptr::copy_nonoverlapping(val, p, vs);
                0
            }
            _ => {
                let k = std::slice::from_raw_parts(key, m.key_size).to_vec();
                let exists = m.hash.contains_key(&k);
                if flags == BPF_NOEXIST && exists {
                    return -17;
                }
                if flags == BPF_EXIST && !exists {
                    return -2;
                }
                if !exists && m.max_entries > 0 && m.hash.len() >= m.max_entries {
                    return -7;
                }
                let percpu = matches!(
                    m.kind,
                    BPF_MAP_TYPE_PERCPU_HASH | BPF_MAP_TYPE_LRU_PERCPU_HASH
                );
                let words = m.words * if percpu { nr } else { 1 };
                let vs = m.value_size;
                let slot = m
                    .hash
                    .entry(k)
                    .or_insert_with(|| vec![0u64; words].into_boxed_slice());
                let off = if percpu { m.words * cpu } else { 0 };
                std::ptr::copy_nonoverlapping(val, (slot.as_mut_ptr().add(off)) as *mut u8, vs);
                0
            }
        }
    }

    pub unsafe fn delete(&mut self, addr: usize, key: *const u8) -> i64 {
        let m = self.get(addr);
        if matches!(m.kind, BPF_MAP_TYPE_ARRAY | BPF_MAP_TYPE_PERCPU_ARRAY) {
            return -22;
        }
        let k = std::slice::from_raw_parts(key, m.key_size).to_vec();
        if m.hash.remove(&k).is_some() {
            0
        } else {
            -2
        }
    }

    /// Task or cgroup local storage, keyed by a stable id (pid, cgroup id).
    pub fn storage(&mut self, addr: usize, id: u64, create: bool, init: *const u8) -> *mut u8 {
        let m = self.get(addr);
        let id = id as usize;
        if id >= m.store.len() {
            if !create {
                return std::ptr::null_mut();
            }
            m.store.resize_with(id + 1, || None);
        }
        if m.store[id].is_none() {
            if !create {
                return std::ptr::null_mut();
            }
            let mut v = vec![0u64; m.words].into_boxed_slice();
            if !init.is_null() {
                unsafe {
                    std::ptr::copy_nonoverlapping(init, v.as_mut_ptr() as *mut u8, m.value_size)
                };
            }
            m.store[id] = Some(v);
        }
        m.store[id].as_mut().unwrap().as_mut_ptr() as *mut u8
    }

    pub fn storage_delete(&mut self, addr: usize, id: u64) -> i64 {
        let m = self.get(addr);
        match m.store.get_mut(id as usize) {
            Some(s @ Some(_)) => {
                *s = None;
                0
            }
            _ => -2,
        }
    }

    /// Per-CPU array @name with u64 values, summed over CPUs.
    pub fn sum_percpu(&self, name: &str) -> Vec<u64> {
        self.all_percpu_sums()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .unwrap_or_default()
    }

    /// Per-CPU array @name with u64 values: entry i over CPUs, summed, or
    /// for the entries @is_max picks, their maximum (the rule generated from
    /// intf.h for counters, `StatDef::is_max`).
    pub fn combine_percpu(&self, name: &str, is_max: impl Fn(usize) -> bool) -> Vec<u64> {
        let Some(m) = self.by_addr.values().find(|m| m.name == name) else {
            return Vec::new();
        };
        (0..m.max_entries)
            .map(|i| {
                let vals = (0..self.nr_cpus).map(|cpu| m.array[cpu * m.max_entries + i]);
                if is_max(i) {
                    vals.max().unwrap_or(0)
                } else {
                    vals.sum()
                }
            })
            .collect()
    }

    /// Per-CPU array @name's u64 values on @cpu (None: no such map).
    pub fn percpu_row(&self, name: &str, cpu: usize) -> Option<&[u64]> {
        let m = self.by_addr.values().find(|m| m.name == name)?;
        if m.kind != BPF_MAP_TYPE_PERCPU_ARRAY || m.words != 1 {
            return None;
        }
        m.array.get(cpu * m.max_entries..(cpu + 1) * m.max_entries)
    }

    /// Every per-CPU array of 8-byte values, summed over CPUs.
    pub fn all_percpu_sums(&self) -> Vec<(String, Vec<u64>)> {
        let mut out: Vec<(String, Vec<u64>)> = Vec::new();
        for m in self.by_addr.values() {
            if m.kind != BPF_MAP_TYPE_PERCPU_ARRAY || m.value_size != 8 {
                continue;
            }
            let mut v = vec![0u64; m.max_entries];
            for cpu in 0..self.nr_cpus {
                for (i, x) in v.iter_mut().enumerate() {
                    *x += m.array[cpu * m.max_entries + i];
                }
            }
            // trim trailing zeros of large tables (e.g. per shard)
            while v.len() > 1 && *v.last().unwrap() == 0 {
                v.pop();
            }
            out.push((m.name.clone(), v));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

impl Maps {
    /// Index of the array element of map @addr that contains address @p.
    pub fn array_key_of(&self, addr: usize, p: usize) -> u32 {
        let Some(m) = self.by_addr.get(&addr) else {
            return 0;
        };
        let base = m.array.as_ptr() as usize;
        if m.array.is_empty() || p < base {
            return 0;
        }
        (((p - base) / 8 / m.words) % m.max_entries.max(1)) as u32
    }
}

impl Maps {
    fn by_name(&mut self, name: &str) -> Option<&mut Map> {
        self.by_addr.values_mut().find(|m| m.name == name)
    }

    /// Per-CPU hash @name: the value of @key as @n u64s, summed over CPUs
    /// (zeros if absent). Userspace's lookup_percpu, for the sim's loader.
    pub fn percpu_hash_sum(&mut self, name: &str, key: &[u8], n: usize) -> Vec<u64> {
        let nr = self.nr_cpus;
        let mut out = vec![0u64; n];
        let Some(m) = self.by_name(name) else {
            return out;
        };
        if let Some(v) = m.hash.get(key) {
            for cpu in 0..nr {
                for (i, x) in out.iter_mut().enumerate().take(m.words) {
                    *x += v[cpu * m.words + i];
                }
            }
        }
        out
    }

    /// Userspace's map update of hash @name (BPF_ANY), for the sim's loader.
    pub fn hash_update(&mut self, name: &str, key: &[u8], val: &[u8]) {
        let cpu = 0;
        let Some(addr) = self
            .by_addr
            .iter()
            .find(|(_, m)| m.name == name)
            .map(|(a, _)| *a)
        else {
            panic!("mosaic-sim: the scheduler has no map {name}");
        };
        let r = unsafe { self.update(addr, key.as_ptr(), val.as_ptr(), BPF_ANY, cpu) };
        assert_eq!(r, 0, "updating map {name}");
    }
}
