//! CPU lists in the kernel's format: "0-3,8,10-11".

use anyhow::{bail, Context, Result};

/// CPU ids in a list are below this (the kernel's NR_CPUS is at most 8192).
const MAX_CPU_ID: usize = 1 << 16;

/// Parses a kernel CPU list into sorted, de-duplicated CPU ids.
/// An empty or all-blank string is the empty list (sysfs writes it so).
pub fn parse(text: &str) -> Result<Vec<usize>> {
    let text = text.trim();
    let mut ranges = Vec::new();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (parse_id(lo, text)?, parse_id(hi, text)?),
            None => {
                let id = parse_id(part, text)?;
                (id, id)
            }
        };
        if lo > hi {
            bail!(
                "bad CPU list {}: range {lo}-{hi} runs backwards",
                quote(text)
            );
        }
        if hi >= MAX_CPU_ID {
            bail!("bad CPU list {}: CPU {hi} is out of range", quote(text));
        }
        ranges.push((lo, hi));
    }
    // merge the ranges before expanding them: repeated or overlapping ranges
    // ("0-65535,0-65535,...") cost no more than the CPUs they name
    ranges.sort_unstable();
    let mut cpus = Vec::new();
    let mut next = 0;
    for (lo, hi) in ranges {
        if hi >= next {
            cpus.extend(lo.max(next)..=hi);
            next = hi + 1;
        }
    }
    Ok(cpus)
}

/// One CPU id of a list, with the whole list for the error message.
fn parse_id(s: &str, whole: &str) -> Result<usize> {
    let s = s.trim();
    let (whole, id) = (quote(whole), quote(s));
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        bail!("bad CPU list {whole}: {id} is not a CPU number");
    }
    s.parse()
        .with_context(|| format!("bad CPU list {whole}: {id} is too large"))
}

/// @s quoted and escaped for an error message (one line), cut after 64 chars.
pub fn quote(s: &str) -> String {
    match s.char_indices().nth(64) {
        Some((i, _)) => format!("{:?}...", &s[..i]),
        None => format!("{s:?}"),
    }
}

/// Formats CPU ids back into the kernel's compact form.
pub fn format(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn parses_ranges_and_singles() {
        assert_eq!(parse("0-3,8,10-11\n").unwrap(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse("5").unwrap(), vec![5]);
        assert_eq!(parse(" 3,1,1-2 ").unwrap(), vec![1, 2, 3]);
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn rejects_malformed_lists() {
        for bad in [
            "3-1",
            "a",
            "1,,2",
            "1-",
            "-1",
            "0-3,x",
            "1.5",
            "99999999999999999999",
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("bad CPU list"), "{bad}: {err}");
        }
    }

    #[test]
    fn repeated_huge_ranges_cost_only_the_cpus_they_name() {
        let text = vec!["0-65535"; 4000].join(",");
        assert_eq!(parse(&text).unwrap().len(), 65536);
        let err = parse(&format!("{text},x")).unwrap_err().to_string();
        assert!(err.len() < 200, "error quotes all of a long list: {err}");
    }

    #[test]
    fn format_round_trips() {
        for text in ["0-3,8,10-11", "0", "1,3,5", "0-15"] {
            assert_eq!(format(&parse(text).unwrap()), text);
        }
    }

    /// A CPU set and the list text for it, ranges shuffled and overlapping.
    fn messy_list() -> impl Strategy<Value = (BTreeSet<usize>, String)> {
        prop::collection::vec((0usize..300, 0usize..20, " ?", " ?"), 1..12).prop_map(|ranges| {
            let mut set = BTreeSet::new();
            let mut parts = Vec::new();
            for (lo, len, pre, post) in ranges {
                set.extend(lo..=lo + len);
                parts.push(match len {
                    0 => format!("{pre}{lo}{post}"),
                    _ => format!("{pre}{lo}-{}{post}", lo + len),
                });
            }
            (set, parts.join(","))
        })
    }

    proptest! {
        #[test]
        fn cpu_lists_never_panic_and_errors_are_one_line(text in "\\PC{0,40}|[0-9, -]{0,40}") {
            if let Err(e) = parse(&text) {
                let msg = format!("{e:#}");
                prop_assert!(msg.starts_with("bad CPU list"), "{msg}");
                prop_assert!(!msg.contains('\n'), "{msg:?}");
            }
        }

        #[test]
        fn cpu_lists_parse_to_the_union_of_their_ranges((set, text) in messy_list()) {
            prop_assert_eq!(parse(&text).unwrap(), set.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn cpu_lists_format_then_parse_is_identity(set in prop::collection::btree_set(0usize..5000, 0..64)) {
            let cpus: Vec<usize> = set.into_iter().collect();
            prop_assert_eq!(parse(&format(&cpus)).unwrap(), cpus);
        }
    }
}
