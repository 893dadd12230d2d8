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
use snapshot::{Client, Compact, Server, ServerConfig, UpdateKind};

use crate::encode::Encoder;
use crate::message::Breakdown;
use crate::state::{Baselines, Step, Zeros};
use crate::Error;

/// Sequences remembered per stream for base look-ups: the snapshot
/// server's ring, twice over.
const REMEMBERED: usize = 64;

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
    streams: HashMap<usize, Stream<E, P>>,
    /// Snapshots the engine sent from another base than the recording's.
    rebased: u64,
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
            streams: HashMap::new(),
            rebased: 0,
        }
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

    /// Snapshots the engine could not send from the recording's base (it
    /// was never sent, or lay behind a newer acknowledgement), so sent
    /// from another; 0 on every workload the report measures.
    pub fn rebased(&self) -> u64 {
        self.rebased
    }
}

/// Which baselines a step names: the address of the value (a workload
/// hands out one value per gamestate, so a new gamestate is a new one).
fn baselines_key<E>(baselines: &dyn Baselines<E>) -> usize {
    baselines as *const dyn Baselines<E> as *const () as usize
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> EngineEncoder<E, P> {
    /// A server and reader for a stream starting at `step`.
    fn start(&self, step: &Step<'_, E, P>, zeros: &Zeros<E, P>) -> Result<Stream<E, P>, Error> {
        let defaults = ServerConfig::for_codec(self.codec);
        let config = ServerConfig {
            checksum_interval: 0,
            max_entities: self.entity_limit.unwrap_or(defaults.max_entities),
            ..defaults
        };
        let mut server =
            Server::with_prototypes(config, zeros.entity.clone(), zeros.player.clone())?;
        server.set_framing(Arc::clone(&self.framing))?;
        let limit = server.config().max_entities;
        let mut result = Ok(());
        step.baselines.each(&mut |number, state| {
            if number < limit && result.is_ok() {
                result = server.set_baseline(number, Some(state.clone()));
            }
        });
        result?;
        let reader = Client::with_prototypes(zeros.entity.clone(), zeros.player.clone());
        let replay = Replay::new(server, step.frame_ms)
            .and_then(|replay| replay.with_reader(reader))
            .map_err(replay_error)?;
        Ok(Stream {
            replay,
            baselines: baselines_key(step.baselines),
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
        let restart = self.streams.get(&step.stream).is_none_or(|stream| {
            stream.baselines != baselines_key(step.baselines) || stream.frame_ms != step.frame_ms
        });
        if restart {
            let stream = self.start(step, zeros)?;
            self.streams.insert(step.stream, stream);
        }
        let stream = self.streams.get_mut(&step.stream).expect("started above");
        let snapshot = &**step.snapshot;
        // The base's sequence, and this snapshot's: as many messages after
        // the base as the recording's (the compact header codes the
        // distance), else the next.
        let base = step.base.and_then(|base| {
            stream
                .sent
                .iter()
                .rev()
                .find(|(time, _)| *time == base.server_time)
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
        if !replayed.same_base || base.is_none() != step.base.is_none() {
            self.rebased += 1;
        }
        let bits = replayed.info.bits;
        breakdown.clear();
        if let Some(trace) = replayed.trace {
            breakdown.header_bits = trace.header_bits;
            breakdown.player_bits = trace.player_bits;
            for entity in &trace.entities {
                match entity.kind {
                    UpdateKind::Changed => {
                        breakdown.changed += 1;
                        breakdown.updates.push(entity.bits);
                    }
                    UpdateKind::Added => {
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
        stream.last = Some(sequence);
        if stream.sent.len() == REMEMBERED {
            stream.sent.pop_front();
        }
        stream.sent.push_back((snapshot.server_time, sequence));
        Ok(bits)
    }
}
