//! Quake 3 demos converted to native demos with both codecs: playing the
//! result gives, snapshot for snapshot and field for field, the states the
//! Quake 3 client decoded; with the q3 codec the re-encoded bit counts are
//! Quake 3's own for all but the 7 known snapshots (see q3/tests/reencode.rs),
//! and the native codec's are smaller.

use demo::{DemoReader, Player};
use demo_cli::convert::{compare, ConvertOptions, Dm68Converter};
use fields::Codec;
use q3::reencode::ReencodeStats;
use q3::{Command, Dm68Decoder};

#[test]
fn converted_demos_decode_to_the_original_states_with_both_codecs() {
    if !q3::corpus::available_or_skip(
        "converted_demos_decode_to_the_original_states_with_both_codecs",
    ) {
        return;
    }
    let mut total = ReencodeStats::default();
    for path in q3::corpus::valid_files() {
        let name = q3::corpus::name(&path);
        let data = std::fs::read(&path).unwrap();
        let metadata = demo_cli::dm68::metadata(&data);
        // One decode feeds both conversions.
        let mut native = Dm68Converter::new(
            Vec::new(),
            ConvertOptions {
                codec: Codec::Native,
                ..ConvertOptions::default()
            },
            metadata.clone(),
        );
        let mut q3 = Dm68Converter::new(
            Vec::new(),
            ConvertOptions {
                codec: Codec::Q3,
                ..ConvertOptions::default()
            },
            metadata,
        );
        let mut decoder = Dm68Decoder::new(&data).unwrap();
        while let Some(item) = decoder.next() {
            let record = item.unwrap();
            native.push(&record, decoder.client()).unwrap();
            q3.push(&record, decoder.client()).unwrap();
        }
        let (native_demo, native_report) = native.finish().unwrap();
        let (q3_demo, q3_report) = q3.finish().unwrap();
        assert_eq!(native_report.snapshots, q3_report.snapshots);
        assert_eq!(native_report.verified_snapshots, native_report.snapshots);

        // Play both files from disk form, in lockstep with a second decode.
        let mut players: Vec<Player<'_>> = [&native_demo, &q3_demo]
            .iter()
            .map(|demo| {
                let mut player = Player::new(DemoReader::new(demo).unwrap()).unwrap();
                player.set_verify(true);
                player
            })
            .collect();
        let mut snapshots = 0;
        for item in Dm68Decoder::new(&data).unwrap() {
            let record = item.unwrap();
            for command in &record.message.commands {
                let Command::Snapshot(snap) = &command.command else {
                    continue;
                };
                snapshots += 1;
                for player in &mut players {
                    loop {
                        let played = player.next_record().unwrap().unwrap();
                        if played.record.kind.is_snapshot() {
                            // Same sequence, same base as Quake 3's.
                            assert_eq!(played.record.sequence, snap.snapshot.message_num as u32);
                            break;
                        }
                    }
                    let newest = player.client().newest().unwrap();
                    let base = snap.snapshot.base_message().map(|b| b as u32);
                    assert_eq!(newest.base(), base, "{name}");
                    if let Some(difference) = compare(&snap.snapshot, newest) {
                        panic!(
                            "{name}: snapshot {}: {difference}",
                            snap.snapshot.message_num
                        );
                    }
                }
            }
        }
        for player in &mut players {
            assert!(player.next_record().is_none());
            assert!(player.reached_end());
            assert!(player.checksums_verified() > 0);
        }
        assert_eq!(snapshots, native_report.snapshots, "{name}");
        let stats = q3_report.reencode.unwrap();
        assert_eq!(stats.snapshots, snapshots);
        println!(
            "{name}: {snapshots} snapshots; native {:.1} B/snapshot, q3 {:.1}; \
             q3 re-encode {:.3}% exact bit count, causes {:?}",
            native_report.snapshot_bytes as f64 / snapshots as f64,
            q3_report.snapshot_bytes as f64 / snapshots as f64,
            100.0 * stats.exact_ratio(),
            stats.cause_counts()
        );
        assert!(
            native_report.snapshot_bytes < q3_report.snapshot_bytes,
            "{name}: the native codec is not smaller"
        );
        assert!(stats
            .mismatches
            .iter()
            .all(|m| m.causes.iter().all(|c| c.kind.is_invisible_on_the_wire())));
        total.merge(stats);
    }
    println!(
        "all demos: {} snapshots, {:.3}% with Quake 3's exact bit count, causes {:?}",
        total.snapshots,
        100.0 * total.exact_ratio(),
        total.cause_counts()
    );
    assert_eq!(total.snapshots, 21_280);
    assert_eq!(total.exact_bits, 21_273);
}
