// The counter table of enum mosaic_stat (src/bpf/intf.h), generated at build
// time for both scx_mosaic (build.rs) and mosaic-sim (sim/build.rs), which
// `include!` this file: one definition of each counter's name, whether it is
// a maximum over CPUs or a sum, and its description.
//
// From `STAT_WAIT_MAX_US, /* longest runnable wait */` it makes the entry
// { id, name: "wait_max_us", is_max: true, desc: "longest runnable wait" }:
// the name is the enumerator in lower case without `STAT_`; a counter is a
// maximum when its enumerator has `_MAX_` in it or ends in `_MAX` (intf.h
// says so next to the enum); the description is the comment after it.

/// One counter of enum mosaic_stat, as intf.h declares it.
struct StatSource {
    ident: String,
    desc: String,
}

/// The enumerators of enum mosaic_stat in @intf (intf.h's text), in order,
/// each with the comment that follows it on its line (comments on lines of
/// their own head a section: no counter's).
fn stat_sources(intf: &str) -> Vec<StatSource> {
    let start = intf
        .find("enum mosaic_stat")
        .expect("intf.h: no enum mosaic_stat");
    let body = &intf[start..];
    let body = &body[body.find('{').expect("enum mosaic_stat: no body") + 1..];
    let mut out: Vec<StatSource> = Vec::new();
    // whether a comment now belongs to the last enumerator (same line)
    let mut owner = false;
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        let comment = match (rest.strip_prefix("/*"), rest.strip_prefix("//")) {
            (Some(r), _) => Some((r, r.find("*/").expect("intf.h: unclosed comment"), 2)),
            (_, Some(r)) => Some((r, r.find('\n').unwrap_or(r.len()), 0)),
            _ => None,
        };
        if let Some((r, end, close)) = comment {
            let text: Vec<&str> = r[..end]
                .lines()
                .map(|l| l.trim().trim_start_matches('*').trim())
                .filter(|l| !l.is_empty())
                .collect();
            if let (true, Some(last)) = (owner, out.last_mut()) {
                if !last.desc.is_empty() {
                    last.desc.push(' ');
                }
                last.desc.push_str(&text.join(" "));
            }
            rest = &r[end + close..];
        } else if c == '=' {
            panic!("intf.h: enum mosaic_stat takes no explicit values (ids are positions)");
        } else if c == '}' {
            break;
        } else if c == '\n' {
            owner = false;
            rest = &rest[1..];
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out.push(StatSource {
                ident: rest[..end].to_string(),
                desc: String::new(),
            });
            owner = true;
            rest = &rest[end..];
        } else {
            rest = &rest[c.len_utf8()..];
        }
    }
    out.retain(|s| s.ident.starts_with("STAT_"));
    out
}

/// Whether counter @ident (an enumerator) is a maximum over CPUs.
fn stat_is_max(ident: &str) -> bool {
    ident.contains("_MAX_") || ident.ends_with("_MAX")
}

/// Rust source of the counter table, from intf.h's text @intf: StatDef,
/// NR_STATS, STATS, STAT_NAMES, the macro `with_stats!(m)`, which calls
/// `m! { (name, id), ... }` so that code can name a field per counter, and
/// the macro `struct_with_counters!`, which defines a struct with one `u64`
/// field per counter, described (`#[stat(desc)]`, scx_stats) by intf.h.
fn gen_stat_table(intf: &str) -> String {
    let stats = stat_sources(intf);
    assert!(!stats.is_empty(), "intf.h: enum mosaic_stat has no STAT_");
    let mut defs = String::new();
    let mut names = Vec::new();
    let mut fields = Vec::new();
    let mut counter_fields = String::new();
    for (id, s) in stats.iter().enumerate() {
        let name = s.ident["STAT_".len()..].to_lowercase();
        defs.push_str(&format!(
            "    StatDef {{ id: {id}, name: {name:?}, is_max: {}, desc: {:?} }},\n",
            stat_is_max(&s.ident),
            s.desc
        ));
        names.push(format!("{name:?}"));
        fields.push(format!("({name}, {id})"));
        counter_fields.push_str(&format!(
            "            #[stat(desc = {:?})]\n            pub {name}: u64,\n",
            s.desc
        ));
    }
    format!(
        "// Generated from enum mosaic_stat (intf.h) by scheduler/build/stat_table.rs.\n\
         /// One counter of enum mosaic_stat: its id (the enum value), JSON name,\n\
         /// whether it is a maximum over CPUs (else a sum) and intf.h's comment.\n\
         #[derive(Clone, Copy, Debug, PartialEq, Eq)]\n\
         pub struct StatDef {{\n    pub id: usize,\n    pub name: &'static str,\n    \
         pub is_max: bool,\n    pub desc: &'static str,\n}}\n\
         /// How many counters there are (NR_MOSAIC_STATS).\n\
         pub const NR_STATS: usize = {n};\n\
         /// Every counter, in enum order (STATS[i].id == i).\n\
         pub const STATS: [StatDef; NR_STATS] = [\n{defs}];\n\
         /// JSON names of the counters, in enum mosaic_stat order.\n\
         pub const STAT_NAMES: &[&str] = &[{names}];\n\
         /// Calls `$m! {{ (name, id), ... }}` with every counter.\n\
         #[allow(unused_macros)]\n\
         macro_rules! with_stats {{\n    ($m:ident) => {{\n        $m! {{\n            {fields}\n        }}\n    }};\n}}\n\
         /// Defines the struct given as `attributes struct Name {{ fields }} {{ fields }}`\n\
         /// with a `u64` field per counter, described by intf.h, between the two lists.\n\
         #[allow(unused_macros)]\n\
         macro_rules! struct_with_counters {{\n    \
         ($(#[$attr:meta])* $vis:vis struct $name:ident {{ $($before:tt)* }} {{ $($after:tt)* }}) => {{\n        \
         $(#[$attr])* $vis struct $name {{\n            $($before)*\n{counter_fields}            $($after)*\n        }}\n    }};\n}}\n",
        n = stats.len(),
        names = names.join(", "),
        fields = fields.join(",\n            "),
    )
}
