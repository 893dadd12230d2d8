//! The engine as the report's encoder: every `q3` and `native` figure is a
//! message a [`snapshot::Server`] wrote and a [`snapshot::Client`] read back.
//!
//! [`EngineEncoder`] sends each workload stream through a
//! [`snapshot::replay::Replay`]: one server per stream (per client of the
//! arena, per gamestate of a demo), every snapshot numbered so that its
//! base lies as many messages back as the recording's, the base
//! acknowledged just before it is built. The reader decodes every message
//! and the replay checks it is the step's snapshot; the breakdown of
//! header, player state, entity updates and the rest comes from what the
//! reader read ([`snapshot::SnapshotTrace`]). The benches crate writes no
//! message of its own.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use fields::{Codec, Fields};
use snapshot::framing::Framing;
use snapshot::replay::{Recorded, Replay};
use snapshot::{
    Client, Compact, CompactRange, Models, Server, ServerConfig, SymbolTrace, UpdateKind,
};

use crate::encode::Breakdown;
use crate::encode::Encoder;
use crate::state::{Baselines, Step, Zeros};
use crate::Error;

/// Sequences remembered per stream for base look-ups: the snapshot
/// server's ring, twice over.
const REMEMBERED: usize = 64;

/// A message the engine wrote, as a transport carries it: its sequence
/// (the transport numbers it) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineMessage {
    /// The sequence the server sent it as.
    pub sequence: u32,
    /// The message bytes.
    pub bytes: Vec<u8>,
    /// Its length in bits, padding excluded.
    pub bits: usize,
}

/// One stream's messages as the engine wrote them, from its gamestate on:
/// everything a [`snapshot::Client`] needs to read them again.
#[derive(Debug, Clone)]
pub struct EngineRecording {
    /// The gamestate message (spawn baselines, codec).
    pub gamestate: Vec<u8>,
    /// The framing the messages are in.
    pub framing: Arc<dyn Framing>,
    /// The native models they are coded with.
    pub models: Models,
    /// The snapshot messages, in order.
    pub messages: Vec<EngineMessage>,
}

impl EngineRecording {
    /// A client that has read the gamestate: it reads the messages in
    /// order (clone it to read them again).
    pub fn reader<E: Fields, P: Fields>(&self, zeros: &Zeros<E, P>) -> Result<Client<E, P>, Error> {
        let mut client = Client::with_prototypes(zeros.entity.clone(), zeros.player.clone());
        client.set_framing(Arc::clone(&self.framing));
        client
            .set_models(self.models.clone())
            .map_err(|error| Error::Engine(format!("the models do not fit: {error}")))?;
        client
            .read_message(&self.gamestate)
            .map_err(|error| Error::Engine(format!("the gamestate does not decode: {error}")))?;
        Ok(client)
    }

    /// Reads message `index` with `client` (which has read the ones
    /// before it).
    pub fn decode<E: Fields, P: Fields>(
        &self,
        client: &mut Client<E, P>,
        index: usize,
    ) -> Result<(), Error> {
        let message = self
            .messages
            .get(index)
            .ok_or_else(|| Error::Engine(format!("no message {index}")))?;
        match client.read_snapshot(message.sequence, &message.bytes) {
            Ok(snapshot::Received::Snapshot(_)) => Ok(()),
            Ok(other) => Err(Error::Engine(format!(
                "message {} read as {other:?}",
                message.sequence
            ))),
            Err(error) => Err(Error::Engine(format!(
                "message {} does not decode: {error}",
                message.sequence
            ))),
        }
    }
}

/// One workload stream's replay.
struct Stream<E, P> {
    replay: Replay<E, P>,
    /// The baselines the server was given (see [`baselines_key`]).
    baselines: usize,
    /// The frame length it runs at.
    frame_ms: u32,
    /// Recent snapshots' server times and the sequences they were sent as.
    sent: VecDeque<(i32, u32)>,
    /// The last sequence sent.
    last: Option<u32>,
}

/// The report's `q3` and `native` encodings, through the engine (see the
/// [module docs](self)).
pub struct EngineEncoder<E, P> {
    name: String,
    codec: Codec,
    framing: Arc<dyn Framing>,
    /// The server's entity limit (`None`: the codec's default).
    entity_limit: Option<u32>,
    /// The native models the server and reader code with.
    models: Models,
    streams: HashMap<usize, Stream<E, P>>,
    /// Snapshots the engine sent from another base than the recording's.
    rebased: u64,
    /// Whether each message is read back (and traced).
    verify: bool,
    /// Whether the reader also traces each message's symbols.
    trace_symbols: bool,
    /// The last message written, when tracing symbols.
    last_bytes: Vec<u8>,
    /// Every message written, per stream start (when recording).
    recordings: Option<Vec<EngineRecording>>,
    /// The recording of each stream, by the stream's key.
    recording_of: HashMap<usize, usize>,
}

impl<E, P> std::fmt::Debug for EngineEncoder<E, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineEncoder")
            .field("name", &self.name)
            .field("codec", &self.codec)
            .field("framing", &self.framing.name())
            .field("streams", &self.streams.len())
            .field("rebased", &self.rebased)
            .finish()
    }
}

impl<E, P> EngineEncoder<E, P> {
    /// An encoder named `name`: the engine with `codec` in `framing`.
    pub fn new(name: &str, codec: Codec, framing: Arc<dyn Framing>) -> Self {
        EngineEncoder {
            name: name.to_owned(),
            codec,
            framing,
            entity_limit: None,
            models: Models::of_types(),
            streams: HashMap::new(),
            rebased: 0,
            verify: true,
            trace_symbols: false,
            last_bytes: Vec::new(),
            recordings: None,
            recording_of: HashMap::new(),
        }
    }

    /// The same encoder with servers and readers coding with `models`
    /// instead of the types' own ([`snapshot::Server::set_models`]).
    pub fn with_models(mut self, models: Models) -> Self {
        self.models = models;
        self
    }

    /// The same encoder with its models adapting to each stream under
    /// `policy` (`None`: fixed; [`snapshot::Models::with_adaptation`]).
    pub fn adapting(mut self, policy: Option<fields::model::AdaptPolicy>) -> Self {
        self.models = self.models.with_adaptation(policy);
        self
    }

    /// The same encoder named `name`, its messages in `framing`.
    pub fn framed(mut self, name: &str, framing: Arc<dyn Framing>) -> Self {
        name.clone_into(&mut self.name);
        self.framing = framing;
        self
    }

    /// The same encoder keeping every message it writes
    /// ([`EngineEncoder::take_recordings`]).
    pub fn recording(mut self) -> Self {
        self.recordings = Some(Vec::new());
        self
    }

    /// The same encoder with its reader tracing every symbol of each
    /// message with the models that coded it
    /// ([`snapshot::Client::set_symbol_trace`]; [`EngineEncoder::symbol_trace`]).
    pub fn tracing_symbols(mut self) -> Self {
        self.trace_symbols = true;
        self
    }

    /// The same encoder without the reader: messages are written, not
    /// read back, and no breakdown is filled (for timing the writer).
    pub fn unverified(mut self) -> Self {
        self.verify = false;
        self
    }

    /// The messages written so far, one recording per stream start (empty
    /// unless [`EngineEncoder::recording`]).
    pub fn take_recordings(&mut self) -> Vec<EngineRecording> {
        self.recording_of.clear();
        self.recordings
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The same encoder with servers numbering entities below `limit`
    /// (the model comparison's worlds have up to 65,536).
    pub fn with_entity_limit(mut self, limit: u32) -> Self {
        self.entity_limit = Some(limit);
        self
    }

    /// Quake 3's `svc_snapshot` as the engine writes it with the q3 codec
    /// and [`q3::engine::Quake3Framing`]: `q3`.
    pub fn q3() -> Self {
        Self::new("q3", Codec::Q3, Arc::new(q3::engine::Quake3Framing))
    }

    /// What the library sends: the native codec in the [`Compact`]
    /// framing: `native`.
    pub fn native() -> Self {
        Self::new("native", Codec::Native, Arc::new(Compact))
    }

    /// What the library sends with its models adapting to each stream
    /// ([`fields::model::AdaptPolicy::LIVE`], as the arena and the live
    /// Quake 3 client send): `native_adapting`. Only for types that carry
    /// native models.
    pub fn native_adapting() -> Self {
        Self::new("native_adapting", Codec::Native, Arc::new(Compact))
            .adapting(Some(fields::model::AdaptPolicy::LIVE))
    }

    /// `native`'s models, range-coded ([`CompactRange`]): `native_range`.
    pub fn native_range() -> Self {
        Self::new("native_range", Codec::Native, Arc::new(CompactRange))
    }

    /// `native_adapting`, range-coded: `native_adapting_range`.
    pub fn native_adapting_range() -> Self {
        Self::native_adapting().framed("native_adapting_range", Arc::new(CompactRange))
    }

    /// Snapshots the engine could not send from the recording's base (it
    /// was never sent, or lay behind a newer acknowledgement), so sent
    /// from another; 0 on every workload the report measures.
    pub fn rebased(&self) -> u64 {
        self.rebased
    }
}

/// Which baselines a step names: the address of the value (a workload
/// hands out one value per gamestate, so a new gamestate is a new one).
pub(crate) fn baselines_key<E>(baselines: &dyn Baselines<E>) -> usize {
    baselines as *const dyn Baselines<E> as *const () as usize
}

/// What the engine needs of one step: a [`Step`]'s parts, with the values
/// possibly of other types than the step's (see [`crate::models`]).
pub(crate) struct Frame<'a, E, P> {
    /// The step's stream.
    pub stream: usize,
    /// Which baselines the step names ([`baselines_key`] of the step's).
    pub baselines_key: usize,
    /// Those baselines.
    pub baselines: &'a dyn Baselines<E>,
    /// The frame length.
    pub frame_ms: u32,
    /// The base's server time (`None`: full).
    pub base_time: Option<i32>,
    /// How many messages back the base is.
    pub delta_num: u8,
    /// The snapshot.
    pub snapshot: &'a crate::state::State<E, P>,
}

impl<'a, E, P> Frame<'a, E, P> {
    /// The parts of `step`.
    pub fn of(step: &'a Step<'a, E, P>) -> Self {
        Frame {
            stream: step.stream,
            baselines_key: baselines_key(step.baselines),
            baselines: step.baselines,
            frame_ms: step.frame_ms,
            base_time: step.base.map(|base| base.server_time),
            delta_num: step.delta_num,
            snapshot: step.snapshot,
        }
    }
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> EngineEncoder<E, P> {
    /// The symbols of the last message of `stream` and its bytes, when
    /// tracing symbols ([`EngineEncoder::tracing_symbols`]).
    pub fn symbol_trace(&self, stream: usize) -> Option<(&SymbolTrace, &[u8])> {
        let trace = self.streams.get(&stream)?.replay.reader()?.symbol_trace()?;
        Some((trace, &self.last_bytes))
    }

    /// A server and reader for a stream starting at `step`.
    fn start(&self, step: &Frame<'_, E, P>, zeros: &Zeros<E, P>) -> Result<Stream<E, P>, Error> {
        let defaults = ServerConfig::for_codec(self.codec);
        let config = ServerConfig {
            checksum_interval: 0,
            max_entities: self.entity_limit.unwrap_or(defaults.max_entities),
            ..defaults
        };
        let mut server =
            Server::with_prototypes(config, zeros.entity.clone(), zeros.player.clone())?;
        server.set_framing(Arc::clone(&self.framing))?;
        server.set_models(self.models.clone())?;
        let limit = server.config().max_entities;
        let mut result = Ok(());
        step.baselines.each(&mut |number, state| {
            if number < limit && result.is_ok() {
                result = server.set_baseline(number, Some(state.clone()));
            }
        });
        result?;
        let mut replay = Replay::new(server, step.frame_ms).map_err(replay_error)?;
        if self.verify {
            let mut reader = Client::with_prototypes(zeros.entity.clone(), zeros.player.clone());
            reader.set_symbol_trace(self.trace_symbols);
            replay = replay.with_reader(reader).map_err(replay_error)?;
        }
        Ok(Stream {
            replay,
            baselines: step.baselines_key,
            frame_ms: step.frame_ms,
            sent: VecDeque::with_capacity(REMEMBERED),
            last: None,
        })
    }
}

fn replay_error(error: snapshot::replay::ReplayError) -> Error {
    match error {
        snapshot::replay::ReplayError::Server(error) => Error::Server(error),
        other => Error::Engine(other.to_string()),
    }
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> Encoder<E, P> for EngineEncoder<E, P> {
    fn name(&self) -> &str {
        &self.name
    }

    fn encode(
        &mut self,
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, Error> {
        self.send(&Frame::of(step), zeros, breakdown)
    }
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> EngineEncoder<E, P> {
    /// Sends one step through its stream's server; its bits.
    pub(crate) fn send(
        &mut self,
        step: &Frame<'_, E, P>,
        zeros: &Zeros<E, P>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, Error> {
        let restart = self.streams.get(&step.stream).is_none_or(|stream| {
            stream.baselines != step.baselines_key || stream.frame_ms != step.frame_ms
        });
        if restart {
            let mut stream = self.start(step, zeros)?;
            if let Some(recordings) = self.recordings.as_mut() {
                let mut gamestate = Vec::new();
                stream
                    .replay
                    .write_gamestate(&mut gamestate)
                    .map_err(replay_error)?;
                self.recording_of.insert(step.stream, recordings.len());
                recordings.push(EngineRecording {
                    gamestate,
                    framing: Arc::clone(&self.framing),
                    models: self.models.clone(),
                    messages: Vec::new(),
                });
            }
            self.streams.insert(step.stream, stream);
        }
        let stream = self.streams.get_mut(&step.stream).expect("started above");
        let snapshot = step.snapshot;
        // The base's sequence, and this snapshot's: as many messages after
        // the base as the recording's (the compact header codes the
        // distance), else the next.
        let base = step.base_time.and_then(|base_time| {
            stream
                .sent
                .iter()
                .rev()
                .find(|(time, _)| *time == base_time)
                .map(|&(_, sequence)| sequence)
        });
        let next = stream.last.map_or(1, |last| last + 1);
        let sequence = match base {
            Some(base) if step.delta_num > 0 => (base + u32::from(step.delta_num)).max(next),
            _ => next,
        };
        let recorded = Recorded {
            sequence,
            base,
            server_time: snapshot.server_time as u32,
            flags: snapshot.flags,
            area_mask: &snapshot.areamask,
            player: &snapshot.player,
            entities: &snapshot.entities,
        };
        let replayed = stream.replay.send(&recorded).map_err(replay_error)?;
        if !replayed.same_base || base.is_none() != step.base_time.is_none() {
            self.rebased += 1;
        }
        let bits = replayed.info.bits;
        let coded_with = replayed.info.coded_with;
        if self.trace_symbols {
            self.last_bytes.clear();
            self.last_bytes.extend_from_slice(replayed.bytes);
        }
        if let Some(recordings) = self.recordings.as_mut() {
            let index = self.recording_of[&step.stream];
            recordings[index].messages.push(EngineMessage {
                sequence,
                bytes: replayed.bytes.to_vec(),
                bits,
            });
        }
        breakdown.clear();
        breakdown.sent_bytes = Some(replayed.bytes.len());
        if let Some(trace) = replayed.trace {
            breakdown.header_bits = trace.header_bits;
            breakdown.player_bits = trace.player_bits;
            for entity in &trace.entities {
                match entity.kind {
                    UpdateKind::Changed => {
                        breakdown.changed += 1;
                        breakdown.updates.push(entity.bits);
                    }
                    UpdateKind::Added | UpdateKind::Reentered => {
                        breakdown.added += 1;
                        breakdown.updates.push(entity.bits);
                    }
                    UpdateKind::Removed => {
                        breakdown.removed += 1;
                        breakdown.removal_bits += entity.bits as usize;
                    }
                }
            }
            breakdown.end_bits = trace.end_bits;
        }
        if let Some(symbols) = stream.replay.reader().and_then(Client::symbol_trace) {
            // The trace must price with the models the server coded with.
            let id = |model: &Option<Arc<fields::model::NativeModel>>| {
                model.as_ref().map_or(0, |model| model.id())
            };
            let traced = [id(&symbols.entity_model), id(&symbols.player_model)];
            if coded_with.is_some_and(|ids| ids != traced) {
                return Err(Error::Engine(format!(
                    "message {sequence} was coded with models {coded_with:?}, traced with {traced:?}"
                )));
            }
        }
        stream.last = Some(sequence);
        if stream.sent.len() == REMEMBERED {
            stream.sent.pop_front();
        }
        stream.sent.push_back((snapshot.server_time, sequence));
        Ok(bits)
    }
}
