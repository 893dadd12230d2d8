//! Real data for the CPU benchmarks: the duel demo's state sequence, the
//! messages the snapshot engine writes for it (for the decoders and the
//! netchan), its entity updates one by one, and the bytes Quake 3's
//! Huffman coder sees.

use fields::codec::NOTHING_HELD;
use fields::{
    BitReader, BitSink, BitSource, BitWriter, Codec, DeltaContext, EntityBody, EntityUpdate,
    HuffmanCode, HuffmanReader, HuffmanWriter,
};
use q3::{EntityState, PlayerState};

use q3::reencode::write_snapshot;
use q3::{Command, Dm68Decoder};

use crate::deltas::delta_context;
use crate::encode::Breakdown;
use crate::encode::Encoder;
use crate::engine::{EngineEncoder, EngineRecording};
use crate::state::{merge, Change, Zeros};
use crate::workload::q3demo::{OwnedStep, Q3Demo};
use crate::Error;

/// Every snapshot of the duel demo (`../shared/q3demos/dm_68_osp_duel_2.dm_68`).
pub fn duel_steps() -> Result<Vec<OwnedStep>, Error> {
    Q3Demo::open(&crate::default_demo_dir().join(crate::DUEL_DEMO))?.collect()
}

/// One entity update, encoded on its own: its bytes and length in bits.
#[derive(Debug, Clone)]
pub struct Encoded {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Length in bits.
    pub bits: usize,
}

/// The engine's encoder for `codec`: Quake 3's `svc_snapshot`
/// ([`EngineEncoder::q3`]) or what the library sends
/// ([`EngineEncoder::native`]).
pub fn engine_encoder(codec: Codec) -> EngineEncoder<EntityState, PlayerState> {
    match codec {
        Codec::Q3 => EngineEncoder::q3(),
        Codec::Native => EngineEncoder::native(),
    }
}

/// The messages a [`snapshot::Server`] writes for `steps` through
/// `encoder` (made [recording](EngineEncoder::recording) here), each read
/// back by the engine's client on the way: one recording per gamestate.
pub fn engine_recordings(
    encoder: EngineEncoder<EntityState, PlayerState>,
    steps: &[OwnedStep],
) -> Result<Vec<EngineRecording>, Error> {
    let mut encoder = encoder.recording();
    let zeros = Zeros::default();
    let mut breakdown = Breakdown::default();
    for owned in steps {
        encoder.encode(&owned.step(), &zeros, &mut breakdown)?;
    }
    Ok(encoder.take_recordings())
}

/// The engine's messages for `steps` in `codec`, as one stream: the demo
/// must have one gamestate (the duel has).
pub fn engine_stream(codec: Codec, steps: &[OwnedStep]) -> Result<EngineRecording, Error> {
    engine_stream_with(engine_encoder(codec), steps)
}

/// [`engine_stream`] through `encoder`.
pub fn engine_stream_with(
    encoder: EngineEncoder<EntityState, PlayerState>,
    steps: &[OwnedStep],
) -> Result<EngineRecording, Error> {
    let mut recordings = engine_recordings(encoder, steps)?;
    match recordings.len() {
        1 => Ok(recordings.remove(0)),
        n => Err(Error::Engine(format!(
            "the steps form {n} streams, not one"
        ))),
    }
}

/// One entity update as a snapshot sends it.
#[derive(Debug, Clone, Copy)]
pub struct EntityCase {
    /// Entity number.
    pub number: u32,
    /// The client's copy (or spawn baseline, for an entity new to it).
    pub base: EntityState,
    /// The state sent.
    pub new: EntityState,
    /// Whether it is written even if equal to the base (new entities).
    pub force: bool,
    /// The snapshot's delta context (from a spawn baseline when `force`).
    pub context: DeltaContext,
}

/// Every state-carrying entity update of the steps (changed and added).
pub fn entity_cases(steps: &[OwnedStep]) -> Vec<EntityCase> {
    let mut cases = Vec::new();
    for owned in steps {
        let snapshot = &owned.snapshot;
        let context = delta_context(snapshot, owned.base.as_deref());
        let old = owned.base.as_ref().map_or(&[][..], |b| &b.entities[..]);
        for change in merge(old, &snapshot.entities) {
            let (number, base, new, force) = match change {
                Change::Changed { number, old, new } => (number, *old, *new, false),
                Change::Added { number, new } => (
                    number,
                    owned.baselines.get(number).copied().unwrap_or_default(),
                    *new,
                    true,
                ),
                Change::Removed { .. } | Change::Unchanged { .. } => continue,
            };
            cases.push(EntityCase {
                number,
                base,
                new,
                force,
                context: context.with_spawn(force),
            });
        }
    }
    cases
}

/// Writes one entity update on its own (as the first of a list) in `codec`,
/// through Quake 3's Huffman code when `huffman`; returns its bits.
pub fn encode_entity(
    codec: Codec,
    huffman: bool,
    case: &EntityCase,
    buf: &mut [u8],
) -> Result<usize, Error> {
    let update = EntityUpdate::Delta {
        base: &case.base,
        new: &case.new,
        force: case.force,
    };
    let mut writer = BitWriter::new(buf);
    if huffman {
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        codec.write_entity_in(&case.context, &mut sink, None, case.number, update)?;
        Ok(sink.bits_written())
    } else {
        codec.write_entity_in(&case.context, &mut writer, None, case.number, update)?;
        Ok(writer.bits_written())
    }
}

/// Reads back an update written by [`encode_entity`]; returns the state.
pub fn decode_entity(
    codec: Codec,
    huffman: bool,
    case: &EntityCase,
    encoded: &Encoded,
) -> Result<EntityState, Error> {
    let reader = BitReader::with_bit_len(&encoded.bytes, encoded.bits);
    if huffman {
        read_entity(
            codec,
            case,
            &mut HuffmanReader::new(reader, HuffmanCode::quake3()),
        )
    } else {
        read_entity(codec, case, &mut { reader })
    }
}

fn read_entity<S: BitSource>(
    codec: Codec,
    case: &EntityCase,
    source: &mut S,
) -> Result<EntityState, Error> {
    let limit = codec.entity_number_limit().unwrap_or(u32::MAX);
    // A single update, never a removal: the receiver holds nothing.
    let header = codec.read_entity_number(source, None, limit, &case.base, NOTHING_HELD)?;
    let mut state = case.base;
    if let Some(header) = header.filter(|h| h.number() == case.number) {
        let body = codec.read_entity_body_in(&case.context, source, header, &mut state)?;
        debug_assert_ne!(body, EntityBody::Removed);
    }
    Ok(state)
}

/// Records the byte symbols a Huffman coder in Quake 3's bitstream mode is
/// handed: for every `n`-bit write, its `n / 8` whole bytes above the
/// `n % 8` raw bits, low byte first (see `fields::huffman`).
#[derive(Debug, Default)]
pub struct CodedBytes {
    /// The symbols, in order.
    pub bytes: Vec<u8>,
    bits: usize,
}

impl BitSink for CodedBytes {
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), fields::BitError> {
        let raw = count % 8;
        for i in 0..count / 8 {
            self.bytes.push((value >> (raw + 8 * i)) as u8);
        }
        self.bits += count as usize;
        Ok(())
    }

    fn bits_written(&self) -> usize {
        self.bits
    }
}

/// The bytes Quake 3's Huffman coder is fed when it sends the duel's
/// snapshots: every byte symbol of their `svc_snapshot` commands in
/// bitstream mode, as Quake 3 writes them ([`q3::reencode::write_snapshot`],
/// bit for bit the recorded commands), up to `max_len` bytes.
pub fn huffman_input(max_len: usize) -> Result<Vec<u8>, Error> {
    let data = crate::read_file(&crate::default_demo_dir().join(crate::DUEL_DEMO))?;
    let mut tap = CodedBytes::default();
    for item in Dm68Decoder::new(&data)? {
        if tap.bytes.len() >= max_len {
            break;
        }
        let record = item?;
        for command in &record.message.commands {
            if let Command::Snapshot(snap) = &command.command {
                write_snapshot(
                    &mut tap,
                    &snap.snapshot,
                    snap.base.as_deref(),
                    &snap.baselines,
                )?;
            }
        }
    }
    tap.bytes.truncate(max_len);
    Ok(tap.bytes)
}

/// The zeroed dummies of Quake 3's structs.
pub fn q3_zeros() -> Zeros<EntityState, PlayerState> {
    Zeros::default()
}
