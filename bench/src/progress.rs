//! Where a long `mosaic-bench run` is: which scenario run of how many, the time spent, and
//! what remains, estimated from the pace of the work done so far.
//!
//! Each scenario run has a nominal length (runner::nominal_secs: the workloads' nominal
//! seconds, scheduler loads, one boot); the work done is counted in those nominal seconds.
//! The estimate of what remains is the nominal seconds left at the pace measured so far
//! (elapsed / nominal done): under TCG a run takes several times its nominal length, and the
//! pace says how many.

use std::time::Instant;

/// The progress of one bench invocation.
pub struct Progress {
    started: Instant,
    /// Scenario runs (scenario x topology) in all, and the one under way (1-based; 0 before).
    runs: usize,
    current: usize,
    /// Nominal seconds of all the work, of the work done, and of the work done when the
    /// current scenario run started.
    nominal_total: f64,
    nominal_done: f64,
    nominal_at_start: f64,
}

impl Progress {
    /// @nominal: each scenario run's nominal seconds, in the order they run.
    pub fn new(nominal: &[f64]) -> Self {
        Progress {
            started: Instant::now(),
            runs: nominal.len(),
            current: 0,
            nominal_total: nominal.iter().sum(),
            nominal_done: 0.0,
            nominal_at_start: 0.0,
        }
    }

    /// Starts the next scenario run; returns "k/N".
    pub fn next_run(&mut self) -> String {
        self.current += 1;
        self.nominal_at_start = self.nominal_done;
        format!("{}/{}", self.current, self.runs)
    }

    /// Counts @nominal_secs of the current scenario run as done (a run of one scheduler,
    /// or the boot).
    pub fn advance(&mut self, nominal_secs: f64) {
        self.nominal_done = (self.nominal_done + nominal_secs).min(self.nominal_total);
    }

    /// Ends the current scenario run, whose nominal length is @nominal_secs, even if some of
    /// its runs never reported (a VM that failed).
    pub fn finish_run(&mut self, nominal_secs: f64) {
        self.nominal_done = (self.nominal_at_start + nominal_secs).min(self.nominal_total);
    }

    /// "3m10s elapsed, ~12m left" now.
    pub fn status(&self) -> String {
        self.status_at(self.started.elapsed().as_secs_f64())
    }

    /// The status after @elapsed seconds: no estimate before any work is done.
    fn status_at(&self, elapsed: f64) -> String {
        let left = if self.nominal_done > 0.0 {
            let pace = elapsed / self.nominal_done;
            format!(
                "~{} left",
                duration((self.nominal_total - self.nominal_done) * pace)
            )
        } else {
            "time left unknown yet".into()
        };
        format!("{} elapsed, {left}", duration(elapsed))
    }
}

/// @secs as "42s", "3m10s" or "1h05m".
pub fn duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(duration(0.4), "0s");
        assert_eq!(duration(42.0), "42s");
        assert_eq!(duration(190.0), "3m10s");
        assert_eq!(duration(3900.0), "1h05m");
        assert_eq!(duration(-3.0), "0s");
    }

    #[test]
    fn what_remains_is_the_nominal_rest_at_the_measured_pace() {
        let mut p = Progress::new(&[100.0, 300.0]);
        assert_eq!(p.next_run(), "1/2");
        assert_eq!(p.status_at(5.0), "5s elapsed, time left unknown yet");
        // the first 50 nominal seconds took 200 s: 4x, so 350 left take 1400 s
        p.advance(50.0);
        assert_eq!(p.status_at(200.0), "3m20s elapsed, ~23m20s left");
        // a scenario run that ends early counts whole: 300 nominal left at 400/100 = 4x
        p.finish_run(100.0);
        assert_eq!(p.status_at(400.0), "6m40s elapsed, ~20m00s left");
        assert_eq!(p.next_run(), "2/2");
        p.advance(1000.0);
        assert_eq!(p.status_at(1600.0), "26m40s elapsed, ~0s left");
    }
}
