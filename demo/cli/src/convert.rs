//! Converting a Quake 3 `.dm_68` demo into a native demo of the same state
//! sequence: the same snapshots with the same sequence numbers (Quake 3's
//! message numbers), server times and delta bases, coded with either codec.
//!
//! * Gamestate: configstrings and spawn baselines become a native gamestate.
//!   Native configstrings hold at most
//!   [`snapshot::config::MAX_CONFIGSTRING_LEN`]
//!   bytes; longer ones from the first gamestate (Quake 3's serverinfo and
//!   systeminfo reach 8 KB) go to the header metadata as
//!   `q3.configstring.<index>`, longer ones after it are counted and dropped.
//! * Configstring changes (`cs` and `bcs` server commands) become
//!   configstring records. Other server commands (prints, scores) are not
//!   game state and are left out.
//! * Snapshots are encoded from their decoded states against their decoded
//!   base with [`snapshot::encode_snapshot`], so the native client decodes
//!   them exactly as the Quake 3 client did. A sync checksum goes into every
//!   full snapshot and every `checksum_interval`-th one.
//!
//! [`Dm68Converter`] checks its own output as it goes: every message it
//! writes is decoded by a `snapshot::Client` over the file's
//! [`DynamicState`] schemas and compared with the Quake 3 states, field for
//! field. With the q3 codec it also re-encodes every snapshot as Quake 3
//! wire bits ([`q3::reencode::Verifier`]) and compares bit counts
//! with Quake 3's own.

use std::collections::BTreeMap;
use std::io::Write;

use fields::dynamic::DynamicState;
use fields::{Codec, Fields};
use snapshot::config::MAX_CONFIGSTRING_LEN;
use snapshot::{Client, EncodeOptions, Received, Server, ServerConfig, SnapshotState};

use demo::format::DemoHeader;
use demo::stats::Progress;
use demo::Recorder;
use q3::reencode::{ReencodeStats, Verifier};
use q3::{Command, DecodedRecord, Dm68Decoder, EntityState, PlayerState, Q3Client};

use crate::dm68;
use crate::error::ToolError;

/// How to convert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertOptions {
    /// The codec of the native demo.
    pub codec: Codec,
    /// A sync checksum every this many snapshots (0: only on full ones).
    pub checksum_interval: u32,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            codec: Codec::Native,
            checksum_interval: 32,
        }
    }
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConvertReport {
    /// Quake 3 records read.
    pub records: usize,
    /// Snapshots written.
    pub snapshots: usize,
    /// Of which full.
    pub full_snapshots: usize,
    /// Snapshots Quake 3's client would not keep (their base was gone),
    /// left out.
    pub skipped_invalid: usize,
    /// A first snapshot after a gamestate that was a delta, written as full.
    pub rebased: usize,
    /// Gamestates written.
    pub gamestates: usize,
    /// Configstring changes written.
    pub configstrings: usize,
    /// Configstrings too long for a native gamestate, moved to the metadata.
    pub configstrings_in_metadata: usize,
    /// Configstring changes too long for a native message, dropped.
    pub configstrings_dropped: usize,
    /// Snapshot message bytes written.
    pub snapshot_bytes: u64,
    /// Quake 3's bytes of the records that carried them.
    pub original_record_bytes: u64,
    /// Snapshots decoded back and found identical to the original.
    pub verified_snapshots: usize,
    /// With the q3 codec: re-encoded bit counts against Quake 3's.
    pub reencode: Option<ReencodeStats>,
}

/// Converts records of one Quake 3 demo, as they are decoded, into a native
/// demo written to `W`. Feed it every [`DecodedRecord`] in order with the
/// decoder's client ([`Dm68Decoder::client`]), then [`finish`](Self::finish).
pub struct Dm68Converter<W: Write> {
    options: ConvertOptions,
    metadata: BTreeMap<String, String>,
    writer: Option<W>,
    recorder: Option<Recorder<W>>,
    server: Option<Server<EntityState, PlayerState>>,
    /// Decodes what is written, to check it.
    check: Option<Client<DynamicState, DynamicState>>,
    started: bool,
    /// Configstrings too long for native messages, as last seen.
    long: BTreeMap<usize, String>,
    last_time: u32,
    buf: Vec<u8>,
    verifier: Option<Verifier>,
    report: ConvertReport,
}

impl<W: Write> std::fmt::Debug for Dm68Converter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dm68Converter")
            .field("options", &self.options)
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

impl<W: Write> Dm68Converter<W> {
    /// A converter writing to `writer`; `metadata` goes into the header
    /// (see [`crate::dm68::metadata`]).
    pub fn new(writer: W, options: ConvertOptions, metadata: BTreeMap<String, String>) -> Self {
        Dm68Converter {
            verifier: (options.codec == Codec::Q3).then(Verifier::new),
            options,
            metadata,
            writer: Some(writer),
            recorder: None,
            server: None,
            check: None,
            started: false,
            long: BTreeMap::new(),
            last_time: 0,
            buf: Vec::new(),
            report: ConvertReport::default(),
        }
    }

    /// Converts one decoded record; `client` is the decoder's state after it.
    pub fn push(
        &mut self,
        decoded: &DecodedRecord<'_>,
        client: &Q3Client,
    ) -> Result<(), ToolError> {
        self.report.records += 1;
        let mut configstrings_changed = false;
        for command in &decoded.message.commands {
            match &command.command {
                Command::Gamestate(gamestate) => self.gamestate(gamestate)?,
                Command::ServerCommand(text) if text.is_new => {
                    configstrings_changed |=
                        text.text.starts_with("cs ") || text.text.starts_with("bcs2 ");
                }
                Command::Configstring { .. } => configstrings_changed = true,
                Command::Snapshot(snap) => {
                    if !snap.snapshot.is_valid() {
                        self.report.skipped_invalid += 1;
                        continue;
                    }
                    self.snapshot(&snap.snapshot, snap.base.as_deref())?;
                    self.report.original_record_bytes += decoded.record.message.len() as u64;
                }
                _ => {}
            }
        }
        if configstrings_changed {
            self.sync_configstrings(client)?;
        }
        if let Some(verifier) = &mut self.verifier {
            verifier
                .check_record(decoded)
                .map_err(|e| ToolError::ConversionMismatch(format!("q3 re-encoding: {e}")))?;
        }
        Ok(())
    }

    fn gamestate(&mut self, gamestate: &q3::Gamestate) -> Result<(), ToolError> {
        let config = ServerConfig::for_codec(self.options.codec);
        let mut server: Server<EntityState, PlayerState> =
            Server::new(config).map_err(|e| ToolError::refused(e.to_string()))?;
        let first = self.recorder.is_none();
        for (index, text) in &gamestate.configstrings {
            if text.len() > MAX_CONFIGSTRING_LEN {
                self.long.insert(usize::from(*index), text.clone());
                if first {
                    self.metadata
                        .insert(format!("q3.configstring.{index}"), text.clone());
                    self.report.configstrings_in_metadata += 1;
                } else {
                    self.report.configstrings_dropped += 1;
                }
                continue;
            }
            server
                .set_configstring(usize::from(*index), text)
                .map_err(|e| ToolError::refused(e.to_string()))?;
        }
        for (number, state) in &gamestate.baselines {
            if *state != EntityState::default() {
                server
                    .set_baseline(*number, Some(*state))
                    .map_err(|e| ToolError::refused(e.to_string()))?;
            }
        }
        server
            .write_gamestate(&mut self.buf)
            .map_err(|e| ToolError::refused(e.to_string()))?;
        if first {
            let mut header =
                DemoHeader::for_types::<EntityState, PlayerState>(self.options.codec, 0, 0)
                    .with_metadata("source_format", q3::FORMAT_NAME);
            header.metadata.append(&mut self.metadata);
            let writer = self
                .writer
                .take()
                .ok_or_else(|| ToolError::refused("the converter has no writer"))?;
            let (entity, player) = layouts(&header)?;
            let recorder = Recorder::create(writer, header)?;
            self.check = Some(Client::with_prototypes(entity, player));
            self.recorder = Some(recorder);
        }
        recorder(&mut self.recorder)?.record_gamestate(self.last_time, &self.buf)?;
        self.checked(|received| matches!(received, Received::Gamestate))?;
        self.server = Some(server);
        self.started = false;
        self.report.gamestates += 1;
        Ok(())
    }

    fn sync_configstrings(&mut self, client: &Q3Client) -> Result<(), ToolError> {
        let Some(server) = &mut self.server else {
            return Ok(());
        };
        let mut changed = Vec::new();
        for index in 0..snapshot::config::MAX_CONFIGSTRINGS {
            let q3 = client.configstring(index);
            let ours = server.configstring(index).unwrap_or("");
            if q3 != ours {
                if q3.len() > MAX_CONFIGSTRING_LEN {
                    if self.long.get(&index).map(String::as_str) != Some(q3) {
                        self.long.insert(index, q3.to_string());
                        self.report.configstrings_dropped += 1;
                    }
                    continue;
                }
                server
                    .set_configstring(index, q3)
                    .map_err(|e| ToolError::refused(e.to_string()))?;
                changed.push(index);
            }
        }
        for index in changed {
            if let Some(server) = &self.server {
                server
                    .write_configstring(index, &mut self.buf)
                    .map_err(|e| ToolError::refused(e.to_string()))?;
            }
            recorder(&mut self.recorder)?.record_configstring(self.last_time, &self.buf)?;
            self.checked(|received| matches!(received, Received::Configstring { .. }))?;
            self.report.configstrings += 1;
        }
        Ok(())
    }

    fn snapshot(
        &mut self,
        snapshot: &q3::Snapshot,
        base: Option<&q3::Snapshot>,
    ) -> Result<(), ToolError> {
        let Some(server) = &self.server else {
            return Err(ToolError::refused("a snapshot before any gamestate"));
        };
        // A recording must start on a full snapshot: a first delta (Quake 3
        // itself waits for a full one before it writes any) is made full.
        let base = base.filter(|_| snapshot.base_message().is_some());
        let base = if self.started {
            base
        } else {
            self.report.rebased += base.is_some() as usize;
            None
        };
        let checksum = base.is_none()
            || (self.options.checksum_interval > 0
                && self.report.snapshots as u32 % self.options.checksum_interval == 0);
        let options = EncodeOptions {
            checksum,
            ..EncodeOptions::default()
        };
        // The base as the reader holds it: its delivery is the one the
        // checking client decoded.
        let base_state = base.map(|base| SnapshotState {
            delivery: self
                .check
                .as_ref()
                .and_then(|check| check.snapshot(base.message_num as u32))
                .map(|held| held.delivery()),
            ..state_of(base)
        });
        let setup = snapshot::EncodeSetup {
            framing: &**server.framing(),
            codec: self.options.codec,
            gamestate: server.gamestate(),
            zero_entity: &q3::EntityState::default(),
            models: Some(server.models()),
        };
        snapshot::encode_snapshot(
            &setup,
            &state_of(snapshot),
            base_state.as_ref(),
            options,
            &mut self.buf,
        )?;
        let time = snapshot.server_time as u32;
        self.last_time = time;
        recorder(&mut self.recorder)?.record_snapshot(
            time,
            snapshot.message_num as u32,
            &self.buf,
            base.is_none(),
        )?;
        self.started = true;
        self.report.snapshots += 1;
        self.report.full_snapshots += base.is_none() as usize;
        self.report.snapshot_bytes += self.buf.len() as u64;
        self.checked_snapshot(snapshot.message_num as u32, |received| matches!(received, Received::Snapshot(r) if r.sync != snapshot::SyncCheck::Mismatched))?;
        let check = self.check.as_ref().and_then(Client::newest);
        let Some(decoded) = check else {
            return Err(ToolError::ConversionMismatch(format!(
                "snapshot {} was not decoded back",
                snapshot.message_num
            )));
        };
        if let Some(difference) = compare(snapshot, decoded) {
            return Err(ToolError::ConversionMismatch(format!(
                "snapshot {} decodes differently: {difference}",
                snapshot.message_num
            )));
        }
        self.report.verified_snapshots += 1;
        Ok(())
    }

    /// Decodes the reliable message just written with the checking client.
    fn checked(&mut self, expect: impl Fn(&Received) -> bool) -> Result<(), ToolError> {
        self.check_read(None, expect)
    }

    /// Decodes the snapshot `sequence` just written with the checking client.
    fn checked_snapshot(
        &mut self,
        sequence: u32,
        expect: impl Fn(&Received) -> bool,
    ) -> Result<(), ToolError> {
        self.check_read(Some(sequence), expect)
    }

    fn check_read(
        &mut self,
        sequence: Option<u32>,
        expect: impl Fn(&Received) -> bool,
    ) -> Result<(), ToolError> {
        let Some(check) = &mut self.check else {
            return Ok(());
        };
        let received = match sequence {
            Some(sequence) => check.read_snapshot(sequence, &self.buf),
            None => check.read_message(&self.buf),
        }
        .map_err(|e| {
            ToolError::ConversionMismatch(format!("a written message does not decode: {e}"))
        })?;
        if !expect(&received) {
            return Err(ToolError::ConversionMismatch(format!(
                "a written message decoded as {received:?}"
            )));
        }
        Ok(())
    }

    /// What the conversion did so far.
    pub fn report(&self) -> &ConvertReport {
        &self.report
    }

    /// Writes the index and end marker; returns the writer and the report.
    pub fn finish(mut self) -> Result<(W, ConvertReport), ToolError> {
        let Some(recorder) = self.recorder.take() else {
            return Err(ToolError::refused(
                "the Quake 3 demo has no gamestate: nothing to convert",
            ));
        };
        let mut report = self.report;
        report.reencode = self.verifier.map(Verifier::into_stats);
        Ok((recorder.finish()?, report))
    }
}

fn recorder<W: Write>(recorder: &mut Option<Recorder<W>>) -> Result<&mut Recorder<W>, ToolError> {
    recorder
        .as_mut()
        .ok_or_else(|| ToolError::refused("nothing before the first gamestate"))
}

/// A Quake 3 snapshot as the states a native client holds.
fn state_of(s: &q3::Snapshot) -> SnapshotState<'_, EntityState, PlayerState> {
    SnapshotState {
        sequence: s.message_num as u32,
        frame: s.message_num as u32,
        server_time: s.server_time as u32,
        flags: s.snap_flags,
        area_mask: &s.areamask,
        delivery: None,
        player: &s.ps,
        entities: &s.entities,
    }
}

fn layouts(header: &DemoHeader) -> Result<(DynamicState, DynamicState), ToolError> {
    let data = demo::format::encode_header(header)?;
    Ok(demo::DemoReader::new(&data)?.prototypes()?)
}

/// The first field where `a` and `b` differ on the wire, by name.
pub fn first_difference<A: Fields, B: Fields>(
    a: &A,
    b: &B,
    names: &[fields::FieldSchema],
) -> Option<String> {
    if a.field_count() != b.field_count() {
        return Some(format!("{} fields vs {}", a.field_count(), b.field_count()));
    }
    for field in 0..a.field_count() {
        for element in 0..a.field_kind(field).elements() {
            let (x, y) = (a.word(field, element), b.word(field, element));
            if x != y {
                let name = names.get(field).map_or("?", |f| f.name.as_str());
                return Some(format!("field {name}[{element}]: word {x:#x} vs {y:#x}"));
            }
        }
    }
    None
}

/// Compares a Quake 3 snapshot with its native decoding, field for field.
pub fn compare(
    q3: &q3::Snapshot,
    native: &snapshot::Snapshot<DynamicState, DynamicState>,
) -> Option<String> {
    use fields::NetFields;
    let player_names = PlayerState::TABLE.schema().fields;
    if let Some(d) = first_difference(&q3.ps, native.player(), &player_names) {
        return Some(format!("player state: {d}"));
    }
    if native.server_time() != q3.server_time as u32 {
        return Some(format!(
            "server time {} vs {}",
            q3.server_time,
            native.server_time()
        ));
    }
    if native.len() != q3.entities.len() {
        return Some(format!(
            "{} entities vs {}",
            q3.entities.len(),
            native.len()
        ));
    }
    let entity_names = EntityState::TABLE.schema().fields;
    for ((n, a), (m, b)) in q3.entities.iter().zip(native.entities()) {
        if *n != m {
            return Some(format!("entity {n} vs {m}"));
        }
        if let Some(d) = first_difference(a, b, &entity_names) {
            return Some(format!("entity {n}: {d}"));
        }
    }
    None
}

/// Converts a whole Quake 3 demo. A truncated demo is converted up to its
/// last complete record; the truncation is returned beside the result.
pub fn convert_dm68<W: Write>(
    data: &[u8],
    writer: W,
    options: ConvertOptions,
    progress: Progress<'_>,
) -> Result<(W, ConvertReport, Option<ToolError>), ToolError> {
    let mut converter = Dm68Converter::new(writer, options, dm68::metadata(data));
    let mut decoder = Dm68Decoder::new(data)?;
    let mut ending = None;
    while let Some(item) = decoder.next() {
        match item {
            Ok(decoded) => {
                converter.push(&decoded, decoder.client())?;
                progress((decoded.record.offset + decoded.record.message.len()) as u64);
            }
            Err(error) if error.is_truncation() => {
                ending = Some(ToolError::Q3(error));
                break;
            }
            Err(error) => return Err(error.into()),
        }
    }
    let (writer, report) = converter.finish()?;
    Ok((writer, report, ending))
}
