//! The seed report's verdicts do not depend on the base RNG seed: the
//! report's rows run from two base seeds, and every row's verdict must be
//! the same. Slow (two full sets of the report's simulations, minutes on
//! two cores): `make sim-verdicts` runs it.
use serde_json::Value;
use std::process::Command;

/// The verdicts of the report's rows from base seed @seed, each printed
/// with its median and interval (shown with --nocapture).
fn verdicts(seed: u64) -> Vec<(String, String, String)> {
    let dir = std::env::temp_dir().join(format!("mosaic-verdicts-{}-{seed}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (md, json) = (dir.join("report.md"), dir.join("verdicts.json"));
    let st = Command::new(env!("CARGO_BIN_EXE_mosaic-sim"))
        .args([
            "report",
            "--claims-only",
            "--base-seed",
            &seed.to_string(),
            "--out",
        ])
        .arg(&md)
        .arg("--verdicts-json")
        .arg(&json)
        .status()
        .unwrap();
    assert!(st.success(), "mosaic-sim report --base-seed {seed} failed");
    let rows: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    rows.iter()
        .map(|r| {
            assert!(r["error"].is_null(), "a row did not run: {r}");
            println!(
                "base seed {seed}: {} on {}: {} {:+.2} [{:+.2}, {:+.2}]",
                r["claim"].as_str().unwrap(),
                r["machine"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
                r["median"].as_f64().unwrap_or(f64::NAN),
                r["lo"].as_f64().unwrap_or(f64::NAN),
                r["hi"].as_f64().unwrap_or(f64::NAN),
            );
            (
                r["claim"].as_str().unwrap().to_string(),
                r["machine"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
#[ignore = "slow: two runs of the whole seed table; make sim-verdicts"]
fn verdicts_are_the_same_from_two_base_seeds() {
    let (a, b) = (verdicts(1), verdicts(1001));
    assert_eq!(a.len(), b.len());
    let changed: Vec<String> = a
        .iter()
        .zip(&b)
        .filter(|(x, y)| x.2 != y.2)
        .map(|(x, y)| {
            format!(
                "{} on {}: {} from seed 1, {} from seed 1001",
                x.0, x.1, x.2, y.2
            )
        })
        .collect();
    assert!(
        changed.is_empty(),
        "verdicts changed with the base seed:\n{}",
        changed.join("\n")
    );
}
