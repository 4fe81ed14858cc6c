//! Small statistics for the seed report: the median of paired A/B changes,
//! a bootstrap interval around it, and the verdict that interval supports.
//! Everything is deterministic (a fixed-seed generator), so the report is
//! reproducible byte for byte.

/// Median of @xs (NaN for none).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// splitmix64: a tiny, well-mixed generator; enough for resampling.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform index below @n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Resamples drawn for an interval.
pub const BOOTSTRAP_RESAMPLES: usize = 4000;
/// The generator's fixed seed: the same data gives the same interval.
const BOOTSTRAP_SEED: u64 = 0x5eed_0041;
/// Coverage of the interval.
pub const LEVEL: f64 = 0.95;

/// The spread of a row's paired changes: n runs, their median and a
/// percentile-bootstrap 95 % interval of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
}

/// The median of @changes and its percentile-bootstrap interval
/// (BOOTSTRAP_RESAMPLES resamples of the paired runs, with replacement).
pub fn spread(changes: &[f64]) -> Spread {
    let n = changes.len();
    let med = median(changes);
    if n < 2 {
        return Spread {
            n,
            median: med,
            lo: med,
            hi: med,
        };
    }
    let mut rng = SplitMix(BOOTSTRAP_SEED);
    let mut meds = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    let mut sample = vec![0.0; n];
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for s in sample.iter_mut() {
            *s = changes[rng.below(n)];
        }
        meds.push(median(&sample));
    }
    meds.sort_by(f64::total_cmp);
    let tail = (1.0 - LEVEL) / 2.0;
    let at = |q: f64| meds[((meds.len() - 1) as f64 * q).round() as usize];
    Spread {
        n,
        median: med,
        lo: at(tail),
        hi: at(1.0 - tail),
    }
}

/// How far a reproduced median may be from the seed's change: within this
/// factor either way.
pub const SIZE_FACTOR: f64 = 3.0;

/// The band around zero, in units (% or points), that a change must clear
/// to count: under half the smallest change any seed claims (000's +1.3 % on
/// Skylake), which the simulator's fidelity cannot resolve.
pub const EQUIVALENCE: f64 = 0.5;

/// Where an interval lies against the ±EQUIVALENCE band.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// wholly above +EQUIVALENCE
    Above,
    /// wholly below -EQUIVALENCE
    Below,
    /// touches the band or zero: no difference this interval can show
    Within,
}

/// Where @s's interval lies: a difference only when the whole interval
/// clears the band, so that a change near its edge does not flip between
/// "a difference" and "none" with the RNG seeds drawn.
pub fn side(s: &Spread) -> Side {
    if s.lo > EQUIVALENCE {
        Side::Above
    } else if s.hi < -EQUIVALENCE {
        Side::Below
    } else {
        Side::Within
    }
}

/// Whether @s's interval decides a verdict: it clears the band (a
/// difference) or lies wholly inside it (none the band can show). One that
/// straddles an edge of the band shows neither: with other RNG seeds the same
/// row can land on either side of that edge.
pub fn decided(s: &Spread) -> bool {
    side(s) != Side::Within || (s.lo >= -EQUIVALENCE && s.hi <= EQUIVALENCE)
}

/// What a row's interval says about the seed's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    /// clears the band in the seed's direction, median within SIZE_FACTOR
    Yes,
    /// clears the band in the seed's direction, median beyond SIZE_FACTOR
    DirectionOnly,
    /// lies wholly inside the band around zero
    NoDifference,
    /// clears the band the other way
    Opposite,
    /// the seed saw no difference and the interval lies inside the band
    NoDifferenceAsSeed,
    /// the seed saw no difference and the interval clears the band
    DifferenceUnlikeSeed,
    /// the interval straddles an edge of the band, even with the most runs
    /// a row may take (not decided())
    Undetermined,
}

impl Verdict {
    /// The verdict as the report's table writes it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::DirectionOnly => "direction yes, size off",
            Verdict::NoDifference => "no difference",
            Verdict::Opposite => "no",
            Verdict::NoDifferenceAsSeed => "yes (no difference, as the seed)",
            Verdict::DifferenceUnlikeSeed => "no (a difference where the seed saw none)",
            Verdict::Undetermined => "undetermined (the interval straddles the band's edge)",
        }
    }

    /// Whether the verdict reproduces the seed's claim.
    pub fn reproduces(self) -> bool {
        matches!(self, Verdict::Yes | Verdict::NoDifferenceAsSeed)
    }
}

/// The verdict for a seed change @seed (in the row's unit; @seed_null: the
/// seed reported no significant difference) given the simulated spread @s.
pub fn verdict(seed: f64, seed_null: bool, s: &Spread) -> Verdict {
    if !decided(s) {
        return Verdict::Undetermined;
    }
    let side = side(s);
    if seed_null {
        return if side == Side::Within {
            Verdict::NoDifferenceAsSeed
        } else {
            Verdict::DifferenceUnlikeSeed
        };
    }
    if side == Side::Within {
        return Verdict::NoDifference;
    }
    if (side == Side::Above) != (seed > 0.0) {
        return Verdict::Opposite;
    }
    let (m, want) = (s.median.abs(), seed.abs());
    if m <= want * SIZE_FACTOR && m >= want / SIZE_FACTOR {
        Verdict::Yes
    } else {
        Verdict::DirectionOnly
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(median: f64, lo: f64, hi: f64) -> Spread {
        Spread {
            n: 7,
            median,
            lo,
            hi,
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn the_interval_holds_the_median_and_is_reproducible() {
        let xs = [1.0, 2.0, 2.5, 3.0, 3.5, 4.0, 9.0];
        let a = spread(&xs);
        assert_eq!(a, spread(&xs));
        assert_eq!(a.median, 3.0);
        assert!(a.lo <= a.median && a.median <= a.hi, "{a:?}");
        assert!(a.lo >= 1.0 && a.hi <= 9.0, "{a:?}");
        // identical runs: a point
        let p = spread(&[5.0; 9]);
        assert_eq!((p.lo, p.hi), (5.0, 5.0));
    }

    #[test]
    fn verdicts_follow_the_interval() {
        assert_eq!(verdict(10.0, false, &sp(8.0, 5.0, 11.0)), Verdict::Yes);
        assert_eq!(
            verdict(10.0, false, &sp(2.0, 1.0, 3.0)),
            Verdict::DirectionOnly
        );
        assert_eq!(
            verdict(10.0, false, &sp(40.0, 35.0, 45.0)),
            Verdict::DirectionOnly
        );
        assert_eq!(
            verdict(10.0, false, &sp(0.1, -0.4, 0.5)),
            Verdict::NoDifference
        );
        // an interval that holds zero and reaches past the band: undecided
        assert_eq!(
            verdict(10.0, false, &sp(1.0, -1.0, 3.0)),
            Verdict::Undetermined
        );
        assert_eq!(
            verdict(10.0, false, &sp(-2.0, -3.0, -1.0)),
            Verdict::Opposite
        );
        assert_eq!(verdict(-4.6, false, &sp(-10.0, -12.0, -8.0)), Verdict::Yes);
        assert_eq!(verdict(-4.6, false, &sp(3.0, 2.0, 4.0)), Verdict::Opposite);
        assert_eq!(
            verdict(-0.3, true, &sp(-0.1, -0.5, 0.3)),
            Verdict::NoDifferenceAsSeed
        );
        assert_eq!(
            verdict(-0.3, true, &sp(-1.0, -2.0, 0.5)),
            Verdict::Undetermined
        );
        assert_eq!(
            verdict(-0.3, true, &sp(-4.0, -5.0, -3.0)),
            Verdict::DifferenceUnlikeSeed
        );
        // an interval off zero but within EQUIVALENCE of it: no difference
        assert_eq!(
            verdict(-4.5, false, &sp(-0.1, -0.2, -0.05)),
            Verdict::NoDifference
        );
        assert_eq!(
            verdict(-0.3, true, &sp(-0.2, -0.3, -0.1)),
            Verdict::NoDifferenceAsSeed
        );
        // off zero and reaching past the band, but not clearing it: neither
        // a difference nor its absence (base seeds 1 and 1001 once read
        // [-1.98, -0.58] and [-1.11, -0.23] for the same row)
        assert_eq!(
            verdict(-4.5, false, &sp(-0.6, -0.8, -0.4)),
            Verdict::Undetermined
        );
        assert_eq!(
            verdict(1.9, false, &sp(-0.9, -1.9, -0.3)),
            Verdict::Undetermined
        );
        assert!(decided(&sp(-0.5, -0.5, 0.5)) && !decided(&sp(-0.5, -0.51, 0.5)));
        // clearing it: a difference
        assert_eq!(
            verdict(-4.5, false, &sp(-0.8, -1.0, -0.6)),
            Verdict::DirectionOnly
        );
        assert_eq!(
            verdict(1.9, false, &sp(-1.5, -2.4, -0.6)),
            Verdict::Opposite
        );
    }
}
