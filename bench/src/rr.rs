//! `mosaic-bench rr`: a request/response workalike of netperf TCP_RR / UDP_RR (netperf lives in
//! Debian's non-free component, which this project cannot rely on). `pairs` client threads each
//! keep one transaction in flight against their own server thread over loopback: send a
//! `size`-byte request, wait for the `size`-byte answer, repeat, for `secs` seconds. Every
//! transaction is two wakeups across CPUs, so the result is dominated by wakeup placement and
//! latency, which is what the seeds' netperf runs measured.
//!
//! Output (parsed by the suite): `rr: proto=tcp pairs=N trans/s=X p50_us=A p99_us=B`.

use anyhow::{bail, Context, Result};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Transactions and latencies (ns) of one client thread.
struct ClientResult {
    count: u64,
    lat_ns: Vec<u64>,
}

/// Run the workload and print the result line.
pub fn run(proto: &str, pairs: usize, secs: f64, size: usize) -> Result<()> {
    if pairs == 0 || size == 0 {
        bail!("--pairs and --size must be at least 1");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for _ in 0..pairs {
        let stop = stop.clone();
        clients.push(match proto {
            "tcp" => tcp_pair(size, stop)?,
            "udp" => udp_pair(size, stop)?,
            _ => bail!("--proto must be tcp or udp"),
        });
    }
    let start = Instant::now();
    thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let mut total = 0u64;
    let mut lat = Vec::new();
    for c in clients {
        let r = c
            .join()
            .map_err(|_| anyhow::anyhow!("client thread panicked"))??;
        total += r.count;
        lat.extend(r.lat_ns);
    }
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| crate::schbench::percentile(&lat, p) as f64 / 1000.0;
    println!(
        "rr: proto={proto} pairs={pairs} trans/s={:.1} p50_us={:.1} p99_us={:.1}",
        total as f64 / elapsed,
        pct(50.0),
        pct(99.0)
    );
    Ok(())
}

type Client = thread::JoinHandle<Result<ClientResult>>;

/// Keep at most this many latency samples per client (every transaction is counted).
const MAX_SAMPLES: usize = 200_000;

/// Start one TCP server thread and its client thread; return the client's handle.
fn tcp_pair(size: usize, stop: Arc<AtomicBool>) -> Result<Client> {
    let listener = TcpListener::bind("127.0.0.1:0").context("bind")?;
    let addr = listener.local_addr()?;
    thread::spawn(move || -> Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut buf = vec![0u8; size];
        loop {
            if s.read_exact(&mut buf).is_err() {
                return Ok(()); // the client closed the connection
            }
            s.write_all(&buf)?;
        }
    });
    let mut s = TcpStream::connect(addr).context("connect")?;
    s.set_nodelay(true)?;
    Ok(spawn_client(size, stop, move |buf| {
        s.write_all(buf)?;
        s.read_exact(buf)?;
        Ok(true)
    }))
}

/// Start one UDP server thread and its client thread; return the client's handle. A lost
/// datagram (rare on loopback) is resent after 200 ms.
fn udp_pair(size: usize, stop: Arc<AtomicBool>) -> Result<Client> {
    let server = UdpSocket::bind("127.0.0.1:0").context("bind")?;
    let saddr = server.local_addr()?;
    server.set_read_timeout(Some(Duration::from_millis(200)))?;
    let sstop = stop.clone();
    thread::spawn(move || -> Result<()> {
        let mut buf = vec![0u8; size.max(1)];
        while !sstop.load(Ordering::Relaxed) {
            if let Ok((n, from)) = server.recv_from(&mut buf) {
                server.send_to(&buf[..n], from)?;
            }
        }
        Ok(())
    });
    let client = UdpSocket::bind("127.0.0.1:0")?;
    client.connect(saddr)?;
    client.set_read_timeout(Some(Duration::from_millis(200)))?;
    Ok(spawn_client(size, stop, move |buf| {
        client.send(buf)?;
        // false: timed out, resend
        Ok(client.recv(buf).is_ok())
    }))
}

/// Start a client thread that runs `transact` on a `size`-byte buffer until `stop`, counting
/// the transactions it completes (true) and sampling their latencies; false is one to retry.
fn spawn_client(
    size: usize,
    stop: Arc<AtomicBool>,
    mut transact: impl FnMut(&mut [u8]) -> Result<bool> + Send + 'static,
) -> Client {
    thread::spawn(move || {
        let mut buf = vec![0u8; size];
        let mut r = ClientResult {
            count: 0,
            lat_ns: Vec::new(),
        };
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            if !transact(&mut buf)? {
                continue;
            }
            r.count += 1;
            if r.lat_ns.len() < MAX_SAMPLES {
                r.lat_ns.push(t.elapsed().as_nanos() as u64);
            }
        }
        Ok(r)
    })
}
