//! Warnings that may repeat every period (a failing map read, cgroups
//! skipped): printed at most once per interval, with how many were held
//! back since the last one printed.

use std::time::{Duration, Instant};

/// One kind of warning, rate-limited.
#[derive(Debug)]
pub struct RateLimited {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl RateLimited {
    /// At most one line per @every.
    pub fn new(every: Duration) -> Self {
        RateLimited {
            every,
            last: None,
            held: 0,
        }
    }

    /// The warning @line() (logged: "scx_mosaic: " and the line on stderr)
    /// if none was logged in the last interval, else counted as held back;
    /// returns the line as printed if logged.
    pub fn warn(&mut self, now: Instant, line: impl FnOnce() -> String) -> Option<String> {
        if self.last.is_some_and(|t| now < t + self.every) {
            self.held += 1;
            return None;
        }
        let held = std::mem::take(&mut self.held);
        let more = if held > 0 {
            format!(
                " ({held} more like it in the last {} s)",
                self.every.as_secs()
            )
        } else {
            String::new()
        };
        let text = format!("{}{more}", line());
        log::warn!("{text}");
        self.last = Some(now);
        Some(format!("scx_mosaic: {text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_then_the_count_held_back() {
        let mut w = RateLimited::new(Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(w.warn(t0, || "a".into()).is_some());
        assert!(w.warn(t0 + Duration::from_secs(1), || "b".into()).is_none());
        assert!(w.warn(t0 + Duration::from_secs(9), || "c".into()).is_none());
        let line = w.warn(t0 + Duration::from_secs(10), || "d".into());
        assert_eq!(
            line.as_deref(),
            Some("scx_mosaic: d (2 more like it in the last 10 s)")
        );
    }
}
