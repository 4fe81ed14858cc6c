//! The scheduler's stats the scx way: a stats server on the scx_stats
//! socket, answered by the run loop with a Metrics (stats/), and the one
//! printer of the live lines, a client of it: --monitor in another process,
//! --stats in a thread of the scheduler itself.
//!
//! The server is this module's own, speaking scx_stats's protocol (one JSON
//! request a line, `{"req": "stats" | "stats_meta", "args": {...}}`, one
//! JSON response a line, `{"errno": 0, "args": {"resp": ...}}`), so that
//! scx_stats's client (--monitor) and scx's tools read it; unlike the
//! crate's server it is bounded: the socket is root's only (0600), a
//! request line is at most MAX_LINE bytes, at most MAX_CONNECTIONS clients
//! are served at once, and every request within SNAPSHOT_REUSE of a
//! snapshot gets that one, so clients asking in a loop cost the run loop at
//! most one snapshot per SNAPSHOT_REUSE and never shorten its period.

use crate::output::write_line;
use crate::stats::{all_meta, Metrics};
use anyhow::{bail, Context, Result};
use scx_stats::{StatsClient, StatsRequest, StatsResponse};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where scx_stats servers listen unless told otherwise (the crate's
/// default base, scheduler and stats paths).
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// How long a client waits for an answer beyond its interval: the run loop
/// answers at once, but a restart after CPU hotplug takes a few seconds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest request line served; a longer one ends its connection.
/// (scx_stats's requests are a few dozen bytes.)
pub const MAX_LINE: usize = 4096;

/// Most clients served at once; a connection beyond is closed at once.
pub const MAX_CONNECTIONS: usize = 16;

/// A snapshot this young answers a request again.
pub const SNAPSHOT_REUSE: Duration = Duration::from_millis(100);

/// A client that does not read its answer for this long is dropped.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a request waits for the run loop (a restart after CPU hotplug
/// takes a few seconds) before it is answered with ETIMEDOUT.
const RUN_LOOP_WAIT: Duration = Duration::from_secs(20);

/// The connections' side of the run loop: a request for a snapshot, sent
/// by one connection at a time, and the last snapshot with its time.
struct Fetcher {
    ask: Sender<()>,
    answers: Receiver<Metrics>,
    last: Option<(Instant, Value)>,
}

impl Fetcher {
    /// The run loop's report, no older than SNAPSHOT_REUSE.
    fn snapshot(&mut self) -> Result<Value, (i32, String)> {
        if let Some((at, v)) = &self.last {
            if at.elapsed() < SNAPSHOT_REUSE {
                return Ok(v.clone());
            }
        }
        // an answer to a request that timed out is stale now
        while self.answers.try_recv().is_ok() {}
        let gone = || (libc::ESHUTDOWN, "the scheduler is stopping".to_string());
        self.ask.send(()).map_err(|_| gone())?;
        let m = match self.answers.recv_timeout(RUN_LOOP_WAIT) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                return Err((libc::ETIMEDOUT, "the scheduler did not answer".into()))
            }
            Err(RecvTimeoutError::Disconnected) => return Err(gone()),
        };
        let v = serde_json::to_value(m).map_err(|e| (libc::EINVAL, e.to_string()))?;
        self.last = Some((Instant::now(), v.clone()));
        Ok(v)
    }
}

/// What the listener and its connections share.
struct Shared {
    /// The stats_meta answer: every struct's metadata by name.
    meta: Value,
    fetcher: Mutex<Fetcher>,
    connections: AtomicUsize,
    exit: AtomicBool,
}

impl Shared {
    /// The response to one request line.
    fn respond(&self, line: &[u8]) -> StatsResponse {
        let result = match serde_json::from_slice::<StatsRequest>(line) {
            Err(e) => Err((libc::EINVAL, format!("bad request: {e}"))),
            Ok(req) => match req.req.as_str() {
                "stats" => match req.args.get("target").map_or("top", |t| t.as_str()) {
                    "top" => self.fetcher.lock().unwrap().snapshot(),
                    t => Err((libc::EINVAL, format!("unknown stat target {t:?}"))),
                },
                "stats_meta" => Ok(self.meta.clone()),
                r => Err((libc::EINVAL, format!("unknown command {r:?}"))),
            },
        };
        let (errno, resp) = match result {
            Ok(v) => (0, v),
            Err((errno, msg)) => (errno, Value::String(msg)),
        };
        StatsResponse {
            errno,
            args: [("resp".to_string(), resp)].into_iter().collect(),
        }
    }

    /// Serves one client until it hangs up, sends a line longer than
    /// MAX_LINE, or stops reading.
    fn serve_client(&self, stream: UnixStream) -> std::io::Result<()> {
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let mut writer = stream.try_clone()?;
        let mut reader = BufReader::new(stream);
        let mut line = Vec::with_capacity(256);
        loop {
            line.clear();
            let n = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut line)?;
            if n == 0 || self.exit.load(Ordering::Relaxed) {
                return Ok(());
            }
            if line.last() != Some(&b'\n') {
                if line.len() > MAX_LINE {
                    let resp = StatsResponse {
                        errno: libc::E2BIG,
                        args: [("resp".to_string(), Value::from("request line too long"))]
                            .into_iter()
                            .collect(),
                    };
                    let _ = writer.write_all(
                        (serde_json::to_string(&resp).unwrap_or_default() + "\n").as_bytes(),
                    );
                }
                // too long, or the client left mid-line
                return Ok(());
            }
            let resp = self.respond(&line);
            let out = serde_json::to_string(&resp).map_err(std::io::Error::other)? + "\n";
            writer.write_all(out.as_bytes())?;
        }
    }

    /// Accepts clients, each on a thread of its own, MAX_CONNECTIONS at most.
    fn listen(self: Arc<Self>, listener: UnixListener) {
        for stream in listener.incoming() {
            if self.exit.load(Ordering::Relaxed) {
                break;
            }
            let Ok(stream) = stream else { continue };
            if self.connections.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                self.connections.fetch_sub(1, Ordering::AcqRel);
                drop(stream);
                continue;
            }
            let shared = self.clone();
            let spawned = std::thread::Builder::new()
                .name("stats-client".into())
                .spawn(move || {
                    let _ = shared.serve_client(stream);
                    shared.connections.fetch_sub(1, Ordering::AcqRel);
                });
            if spawned.is_err() {
                self.connections.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

/// A running stats server. Its connections ask the run loop for a snapshot
/// over a channel (the BPF skeleton stays on the main thread): `serve`
/// answers. Dropping it stops the server and removes its socket.
pub struct Server {
    shared: Arc<Shared>,
    asks: Receiver<()>,
    answers: Sender<Metrics>,
    path: PathBuf,
    /// Inode of the socket it created: removed on drop only if still ours.
    ino: u64,
}

/// Binds a socket at @path that only root can connect to: created under a
/// umask that leaves it 0600 (no moment at the wider mode), and set so.
fn bind_private(path: &Path) -> Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", path.display()))
        }
        _ => {}
    }
    let old = unsafe { libc::umask(0o177) };
    let listener = UnixListener::bind(path);
    unsafe { libc::umask(old) };
    let listener = listener.with_context(|| format!("creating the socket {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

impl Server {
    /// Starts a server on @path (SOCKET in the scheduler).
    pub fn launch(path: &Path) -> Result<Self> {
        let meta: serde_json::Map<String, Value> = all_meta()
            .into_iter()
            .map(|m| Ok((m.name.clone(), serde_json::to_value(&m)?)))
            .collect::<Result<_>>()?;
        let listener = bind_private(path)
            .with_context(|| format!("starting the stats server on {}", path.display()))?;
        let ino = std::fs::metadata(path)?.ino();
        let (ask, asks) = mpsc::channel();
        let (answers, answered) = mpsc::channel();
        let shared = Arc::new(Shared {
            meta: Value::Object(meta),
            fetcher: Mutex::new(Fetcher {
                ask,
                answers: answered,
                last: None,
            }),
            connections: AtomicUsize::new(0),
            exit: AtomicBool::new(false),
        });
        let listening = shared.clone();
        std::thread::Builder::new()
            .name("stats-server".into())
            .spawn(move || listening.listen(listener))?;
        Ok(Server {
            shared,
            asks,
            answers,
            path: path.to_path_buf(),
            ino,
        })
    }

    /// Answers a pending request with @snapshot(), then sleeps @timeout:
    /// the run loop's period is @timeout (plus a snapshot's time when one is
    /// asked for), however often clients ask; a request waits at most
    /// @timeout. (One request is pending at a time: the connections take
    /// turns, and reuse a snapshot younger than SNAPSHOT_REUSE.) A sleep,
    /// not a blocking receive: crossbeam's receive spins on PAUSE before it
    /// parks, and under QEMU's TCG each PAUSE hands the host thread to
    /// another vCPU, so the run loop's receive every 50 ms held a whole vCPU
    /// of a loaded 4-vCPU guest (its busy loops got 2.96 CPUs of 4, 3.94
    /// with no scheduler loaded).
    pub fn serve(
        &self,
        timeout: Duration,
        snapshot: impl FnOnce() -> Result<Metrics>,
    ) -> Result<()> {
        if self.asks.try_recv().is_ok() {
            // the asking connection may have given up: nothing to do then
            let _ = self.answers.send(snapshot()?);
        }
        std::thread::sleep(timeout);
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.exit.store(true, Ordering::Relaxed);
        // wake the listener's accept() so that it sees the exit
        let _ = UnixStream::connect(&self.path);
        let ours = std::fs::metadata(&self.path).is_ok_and(|m| m.ino() == self.ino);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A client of the scx_mosaic serving on one socket.
struct Client {
    client: StatsClient,
    path: PathBuf,
}

impl Client {
    /// Connects to the server on @path; an error says none is running.
    fn connect(path: &Path, interval: f64) -> Result<Self> {
        let timeout = ANSWER_TIMEOUT + Duration::from_secs_f64(interval);
        let client = StatsClient::new()
            .set_path(path)
            .connect(Some(timeout.as_millis() as u64))
            .map_err(|e| {
                let denied = e
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
                if denied || unsafe { libc::geteuid() } != 0 {
                    anyhow::anyhow!(
                        "reading the stats needs root (the socket {} is root's only)",
                        path.display()
                    )
                } else {
                    anyhow::anyhow!(
                        "no scx_mosaic instance is running (nothing serves stats on {}: {e})",
                        path.display()
                    )
                }
            })?;
        Ok(Client {
            client,
            path: path.to_path_buf(),
        })
    }

    /// The instance's current report.
    fn metrics(&mut self) -> Result<Metrics> {
        let json: serde_json::Value = self
            .client
            .request("stats", vec![])
            .with_context(|| format!("reading stats from {}", self.path.display()))?;
        if json["scheduler"] != "mosaic" {
            bail!(
                "the scheduler serving stats on {} is not scx_mosaic",
                self.path.display()
            );
        }
        serde_json::from_value(json).context("an scx_mosaic of another version is running")
    }
}

/// --stats-json: prints the stats of the instance serving on @path once, as
/// one JSON line.
pub fn print_json(path: &Path) -> Result<()> {
    print_stdout(&stats_json(path)?);
    Ok(())
}

/// The stats of the instance serving on @path as one JSON line.
fn stats_json(path: &Path) -> Result<String> {
    let metrics = Client::connect(path, 0.0)?.metrics()?;
    Ok(serde_json::to_string(&metrics)?)
}

/// --monitor: prints the rates of the instance serving on @path every
/// @interval seconds, @rounds times, until it goes away, @stop is set or
/// stdout is closed (`| head`: then it ends quietly, Ok).
pub fn monitor(
    path: &Path,
    interval: f64,
    rounds: Option<usize>,
    stop: Option<&AtomicBool>,
) -> Result<()> {
    monitor_to(path, interval, rounds, stop, print_stdout)
}

/// Prints @line on stdout; false once stdout is closed.
fn print_stdout(line: &str) -> bool {
    write_line(&mut std::io::stdout().lock(), line)
}

/// monitor(), each line it prints handed to @print instead, which returns
/// false when its reader has gone: monitor_to then returns Ok.
fn monitor_to(
    path: &Path,
    interval: f64,
    rounds: Option<usize>,
    stop: Option<&AtomicBool>,
    mut print: impl FnMut(&str) -> bool,
) -> Result<()> {
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let mut client = Client::connect(path, interval)?;
    let mut last = client.metrics()?;
    let mut last_at = Instant::now();
    for _ in 0..rounds.unwrap_or(usize::MAX) {
        std::thread::sleep(Duration::from_secs_f64(interval));
        if stopped() {
            break;
        }
        let now = client.metrics()?;
        // the interval between the snapshots, as the scheduler timed them (a
        // snapshot may be reused, up to SNAPSHOT_REUSE old); else as seen here
        let wall = last_at.elapsed().as_secs_f64();
        last_at = Instant::now();
        let secs = match now.runtime_s - last.runtime_s {
            d if d > 0.0 => d,
            _ => wall,
        };
        for line in now.interval_lines(&last, secs) {
            if !print(&line) {
                return Ok(());
            }
        }
        last = now;
    }
    Ok(())
}

/// --stats: the scheduler prints its own rates every @interval seconds as
/// --monitor does, a client of its server on @path, until @stop is set or
/// stdout is closed (the printing ends, quietly; the scheduler runs on);
/// after an error (a restart that outlasted the answer timeout) it
/// connects again.
pub fn spawn_printer(
    path: PathBuf,
    interval: f64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    spawn_printer_to(path, interval, stop, print_stdout)
}

/// spawn_printer(), each line handed to @print (false: its reader is gone).
fn spawn_printer_to(
    path: PathBuf,
    interval: f64,
    stop: Arc<AtomicBool>,
    mut print: impl FnMut(&str) -> bool + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match monitor_to(&path, interval, None, Some(&stop), &mut print) {
                // stopped, or the output is gone
                Ok(()) => break,
                Err(e) => {
                    if !stop.load(Ordering::Relaxed) {
                        crate::errln!("scx_mosaic: --stats: {e:#}");
                    }
                    std::thread::sleep(Duration::from_secs_f64(interval));
                }
            }
        }
    })
}

/// --help-stats: what each field of the stats means (as much as a reader
/// that stops early, e.g. `| head`, takes).
pub fn print_help() {
    let text = format!(
        "scx_mosaic's stats: served on {SOCKET} (scx_stats; `scx_mosaic --monitor SECS` reads \
         them) and written at exit by --stats-file, as JSON objects of these structs:\n\n{}",
        crate::stats::help_text()
    );
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{GroupMetrics, MaybeIndex};

    fn sample(n: u64) -> Metrics {
        let mut m = Metrics {
            scheduler: "mosaic".into(),
            runtime_s: n as f64,
            shard_enqueues: 10 * n,
            shard_enqueues_per_shard: vec![4 * n, 6 * n],
            ..Default::default()
        };
        m.group_balancer.parent = "/sys/fs/cgroup/gb".into();
        m.group_balancer.groups.push(GroupMetrics {
            path: "a".into(),
            partition: MaybeIndex(Some(1)),
            ..Default::default()
        });
        m
    }

    /// Runs @client on a socket path while this thread serves it @snapshot
    /// called with 1, 2, ...; returns what @client returned, once the
    /// server and its socket are gone.
    fn serve_while<T: Send + 'static>(
        snapshot: fn(u64) -> Metrics,
        client: impl FnOnce(PathBuf) -> T + Send + 'static,
    ) -> T {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let server = Server::launch(&path).unwrap();
        let client_path = path.clone();
        let client = std::thread::spawn(move || client(client_path));
        let mut n = 0;
        while !client.is_finished() {
            let tick = Duration::from_millis(10);
            server
                .serve(tick, || {
                    n += 1;
                    Ok(snapshot(n))
                })
                .unwrap();
        }
        drop(server);
        assert!(!path.exists(), "the socket outlived its server");
        client.join().unwrap()
    }

    #[test]
    fn a_client_reads_what_the_run_loop_serves() {
        let got = serve_while(sample, |path| {
            let mut c = Client::connect(&path, 1.0).unwrap();
            let first = c.metrics().unwrap();
            std::thread::sleep(SNAPSHOT_REUSE + Duration::from_millis(50));
            (first, c.metrics().unwrap())
        });
        assert_eq!(got, (sample(1), sample(2)));
    }

    #[test]
    fn generic_clients_get_the_metadata_of_every_struct() {
        let meta = serve_while(sample, |path| {
            let mut c = Client::connect(&path, 1.0).unwrap();
            let meta: serde_json::Value = c.client.request("stats_meta", vec![]).unwrap();
            meta
        });
        for m in all_meta() {
            assert_eq!(meta[&m.name]["name"], m.name.as_str());
        }
        assert_eq!(meta["Metrics"]["top"], "true");
        assert_eq!(
            meta["Metrics"]["fields"]["per_llc"]["dict"]["datum"]["struct"],
            "LlcMetrics"
        );
    }

    #[test]
    fn monitor_prints_rates_of_a_running_instance() {
        let lines = serve_while(sample, |path| {
            let mut lines = Vec::new();
            monitor_to(&path, 0.15, Some(2), None, |l| {
                lines.push(l.to_string());
                true
            })
            .map(|()| lines)
        })
        .unwrap();
        // two rounds, sample(2) after sample(1) and sample(3) after sample(2):
        // each the rates line and group a's line
        assert_eq!(lines.len(), 4, "{lines:?}");
        for (round, runtime) in [(0, "2.0s"), (1, "3.0s")] {
            let rates = &lines[2 * round];
            // 10 shard enqueues a round, over the 1 s by which the snapshots'
            // runtimes differ (not the monitor's own clock): 10/s
            let enq = rates
                .split_once("shard enq")
                .and_then(|(_, rest)| rest.split_once("/s"))
                .and_then(|(figure, _)| figure.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no shard enq rate: {rates}"));
            assert_eq!(enq, 10, "{rates}");
            assert_eq!(
                rates,
                &format!(
                    "mosaic     {runtime} | direct       0/s | shard enq {enq:>7}/s \
                     pull own       0/s sibling      0/s | cpu-q      0/s | kicks      0/s | \
                     idle dispatch      0/s | wait p50 0us p99 0us max 0us"
                )
            );
            assert_eq!(
                lines[2 * round + 1],
                "mosaic group   | a -> p1 excl 0.00 settles 0"
            );
        }
    }

    #[test]
    fn the_stats_printer_runs_until_told_to_stop() {
        let stop = Arc::new(AtomicBool::new(false));
        // it stops: the join returns, and serve_while with it
        serve_while(sample, move |path| {
            let printer = spawn_printer(path, 0.02, stop.clone());
            std::thread::sleep(Duration::from_millis(200));
            stop.store(true, Ordering::Relaxed);
            printer.join().unwrap();
        });
    }

    #[test]
    fn the_stats_printer_ends_quietly_when_its_output_is_gone() {
        let stop = Arc::new(AtomicBool::new(false));
        let printed = Arc::new(AtomicUsize::new(0));
        let stop2 = stop.clone();
        let count = printed.clone();
        serve_while(sample, move |path| {
            // stdout closed (`| head`, a journal gone): every write fails
            let printer = spawn_printer_to(path, 0.02, stop2, move |_| {
                count.fetch_add(1, Ordering::Relaxed);
                false
            });
            // it ends by itself, not stopped, without a panic
            printer.join().unwrap();
        });
        assert!(!stop.load(Ordering::Relaxed));
        assert_eq!(printed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn stats_json_is_the_instances_snapshot_on_one_line() {
        let line = serve_while(sample, |path| stats_json(&path)).unwrap();
        assert!(!line.contains('\n'), "{line}");
        let back: Metrics = serde_json::from_str(&line).unwrap();
        assert_eq!(back, sample(1));
        let dir = tempfile::tempdir().unwrap();
        let err = stats_json(&dir.path().join("stats")).unwrap_err();
        assert!(format!("{err:#}").contains("no scx_mosaic instance is running"));
    }

    #[test]
    fn monitor_refuses_another_scheduler() {
        let err = serve_while(
            |_| Metrics::default(),
            |path| monitor(&path, 0.05, Some(1), None),
        );
        let msg = format!("{:#}", err.unwrap_err());
        assert!(msg.contains("is not scx_mosaic"), "{msg}");
    }

    #[test]
    fn monitor_without_an_instance_fails_in_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let err = monitor(&dir.path().join("stats"), 1.0, Some(1), None).unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("no scx_mosaic instance is running"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }

    #[test]
    fn the_socket_is_root_only_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/scx/root/stats");
        let old = unsafe { libc::umask(0) };
        let server = Server::launch(&path);
        unsafe { libc::umask(old) };
        let server = server.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        drop(server);
    }

    /// A raw connection to @path, reads timing out after @ms.
    fn raw(path: &Path, ms: u64) -> UnixStream {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
        s
    }

    /// Whether the server closed @s: EOF (or a reset) within its timeout.
    fn closed(s: &mut UnixStream) -> bool {
        let mut buf = [0u8; 256];
        loop {
            match s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    #[test]
    fn an_oversized_request_line_ends_only_its_connection() {
        let got = serve_while(sample, |path| {
            let mut s = raw(&path, 10_000);
            // 1 MiB, no newline: the server reads MAX_LINE + 1 bytes of it
            let writer = {
                let mut w = s.try_clone().unwrap();
                std::thread::spawn(move || {
                    let _ = w.write_all(&vec![b'a'; 1 << 20]);
                })
            };
            let mut reply = String::new();
            let _ = BufReader::new(s.try_clone().unwrap()).read_line(&mut reply);
            let gone = reply.is_empty() || closed(&mut s);
            writer.join().unwrap();
            // another client is served as ever
            let mut c = Client::connect(&path, 1.0).unwrap();
            (reply, gone, c.metrics().unwrap().runtime_s)
        });
        let (reply, gone, runtime) = got;
        assert!(gone, "the connection stayed open");
        if !reply.is_empty() {
            let resp: StatsResponse = serde_json::from_str(&reply).unwrap();
            assert_eq!(resp.errno, libc::E2BIG, "{reply}");
        }
        assert!(runtime >= 1.0);
    }

    #[test]
    fn at_most_max_connections_are_served_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let server = Server::launch(&path).unwrap();
        let mut conns: Vec<UnixStream> = (0..100).map(|_| raw(&path, 300)).collect();
        // those beyond the limit are closed; the first MAX_CONNECTIONS wait
        let nr_closed = conns.iter_mut().map(closed).filter(|&c| c).count();
        assert_eq!(nr_closed, 100 - MAX_CONNECTIONS);
        assert_eq!(
            server.shared.connections.load(Ordering::Relaxed),
            MAX_CONNECTIONS
        );
        drop(conns);
        let t0 = Instant::now();
        while server.shared.connections.load(Ordering::Relaxed) > 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "connections not released"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(server);
        // and the next client is served again
        assert_eq!(
            serve_while(sample, |path| {
                let mut c = Client::connect(&path, 1.0).unwrap();
                c.metrics().unwrap()
            }),
            sample(1)
        );
    }

    #[test]
    fn clients_asking_in_a_loop_get_shared_snapshots_and_leave_the_period_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats");
        let server = Server::launch(&path).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..4)
            .map(|_| {
                let (path, stop) = (path.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut c = Client::connect(&path, 1.0).unwrap();
                    let mut answers = 0;
                    while !stop.load(Ordering::Relaxed) {
                        c.metrics().unwrap();
                        answers += 1;
                    }
                    answers
                })
            })
            .collect();
        let tick = Duration::from_millis(50);
        let (mut iterations, mut snapshots) = (0u32, 0u64);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(2) {
            server
                .serve(tick, || {
                    snapshots += 1;
                    Ok(sample(snapshots))
                })
                .unwrap();
            iterations += 1;
        }
        let secs = t0.elapsed().as_secs_f64();
        stop.store(true, Ordering::Relaxed);
        // answer the last requests, so that every client sees its stop
        let t1 = Instant::now();
        while !clients.iter().all(|c| c.is_finished()) {
            assert!(t1.elapsed() < Duration::from_secs(10));
            server.serve(tick, || Ok(sample(0))).unwrap();
        }
        let answers: u32 = clients.into_iter().map(|c| c.join().unwrap()).sum();
        // the period stays the tick: at most one iteration per 50 ms
        assert!(
            f64::from(iterations) <= secs / 0.05 + 1.0,
            "{iterations} in {secs:.2}s"
        );
        // at most one snapshot per SNAPSHOT_REUSE (100 ms), or per period
        assert!(
            snapshots as f64 <= secs / 0.1 + 2.0,
            "{snapshots} in {secs:.2}s"
        );
        assert!(
            answers as u64 > snapshots,
            "{answers} answers, {snapshots} snapshots"
        );
    }
}
