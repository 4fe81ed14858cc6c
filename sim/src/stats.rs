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

/// What a row's interval says about the seed's claim. Every verdict but
/// Undetermined names a region the whole interval lies in, and the regions'
/// edges sit where the claim's answer changes: the band around zero and a
/// third and three times the seed's change. A change near the band's edge
/// but far below the seed's is "under a third" however it lands, so the
/// verdict does not flip between RNG seeds on an edge the claim does not ask about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Verdict {
    /// beyond the band and a third of the seed's change, within three times it
    Yes,
    /// in the seed's direction, wholly beyond three times its change
    Larger,
    /// wholly under a third of the seed's change (or under the band's edge,
    /// for a seed change under three bands) and not beyond the band the
    /// other way
    Smaller,
    /// clears the band the other way
    Opposite,
    /// the seed saw no difference and the interval lies inside the band
    NoDifferenceAsSeed,
    /// the seed saw no difference and the interval clears the band
    DifferenceUnlikeSeed,
    /// the interval straddles a region's edge, even with the most runs a
    /// row may take
    Undetermined,
}

impl Verdict {
    /// The verdict as the report's table writes it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Yes => "yes",
            Verdict::Larger => "direction yes, over 3x the seed's change",
            Verdict::Smaller => "no (under a third of the seed's change)",
            Verdict::Opposite => "no (the other way)",
            Verdict::NoDifferenceAsSeed => "yes (no difference, as the seed)",
            Verdict::DifferenceUnlikeSeed => "no (a difference where the seed saw none)",
            Verdict::Undetermined => "undetermined (the interval straddles a verdict's edge)",
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
    if seed_null {
        return match side(s) {
            _ if s.lo >= -EQUIVALENCE && s.hi <= EQUIVALENCE => Verdict::NoDifferenceAsSeed,
            Side::Within => Verdict::Undetermined,
            _ => Verdict::DifferenceUnlikeSeed,
        };
    }
    // the interval in the seed's direction: positive is the way the seed went
    let (lo, hi) = if seed > 0.0 {
        (s.lo, s.hi)
    } else {
        (-s.hi, -s.lo)
    };
    let small = (seed.abs() / SIZE_FACTOR).max(EQUIVALENCE);
    let large = seed.abs() * SIZE_FACTOR;
    if hi < -EQUIVALENCE {
        Verdict::Opposite
    } else if lo >= -EQUIVALENCE && hi < small {
        Verdict::Smaller
    } else if lo > large {
        Verdict::Larger
    } else if lo > small && hi <= large {
        Verdict::Yes
    } else {
        Verdict::Undetermined
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
        let v = |seed, lo, hi| verdict(seed, false, &sp((lo + hi) / 2.0, lo, hi));
        // within a third and three times the seed's change, beyond the band
        assert_eq!(v(10.0, 5.0, 11.0), Verdict::Yes);
        assert_eq!(v(-4.6, -12.0, -8.0), Verdict::Yes);
        assert_eq!(v(10.0, 35.0, 45.0), Verdict::Larger);
        // under a third: near zero, off it, or across the band's edge alike
        assert_eq!(v(10.0, -0.4, 0.5), Verdict::Smaller);
        assert_eq!(v(10.0, 1.0, 3.0), Verdict::Smaller);
        assert_eq!(v(10.0, -0.5, 3.0), Verdict::Smaller);
        // the row that once flipped: base seeds 1 and 1001 read [+0.74,
        // +3.24] and [-0.39, +0.73] against the seed's +30.6 %
        assert_eq!(v(30.6, 0.74, 3.24), v(30.6, -0.39, 0.73));
        assert_eq!(v(-4.5, -0.2, -0.05), Verdict::Smaller);
        assert_eq!(v(-4.5, -0.8, -0.4), Verdict::Smaller);
        // a seed change under three bands: the band's edge bounds "under"
        assert_eq!(v(1.3, -0.2, 0.45), Verdict::Smaller);
        assert_eq!(v(1.3, 0.2, 0.6), Verdict::Undetermined);
        // the other way
        assert_eq!(v(10.0, -3.0, -1.0), Verdict::Opposite);
        assert_eq!(v(-4.6, 2.0, 4.0), Verdict::Opposite);
        assert_eq!(v(1.9, -2.4, -0.6), Verdict::Opposite);
        // straddling an edge: a third of the seed's, three times it, the band
        assert_eq!(v(10.0, 2.0, 5.0), Verdict::Undetermined);
        assert_eq!(v(10.0, 25.0, 35.0), Verdict::Undetermined);
        assert_eq!(v(1.9, -1.9, -0.3), Verdict::Undetermined);
        assert_eq!(v(10.0, -1.0, 3.0), Verdict::Undetermined);
        assert_eq!(v(-4.5, -2.0, -1.0), Verdict::Undetermined);
        // a seed that saw no difference
        let n = |lo, hi| verdict(-0.3, true, &sp((lo + hi) / 2.0, lo, hi));
        assert_eq!(n(-0.5, 0.3), Verdict::NoDifferenceAsSeed);
        assert_eq!(n(-0.3, -0.1), Verdict::NoDifferenceAsSeed);
        assert_eq!(n(-2.0, 0.5), Verdict::Undetermined);
        assert_eq!(n(-5.0, -3.0), Verdict::DifferenceUnlikeSeed);
        assert_eq!(n(-0.5, 0.5), Verdict::NoDifferenceAsSeed);
        assert_eq!(n(-0.51, 0.5), Verdict::Undetermined);
    }
}
