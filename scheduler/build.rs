// Builds the BPF scheduler (src/bpf/main.bpf.c, one translation unit) into a
// skeleton, the Rust bindings of src/bpf/intf.h and its counter table
// (build/stat_table.rs, shared with mosaic-sim); records the scheduler's git
// commit and target for --version.
use std::path::{Path, PathBuf};
use std::process::Command;

/// The short sha of the last commit that changed the scheduler (this crate or the lock file),
/// if this is a git checkout ("" from a crate package): a commit elsewhere in the repository
/// leaves the binary as it was, so a benchmark can go on measuring the same build.
fn git_sha() -> String {
    Command::new("git")
        .args([
            "log",
            "-1",
            "--format=%h",
            "--abbrev=12",
            "--",
            ".",
            "../Cargo.lock",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

include!("build/stat_table.rs");

fn main() {
    // rebuild when HEAD moves (a commit, a checkout), not at every file change
    let git = Path::new("../.git");
    if git.is_dir() {
        println!("cargo:rerun-if-changed=../.git/HEAD");
        if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
            // the branch's ref file, or packed-refs when it is packed
            let branch = head.strip_prefix("ref: ").map(|r| git.join(r.trim()));
            match branch.filter(|f| f.exists()) {
                Some(f) => println!("cargo:rerun-if-changed={}", f.display()),
                None => println!("cargo:rerun-if-changed=../.git/packed-refs"),
            }
        }
    }
    println!("cargo:rustc-env=MOSAIC_GIT_SHA={}", git_sha());
    println!(
        "cargo:rustc-env=MOSAIC_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );

    println!("cargo:rerun-if-changed=build/stat_table.rs");
    println!("cargo:rerun-if-changed=src/bpf/intf.h");
    let intf = std::fs::read_to_string("src/bpf/intf.h").expect("reading src/bpf/intf.h");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("stat_table.rs"), gen_stat_table(&intf)).unwrap();

    scx_cargo::BpfBuilder::new()
        .expect("BPF build setup (is clang installed?)")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .add_cflag("-fms-extensions")
        .add_cflag("-Wno-microsoft-anon-tag")
        .compile_link_gen()
        .expect("BPF build");
}
