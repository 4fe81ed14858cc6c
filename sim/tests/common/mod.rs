//! What the simulator's integration tests share.
use serde_json::Value;
use std::process::Command;

/// Runs mosaic-sim with @args, its JSON written to a file named @name in a
/// per-process directory @dir_prefix-<pid>: whether it succeeded, and the JSON.
pub fn run_sim(dir_prefix: &str, name: &str, args: &[&str]) -> (bool, Value) {
    let dir = std::env::temp_dir().join(format!("{dir_prefix}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}.json"));
    let st = Command::new(env!("CARGO_BIN_EXE_mosaic-sim"))
        .args(args)
        .arg("--json")
        .arg(&out)
        .status()
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    (st.success(), serde_json::from_str(&text).unwrap())
}
