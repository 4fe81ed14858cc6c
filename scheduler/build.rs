// Builds the BPF scheduler (src/bpf/main.bpf.c, one translation unit) into a
// skeleton, and the Rust bindings of src/bpf/intf.h; records the git commit
// and target for --version.
use std::path::Path;
use std::process::Command;

/// The short sha of HEAD, if this is a git checkout ("" from a crate package).
fn git_sha() -> String {
    Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

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

    scx_cargo::BpfBuilder::new()
        .expect("BPF build setup (is clang installed?)")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .add_cflag("-fms-extensions")
        .add_cflag("-Wno-microsoft-anon-tag")
        .compile_link_gen()
        .expect("BPF build");
}
