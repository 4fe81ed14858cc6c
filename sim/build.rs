// Compiles the scheduler's BPF C (scheduler/src/bpf/main.bpf.c and the files it
// includes) as native C into the simulator, against the shims in csrc/.
//
// The scx headers come from scx_cargo (the same crate and version the BPF
// build uses): BpfBuilder::new() unpacks them into OUT_DIR/scx_utils-bpf_h.
// From the scheduler's sources this generates three small tables, so that
// adding a map, a tunable or a counter needs no change here:
//   sim_maps.h      one sim_map_register() per `SEC(".maps")` definition
//   sim_tunables.h  every `const volatile` global (written before "load")
//   stat_names.rs   the JSON names of enum mosaic_stat (intf.h)
// and sim_enums.h, which undoes the scx headers' enum-to-weak-variable macros.
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let bpf_dir = manifest
        .join("../scheduler/src/bpf")
        .canonicalize()
        .unwrap();
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let clang = env::var("BPF_CLANG").unwrap_or_else(|_| "clang-19".into());
    // scx_cargo finds clang through BPF_CLANG too
    env::set_var("BPF_CLANG", &clang);
    println!("cargo:rerun-if-env-changed=BPF_CLANG");

    scx_cargo::BpfBuilder::new().expect("unpacking the scx BPF headers (scx_cargo)");
    let bpf_h = out.join("scx_utils-bpf_h");
    let arch = match env::var("CARGO_CFG_TARGET_ARCH").unwrap().as_str() {
        "x86_64" => "x86",
        "aarch64" => "arm64",
        other => panic!("mosaic-sim: no vmlinux.h for target arch {other}"),
    };

    // the scheduler's unit: main.bpf.c and the local files it includes
    let mut sources = String::new();
    let mut files = vec![bpf_dir.join("main.bpf.c")];
    let mut seen = Vec::new();
    while let Some(f) = files.pop() {
        if seen.contains(&f) || !f.exists() {
            continue;
        }
        println!("cargo:rerun-if-changed={}", f.display());
        let text = fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            if let Some(inc) = line.trim().strip_prefix("#include \"") {
                files.push(bpf_dir.join(inc.trim_end_matches('"')));
            }
        }
        sources.push_str(&text);
        sources.push('\n');
        seen.push(f);
    }
    println!("cargo:rerun-if-changed={}", bpf_dir.display());
    let sources = strip_comments(&sources);
    for f in [
        "csrc/sched.c",
        "csrc/shim.h",
        "csrc/helpers.h",
        "csrc/glue.c",
    ] {
        println!("cargo:rerun-if-changed={f}");
    }

    fs::write(out.join("sim_maps.h"), gen_maps(&sources)).unwrap();
    fs::write(out.join("sim_tunables.h"), gen_tunables(&sources)).unwrap();
    fs::write(out.join("sim_enums.h"), gen_enum_undefs(&bpf_h)).unwrap();
    let (hide, unhide) = gen_helper_hiding();
    fs::write(out.join("sim_helpers_hide.h"), hide).unwrap();
    fs::write(out.join("sim_helpers_unhide.h"), unhide).unwrap();
    let intf = fs::read_to_string(bpf_dir.join("intf.h")).unwrap();
    let intf = strip_comments(&intf);
    let mut intf_rs = gen_stat_names(&intf);
    intf_rs.push_str(&gen_limits(&intf));
    fs::write(out.join("intf.rs"), intf_rs).unwrap();

    let ops = find_ops_name(&sources);
    cc::Build::new()
        .compiler(&clang)
        .file("csrc/sched.c")
        .include(out.clone())
        .include(manifest.join("csrc"))
        .include(bpf_h.join("arch").join(arch))
        .include(&bpf_h)
        .include(bpf_h.join("bpf-compat"))
        .include(&bpf_dir)
        .define(
            "SIM_SCHED_MAIN",
            format!("\"{}\"", bpf_dir.join("main.bpf.c").display()).as_str(),
        )
        .define("SIM_OPS", ops.as_str())
        .define(format!("__TARGET_ARCH_{arch}").as_str(), None)
        .define(format!("__SCX_TARGET_ARCH_{arch}").as_str(), None)
        .opt_level(2)
        .debug(false)
        .warnings(false)
        .flag("-fms-extensions")
        .flag("-fno-strict-aliasing")
        .flag("-fno-builtin")
        .flag("-Wno-microsoft-anon-tag")
        .flag("-Wno-unknown-attributes")
        .flag("-Wno-ignored-attributes")
        .flag("-Wno-address-of-packed-member")
        .flag("-Wno-incompatible-pointer-types-discards-qualifiers")
        .flag("-Wno-pointer-sign")
        .flag("-Wno-int-conversion")
        .flag("-Werror=implicit-function-declaration")
        .compile("mosaic_sched");
}

/// Removes /* */ and // comments (the parsers below look at code only).
fn strip_comments(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            out.push(' ');
        } else if b[i] == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

fn ident_end(s: &str) -> usize {
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// One registration per map: `struct { __uint(type, ...) ... } NAME SEC(".maps");`.
/// Sizes are read from the map's own declared types by the C compiler.
fn gen_maps(src: &str) -> String {
    let mut out = String::new();
    let mut rest = src;
    while let Some(pos) = rest.find("SEC(\".maps\")") {
        let before = &rest[..pos];
        let close = before.rfind('}').expect("map definition without a body");
        let name = before[close + 1..].trim();
        assert!(
            !name.is_empty() && ident_end(name) == name.len(),
            "mosaic-sim: cannot parse the map before SEC(\".maps\"): {name:?}"
        );
        let open = matching_open(before, close);
        let body = &before[open..close];
        let has = |f: &str| body.contains(&format!("({f},")) || body.contains(&format!("({f} ,"));
        let val = |f: &str| format!("SIM_FIELD_VAL({name}, {f})");
        let size = |f: &str| format!("SIM_FIELD_SIZE({name}, {f})");
        assert!(has("type"), "mosaic-sim: map {name} has no type");
        assert!(
            !body.contains("__array("),
            "mosaic-sim: map {name}: maps of maps are not simulated"
        );
        let key = if has("key") {
            size("key")
        } else if has("key_size") {
            val("key_size")
        } else {
            "0".into()
        };
        let value = if has("value") {
            size("value")
        } else if has("value_size") {
            val("value_size")
        } else {
            "0".into()
        };
        let max = if has("max_entries") {
            val("max_entries")
        } else {
            "0".into()
        };
        let flags = if has("map_flags") {
            val("map_flags")
        } else {
            "0".into()
        };
        out.push_str(&format!(
            "sim_map_register(&{name}, \"{name}\", {}, {key}, {value}, {max}, {flags});\n",
            val("type")
        ));
        rest = &rest[pos + 12..];
    }
    out
}

/// Index of the `{` that the `}` at @close closes.
fn matching_open(s: &str, close: usize) -> usize {
    let mut depth = 0;
    for (i, c) in s[..=close].char_indices().rev() {
        match c {
            '}' => depth += 1,
            '{' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    panic!("mosaic-sim: unbalanced braces before a map definition")
}

/// Every `const volatile TYPE NAME[...]` global: the tunables Rust writes.
fn gen_tunables(src: &str) -> String {
    let mut out = String::new();
    for stmt in src.split(';') {
        let Some(at) = stmt.rfind("const volatile ") else {
            continue;
        };
        // only a declaration that starts its line
        let line_start = stmt[..at].rfind('\n').map_or(0, |i| i + 1);
        if !stmt[line_start..at].trim().is_empty() {
            continue;
        }
        let decl = &stmt[at + "const volatile ".len()..];
        let decl = decl.split('=').next().unwrap().trim();
        let (decl, array) = match decl.find('[') {
            Some(i) => (&decl[..i], true),
            None => (decl, false),
        };
        let name = decl
            .split_whitespace()
            .last()
            .unwrap()
            .trim_start_matches('*');
        if name.is_empty() || ident_end(name) != name.len() {
            continue;
        }
        let mac = if array {
            "SIM_TUNABLE_ARRAY"
        } else {
            "SIM_TUNABLE"
        };
        out.push_str(&format!("{mac}({name})\n"));
    }
    out
}

/// `#undef` for each `#define X __X` of the scx enum header.
fn gen_enum_undefs(bpf_h: &Path) -> String {
    let text = fs::read_to_string(bpf_h.join("scx/enums.autogen.bpf.h")).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if let (Some("#define"), Some(a), Some(b)) = (w.next(), w.next(), w.next()) {
            if b == format!("__{a}") {
                out.push_str(&format!("#undef {a}\n"));
            }
        }
    }
    out
}

/// bpf_helper_defs.h declares each helper as a function pointer initialised
/// with its number: `(* const bpf_xxx)(...) = (void *) N` (libbpf >= 1.2,
/// trixie) or `(*bpf_xxx)(...)` (libbpf 1.1, bookworm); it has no include
/// guard. Renaming every helper while it is included, then dropping the
/// names, leaves each helper undeclared: one that csrc/helpers.h does not
/// provide fails the build, whichever libbpf is installed.
fn gen_helper_hiding() -> (String, String) {
    let defs = ["/usr/include/bpf/bpf_helper_defs.h"]
        .iter()
        .find_map(|p| fs::read_to_string(p).ok())
        .expect("mosaic-sim: /usr/include/bpf/bpf_helper_defs.h (libbpf-dev) is missing");
    let (mut hide, mut unhide) = (String::new(), String::new());
    for line in defs.lines() {
        if !line.starts_with("static ") || !line.contains(") = (void *)") {
            continue;
        }
        let Some(i) = line.find("(*") else { continue };
        let rest = line[i + 2..].trim_start();
        let rest = rest.strip_prefix("const ").unwrap_or(rest);
        let name = &rest[..ident_end(rest)];
        if !name.is_empty() {
            hide.push_str(&format!("#define {name} sim_hidden_helper_{name}\n"));
            unhide.push_str(&format!("#undef {name}\n"));
        }
    }
    (hide, unhide)
}

/// JSON names of enum mosaic_stat: lower case, without the STAT_ prefix.
fn gen_stat_names(intf: &str) -> String {
    let start = intf
        .find("enum mosaic_stat")
        .expect("intf.h: no enum mosaic_stat");
    let body = &intf[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    let mut names = Vec::new();
    for item in body.split(',') {
        let id = item.split('=').next().unwrap().trim();
        if let Some(n) = id.strip_prefix("STAT_") {
            names.push(format!("{:?}", n.to_lowercase()));
        }
    }
    format!(
        "/// JSON names of the scheduler's counters, in enum mosaic_stat order.\npub const STAT_NAMES: &[&str] = &[{}];\n",
        names.join(", ")
    )
}

/// The plain integer constants of enum mosaic_limits.
fn gen_limits(intf: &str) -> String {
    let start = intf
        .find("enum mosaic_limits")
        .expect("intf.h: no enum mosaic_limits");
    let body = &intf[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    let mut out = String::new();
    for item in body.split(',') {
        if let Some((k, v)) = item.split_once('=') {
            if let Ok(v) = v.trim().parse::<u64>() {
                out.push_str(&format!("pub const {}: usize = {v};\n", k.trim()));
            }
        }
    }
    out
}

fn find_ops_name(src: &str) -> String {
    let pos = src
        .find("SCX_OPS_DEFINE(")
        .expect("no SCX_OPS_DEFINE in the scheduler");
    let rest = src[pos + 15..].trim_start();
    rest[..ident_end(rest)].to_string()
}
