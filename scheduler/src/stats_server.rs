//! The scheduler's stats the scx way: a scx_stats server on the default
//! socket, answered by the run loop with a Metrics (stats/), and the one
//! printer of the live lines, a client of it: --monitor in another process,
//! --stats in a thread of the scheduler itself.

use crate::stats::{all_meta, Metrics};
use anyhow::{bail, Context, Result};
use scx_stats::{StatsClient, StatsServer, StatsServerData};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where scx_stats servers listen unless told otherwise (the crate's
/// default base, scheduler and stats paths).
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// How long a client waits for an answer beyond its interval: the run loop
/// answers at once, but a restart after CPU hotplug takes a few seconds.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A running stats server. Its threads ask the run loop for a snapshot over
/// a channel (the BPF skeleton stays on the main thread): `serve` answers.
/// Dropping it stops the server and removes its socket.
pub struct Server {
    server: Option<StatsServer<(), Metrics>>,
    path: PathBuf,
    /// Inode of the socket it created: removed on drop only if still ours.
    ino: u64,
}

impl Server {
    /// Starts a server on @path (SOCKET in the scheduler).
    pub fn launch(path: &Path) -> Result<Self> {
        let data = all_meta()
            .into_iter()
            .fold(StatsServerData::new(), |data, meta| data.add_meta(meta))
            .add_stats(
                "top",
                Box::new(|_args, (ask, answer)| {
                    ask.send(())?;
                    Ok(serde_json::to_value(answer.recv()?)?)
                }),
            );
        let server = StatsServer::new(data)
            .set_path(path)
            .launch()
            .with_context(|| format!("starting the stats server on {}", path.display()))?;
        let ino = std::fs::metadata(path)?.ino();
        Ok(Server {
            server: Some(server),
            path: path.to_path_buf(),
            ino,
        })
    }

    /// Answers a pending request with @snapshot(), or, with none pending,
    /// sleeps @timeout: a request then waits at most @timeout. (The server
    /// passes on one request at a time.) A sleep, not a blocking receive:
    /// crossbeam's receive spins on PAUSE before it parks, and under QEMU's
    /// TCG each PAUSE hands the host thread to another vCPU, so the run loop's
    /// receive every 50 ms held a whole vCPU of a loaded 4-vCPU guest (its
    /// busy loops got 2.96 CPUs of 4, 3.94 with no scheduler loaded).
    pub fn serve(
        &self,
        timeout: Duration,
        snapshot: impl FnOnce() -> Result<Metrics>,
    ) -> Result<()> {
        let (answer, asks) = self.server.as_ref().unwrap().channels();
        if asks.try_recv().is_err() {
            // none pending, or the server's threads are gone
            std::thread::sleep(timeout);
            return Ok(());
        }
        answer.send(snapshot()?)?;
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.server.take());
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
                anyhow::anyhow!(
                    "no scx_mosaic instance is running (nothing serves stats on {}: {e})",
                    path.display()
                )
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

/// --monitor: prints the rates of the instance serving on @path every
/// @interval seconds, @rounds times, until it goes away or @stop is set.
pub fn monitor(
    path: &Path,
    interval: f64,
    rounds: Option<usize>,
    stop: Option<&AtomicBool>,
) -> Result<()> {
    monitor_to(path, interval, rounds, stop, |line| println!("{line}"))
}

/// monitor(), each line it prints handed to @print instead.
fn monitor_to(
    path: &Path,
    interval: f64,
    rounds: Option<usize>,
    stop: Option<&AtomicBool>,
    mut print: impl FnMut(&str),
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
        let secs = last_at.elapsed().as_secs_f64();
        last_at = Instant::now();
        for line in now.interval_lines(&last, secs) {
            print(&line);
        }
        last = now;
    }
    Ok(())
}

/// --stats: the scheduler prints its own rates every @interval seconds as
/// --monitor does, a client of its server on @path, until @stop is set;
/// after an error (a restart that outlasted the answer timeout) it
/// connects again.
pub fn spawn_printer(
    path: PathBuf,
    interval: f64,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Err(e) = monitor(&path, interval, None, Some(&stop)) {
                if !stop.load(Ordering::Relaxed) {
                    eprintln!("scx_mosaic: --stats: {e:#}");
                }
                std::thread::sleep(Duration::from_secs_f64(interval));
            }
        }
    })
}

/// --help-stats: what each field of the stats means.
pub fn print_help() {
    println!(
        "scx_mosaic's stats: served on {SOCKET} (scx_stats; `scx_mosaic --monitor SECS` reads \
         them) and written at exit by --stats-file, as JSON objects of these structs:\n"
    );
    print!("{}", crate::stats::help_text());
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
            (c.metrics().unwrap(), c.metrics().unwrap())
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
            monitor_to(&path, 0.05, Some(2), None, |l| lines.push(l.to_string())).map(|()| lines)
        })
        .unwrap();
        // two rounds, sample(2) after sample(1) and sample(3) after sample(2):
        // each the rates line and group a's line
        assert_eq!(lines.len(), 4, "{lines:?}");
        for (round, runtime) in [(0, "2.0s"), (1, "3.0s")] {
            let rates = &lines[2 * round];
            // 10 shard enqueues a round, over at least the 0.05 s interval: the
            // one figure that depends on timing, at most 200/s
            let enq = rates
                .split_once("shard enq")
                .and_then(|(_, rest)| rest.split_once("/s"))
                .and_then(|(figure, _)| figure.trim().parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no shard enq rate: {rates}"));
            assert!((1..=200).contains(&enq), "{rates}");
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
}
