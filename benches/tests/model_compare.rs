//! The model comparison on bounded runs (3 snapshots, 24 turns per unit
//! count, 65,536 units included): lockstep's traffic is flat in the unit
//! count, snapshot traffic grows with it, and they cross.

use benches::model_compare::{compare, crossover, render_text, write_svg, Effort, UNIT_COUNTS};

#[test]
fn lockstep_is_flat_in_units_snapshots_grow_and_they_cross() {
    let comparison = compare(&UNIT_COUNTS, Effort::QUICK).unwrap();
    println!("{}", render_text(&comparison));
    let rows = &comparison.rows;
    assert_eq!(
        rows.iter().map(|r| r.units).collect::<Vec<_>>(),
        vec![16, 256, 4096, 65536]
    );
    // Same commands, same turns: lockstep bytes within 10% at every size.
    let lock: Vec<f64> = rows.iter().map(|r| r.lockstep_bytes_per_s).collect();
    let (lo, hi) = lock
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &b| (lo.min(b), hi.max(b)));
    assert!(hi <= lo * 1.1, "{lock:?}");
    // Every moving unit costs snapshot bytes: at least 3 bytes a unit per delta.
    for w in rows.windows(2) {
        assert!(w[1].snapshot_message_bytes > w[0].snapshot_message_bytes * 10.0);
    }
    assert!(rows[3].snapshot_message_bytes > 3.0 * 65536.0);
    assert!(rows[3].snapshot_bytes_per_s > 100.0 * rows[3].lockstep_bytes_per_s);
    let n = comparison.crossover_units.expect("a crossover");
    assert!((1.0..4096.0).contains(&n), "{n}");
    // The crossover function itself: a line from 100 to 10,000 B/s between
    // 10 and 1000 units crosses 5,050 B/s halfway in log(units): at 100.
    let line = [(10, 100.0), (1000, 10_000.0)];
    let at = crossover(&line, 5050.0).unwrap();
    assert!((at - 100.0).abs() < 1e-6, "{at}");
    assert_eq!(crossover(&line, 50.0), None);
    // Lockstep pays for it in latency: more than the snapshot round trip.
    assert!(rows[0].lockstep_input_latency_ms > rows[0].snapshot_input_latency_ms);
    let svg = std::env::temp_dir().join(format!("model-comparison-{}.svg", std::process::id()));
    write_svg(&comparison, &svg).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("lockstep"));
    let _ = std::fs::remove_file(svg);
}
