//! `delta-size --json` prints exactly one JSON document: the workloads and
//! the model comparison in one object, nothing else on stdout.

use std::process::Command;

#[test]
fn json_output_is_one_document_with_the_workloads_and_the_models() {
    if !q3::corpus::available_or_skip(
        "json_output_is_one_document_with_the_workloads_and_the_models",
    ) {
        return;
    }
    let demo = benches::default_demo_dir().join("dm_68_cpma_core_gameplay_dev.dm_68");
    let svg = std::env::temp_dir().join(format!("delta-size-json-{}.svg", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_delta-size"))
        .args([
            "--json",
            "--demos-only",
            "--no-loo",
            "--models-quick",
            "--models-svg",
        ])
        .arg(&svg)
        .arg(&demo)
        .output()
        .expect("delta-size runs");
    let _ = std::fs::remove_file(&svg);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    // `from_str` refuses anything after the first value.
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON document");
    let workloads = json["workloads"].as_array().expect("workloads");
    assert_eq!(workloads.len(), 1);
    assert_eq!(workloads[0]["snapshots"], 71);
    let rows = json["models"]["rows"]
        .as_array()
        .expect("the model comparison");
    assert_eq!(rows.len(), 4);
}
