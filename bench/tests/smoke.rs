//! Smoke test of the benchmark pipeline (not of its numbers): one tiny scenario, one round,
//! EEVDF and scx_mosaic, in the VM: the guest script, the output parsing, the BPF statistics,
//! the exit checks, JSON, Markdown and SVG. Needs what `make test` needs (root, the VM
//! harness's cache, target/release/scx_mosaic); about 30 s.

use std::path::Path;
use std::process::Command;

#[test]
fn smoke_pipeline_end_to_end() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    assert!(
        repo.join("target/release/scx_mosaic").exists(),
        "build the scheduler first (make build)"
    );
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_mosaic-bench"))
        .args(["run", "--smoke", "--out"])
        .arg(out.path())
        .current_dir(repo)
        .status()
        .unwrap();
    assert!(status.success(), "mosaic-bench run --smoke failed");
    let json = std::fs::read_to_string(out.path().join("hackbench-1llc.json")).unwrap();
    let run: serde_json::Value = serde_json::from_str(&json).unwrap();
    let samples = run["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "{json}");
    for s in samples {
        assert!(s["fail"].is_null(), "{s}");
        assert!(s["metrics"]["time"].as_f64().unwrap() > 0.0, "{s}");
    }
    let mosaic = samples.iter().find(|s| s["sched"] == "mosaic").unwrap();
    assert!(
        mosaic["bpf_ns_per_call"].as_f64().unwrap() > 0.0,
        "{mosaic}"
    );
    assert_eq!(mosaic["exit"], "unregistered from user space");
    let md = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(md.contains("| mosaic |") && md.contains("×EEVDF"), "{md}");
    let svg = std::fs::read_to_string(out.path().join("bench/hackbench-1llc.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("mosaic"));
    assert!(out.path().join("bench/summary-1llc.svg").exists());
}
